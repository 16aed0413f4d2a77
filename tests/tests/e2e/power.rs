//! Power through real BMC emulators, driven with `plinthctl`: sushy-tools' Redfish emulator and
//! virtualbmc (IPMI over a libvirt domain), a BMC with the wrong password and one that never answers.
//! The power loop shows each server's state (`unknown` with the error for the two failing ones, which
//! hold up nothing), and no password is ever shown.

#[allow(dead_code)]
#[path = "../../../bmc/tests/integration/support.rs"]
pub(crate) mod bmc_support;

use bmc_support::{Sushy, VirtualBmc, USER};
use plinth_e2e::*;
use serde_json::Value;
use std::time::{Duration, Instant};

const REDFISH_PASSWORD: &str = "Redfish-pa55-Word";
const IPMI_PASSWORD: &str = "Ipmi-pa55-Word";

fn enrolled(c: &Controller) -> Vec<Value> {
    let (ok, out, err) = c.plinthctl(&["--output", "json", "nodes", "enrolled"]);
    assert!(ok, "{err}");
    serde_json::from_str::<Value>(&out)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn server<'a>(all: &'a [Value], name: &str) -> &'a Value {
    all.iter().find(|e| e["name"] == name).unwrap()
}

/// Waits until `check` holds for the enrolled servers (the power loop reads every 2 s).
fn wait_enrolled(c: &Controller, what: &str, check: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let all = enrolled(c);
        if check(&all) {
            return all;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "{what}: {all:#?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn plinthctl_powers_servers_through_redfish_and_ipmi_and_failing_bmcs_hold_up_nothing() {
    let sushy = Sushy::start(1, REDFISH_PASSWORD, None);
    let vbmc = VirtualBmc::start(IPMI_PASSWORD);
    // A BMC that accepts connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("controller.toml");
    std::fs::write(&config, "[power]\ninterval_secs = 2\ntimeout_secs = 3\n").unwrap();
    let c = Controller::start_with(&["--auto-accept", "--config", config.to_str().unwrap()]);

    let file = dir.path().join("rack.yaml");
    std::fs::write(
        &file,
        format!(
            "nodes:\n\
             - name: rf\n  macs: ['52:54:00:10:00:01']\n  bmc: {{driver: redfish, address: '{url}', system_id: '{system}', username: {USER}, password: {REDFISH_PASSWORD}}}\n\
             - name: ipmi\n  macs: ['52:54:00:10:00:02']\n  bmc: {{driver: ipmi, address: 127.0.0.1, port: {port}, username: {USER}, password: {IPMI_PASSWORD}}}\n\
             - name: wrong-password\n  macs: ['52:54:00:10:00:03']\n  bmc: {{driver: redfish, address: '{url}', system_id: '{system}', username: {USER}, password: not-the-one}}\n\
             - name: silent\n  macs: ['52:54:00:10:00:04']\n  bmc: {{driver: redfish, address: 'http://127.0.0.1:{silent_port}', username: {USER}, password: x}}\n",
            url = sushy.url,
            system = sushy.system_path(0),
            port = vbmc.port,
        ),
    )
    .unwrap();
    let (ok, _, err) = c.plinthctl(&["nodes", "enroll", "-f", file.to_str().unwrap()]);
    assert!(ok, "{err}");

    // Redfish: on, then the state follows (the emulator applies a change a few seconds later).
    let (ok, _, err) = c.plinthctl(&["nodes", "power", "on", "rf"]);
    assert!(ok, "{err}");
    let started = Instant::now();
    loop {
        let (ok, out, err) = c.plinthctl(&["nodes", "power", "status", "rf"]);
        assert!(ok, "{err}");
        if out.contains(" on") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{out}");
        std::thread::sleep(Duration::from_millis(500));
    }
    // A one-time network boot is set in the BMC, and the server is open to a new agent key.
    let (ok, out, err) = c.plinthctl(&[
        "--output",
        "json",
        "nodes",
        "boot-device",
        "rf",
        "pxe",
        "--once",
    ]);
    assert!(ok, "{err}");
    let e: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (e["rekey"].as_bool(), e["boot"].as_str()),
        (Some(true), Some("discovery"))
    );
    let system: Value = reqwest::blocking::Client::new()
        .get(format!("{}{}", sushy.url, sushy.system_path(0)))
        .basic_auth(USER, Some(REDFISH_PASSWORD))
        .send()
        .unwrap()
        .json()
        .unwrap();
    // (The emulator keeps every override as `Continuous`, whatever is asked, as with libvirt.)
    assert_eq!(
        system["Boot"]["BootSourceOverrideTarget"], "Pxe",
        "{system}"
    );

    // IPMI through ipmitool: the libvirt domain behind virtualbmc follows.
    let started = Instant::now();
    loop {
        let (ok, _, err) = c.plinthctl(&["nodes", "power", "on", "ipmi"]);
        if ok {
            break;
        }
        // virtualbmc takes a moment to listen after it starts.
        assert!(started.elapsed() < Duration::from_secs(60), "{err}");
        std::thread::sleep(Duration::from_secs(1));
    }
    assert_eq!(vbmc.domain_state(), "running");
    let (ok, out, err) = c.plinthctl(&["nodes", "power", "off", "ipmi"]);
    assert!(ok && out.contains("off"), "{out}{err}");
    assert_eq!(vbmc.domain_state(), "shut off");

    // The wrong password and the silent BMC fail with what went wrong, and exit non-zero.
    let (ok, _, err) = c.plinthctl(&["nodes", "power", "status", "wrong-password"]);
    assert!(!ok);
    assert!(
        err.to_lowercase().contains("credential") || err.contains("401"),
        "{err}"
    );
    let started = Instant::now();
    let (ok, _, err) = c.plinthctl(&["nodes", "power", "status", "silent"]);
    assert!(!ok);
    assert!(
        err.contains("bmc_timeout")
            || err.to_lowercase().contains("did not answer")
            || err.to_lowercase().contains("timed out"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the timeout is the configured one"
    );

    // The loop: rf and ipmi known, the two failing ones unknown with their errors; rf keeps being read
    // while the silent BMC times out.
    let first = wait_enrolled(&c, "the loop reads every BMC", |all| {
        server(all, "rf")["power"]["state"] == "on"
            && server(all, "ipmi")["power"]["state"] == "off"
            && server(all, "wrong-password")["power"]["error"].is_string()
            && server(all, "silent")["power"]["error"].is_string()
    });
    assert_eq!(server(&first, "silent")["power"]["state"], "unknown");
    assert_eq!(
        server(&first, "wrong-password")["power"]["state"],
        "unknown"
    );
    let checked = server(&first, "rf")["power"]["checked_ms"]
        .as_i64()
        .unwrap();
    wait_enrolled(&c, "rf is read again", |all| {
        server(all, "rf")["power"]["checked_ms"].as_i64().unwrap() > checked
    });

    // No password anywhere an operator looks.
    let (_, table, _) = c.plinthctl(&["nodes", "enrolled"]);
    let shown = format!(
        "{table}{:?}{}{}",
        enrolled(&c),
        c.api.get("/enrollments/rf").unwrap(),
        c.log()
    );
    for secret in [REDFISH_PASSWORD, IPMI_PASSWORD] {
        assert!(!shown.contains(secret), "{secret} was shown");
    }
    drop(silent);
}
