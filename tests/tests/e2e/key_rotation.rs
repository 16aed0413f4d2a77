//! Rotating the controller's signing key and TLS certificate with real agents, without touching
//! them: the next key is announced, learned and kept across a controller restart; after the switch the
//! agents run lists signed by the new key over the renewed certificate; an agent that was off for the
//! whole overlap says in one log line what to do, and is recovered as docs/SECURITY.md says.

use plinth_e2e::*;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

fn keys_file(agent: &Agent) -> Value {
    std::fs::read(agent.dir.path().join("state/controller-keys.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

fn deploy_and_succeed(c: &Controller, cluster: u64, what: &str) {
    let dep = c.api.deploy(cluster, "");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(
        report["status"],
        "success",
        "{what}: {report:#}\n{}",
        tail(&c.log(), 40)
    );
}

fn graph(marker: &str) -> Value {
    json!({"default": {"tasks": [shell("mark", &["*"], &format!("echo {marker} >> marks"))]}})
}

fn pin_key(agent: &mut Agent, old: &str, new: &str) {
    let config = agent.dir.path().join("agent.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace(old, new)).unwrap();
    agent.restart();
}

fn marks(agent: &Agent) -> String {
    std::fs::read_to_string(agent.work().join("marks")).unwrap_or_default()
}

fn wait_switch(c: &Controller, count: usize) {
    wait_until("the controller to switch keys", LONG, || {
        c.log().matches("switched to the next signing key").count() >= count
    });
}

fn rotate(c: &Controller, args: &[&str]) {
    let mut all = vec!["key", "rotate"];
    all.extend_from_slice(args);
    let (ok, out, err) = c.command(&all);
    assert!(ok, "key rotate: {err}");
    assert!(out.contains("reload the controller"), "{out}");
    c.hangup();
}

fn learned_next(agent: &Agent, next: &str) -> bool {
    keys_file(agent)["next"]["key"] == next
}

#[test]
fn keys_rotate_without_touching_the_nodes() {
    let mut c = Controller::start();
    let first_key = c.public_key();
    let a = Agent::start(&c, "rot-a", &[]);
    let b = Agent::start(&c, "rot-b", &[]);
    let mut away = Agent::start(&c, "rot-away", &[]);
    let nodes = c.api.wait_nodes(3);
    let id = |name: &str| nodes.iter().find(|(n, _)| n == name).unwrap().1;
    let online = c
        .api
        .cluster_with_graph("online", graph("one"), &[id("rot-a"), id("rot-b")]);
    let later = c
        .api
        .cluster_with_graph("later", graph("away"), &[id("rot-away")]);
    deploy_and_succeed(&c, online, "before any rotation");
    deploy_and_succeed(&c, later, "the agent that will be away, before");
    away.kill();

    // The signing key rotates; the controller restarts in the middle of the overlap.
    rotate(&c, &["--overlap", "25s"]);
    let (ok, status, _) = c.command(&["key", "status"]);
    assert!(ok && status.contains("switching at"), "{status}");
    let next_key = std::fs::read_to_string(c.data_dir().join("key-rotation.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|p| p["next"].as_str().map(str::to_string))
        .expect("the plan names the next key");
    for agent in [&a, &b] {
        wait_until("the agents to learn the next key", LONG, || {
            learned_next(agent, &next_key)
        });
    }
    c.restart();
    // Still announced after the restart, and lists signed by the current key still run.
    deploy_and_succeed(&c, online, "during the overlap, after a restart");
    wait_switch(&c, 1);
    assert_eq!(c.public_key(), next_key, "`key show` names the new key");
    // Lists signed by the new key run on agents configured with the old one.
    deploy_and_succeed(&c, online, "after the switch");
    for agent in [&a, &b] {
        let kept = keys_file(agent);
        assert_eq!(kept["current"], next_key.as_str(), "{kept:#}");
        assert_eq!(kept["retired"][0], first_key.as_str(), "{kept:#}");
        assert_eq!(
            marks(agent),
            "one\none\none\n",
            "{}",
            tail(&agent.log(), 30)
        );
        assert!(
            agent.log().contains("the old key is retired"),
            "{}",
            tail(&agent.log(), 30)
        );
    }

    // The agent that was off through the whole overlap says what to do, in one line.
    away.restart();
    let told = "which this agent does not trust";
    wait_until("the away agent to say what to do", LONG, || {
        away.log().contains(told)
    });
    let log = away.log();
    let line = log.lines().find(|l| l.contains(told)).unwrap();
    assert!(
        line.contains("docs/SECURITY.md") && line.contains("controller_public_key"),
        "{line}"
    );
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(away.log().matches(told).count(), 1, "said once");
    // Recovered as docs/SECURITY.md says: pin the current key and restart.
    pin_key(&mut away, &first_key, &next_key);
    deploy_and_succeed(&c, later, "the recovered agent");
    assert_eq!(marks(&away), "away\naway\n");

    // The TLS certificate renews with a new key: agents learn its pin and keep working, unrestarted.
    let old_cert = std::fs::read(c.cert_path()).unwrap();
    rotate(&c, &["--overlap", "12s", "--renew-tls"]);
    let plan: Value = serde_json::from_str(
        &std::fs::read_to_string(c.data_dir().join("key-rotation.json")).unwrap(),
    )
    .unwrap();
    let tls_pin = plan["tls_pins"][0].as_str().unwrap().to_string();
    for agent in [&a, &b, &away] {
        wait_until("the agents to learn the next TLS key", LONG, || {
            keys_file(agent)["tls_pins"][0] == tls_pin.as_str()
        });
    }
    wait_switch(&c, 2);
    assert_ne!(std::fs::read(c.cert_path()).unwrap(), old_cert);
    assert!(same_cert_served(&c.cert_path(), c.port()));
    deploy_and_succeed(&c, online, "over the renewed certificate");
    deploy_and_succeed(&c, later, "over the renewed certificate");
    assert_eq!(marks(&a), "one\none\none\none\n");
    assert_eq!(marks(&away), "away\naway\naway\n");
}

/// Whether the controller on `port` serves the certificate in `cert` (an operator's client that
/// trusts only the renewed file reaches it).
fn same_cert_served(cert: &Path, port: u16) -> bool {
    let pem = std::fs::read(cert).unwrap();
    let client = reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .build()
        .unwrap();
    client
        .get(format!("https://127.0.0.1:{port}/healthz"))
        .send()
        .is_ok_and(|r| r.status().is_success())
}
