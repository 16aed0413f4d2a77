//! Custom graph types (seed 002) run by real agents on a subset of a cluster's nodes, with a cross-node
//! dependency and a `one_by_one` task; and the graph views an operator reads before running one.

use plinth_e2e::*;
use serde_json::{json, Value};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

/// Start and end lines `<event> <node> <task> <nanoseconds>` from the shared log.
fn events(log: &std::path::Path) -> Vec<(String, String, String, u128)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let p: Vec<&str> = l.split_whitespace().collect();
            Some((
                p.first()?.to_string(),
                p.get(1)?.to_string(),
                p.get(2)?.to_string(),
                p.get(3)?.parse().ok()?,
            ))
        })
        .collect()
}

fn at(ev: &[(String, String, String, u128)], what: &str, node: &str, task: &str) -> u128 {
    ev.iter()
        .find(|(e, n, t, _)| e == what && n == node && t == task)
        .map(|x| x.3)
        .unwrap_or_else(|| panic!("no {what} of {task} on {node} in {ev:?}"))
}

#[test]
fn a_custom_graph_runs_on_a_subset_with_cross_node_waits_and_one_by_one() {
    let c = Controller::start();
    let names = ["ctl-1", "ctl-2", "cmp-1", "cmp-2"];
    let _agents: Vec<Agent> = names.iter().map(|n| Agent::start(&c, n, &[])).collect();
    let nodes = c.api.wait_nodes(4);
    let id = |name: &str| nodes.iter().find(|(n, _)| n == name).unwrap().1;
    let shared = tempfile::tempdir().unwrap();
    let log = shared.path().join("events.log");

    let release = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({
            "name": "r", "version": "1",
            "roles_metadata": {"controller": {"name": "Controller", "tags": ["controller"]},
                               "compute": {"name": "Compute"}},
            "tags_metadata": {"controller": {"has_primary": true}},
            "graphs": {"default": {"tasks": [{"id": "noop", "type": "stage"}]}}
        })),
    );
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "env", "release_id": release["id"]})),
    );
    let cid = cluster["id"].as_u64().unwrap();
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [
            {"id": id("ctl-1"), "roles": ["controller"]}, {"id": id("ctl-2"), "roles": ["controller"]},
            {"id": id("cmp-1"), "roles": ["compute"]}, {"id": id("cmp-2"), "roles": ["compute"]}]})),
    );

    // The graph, as a task author writes it: Fuel's bare task list, in YAML.
    let step = |task: &str, secs: u32| {
        format!(
            "echo start $(hostname_is) {task} $(date +%s%N) >> {log}; sleep {secs}; echo end $(hostname_is) {task} $(date +%s%N) >> {log}",
            log = log.display()
        )
    };
    let yaml = format!(
        r#"
- id: restart-api
  type: shell
  tags: ["/.*controller/"]
  parameters:
    cmd: "{api}"
    strategy: {{type: one_by_one}}
- id: db-migrate
  type: shell
  tags: [primary-controller]
  parameters: {{cmd: "{db}"}}
- id: compute-refresh
  type: shell
  tags: [compute]
  cross-depends:
    - name: db-migrate
      role: [primary-controller]
  parameters: {{cmd: "{refresh}"}}
"#,
        db = step("db-migrate", 1),
        api = step("restart-api", 1),
        refresh = step("compute-refresh", 0),
    )
    .replace("$(hostname_is)", "$PWD");
    let uploaded = c.api.raw(
        "POST",
        &format!("/clusters/{cid}/deployment_graphs/maintenance"),
        Some(&c.api.token),
        Some(("application/yaml", yaml.into_bytes())),
    );
    assert_eq!(uploaded.status, 201, "{}", uploaded.body);

    // What an operator reads first: the merged tasks (YAML), the drawing, the checks, the lists.
    let merged = c
        .api
        .http()
        .get(format!(
            "{}/api/v1/clusters/{cid}/deployment_tasks/?graph_type=maintenance&format=yaml",
            c.url
        ))
        .bearer_auth(&c.api.token)
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(merged.contains("- id: db-migrate"), "{merged}");
    let dot = c
        .api
        .http()
        .get(format!(
            "{}/api/v1/clusters/{cid}/deploy_tasks/graph.gv?graph_type=maintenance",
            c.url
        ))
        .bearer_auth(&c.api.token)
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        dot.starts_with("digraph") && dot.contains("\"db-migrate\""),
        "{dot}"
    );
    let checks = c
        .api
        .get(&format!("/clusters/{cid}/checks/?graph_type=maintenance"))
        .unwrap();
    assert_eq!(checks["ok"], true, "{checks}");
    let subset = format!("{},{},{}", id("ctl-1"), id("ctl-2"), id("cmp-1"));
    let serialized = c
        .api
        .get(&format!(
            "/clusters/{cid}/serialized_tasks/?graph_type=maintenance&nodes={subset}"
        ))
        .unwrap();
    let plan_nodes = serialized["plan"]["nodes"].as_array().unwrap();
    assert_eq!(plan_nodes.len(), 3, "{serialized}");
    let dry = c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/deploy/?graph_type=maintenance&nodes={subset}&dry_run=true"),
        None,
    );
    assert_eq!(dry["dry_run"], true);
    // The primary controller: the lowest id of the two (neither is deployed yet).
    let primary_id = serialized["plan"]["primaries"]["controller"]
        .as_u64()
        .unwrap();
    assert_eq!(primary_id, id("ctl-1").min(id("ctl-2")), "{serialized}");
    let (primary, other) = if primary_id == id("ctl-1") {
        ("ctl-1", "ctl-2")
    } else {
        ("ctl-2", "ctl-1")
    };
    let primary_tasks: Vec<&str> = dry["nodes"]["maintenance"][primary]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(primary_tasks, ["restart-api", "db-migrate"], "{dry}");
    let refresh = dry["nodes"]["maintenance"]["cmp-1"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "compute-refresh")
        .unwrap();
    assert_eq!(refresh["gated"], true, "{refresh}");
    assert_eq!(
        c.api.get("/deployments").unwrap(),
        json!([]),
        "a dry run starts nothing"
    );

    // Run it on three of the four nodes.
    let dep = c
        .api
        .deploy(cid, &format!("graph_type=maintenance&nodes={subset}"));
    let second = c.api.send(
        "PUT",
        &format!("/clusters/{cid}/deploy/?graph_type=maintenance"),
        None,
    );
    assert_eq!(
        second.status, 409,
        "one running deployment per cluster: {}",
        second.body
    );
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success", "{report:#}\n{}", c.log());

    // Tasks log their working directory: each agent's own.
    let ev: Vec<(String, String, String, u128)> = events(&log)
        .into_iter()
        .map(|(e, dir, t, at)| {
            let node = _agents
                .iter()
                .find(|a| a.work().to_string_lossy() == dir)
                .map(|a| a.name.clone())
                .unwrap_or(dir);
            (e, node, t, at)
        })
        .collect();
    assert!(
        !ev.iter().any(|(_, n, _, _)| n == "cmp-2"),
        "cmp-2 was not selected: {ev:?}"
    );
    assert!(
        at(&ev, "start", "cmp-1", "compute-refresh") >= at(&ev, "end", primary, "db-migrate"),
        "compute-refresh waits for db-migrate on the primary controller: {ev:?}"
    );
    let (s1, e1) = (
        at(&ev, "start", "ctl-1", "restart-api"),
        at(&ev, "end", "ctl-1", "restart-api"),
    );
    let (s2, e2) = (
        at(&ev, "start", "ctl-2", "restart-api"),
        at(&ev, "end", "ctl-2", "restart-api"),
    );
    assert!(
        e1 <= s2 || e2 <= s1,
        "restart-api ran one node at a time: {ev:?}"
    );
    assert!(
        !ev.iter()
            .any(|(_, n, t, _)| n == other && t == "db-migrate"),
        "only the primary controller runs db-migrate: {ev:?}"
    );
    // A custom graph deploys nothing: the cluster stays new, pending roles stay pending, and the
    // nodes are not marked ready.
    let cluster = c.api.get(&format!("/clusters/{cid}")).unwrap();
    assert_eq!(cluster["status"], "new", "{cluster}");
    let node = c.api.get(&format!("/nodes/{}", id(primary))).unwrap();
    assert_eq!(node["roles"], json!([]), "{node}");
    assert_eq!(node["pending_roles"], json!(["controller"]), "{node}");
    assert_ne!(node["status"], "ready", "{node}");
    let _: Value = report;
}
