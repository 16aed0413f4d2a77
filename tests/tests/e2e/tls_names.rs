//! The controller's certificate names what `serve --tls-name` gives (and the address it listens on), and
//! `plinthctl` reached at a name the certificate lacks says so in one sentence instead of a TLS error.
//! The controller runs in a network namespace of its own with only its loopback, listening on every
//! address of it, so `127.0.0.2` reaches it without being in its certificate. Needs root.

use plinth_e2e::netns::{require_root, unique, Guarded, Netns};
use plinth_e2e::*;
use std::process::Stdio;
use std::time::Duration;

fn plinthctl(ns: &Netns, data: &std::path::Path, url: &str) -> (i32, String, String) {
    let out = ns
        .command(bin("plinthctl"))
        .args(["--controller", url, "--token-file"])
        .arg(data.join("admin.token"))
        .arg("--ca-cert")
        .arg(data.join("tls/cert.pem"))
        .args(["nodes", "list"])
        .output()
        .expect("plinthctl runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn names_given_at_serve_are_in_the_certificate_and_a_mismatch_is_one_sentence() {
    require_root("this test");
    let ns = Netns::new(&format!("pltls{}", unique(0)));
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let log = std::fs::File::create(home.path().join("controller.log")).unwrap();
    let _controller = Guarded::new(
        ns.command(bin("plinth-controller"))
            .arg("--data-dir")
            .arg(&data)
            .args([
                "serve",
                "--listen",
                "0.0.0.0:7443",
                "--tls-name",
                "plinth.test,127.0.0.3",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("the controller starts"),
        Duration::from_secs(10),
    );
    let controller_log = || std::fs::read_to_string(home.path().join("controller.log")).unwrap();
    // Reached at a name given with --tls-name: it answers.
    let mut last = (0, String::new(), String::new());
    wait_until(
        "plinthctl to reach the controller at 127.0.0.3",
        Duration::from_secs(60),
        || {
            last = plinthctl(&ns, &data, "https://127.0.0.3:7443");
            last.0 == 0
        },
    );

    // Reached at an address the certificate does not name: one sentence that says what to do.
    let (code, out, err) = plinthctl(&ns, &data, "https://127.0.0.2:7443");
    assert_eq!(code, 5, "{out}\n{err}\n{}", controller_log());
    let err = err.trim();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("the controller's certificate does not name 127.0.0.2"),
        "{err}"
    );
    for name in ["plinth.test", "127.0.0.3", "localhost"] {
        assert!(err.contains(name), "the names it carries are listed: {err}");
    }
    assert!(err.contains("--tls-name 127.0.0.2"), "{err}");
    assert!(
        !err.contains("certificate verify") && !err.contains("InvalidCertificate"),
        "no TLS jargon: {err}"
    );
}
