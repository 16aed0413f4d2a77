//! The boot listener as iPXE and an attacker on the boot network see it: scripts that carry what the
//! agent needs to trust the controller, chosen by MAC (discovery image or local disk), boot files from
//! memory, and nothing else: no other path, no traversal, no script a client can point elsewhere, and
//! a flood of boot connections that leaves the agent and operator APIs answering.

use plinth_e2e::rogue::Rogue;
use plinth_e2e::*;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A raw HTTP/1.1 GET on the boot listener, as a client may send it (no normalising of the path):
/// the status and the body.
fn raw_get(addr: &str, target: &str, host: &str) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).expect("the boot listener accepts");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nUser-Agent: iPXE/1.21.1\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).unwrap();
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = match answer.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(at) => answer[at + 4..].to_vec(),
        None => Vec::new(),
    };
    (status, body)
}

fn text(addr: &str, target: &str) -> (u16, String) {
    let (status, body) = raw_get(addr, target, "boot.example");
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn ipxe_gets_the_image_with_the_controllers_trust_and_nothing_else_is_served() {
    let images = tempfile::tempdir().unwrap();
    let kernel: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(images.path().join("vmlinuz"), &kernel).unwrap();
    std::fs::write(images.path().join("initrd.img"), b"initramfs").unwrap();
    std::fs::write(images.path().join("notes.txt"), b"not a boot file").unwrap();
    let c = Controller::start_with(&[
        "--auto-accept",
        "--netboot-listen",
        "127.0.0.1:0",
        "--netboot-images",
        images.path().to_str().unwrap(),
    ]);
    let addr = c.netboot_addr();
    let boot_url = format!("http://{addr}");

    // Without a MAC: ask again with the booting interface's.
    let (status, chain) = text(&addr, "/boot/ipxe");
    assert_eq!(status, 200);
    assert_eq!(
        chain,
        format!("#!ipxe\nchain {boot_url}/boot/ipxe?mac=${{netX/mac}}\n")
    );

    // An unknown MAC: the discovery image, with the controller's URL, signing key and TLS key pin.
    let (status, script) = text(&addr, "/boot/ipxe?mac=52-54-00-AA-BB-01");
    assert_eq!(status, 200, "{script}");
    let pin = {
        use sha2::Digest;
        let pem = std::fs::read(c.cert_path()).unwrap();
        let der = rustls_pemfile_der(&pem);
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        format!(
            "sha256:{}",
            hex::encode(sha2::Sha256::digest(cert.tbs_certificate.subject_pki.raw))
        )
    };
    for part in [
        format!(
            "kernel {boot_url}/boot/files/vmlinuz initrd=initrd.img BOOTIF=01-52-54-00-aa-bb-01"
        ),
        format!("plinth.controller={}", c.url),
        format!("plinth.key={}", c.public_key()),
        format!("plinth.tls={pin}"),
        format!("initrd {boot_url}/boot/files/initrd.img"),
    ] {
        assert!(script.contains(&part), "{part} missing from:\n{script}");
    }
    assert!(
        !script.contains("plinth.token"),
        "no token unless the operator asks"
    );

    // Enrolled, the script names the server; set to boot from disk, it gives the boot back.
    let enroll = "nodes:\n  - name: r1-n01\n    macs: ['52:54:00:aa:bb:02']\n";
    let a = c.api.raw(
        "POST",
        "/enrollments",
        Some(&c.api.token),
        Some(("application/yaml", enroll.as_bytes().to_vec())),
    );
    assert_eq!(a.status, 201, "{}", a.body);
    let started = Instant::now();
    let script = loop {
        let (_, s) = text(&addr, "/boot/ipxe?mac=52:54:00:aa:bb:02");
        if s.contains("r1-n01") || started.elapsed() > Duration::from_secs(10) {
            break s;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        script.contains("Plinth: r1-n01 (52:54:00:aa:bb:02) boots the discovery image"),
        "{script}"
    );

    // The boot files, from the images directory, whole.
    let (status, body) = raw_get(&addr, "/boot/files/vmlinuz", "boot.example");
    assert_eq!(status, 200);
    assert!(
        body == kernel,
        "the kernel arrives whole ({} bytes)",
        body.len()
    );

    // What an attacker on the boot network tries.
    for target in [
        "/boot/files/notes.txt",
        "/boot/files/../signing.key",
        "/boot/files/..%2Fsigning.key",
        "/boot/files/%2e%2e%2fsigning.key",
        "/boot/files/..%2F..%2F..%2Fetc%2Fpasswd",
        "/boot/files/",
        "/boot/../../etc/passwd",
        "/signing.key",
        "/api/v1/nodes",
        "/agent/v1/tasks",
        "/api/v1/enrollments",
        "/ui/",
    ] {
        let (status, body) = text(&addr, target);
        assert!(status == 404 || status == 400, "{target}: {status} {body}");
        assert!(
            !body.contains("PRIVATE KEY") && !body.contains("r1-n01"),
            "{target}: {body}"
        );
    }
    // A MAC that is not one, or that tries to add to the script, is refused; the Host header changes
    // nothing in a script.
    for mac in [
        "52:54:00:aa:bb:01%0Akernel%20http://evil/x",
        "52:54:00:aa:bb:01%20plinth.controller=https://evil",
        "http://evil",
        "52:54:00:aa:bb",
    ] {
        let (status, body) = text(&addr, &format!("/boot/ipxe?mac={mac}"));
        assert_eq!(status, 400, "{mac}: {body}");
    }
    let (_, body) = raw_get(
        &addr,
        "/boot/ipxe?mac=52:54:00:aa:bb:01",
        "evil.example:666",
    );
    let body = String::from_utf8_lossy(&body);
    assert!(!body.contains("evil") && body.contains(&boot_url), "{body}");

    // A flood of boot connections, held open, leaves the agent and operator APIs answering at once.
    let flood: Vec<TcpStream> = (0..600)
        .filter_map(|_| TcpStream::connect(&addr).ok())
        .collect();
    assert!(
        flood.len() >= 500,
        "only {} connections opened",
        flood.len()
    );
    let agent = Rogue::new(&c, 77);
    let started = Instant::now();
    let a = agent.register("during-flood", &[], json!({"hostname": "x"}));
    assert_eq!(a.status, 200, "{}", a.body);
    c.api.get("/nodes").unwrap();
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "the APIs waited {took:?} behind the boot flood"
    );
    drop(flood);
    // And the boot listener serves again once the flood is gone.
    let started = Instant::now();
    loop {
        let (status, _) = text(&addr, "/boot/ipxe");
        if status == 200 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the boot listener stays stuck"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The first certificate of a PEM file, as DER.
fn rustls_pemfile_der(pem: &[u8]) -> Vec<u8> {
    use base64::Engine as _;
    let text = String::from_utf8_lossy(pem);
    let body: String = text
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN CERTIFICATE"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .expect("PEM")
}

#[test]
fn dnsmasq_config_chains_firmware_to_ipxe_and_dnsmasq_accepts_it() {
    let dir = tempfile::tempdir().unwrap();
    let tftp = dir.path().join("tftp");
    for mode in [
        vec![
            "--dhcp-range",
            "10.99.0.100,10.99.0.200,12h",
            "--router",
            "10.99.0.1",
        ],
        vec!["--proxy", "10.99.0.0"],
    ] {
        let out = std::process::Command::new(bin("plinth-controller"))
            .args([
                "netboot",
                "dnsmasq-config",
                "--interface",
                "lo",
                "--boot-url",
                "http://10.99.0.2:8080",
                "--tftp-root",
            ])
            .arg(&tftp)
            .args(&mode)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let conf = dir.path().join("dnsmasq.conf");
        std::fs::write(&conf, &out.stdout).unwrap();
        // dnsmasq itself reads the file (`--test` checks its syntax).
        let check = std::process::Command::new(needs::dnsmasq())
            .arg(format!("--conf-file={}", conf.display()))
            .arg("--test")
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "dnsmasq refuses {mode:?}: {}{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
        for file in ["undionly.kpxe", "snponly.efi"] {
            assert!(tftp.join(file).metadata().unwrap().len() > 10_000, "{file}");
        }
        assert_eq!(
            std::fs::read_to_string(tftp.join("plinth.ipxe")).unwrap(),
            "#!ipxe\nchain http://10.99.0.2:8080/boot/ipxe?mac=${netX/mac}\n"
        );
    }
}
