//! A network boot end to end: `packaging/make-image --format netboot` makes a kernel and an initramfs
//! with the agent in it and nothing about any controller. First qemu boots them directly (`-kernel`,
//! `-initrd`) with a wrong pin of the controller's TLS key: the machine never registers, and its serial
//! console says why. Then a machine enrolled by its MAC boots from the network: its firmware's iPXE (qemu's
//! own NIC ROM) asks the controller's boot listener for its script, fetches the kernel and initramfs it
//! names, and boots with the command line the listener wrote (the controller, its signing key, the pin
//! of its TLS key, the enrollment token); it registers as its enrolled name, rack and labels, its facts
//! show the virtual machine (MAC, DMI product name), and it runs a deployment's task. The controller is
//! a real one on this machine, reached from qemu's user-mode network at 10.0.2.2. Needs root (to build
//! the image) and qemu; KVM when it works here, else TCG.

use plinth_common::signing;
use plinth_e2e::images::{netboot_image, Scratch};
use plinth_e2e::netns::{require_root, Guarded};
use plinth_e2e::vm::Vm;
use plinth_e2e::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Long enough for a TCG boot on a busy two-core machine.
const BOOT: Duration = Duration::from_secs(900);

const MAC: &str = "52:54:00:9e:70:01";
const PRODUCT: &str = "Plinth-Netboot-VM";
const SERIAL: &str = "NB-0001";

/// The pin of the controller's TLS key as an operator computes it from the certificate in the
/// controller's data directory: its SubjectPublicKeyInfo, read with another parser than the agent's.
fn controller_pin(c: &Controller) -> String {
    let pem = std::fs::read(c.cert_path()).expect("the controller's certificate");
    let (_, pem) = x509_parser::pem::parse_x509_pem(&pem).expect("PEM");
    let cert = pem.parse_x509().expect("an X.509 certificate");
    signing::tls_key_pin(cert.tbs_certificate.subject_pki.raw)
}

/// `kvm` when a kernel boots under it here (a nested host may offer /dev/kvm and still hang or fail
/// its guests), else `tcg`; `PLINTH_QEMU_ACCEL` chooses. Probed once, with the image's kernel.
pub(crate) fn accelerator(kernel: &Path, scratch: &Path) -> &'static str {
    static ACCEL: OnceLock<&'static str> = OnceLock::new();
    ACCEL.get_or_init(|| {
        match std::env::var("PLINTH_QEMU_ACCEL").as_deref() {
            Ok("kvm") => return "kvm",
            Ok("tcg") => return "tcg",
            _ => {}
        }
        let usable = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/kvm")
            .is_ok();
        if !usable {
            return "tcg";
        }
        let console = scratch.join("kvm-probe.log");
        let child = Command::new("qemu-system-x86_64")
            .args(["-accel", "kvm", "-m", "256", "-no-reboot"])
            .args(["-display", "none", "-monitor", "none"])
            .arg("-serial")
            .arg(format!("file:{}", console.display()))
            .arg("-kernel")
            .arg(kernel)
            .args(["-append", "console=ttyS0 panic=-1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(child) = child else { return "tcg" };
        let mut probe = Guarded::new(child, Duration::from_secs(2));
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(20) {
            if std::fs::read_to_string(&console).is_ok_and(|t| t.contains("Linux version")) {
                return "kvm";
            }
            if probe
                .child
                .as_mut()
                .is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))))
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        "tcg"
    })
}

/// How a machine boots.
enum Boot<'a> {
    /// qemu loads the image itself, with this command line.
    Direct(&'a Path, &'a str),
    /// From the network: the firmware's iPXE gets this URL as its boot file from qemu's DHCP.
    Network(&'a str),
}

/// Boots a machine from the image under qemu (killed on drop).
fn boot_vm(home: &Path, name: &str, accel: &str, how: Boot<'_>) -> Vm {
    let mut qemu = Command::new(plinth_e2e::needs::qemu());
    qemu.args(["-accel", accel, "-m", "2048", "-smp", "2", "-no-reboot"]);
    match how {
        Boot::Direct(image, cmdline) => {
            qemu.arg("-kernel")
                .arg(image.join("vmlinuz"))
                .arg("-initrd")
                .arg(image.join("initrd.img"))
                .args(["-append", cmdline])
                .args(["-netdev", "user,id=n0"]);
        }
        Boot::Network(url) => {
            qemu.args(["-boot", "n"])
                .args(["-netdev", &format!("user,id=n0,bootfile={url}")]);
        }
    }
    qemu.args(["-device", &format!("virtio-net-pci,netdev=n0,mac={MAC}")])
        .args([
            "-smbios",
            &format!("type=1,manufacturer=Plinth,product={PRODUCT},serial={SERIAL}"),
        ]);
    Vm::start(home, name, qemu)
}

#[test]
#[ignore = "slow: builds a network boot image and boots it under qemu; scripts/test.sh runs it with --ignored"]
fn slow_a_netboot_image_takes_its_controller_key_and_tls_pin_from_the_kernel_command_line() {
    require_root("building a network boot image");
    plinth_e2e::needs::qemu();
    let work = Scratch::new("4G");
    let image = work.path().join("netboot");
    let built = Instant::now();
    let said = netboot_image(&image);
    eprintln!(
        "built the netboot image in {:.1} s: {}",
        built.elapsed().as_secs_f64(),
        said.lines().last().unwrap_or_default()
    );
    for file in ["vmlinuz", "initrd.img", "README"] {
        assert!(image.join(file).is_file(), "{file}: {said}");
    }
    let readme = std::fs::read_to_string(image.join("README")).unwrap();
    assert!(
        readme.contains("plinth.key=") && readme.contains("plinth.tls=sha256:"),
        "{readme}"
    );
    let accel = accelerator(&image.join("vmlinuz"), work.path());
    eprintln!("booting under {accel}");

    // Admission by the enrolment token alone: no auto-accept, no operator.
    let token = "netboot-enrol-5a1e";
    let config = work.path().join("controller.toml");
    std::fs::write(&config, "").unwrap();
    let mut c = Controller::start_with(&[
        "--enrollment-token",
        token,
        "--config",
        config.to_str().unwrap(),
    ]);
    let port = c.port();
    let key = c.public_key();
    let pin = controller_pin(&c);
    // qemu's user-mode network: the host's loopback is 10.0.2.2 from inside.
    let cmdline = |pin: &str| {
        format!(
            "console=ttyS0 plinth.controller=https://10.0.2.2:{port} plinth.key={key} \
             plinth.tls={pin} plinth.token={token}"
        )
    };

    // A wrong pin: the machine boots, its agent refuses the controller's certificate at every
    // handshake (the serial console says so, naming the key the controller holds) and never registers.
    let wrong = signing::tls_key_pin(b"the key of some other controller");
    {
        let wrong_cmdline = cmdline(&wrong);
        let vm = boot_vm(
            work.path(),
            "wrong-pin",
            accel,
            Boot::Direct(&image, &wrong_cmdline),
        );
        let refusal =
            format!("the controller's TLS key is {pin}, not the pinned plinth.tls={wrong}");
        let refused = wait_for(BOOT, || vm.console().matches(&refusal).count() >= 2);
        assert!(
            refused,
            "the agent refuses the controller: {}\nqemu: {}",
            vm.tail(80),
            std::fs::read_to_string(work.path().join("wrong-pin.qemu.err")).unwrap_or_default()
        );
        eprintln!(
            "with a wrong pin, the agent refused the controller {:.1} s after qemu started",
            vm.started.elapsed().as_secs_f64()
        );
        let nodes = c.api.get("/nodes").unwrap();
        assert_eq!(nodes, json!([]), "no node registered: {nodes:#}");
    }

    // The boot listener, as servers on qemu's network reach it; the controller restarted with it.
    let boot_port = with_boot_listener(&mut c, &config, &image, "127.0.0.1", "10.0.2.2");
    // The machine is enrolled by its MAC (as Ironic's file names it) before it ever boots.
    let enrollment = format!(
        r#"{{"nodes": [{{"name": "nb-01", "driver": "ipmi",
            "driver_info": {{"ipmi_address": "192.0.2.9", "ipmi_username": "u", "ipmi_password": "p"}},
            "extra": {{"rack": "r9", "room": "lab"}},
            "ports": [{{"address": "{MAC}"}}]}}]}}"#
    );
    let a = c.api.raw(
        "POST",
        "/enrollments",
        Some(&c.api.token),
        Some(("application/json", enrollment.into_bytes())),
    );
    assert_eq!(a.status, 201, "{}", a.body);

    // It boots from the network: iPXE, the script, the kernel and initramfs, all from the controller.
    let vm = boot_vm(
        work.path(),
        "network",
        accel,
        Boot::Network(&format!("http://10.0.2.2:{boot_port}/boot/ipxe")),
    );
    let mut listed = Value::Null;
    let registered = wait_for(BOOT, || {
        listed = c.api.get("/nodes").unwrap_or(Value::Null);
        listed.as_array().is_some_and(|a| !a.is_empty())
    });
    assert!(registered, "the machine registers: {}", vm.tail(80));
    eprintln!(
        "the machine registered {:.1} s after qemu started ({accel})",
        vm.started.elapsed().as_secs_f64()
    );
    let nodes = listed.as_array().unwrap();
    assert_eq!(nodes.len(), 1, "{listed:#}");
    let line = &nodes[0];
    assert_eq!(line["name"], "nb-01", "its enrolled name: {line:#}");
    assert_eq!(line["rack"], "r9", "{line:#}");

    assert_eq!(
        line["admission"], "accepted",
        "the token admits it: {line:#}"
    );
    let id = line["id"].as_u64().unwrap();
    let shown = c.api.get(&format!("/nodes/{id}")).unwrap();
    let facts = &shown["facts"];
    assert_eq!(facts["dmi"]["product_name"], PRODUCT, "{facts:#}");
    assert_eq!(facts["dmi"]["product_serial"], SERIAL, "{facts:#}");
    let nics = facts["nics"].as_array().cloned().unwrap_or_default();
    assert!(nics.iter().any(|n| n["mac"] == MAC), "{facts:#}");
    assert_eq!(facts["os"]["id"], "debian", "{facts:#}");

    // A deployment's task runs on it.
    let graph = json!({"default": {"tasks": [shell(
        "whoami",
        &["*"],
        "cat /sys/class/dmi/id/product_name; cat /proc/cmdline; test ! -e /etc/plinth/controller.pem",
    )]}});
    let cluster = c.api.cluster_with_graph("netboot", graph, &[id]);
    let started = Instant::now();
    let dep = c.api.deploy(cluster, "graph_type=default");
    let report = c.api.wait_deployment(dep, BOOT);
    assert_eq!(report["status"], "success", "{report:#}\n{}", vm.tail(60));
    eprintln!(
        "the deployment took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let name = line["name"].as_str().unwrap();
    let task = task_line(&report, name, "whoami").unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(task["status"], "succeeded", "{task:#}");
    let out = task["stdout_tail"].as_str().unwrap_or_default();
    assert!(out.contains(PRODUCT), "{task:#}");
    assert!(out.contains(&format!("plinth.tls={pin}")), "{task:#}");
    // Only the boot listener's script writes these: iPXE booted what the controller served.
    assert!(
        out.contains("initrd=initrd.img BOOTIF=01-52-54-00-9e-70-01"),
        "{task:#}"
    );
}

/// Restarts `c` with its boot listener on (serving `images`, the discovery image), listening on
/// `listen` (an address of this machine), for machines that reach this machine at `reach` (`10.0.2.2`
/// on qemu's user-mode network, a bridge's address on a network of the test's own); returns the
/// listener's port.
pub(crate) fn with_boot_listener(
    c: &mut Controller,
    config: &Path,
    images: &Path,
    listen: &str,
    reach: &str,
) -> u16 {
    let port = c.port();
    let boot = reserve_port();
    let boot_port = boot.port;
    std::fs::write(
        config,
        format!(
            "[netboot]\nlisten = \"{listen}:{boot_port}\"\nurl = \"http://{reach}:{boot_port}\"\n\
             controller_url = \"https://{reach}:{port}\"\nimages = {:?}\n\
             kernel_args = \"console=ttyS0\"\npass_enrollment_token = true\n",
            images.display().to_string()
        ),
    )
    .expect("the controller's configuration");
    boot.release();
    c.restart();
    boot_port
}
