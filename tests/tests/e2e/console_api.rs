//! The API the web console relies on, over real processes: the deployment summary and one node's part
//! (live while the deployment runs), a stored strategy checked against the nodes, `whoami`, the nodes'
//! name filter, hardware and effective tags; bad requests answered with the right status.

use plinth_e2e::{wait_until, Agent, Controller};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

#[test]
fn the_console_api_answers_summaries_node_parts_checks_and_filters() {
    let c = Controller::start();
    let gate = tempfile::tempdir().unwrap();
    let go = gate.path().join("go");
    let _a = Agent::start(&c, "web-1", &["a"]);
    let _b = Agent::start(&c, "db-1", &["b"]);
    let ids = c.api.wait_nodes(2);
    let id_of = |n: &str| ids.iter().find(|(name, _)| name == n).unwrap().1;

    // Nodes: the name filter (contains, any case), hardware from facts, effective tags.
    let web = c.api.get("/nodes?name=WEB").unwrap();
    let web = web.as_array().unwrap();
    assert_eq!(web.len(), 1, "{web:?}");
    assert_eq!(web[0]["name"], "web-1");
    assert!(
        web[0]["hardware"]["cpus"].as_u64().unwrap() > 0,
        "{:#}",
        web[0]
    );
    assert!(web[0]["hardware"]["memory_bytes"].as_u64().unwrap() > 0);
    assert_eq!(web[0]["effective_tags"], json!(["a"]));
    assert_eq!(web[0]["facts"], json!(null), "lists leave facts out");
    assert_eq!(c.api.get("/nodes?name=nothing-like-it").unwrap(), json!([]));

    // whoami.
    assert_eq!(c.api.get("/whoami").unwrap(), json!({"role": "admin"}));
    let (ok, ro, err) = c.command(&["token", "create", "--name", "viewer", "--read-only"]);
    assert!(ok, "{err}");
    let ro = ro.trim();
    let who = c.api.raw("GET", "/whoami", Some(ro), None);
    assert_eq!(who.body, json!({"role": "read_only"}));
    assert_eq!(
        c.api.raw("GET", "/whoami", Some("plt_nope"), None).status,
        401
    );

    let hold = format!("while [ ! -e {} ]; do sleep 0.2; done", go.display());
    let graph = json!({"deploy": {"tasks": [
        {"id": "hold", "type": "shell", "tags": ["a"], "parameters": {"cmd": hold, "timeout": 600, "retries": 0}},
        {"id": "boom", "type": "shell", "tags": ["b"], "parameters": {"cmd": "echo out; echo err-text >&2; exit 3", "timeout": 60, "retries": 0}},
    ]}});
    let cluster = c
        .api
        .cluster_with_graph("capi", graph, &[id_of("web-1"), id_of("db-1")]);
    let strategy = "groups:\n  - {name: dbs, critical: false, depends_on: [], selectors: [{node_tags: [b]}]}\n  - {name: webs, critical: true, depends_on: [], selectors: [{node_tags: [a]}]}\nphases: [{name: deploy, graph_type: deploy}]\nmax_concurrent_groups: 2\n";
    let r = c.api.raw(
        "PUT",
        &format!("/clusters/{cluster}/strategies/two/"),
        Some(&c.api.token),
        Some(("application/yaml", strategy.as_bytes().to_vec())),
    );
    assert_eq!(r.status, 200, "{}", r.body);

    // The stored strategy, checked: each group's nodes; a read, so a read-only token may ask.
    let check = c.api.raw(
        "GET",
        &format!("/clusters/{cluster}/strategies/two/check"),
        Some(ro),
        None,
    );
    assert_eq!(check.status, 200, "{}", check.body);
    let groups = &check.body["check"]["groups"];
    assert_eq!(groups[0]["name"], "dbs");
    assert_eq!(groups[0]["nodes"], json!(["db-1"]));
    assert_eq!(groups[1]["nodes"], json!(["web-1"]));
    let missing = c.api.raw(
        "GET",
        &format!("/clusters/{cluster}/strategies/nope/check"),
        Some(ro),
        None,
    );
    assert_eq!(missing.status, 404, "{}", missing.body);

    let dep = c.api.deploy(cluster, "strategy=two");
    // Live: db-1 failed while web-1 still holds; the summary says so before anything else happens.
    let mut summary = json!(null);
    wait_until("db-1's failure in the summary", WAIT, || {
        summary = c.api.get(&format!("/deployments/{dep}/summary")).unwrap();
        summary["counts"]["failure"] == 1
    });
    assert_eq!(summary["status"], "running");
    assert_eq!(summary["counts"]["running"], 1, "{summary:#}");
    let dbs = summary["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "dbs")
        .unwrap();
    // Without success criteria the group is done (not failed) with its node failed.
    assert_ne!(dbs["state"], "running", "{summary:#}");
    assert_eq!(dbs["failed"], 1);
    let db = summary["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "db-1")
        .unwrap();
    assert_eq!(db["last_task"], "boom");
    assert!(db["reason"].as_str().unwrap().contains("boom"), "{db}");
    assert!(
        !summary.to_string().contains("err-text"),
        "the summary carries no task output"
    );
    // The report agrees while it runs.
    let report = c.api.get(&format!("/deployments/{dep}")).unwrap();
    let line = plinth_e2e::node_line(&report, "db-1").unwrap();
    assert_eq!(line["status"], "failure", "{report:#}");

    // One node's part, with its output; a node outside the deployment or an unknown deployment is 404.
    let part = c
        .api
        .get(&format!("/deployments/{dep}/nodes/{}", id_of("db-1")))
        .unwrap();
    assert_eq!(part["name"], "db-1");
    assert!(part["tasks"][0]["stderr_tail"]
        .as_str()
        .unwrap()
        .contains("err-text"));
    let outside = c.api.raw(
        "GET",
        &format!("/deployments/{dep}/nodes/999"),
        Some(ro),
        None,
    );
    assert_eq!(outside.status, 404);
    assert!(outside
        .body
        .to_string()
        .contains("node 999 is not in deployment"));
    assert_eq!(
        c.api
            .raw("GET", "/deployments/4242/summary", Some(ro), None)
            .status,
        404
    );

    std::fs::write(&go, "").unwrap();
    let report = c.api.wait_deployment(dep, WAIT);
    let summary = c.api.get(&format!("/deployments/{dep}/summary")).unwrap();
    assert_eq!(summary["status"], report["status"]);
    assert_eq!(summary["counts"]["success"], 1, "{summary:#}");
    assert_eq!(summary["counts"]["failure"], 1);
}
