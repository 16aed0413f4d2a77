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

#[test]
fn the_controller_reloads_on_sighup() {
    let (_, controller) = units().remove(0);
    assert!(controller
        .lines()
        .any(|l| l == "ExecReload=/bin/kill -HUP $MAINPID"));
}

#[test]
fn the_agent_reloads_on_sighup_and_stops_its_tasks_itself() {
    let (_, agent) = units().remove(1);
    let lines: Vec<&str> = agent.lines().collect();
    assert!(lines.contains(&"ExecReload=/bin/kill -HUP $MAINPID"));
    assert!(lines.contains(&"KillMode=mixed"));
    // Task commands run in cgroups under the unit's own.
    assert!(lines.contains(&"Delegate=yes"));
    let stop: u64 = lines
        .iter()
        .find_map(|l| l.strip_prefix("TimeoutStopSec="))
        .and_then(|v| v.trim_end_matches('s').parse().ok())
        .expect("TimeoutStopSec in seconds");
    // Above the default kill grace (10 s) plus the final send of results (3 s).
    assert!(stop > 13, "TimeoutStopSec={stop}");
    assert!(lines.contains(&"RestartPreventExitStatus=2"));
}

#[test]
fn security_exposure_is_what_the_documentation_says() {
    // systemd-analyze security --offline scores the units as shipped (lower is better).
    let tmp = tempfile::tempdir().unwrap();
    let bins = bin_dir();
    for (name, text) in units() {
        let text = text.replace("/usr/bin/", &format!("{}/", bins.display()));
        std::fs::write(tmp.path().join(&name), text).unwrap();
    }
    let score = |unit: &str| -> f64 {
        let out = Command::new("systemd-analyze")
            .args(["security", "--offline=yes", "--no-pager"])
            .arg(tmp.path().join(unit))
            .output()
            .expect("systemd-analyze runs");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        text.lines()
            .find_map(|l| l.split("exposure level for ").nth(1))
            .and_then(|rest| rest.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no exposure level in:\n{text}"))
    };
    let controller = score("plinth-controller.service");
    assert!(controller <= 2.0, "controller exposure {controller}");
    let agent = score("plinth-agent.service");
    assert!(agent < 9.6, "agent exposure {agent}");
}
