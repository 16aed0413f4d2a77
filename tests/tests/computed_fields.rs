//! Computed task fields across deployments (seed 001): adding a controller re-runs only the tasks whose
//! condition asks for it; the others are reported skipped with the reason. Real agents, two deployments.

use plinth_e2e::*;
use serde_json::json;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

fn ran(log: &std::path::Path, agents: &[Agent]) -> Vec<(String, String)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (task, dir) = l.split_once(' ')?;
            let node = agents
                .iter()
                .find(|a| a.work().to_string_lossy() == dir)?
                .name
                .clone();
            Some((node, task.to_string()))
        })
        .collect()
}

#[test]
fn adding_a_controller_reruns_only_the_tasks_whose_condition_asks() {
    let c = Controller::start();
    let agents = vec![
        Agent::start(&c, "ctl-1", &[]),
        Agent::start(&c, "cmp-1", &[]),
        Agent::start(&c, "ctl-2", &[]),
    ];
    let nodes = c.api.wait_nodes(3);
    let id = |name: &str| nodes.iter().find(|(n, _)| n == name).unwrap().1;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ran.log");
    let note = |task: &str| format!("echo {task} $PWD >> {}", log.display());
    let controllers = "$.nodes.where('controller' in $.roles)";
    let task = |id: &str, tags: &[&str], condition: Option<String>| {
        let mut t = json!({"id": id, "type": "shell", "tags": tags,
                           "parameters": {"cmd": note(id), "retries": 0}});
        if let Some(c) = condition {
            t["condition"] = json!({"yaql_exp": c});
        }
        t
    };
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({
            "name": "r", "version": "1",
            "roles_metadata": {"controller": {"name": "Controller"}, "compute": {"name": "Compute"}},
            "graphs": {"default": {"tasks": [
                task("haproxy-backends", &["controller"],
                     Some(format!("changed({controllers}.select($.name))"))),
                task("ntp-server", &["controller"], Some("changed($.settings.ntp)".into())),
                task("nova-compute-conf", &["compute"],
                     Some(format!("changed({controllers}.len())"))),
                task("collect-facts", &["compute"], None),
                {"id": "cleanup", "type": "shell", "tags": ["compute"],
                 "requires": ["nova-compute-conf"],
                 "parameters": {"cmd": note("cleanup"),
                                "path": {"yaql_exp": "concat('/var/lib/', $.name)"}}}
            ]}}
        })),
    );
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "env", "release_id": release["id"],
                     "settings": {"ntp": {"servers": ["0.pool.ntp.org"]}}})),
    );
    let cid = cluster["id"].as_u64().unwrap();
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(
            &json!({"nodes": [{"id": id("ctl-1"), "roles": ["controller"]},
                               {"id": id("cmp-1"), "roles": ["compute"]}]}),
        ),
    );
    let first = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(first, LONG);
    assert_eq!(report["status"], "success", "{report:#}\n{}", c.log());
    let mut expected = [
        ("ctl-1", "haproxy-backends"),
        ("ctl-1", "ntp-server"),
        ("cmp-1", "nova-compute-conf"),
        ("cmp-1", "collect-facts"),
        ("cmp-1", "cleanup"),
    ];
    let mut seen = ran(&log, &agents);
    seen.sort();
    expected.sort();
    let want: Vec<(String, String)> = expected
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    assert_eq!(seen, want, "the first deployment runs everything");
    let roles = c.api.get(&format!("/nodes/{}", id("ctl-1"))).unwrap();
    assert_eq!(
        roles["roles"],
        json!(["controller"]),
        "pending roles became deployed: {roles}"
    );

    // Add a second controller and deploy again: nodes with pending changes and ready nodes take part.
    std::fs::remove_file(&log).unwrap();
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [{"id": id("ctl-2"), "roles": ["controller"]}]})),
    );
    let second = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(second, LONG);
    assert_eq!(report["status"], "success", "{report:#}\n{}", c.log());
    let mut seen = ran(&log, &agents);
    seen.sort();
    let mut want: Vec<(String, String)> = [
        ("ctl-1", "haproxy-backends"),  // the controllers' names changed
        ("ctl-2", "haproxy-backends"),  // never ran there
        ("ctl-2", "ntp-server"),        // never ran there
        ("cmp-1", "nova-compute-conf"), // the number of controllers changed
        ("cmp-1", "collect-facts"),     // no condition: always
        ("cmp-1", "cleanup"),
    ]
    .iter()
    .map(|(n, t)| (n.to_string(), t.to_string()))
    .collect();
    want.sort();
    assert_eq!(seen, want, "only what the conditions ask for runs again");
    let skipped = task_line(&report, "ctl-1", "ntp-server").expect("ntp-server on ctl-1");
    assert_eq!(skipped["status"], "skipped", "{skipped}");
    assert!(
        skipped.to_string().contains("condition"),
        "the report says why: {skipped}"
    );

    // A forced deployment treats the old state as empty: everything runs.
    std::fs::remove_file(&log).unwrap();
    let forced = c.api.deploy(cid, "force=true");
    let report = c.api.wait_deployment(forced, LONG);
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(
        ran(&log, &agents).len(),
        7,
        "forced: every task on every node"
    );

    // A graph's node filter is an expression too: this one picks the ready computes.
    std::fs::remove_file(&log).unwrap();
    c.api.ok(
        "POST",
        &format!("/clusters/{cid}/deployment_graphs/refresh"),
        Some(&json!({
            "node_filter": "$.status = 'ready' and 'compute' in $.roles",
            "tasks": [task("refresh", &["*"], None)]
        })),
    );
    let filtered = c.api.deploy(cid, "graph_type=refresh");
    let report = c.api.wait_deployment(filtered, LONG);
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(
        ran(&log, &agents),
        vec![("cmp-1".to_string(), "refresh".to_string())],
        "only the nodes the filter selects"
    );
}
