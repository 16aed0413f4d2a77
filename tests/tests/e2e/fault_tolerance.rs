//! A group's `fault_tolerance` decides whether its nodes' failures fail the deployment (Fuel's group
//! tasks), with real agents.

use plinth_e2e::*;
use serde_json::json;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

fn run(failing: &[&str]) -> serde_json::Value {
    let c = Controller::start();
    let names = ["cmp-1", "cmp-2", "cmp-3"];
    let agents: Vec<Agent> = names.iter().map(|n| Agent::start(&c, n, &[])).collect();
    for a in &agents {
        if failing.contains(&a.name.as_str()) {
            std::fs::write(a.work().join("fail-here"), "").unwrap();
        }
    }
    let nodes = c.api.wait_nodes(3);
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({
            "name": "r", "version": "1",
            "roles_metadata": {"compute": {"name": "Compute"}},
            "graphs": {"default": {"tasks": [
                {"id": "compute", "type": "group", "role": ["compute"], "fault_tolerance": "1"},
                {"id": "nova", "type": "shell", "groups": ["compute"],
                 "parameters": {"cmd": "test ! -e fail-here", "retries": 0}}
            ]}}
        })),
    );
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "env", "release_id": release["id"]})),
    );
    let cid = cluster["id"].as_u64().unwrap();
    let assign: Vec<_> = nodes
        .iter()
        .map(|(_, id)| json!({"id": id, "roles": ["compute"]}))
        .collect();
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({ "nodes": assign })),
    );
    let dep = c.api.deploy(cid, "");
    c.api.wait_deployment(dep, LONG)
}

#[test]
fn failures_within_a_groups_fault_tolerance_do_not_fail_the_deployment() {
    let report = run(&["cmp-2"]);
    assert_eq!(report["status"], "success_with_failures", "{report:#}");
    assert_eq!(
        task_line(&report, "cmp-2", "nova").unwrap()["status"],
        "failed"
    );
    assert_eq!(
        task_line(&report, "cmp-1", "nova").unwrap()["status"],
        "succeeded"
    );
}

#[test]
fn failures_beyond_it_fail_the_deployment() {
    let report = run(&["cmp-1", "cmp-3"]);
    assert_eq!(report["status"], "failed", "{report:#}");
    let notices = report["notices"].to_string();
    assert!(
        notices.contains("fault_tolerance allows 1"),
        "the report says why: {report:#}"
    );
}
