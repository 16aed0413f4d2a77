//! The unit files pass `systemd-analyze verify`, pointed at the binaries this workspace built, and keep the
//! hardening they promise.

use plinth_e2e::*;
use std::process::Command;

fn units() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../systemd");
    ["plinth-controller.service", "plinth-agent.service"]
        .iter()
        .map(|n| {
            (
                n.to_string(),
                std::fs::read_to_string(dir.join(n)).expect("unit file"),
            )
        })
        .collect()
}

#[test]
fn units_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let bins = bin_dir();
    for (name, text) in units() {
        let text = text.replace("/usr/bin/", &format!("{}/", bins.display()));
        std::fs::write(tmp.path().join(&name), text).unwrap();
    }
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(tmp.path().join("plinth-controller.service"))
        .arg(tmp.path().join("plinth-agent.service"))
        .output()
        .expect("systemd-analyze is installed (scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "systemd-analyze verify failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_controller_runs_unprivileged_and_confined() {
    let (_, controller) = units().remove(0);
    for line in [
        "Type=notify",
        "User=plinth",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ReadWritePaths=/var/lib/plinth-controller",
        "PrivateTmp=yes",
        "CapabilityBoundingSet=",
    ] {
        assert!(
            controller.lines().any(|l| l == line),
            "plinth-controller.service lacks {line}"
        );
    }
    let (_, agent) = units().remove(1);
    assert!(
        agent.lines().any(|l| l == "Type=notify")
            && agent.lines().any(|l| l.starts_with("Restart="))
    );
}
