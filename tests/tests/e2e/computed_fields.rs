//! Computed task fields across deployments (seed 001): adding a controller re-runs only the tasks whose
//! condition asks for it; the others are reported skipped with the reason. Real agents, two deployments.

use plinth_e2e::*;
use serde_json::{json, Value};
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

/// Each node's tasks in the order it ran them (the log is appended by every node; a node runs its list
/// strictly in order).
fn order_on(seen: &[(String, String)], node: &str) -> Vec<String> {
    seen.iter()
        .filter(|(n, _)| n == node)
        .map(|(_, t)| t.clone())
        .collect()
}

/// Seed 001: "any task field except for id", `requires` and placement included. Computed `roles`
/// decide where a task runs (one fed the seed's own expression, typographic quotes and all), and a
/// computed `requires` orders the same two tasks one way on deployed nodes and the other way on the
/// node being added, in the same deployment; a cycle that computed `requires` close on some nodes
/// refuses the deployment, naming them.
#[test]
fn computed_roles_and_requires_decide_what_runs_where_and_in_which_order() {
    let c = Controller::start();
    let agents = vec![
        Agent::start(&c, "ctl-1", &[]),
        Agent::start(&c, "cmp-1", &[]),
        Agent::start(&c, "cmp-2", &[]),
    ];
    let nodes = c.api.wait_nodes(3);
    let id = |name: &str| nodes.iter().find(|(n, _)| n == name).unwrap().1;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ran.log");
    let note = |task: &str| format!("echo {task} $PWD >> {}", log.display());
    let shell = |id: &str| json!({"id": id, "type": "shell", "parameters": {"cmd": note(id)}});
    let mut upgrade = shell("upgrade");
    upgrade["role"] = json!(["*"]);
    // On a node already deployed, drain first; on a new node there is nothing to drain yet.
    upgrade["requires"] =
        json!({"yaql_exp": "switch($.status = 'ready' => ['drain'], true => [])"});
    let mut drain = shell("drain");
    drain["role"] = json!(["*"]);
    let mut register = shell("register-computes");
    // The seed's "Identify node number changes" expression, as printed.
    register["roles"] = json!({"yaql_exp":
        "switch(changed($.nodes.where($.role = ‘compute’)) => ['controller'], true => [])"});
    let mut prepare = shell("prepare-new-compute");
    prepare["roles"] = json!({"yaql_exp": "switch($.pending_addition => ['compute'], true => [])"});
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({
            "name": "r", "version": "1",
            "roles_metadata": {"controller": {"name": "Controller"}, "compute": {"name": "Compute"}},
            "graphs": {"default": {"tasks": [upgrade, drain, register, prepare]}}
        })),
    );
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "env", "release_id": release["id"]})),
    );
    let cid = cluster["id"].as_u64().unwrap();
    let assign = |nodes: Value| {
        c.api.ok(
            "PUT",
            &format!("/clusters/{cid}/nodes"),
            Some(&json!({ "nodes": nodes })),
        );
    };
    assign(json!([{"id": id("ctl-1"), "roles": ["controller"]},
                  {"id": id("cmp-1"), "roles": ["compute"]}]));
    let first = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(first, LONG);
    assert_eq!(report["status"], "success", "{report:#}\n{}", c.log());
    let seen = ran(&log, &agents);
    assert_eq!(
        order_on(&seen, "ctl-1"),
        ["upgrade", "drain", "register-computes"],
        "a new node: nothing to drain first; the computes changed: {seen:?}"
    );
    assert_eq!(
        order_on(&seen, "cmp-1"),
        ["upgrade", "drain", "prepare-new-compute"],
        "{seen:?}"
    );

    // Add a compute: the deployed nodes drain before upgrading, the new one upgrades first; only the
    // new compute is prepared; the controller registers the computes again (their number changed).
    std::fs::remove_file(&log).unwrap();
    assign(json!([{"id": id("cmp-2"), "roles": ["compute"]}]));
    let second = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(second, LONG);
    assert_eq!(report["status"], "success", "{report:#}\n{}", c.log());
    let seen = ran(&log, &agents);
    assert_eq!(
        order_on(&seen, "ctl-1"),
        ["drain", "upgrade", "register-computes"],
        "{seen:?}"
    );
    assert_eq!(order_on(&seen, "cmp-1"), ["drain", "upgrade"], "{seen:?}");
    assert_eq!(
        order_on(&seen, "cmp-2"),
        ["upgrade", "drain", "prepare-new-compute"],
        "{seen:?}"
    );
    assert!(
        task_line(&report, "cmp-1", "prepare-new-compute").is_none(),
        "a task its computed roles do not place is not in the node's list at all: {report:#}"
    );

    // A custom graph whose computed requires close a cycle on the computes only: refused, naming
    // them, and nothing runs.
    std::fs::remove_file(&log).unwrap();
    let mut a = shell("a");
    a["role"] = json!(["*"]);
    a["requires"] = json!({"yaql_exp": "switch('compute' in $.roles => ['b'], true => [])"});
    let mut b = shell("b");
    b["role"] = json!(["*"]);
    b["requires"] = json!(["a"]);
    c.api.ok(
        "POST",
        &format!("/clusters/{cid}/deployment_graphs/cyclic"),
        Some(&json!({"tasks": [a, b]})),
    );
    let refused = c.api.send(
        "PUT",
        &format!("/clusters/{cid}/deploy/?graph_type=cyclic"),
        None,
    );
    assert!(
        (400..500).contains(&refused.status),
        "{} {}",
        refused.status,
        refused.body
    );
    // Nodes are named in the order of their ids (which follow registration).
    let mut computes = ["cmp-1", "cmp-2"];
    computes.sort_by_key(|n| id(n));
    let want = format!(
        "dependency cycle a -> b -> a on node(s) {}",
        computes.join(", ")
    );
    assert_eq!(
        refused.body["error"]["details"]["findings"][0]["message"], want,
        "{}",
        refused.body
    );
    assert!(ran(&log, &agents).is_empty(), "nothing ran");

    // The seed's task template, as printed, is not YAML: refused, naming the line. Laid out as Fuel's
    // library writes computed fields, it is taken.
    let template =
        "- id: task-id\n  condition: yaql_exp: {some yaql expression}\n  parameters:\n    \
                    data: yaql_exp: {some yaql expression}\n";
    let upload = |text: &str| {
        c.api.raw(
            "POST",
            &format!("/clusters/{cid}/deployment_graphs/template"),
            Some(&c.api.token),
            Some(("application/yaml", text.as_bytes().to_vec())),
        )
    };
    let refused = upload(template);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("line 2") && m.contains("mapping values are not allowed")),
        "{}",
        refused.body
    );
    let laid_out =
        "- id: task-id\n  condition:\n    yaql_exp: changed($.nodes)\n  parameters:\n    \
                    data:\n      yaql_exp: $.uid\n";
    let taken = upload(laid_out);
    assert!(
        (200..300).contains(&taken.status),
        "{} {}",
        taken.status,
        taken.body
    );
}

/// The same graph offline: `plinthctl graph resolve` on files gives what the controller runs.
#[test]
fn computed_roles_and_requires_resolve_offline_as_online() {
    let dir = tempfile::tempdir().unwrap();
    let release = dir.path().join("release.yaml");
    std::fs::write(
        &release,
        r#"name: r
version: "1"
roles_metadata:
  controller: {name: Controller}
  compute: {name: Compute}
graphs:
  default:
    tasks:
      - id: upgrade
        type: shell
        role: ['*']
        requires: {yaql_exp: "switch($.status = 'ready' => ['drain'], true => [])"}
        parameters: {cmd: 'true'}
      - {id: drain, type: shell, role: ['*'], parameters: {cmd: 'true'}}
      - id: register-computes
        type: shell
        roles:
          yaql_exp: "switch(changed($.nodes.where($.role = ‘compute’)) => ['controller'], true => [])"
        parameters: {cmd: 'true'}
      - id: prepare-new-compute
        type: shell
        roles: {yaql_exp: "switch($.pending_addition => ['compute'], true => [])"}
        parameters: {cmd: 'true'}
"#,
    )
    .unwrap();
    let cluster = dir.path().join("cluster.yaml");
    std::fs::write(
        &cluster,
        "name: env\nnodes:\n\
         - {id: 1, name: ctl-1, roles: [controller], status: ready}\n\
         - {id: 2, name: cmp-1, roles: [compute], status: ready}\n\
         - {id: 3, name: cmp-2, pending_roles: [compute], pending_addition: true}\n",
    )
    .unwrap();
    let out = std::process::Command::new(bin("plinthctl"))
        .args(["graph", "resolve", "--release"])
        .arg(&release)
        .arg("--cluster")
        .arg(&cluster)
        .args(["--nodes", "1,2,3", "-o", "json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Value = serde_json::from_str(&text).unwrap();
    let order = |name: &str| -> Vec<String> {
        plan["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .unwrap()["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(order("ctl-1"), ["drain", "upgrade", "register-computes"]);
    assert_eq!(order("cmp-1"), ["drain", "upgrade"]);
    assert_eq!(order("cmp-2"), ["upgrade", "drain", "prepare-new-compute"]);
}
