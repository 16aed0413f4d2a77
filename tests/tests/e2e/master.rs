//! Tasks placed on `master` (Fuel's master node) run on the agent named by `--master-node`, the one on
//! the controller's own host: `master_shell` commands once per node, between the node's tasks, with
//! that node's data; without a master agent, what would run there is refused or named as not run.

use plinth_e2e::*;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

/// A graph where each compute node's `prepare` runs first, then the master's copy of `netboot` checks
/// it and records the node, then the node's `after` checks the master's record: each step proves the
/// one before it ran. The master also has a task of its own.
fn graph(shared: &Path) -> Value {
    let dir = shared.display();
    json!({"default": {"tasks": [
        {"id": "prepare", "type": "shell", "tags": ["compute"],
         "parameters": {"cmd": {"yaql_exp": format!("concat('touch {dir}/prepared-', $.name)")}, "timeout": 60}},
        {"id": "netboot", "type": "master_shell", "tags": ["compute"], "requires": ["prepare"],
         "parameters": {"cmd": {"yaql_exp": format!(
             "concat('test -e {dir}/prepared-', $.name, ' && echo ', $.name, ' >> {dir}/netboot.log && touch {dir}/netboot-', $.name)")},
             "timeout": 60}},
        {"id": "after", "type": "shell", "tags": ["compute"], "requires": ["netboot"],
         "parameters": {"cmd": {"yaql_exp": format!("concat('test -e {dir}/netboot-', $.name)")}, "timeout": 60}},
        {"id": "own", "type": "shell", "roles": ["master"],
         "parameters": {"cmd": format!("touch {dir}/own"), "timeout": 60}}
    ]}})
}

fn ids(c: &Controller, names: &[&str]) -> Vec<u64> {
    let all = c.api.node_ids();
    names
        .iter()
        .map(|n| {
            all.iter()
                .find(|(name, _)| name == n)
                .expect("registered")
                .1
        })
        .collect()
}

#[test]
fn the_master_agent_runs_master_tasks_and_each_nodes_master_shell_between_its_tasks() {
    let c = Controller::start_with(&["--auto-accept", "--master-node", "ctl"]);
    let _master = Agent::start(&c, "ctl", &[]);
    let _nodes: Vec<Agent> = ["n-1", "n-2"]
        .iter()
        .map(|n| Agent::start(&c, n, &["compute"]))
        .collect();
    c.api.wait_nodes(3);
    let shared = tempfile::tempdir().unwrap();

    // The master takes the master's tasks: it cannot also be a node of the cluster.
    let cid = c.api.cluster_with_graph(
        "env",
        graph(shared.path()),
        &ids(&c, &["ctl", "n-1", "n-2"]),
    );
    let refused = c
        .api
        .send("PUT", &format!("/clusters/{cid}/deploy/?"), None);
    assert!(
        (400..500).contains(&refused.status) && refused.body.to_string().contains("is the master"),
        "{} {:#}",
        refused.status,
        refused.body
    );
    c.api.ok(
        "DELETE",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({ "node_ids": ids(&c, &["ctl"]) })),
    );

    let dep = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success", "{report:#}");
    for node in ["n-1", "n-2"] {
        let copy = format!("netboot@{node}");
        assert_eq!(
            task_line(&report, "ctl", &copy).map(|t| t["status"].clone()),
            Some(json!("succeeded")),
            "the master ran {copy}: {report:#}"
        );
        assert_eq!(
            task_line(&report, node, "after").map(|t| t["status"].clone()),
            Some(json!("succeeded")),
            "{node} went on after the master's copy: {report:#}"
        );
    }
    assert_eq!(
        task_line(&report, "ctl", "own").map(|t| t["status"].clone()),
        Some(json!("succeeded")),
        "{report:#}"
    );
    assert!(shared.path().join("own").exists());
    let mut log: Vec<String> = std::fs::read_to_string(shared.path().join("netboot.log"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    log.sort();
    assert_eq!(log, ["n-1", "n-2"], "once per node, with that node's data");
}

#[test]
fn without_a_master_agent_master_shell_is_refused_and_other_master_tasks_are_named() {
    let c = Controller::start();
    let _nodes: Vec<Agent> = ["n-1", "n-2"]
        .iter()
        .map(|n| Agent::start(&c, n, &["compute"]))
        .collect();
    c.api.wait_nodes(2);
    let shared = tempfile::tempdir().unwrap();
    let cid = c
        .api
        .cluster_with_graph("env", graph(shared.path()), &ids(&c, &["n-1", "n-2"]));
    let refused = c
        .api
        .send("PUT", &format!("/clusters/{cid}/deploy/?"), None);
    let said = refused.body.to_string();
    assert!(
        (400..500).contains(&refused.status)
            && said.contains("master_node")
            && said.contains("default/netboot"),
        "{} {:#}",
        refused.status,
        refused.body
    );

    // Only a task of the master's own: the deployment runs, and says what it did not run.
    let dir = shared.path().display();
    let computes = ids(&c, &["n-1", "n-2"]);
    c.api.ok(
        "DELETE",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({ "node_ids": computes })),
    );
    let cid = c.api.cluster_with_graph(
        "env-2",
        json!({"default": {"tasks": [
            shell("work", &["compute"], "true"),
            {"id": "own", "type": "shell", "roles": ["master"],
             "parameters": {"cmd": format!("touch {dir}/own"), "timeout": 60}}
        ]}}),
        &computes,
    );
    let dep = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success", "{report:#}");
    assert!(
        report
            .to_string()
            .contains("do not run: no agent is the master"),
        "the report names what did not run: {report:#}"
    );
    assert!(!shared.path().join("own").exists());
}

/// A controller restarted while the master runs a node's copy takes the deployment on with the same
/// master: the copy's result is kept and the node goes on.
#[test]
fn a_controller_restarted_while_the_master_works_takes_it_on() {
    let mut c = Controller::start_with(&["--auto-accept", "--master-node", "ctl"]);
    let _master = Agent::start(&c, "ctl", &[]);
    let _node = Agent::start(&c, "n-1", &["compute"]);
    c.api.wait_nodes(2);
    let shared = tempfile::tempdir().unwrap();
    let dir = shared.path().display();
    let cid = c.api.cluster_with_graph(
        "env",
        json!({"default": {"tasks": [
            {"id": "netboot", "type": "master_shell", "tags": ["compute"],
             "parameters": {"cmd": format!(
                 "touch {dir}/running; while [ ! -e {dir}/go ]; do sleep 0.1; done; touch {dir}/done"),
                 "timeout": 120}},
            {"id": "after", "type": "shell", "tags": ["compute"], "requires": ["netboot"],
             "parameters": {"cmd": format!("test -e {dir}/done"), "timeout": 60}}
        ]}}),
        &ids(&c, &["n-1"]),
    );
    let dep = c.api.deploy(cid, "");
    wait_until("the master runs the copy", LONG, || {
        shared.path().join("running").exists()
    });
    c.restart();
    std::fs::write(shared.path().join("go"), "").unwrap();
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(
        task_line(&report, "ctl", "netboot@n-1").map(|t| t["status"].clone()),
        Some(json!("succeeded")),
        "{report:#}"
    );
}
