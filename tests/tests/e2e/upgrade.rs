//! Upgrades against the previous release, built from this repository's history
//! ([`plinth_e2e::earlier`]): its agent (protocol 1) is served by this controller and is upgraded
//! through a Plinth deployment, keeping its node, key and journal. (Controllers upgraded one at a
//! time on PostgreSQL while a deployment runs: `ha.rs`.)

use plinth_e2e::*;
use serde_json::{json, Value};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(180);

fn node(c: &Controller, id: u64) -> Value {
    c.api.get(&format!("/nodes/{id}")).unwrap_or(Value::Null)
}

#[test]
#[ignore = "slow: builds the previous release from the repository's history"]
fn an_agent_of_the_previous_release_is_served_then_upgraded_through_a_deployment() {
    let earlier =
        earlier::binaries(earlier::PREVIOUS_RELEASE).expect("the previous release builds");
    let c = Controller::start();
    // The agent's binary where its package put it; the upgrade replaces it.
    let installed = tempfile::tempdir().unwrap();
    let program = installed.path().join("plinth-agent");
    std::fs::copy(earlier.join("plinth-agent"), &program).unwrap();
    let restart = installed.path().join("restart-requested");
    let mut agent = Agent::start_program(&c, "upgraded", &[], &program);
    let id = c.api.wait_nodes(1)[0].1;

    // Served, and shown for what it is.
    wait_until("the old agent to register", LONG, || {
        node(&c, id)["agent"]["protocol"] == 1
    });
    let (ok, listed, err) = c.plinthctl(&["nodes", "list"]);
    assert!(ok, "{err}");
    assert!(listed.contains("(protocol 1)"), "{listed}");
    let key = std::fs::read(agent.dir.path().join("state/node.key")).unwrap();
    let runs = agent.work().join("runs");
    let graph = json!({"default": {"tasks": [shell("work", &["*"], &format!("echo run >> {}", runs.display()))]}});
    let cid = c.api.cluster_with_graph("upgrade", graph, &[id]);
    let first = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(first, LONG);
    assert_eq!(report["status"], "success", "{report:#}\n{}", agent.log());

    // The upgrade is a deployment: a task puts the new binary in place (as a package does) and asks
    // for the service's restart once it has ended (as the package's postinst does with systemd-run).
    let new = bin("plinth-agent");
    let upgrade = format!(
        "- id: upgrade-agent\n  type: shell\n  tags: ['*']\n  parameters:\n    cmd: \"cp {new} {dir}/.new && mv -f {dir}/.new {program} && touch {restart}\"\n",
        new = new.display(),
        dir = installed.path().display(),
        program = program.display(),
        restart = restart.display(),
    );
    let uploaded = c.api.raw(
        "POST",
        &format!("/clusters/{cid}/deployment_graphs/upgrade"),
        Some(&c.api.token),
        Some(("application/yaml", upgrade.into_bytes())),
    );
    assert_eq!(uploaded.status, 201, "{}", uploaded.body);
    let upgrading = c.api.deploy(cid, "graph_type=upgrade");
    // systemd's part: the restart the task asked for, as soon as it asks (its result may still be
    // in the journal, unsent: the new agent sends it).
    wait_until("the upgrade task to ask for a restart", LONG, || {
        restart.exists()
    });
    std::fs::remove_file(&restart).unwrap();
    agent.restart_service();
    let report = c.api.wait_deployment(upgrading, LONG);
    assert_eq!(report["status"], "success", "{report:#}\n{}", agent.log());

    // The same node, key and journal, now of this release's protocol.
    wait_until("the new agent to register", LONG, || {
        node(&c, id)["agent"]["protocol"] == plinth_common::wire::PROTOCOL_VERSION
    });
    assert_eq!(c.api.node_ids().len(), 1, "no second node");
    assert_eq!(
        std::fs::read(agent.dir.path().join("state/node.key")).unwrap(),
        key,
        "the node key is kept"
    );
    assert!(agent
        .dir
        .path()
        .join("state/journal/results.jsonl")
        .exists());
    let (_, listed, _) = c.plinthctl(&["nodes", "list"]);
    assert!(!listed.contains("(protocol"), "{listed}");
    let again = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(again, LONG);
    assert_eq!(report["status"], "success", "{report:#}\n{}", agent.log());
    assert_eq!(
        std::fs::read_to_string(&runs).unwrap(),
        "run\nrun\n",
        "every task ran once"
    );
}
