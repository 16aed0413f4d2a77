//! Servers enrolled before they boot: an Ironic enrollment file through `plinthctl nodes enroll`, agents
//! matched to their enrolled names by MAC, a second agent claiming the same MAC refused and recorded,
//! a released server taken over by a new key, and BMC passwords never shown.

use plinth_e2e::rogue::Rogue;
use plinth_e2e::*;
use serde_json::{json, Value};

/// Facts of a server with these physical MACs (and a bridge, whose MAC must not count).
fn facts(macs: &[&str]) -> Value {
    let mut nics: Vec<Value> = macs
        .iter()
        .enumerate()
        .map(|(i, mac)| json!({"name": format!("eno{i}"), "mac": mac}))
        .collect();
    nics.push(json!({"name": "br0", "mac": "52:54:00:99:99:99", "virtual_device": true}));
    json!({"hostname": "localhost", "nics": nics})
}

const IRONIC: &str = r#"{
  "chassis": [{"description": "rack 7"}],
  "nodes": [
    {"name": "r7-n01", "driver": "redfish", "resource_class": "baremetal",
     "driver_info": {"redfish_address": "https://10.9.0.11", "redfish_system_id": "/redfish/v1/Systems/1",
                     "redfish_username": "admin", "redfish_password": "Sup3r-Secret-1", "redfish_verify_ca": false},
     "properties": {"cpus": 8, "memory_mb": 32768, "local_gb": 480, "cpu_arch": "x86_64"},
     "extra": {"rack": "r7", "row": "b"},
     "traits": ["CUSTOM_STORAGE"],
     "ports": [{"address": "52:54:00:7A:00:01", "pxe_enabled": true}, {"address": "52:54:00:7a:00:02"}]},
    {"name": "r7-n02", "driver": "ipmi",
     "driver_info": {"ipmi_address": "10.9.0.12", "ipmi_port": 6230, "ipmi_username": "admin", "ipmi_password": "Sup3r-Secret-2"},
     "ports": [{"address": "52:54:00:7a:00:03"}]}
  ]
}"#;

#[test]
fn enrolled_servers_are_known_by_mac_and_a_second_agent_is_refused() {
    let c = Controller::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nodes.json");
    std::fs::write(&file, IRONIC).unwrap();

    let (ok, out, err) = c.plinthctl(&["nodes", "enroll", "-f", file.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(
        err.contains("2 servers enrolled") && err.contains("ironic format"),
        "{err}"
    );
    assert!(
        out.contains("r7-n01") && out.contains("redfish https://10.9.0.11"),
        "{out}"
    );

    // Enrolling again is refused as a whole, naming what is enrolled already; nothing is written.
    let (ok, _, err) = c.plinthctl(&["nodes", "enroll", "-f", file.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("r7-n01: the name is enrolled already"),
        "{err}"
    );

    // A file with a mistake names the node and the field, with the right status.
    let bad = IRONIC.replace("52:54:00:7a:00:03", "52:54:00:7a:00");
    let a = c.api.raw(
        "POST",
        "/enrollments",
        Some(&c.api.token),
        Some(("application/json", bad.into_bytes())),
    );
    assert_eq!(a.status, 422, "{}", a.body);
    let message = a.body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("node 2 (r7-n02): ports.address"),
        "{message}"
    );

    // An agent with one of r7-n01's MACs becomes r7-n01, with the enrollment's labels, tags and rack.
    let first = Rogue::new(&c, 41);
    let a = first.register(
        "whatever-it-says",
        &["it-says-this"],
        facts(&["52:54:00:7a:00:02"]),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let node_id = a.body["node_id"].as_u64().unwrap();
    let node = c.api.get(&format!("/nodes/{node_id}")).unwrap();
    assert_eq!(node["name"], "r7-n01");
    assert_eq!(node["rack"], "r7");
    assert_eq!(node["labels"], json!({"rack": "r7", "row": "b"}));
    assert_eq!(node["tags"], json!(["CUSTOM_STORAGE"]));
    assert_eq!(
        node["admission"], "accepted",
        "admission follows the controller's policy (the test controller accepts every node)"
    );

    // A second agent claiming one of its MACs is refused, and the refusal is on the node.
    let second = Rogue::new(&c, 42);
    let a = second.register("intruder", &[], facts(&["52:54:00:7a:00:01"]));
    assert_eq!(a.status, 409, "{}", a.body);
    assert_eq!(a.body["error"]["code"], "claimed");
    let refusals = c.api.get(&format!("/nodes/{node_id}/refusals")).unwrap();
    let refusals = refusals.as_array().unwrap();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert_eq!(refusals[0]["kind"], "claim");
    assert!(refusals[0]["reason"]
        .as_str()
        .unwrap()
        .contains(&second.fingerprint));

    // Released, the next agent takes the node with its new key; the old key is a stranger now.
    let (ok, _, err) = c.plinthctl(&["nodes", "release", "r7-n01"]);
    assert!(ok, "{err}");
    let a = second.register("intruder", &[], facts(&["52:54:00:7a:00:01"]));
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["node_id"].as_u64(), Some(node_id), "the same node");
    let old = first.poll(0, 0);
    assert!(
        old.status == 401 || old.status == 403,
        "the old key no longer opens the node: {} {}",
        old.status,
        old.body
    );

    // An unknown agent is discovered as before.
    let stranger = Rogue::new(&c, 43);
    let a = stranger.register("stranger", &[], facts(&["52:54:00:00:00:77"]));
    assert_eq!(a.status, 200, "{}", a.body);

    // The enrollments show BMCs without their passwords, and nothing shows a password.
    let (ok, out, _) = c.plinthctl(&["--output", "json", "nodes", "enrolled"]);
    assert!(ok);
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed[0]["node_id"].as_u64(), Some(node_id));
    assert_eq!(listed[0]["bmc"]["password_set"], true);
    assert_eq!(listed[1]["bmc"]["port"], 6230);
    let everything = format!(
        "{out}{}{}{}",
        c.api.get("/enrollments/r7-n02").unwrap(),
        c.api.get("/nodes").unwrap(),
        c.log()
    );
    for secret in ["Sup3r-Secret-1", "Sup3r-Secret-2"] {
        assert!(!everything.contains(secret), "{secret} was shown");
    }
    // Nor does the database hold it in clear.
    let db = std::fs::read(c.data_dir().join("plinth.db")).unwrap_or_default();
    let wal = std::fs::read(c.data_dir().join("plinth.db-wal")).unwrap_or_default();
    for bytes in [&db, &wal] {
        assert!(
            !bytes.windows(14).any(|w| w == b"Sup3r-Secret-1"),
            "the database holds a BMC password in clear"
        );
    }

    let (ok, _, err) = c.plinthctl(&["nodes", "unenroll", "r7-n02"]);
    assert!(ok, "{err}");
    assert_eq!(c.api.send("GET", "/enrollments/r7-n02", None).status, 404);
}
