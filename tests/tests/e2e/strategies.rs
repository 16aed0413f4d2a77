//! Deployment strategies end to end (seed 004): real agents in racks with tags, the seed's five groups and
//! its three processing scenarios, timeouts, validation, and the opt-in concurrency.

use plinth_e2e::*;
use serde_json::{json, Value};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(180);

const FIVE_GROUPS: &str = r#"
schema: shipyard/DeploymentStrategy/v1
metadata:
  schema: metadata/Document/v1
  name: deployment-strategy
  layeringDefinition: {abstract: false, layer: global}
  storagePolicy: cleartext
data:
  groups:
    - name: control-nodes
      critical: true
      depends_on: [ntp-node]
      selectors:
        - {node_names: [], node_labels: [], node_tags: [control], rack_names: [rack03]}
      success_criteria: {percent_successful_nodes: 90, minimum_successful_nodes: 3, maximum_failed_nodes: 1}
    - name: compute-nodes-1
      critical: false
      depends_on: [control-nodes]
      selectors:
        - {node_names: [], node_labels: [], rack_names: [rack01], node_tags: [compute]}
      success_criteria: {percent_successful_nodes: 50}
    - name: compute-nodes-2
      critical: false
      depends_on: [control-nodes]
      selectors:
        - {node_names: [], node_labels: [], rack_names: [rack02], node_tags: [compute]}
      success_criteria: {percent_successful_nodes: 50}
    - name: monitoring-nodes
      critical: false
      depends_on: []
      selectors:
        - {node_names: [], node_labels: [], node_tags: [monitoring], rack_names: [rack03, rack02, rack01]}
    - name: ntp-node
      critical: true
      depends_on: []
      selectors:
        - {node_names: [ntp01], node_labels: [], node_tags: [], rack_names: []}
      success_criteria: {minimum_successful_nodes: 1}
"#;

/// The seed's site, small: name, tag, rack.
const SITE: &[(&str, &str, &str)] = &[
    ("ntp01", "ntp", "rack01"),
    ("ctl01", "control", "rack03"),
    ("ctl02", "control", "rack03"),
    ("ctl03", "control", "rack03"),
    ("cmp101", "compute", "rack01"),
    ("cmp102", "compute", "rack01"),
    ("cmp201", "compute", "rack02"),
    ("cmp202", "compute", "rack02"),
    ("mon01", "monitoring", "rack02"),
];

/// Prepare and deploy graphs whose one task fails on a node whose work directory holds `fail-<phase>`.
fn phase_graphs() -> Value {
    let task = |phase: &str| {
        json!({"id": format!("{phase}-node"), "type": "shell", "tags": ["*"],
               "parameters": {"cmd": format!("test ! -e fail-{phase} && echo {phase}d >> phases"), "retries": 0, "timeout": 60}})
    };
    json!({"prepare": {"tasks": [task("prepare")]}, "deploy": {"tasks": [task("deploy")]}})
}

struct Site {
    c: Controller,
    agents: Vec<Agent>,
    cluster: u64,
}

fn site(failures: &[(&str, &str)]) -> Site {
    // Two lists a transaction: a phase of several nodes goes out in slices, as a large one does.
    let c = Controller::start_with(&["--auto-accept", "--lists-per-write", "2"]);
    let key = c.public_key();
    let agents: Vec<Agent> = SITE
        .iter()
        .map(|(name, tag, rack)| {
            Agent::start_with(&c, name, &[tag], &key, &format!("rack = \"{rack}\""))
        })
        .collect();
    for (node, phase) in failures {
        let a = agents.iter().find(|a| a.name == *node).unwrap();
        std::fs::write(a.work().join(format!("fail-{phase}")), "").unwrap();
    }
    let ids: Vec<u64> = c
        .api
        .wait_nodes(SITE.len())
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    let cluster = c.api.cluster_with_graph("site", phase_graphs(), &ids);
    let created = c.api.raw(
        "POST",
        &format!("/clusters/{cluster}/strategies/"),
        Some(&c.api.token),
        Some(("application/yaml", FIVE_GROUPS.as_bytes().to_vec())),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["name"], "deployment-strategy");
    Site { c, agents, cluster }
}

fn names(v: &Value) -> Vec<String> {
    let mut n: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    n.sort();
    n
}

fn run(failures: &[(&str, &str)]) -> (Site, Value) {
    let s = site(failures);
    let dep = s.c.api.deploy(s.cluster, "strategy=deployment-strategy");
    let report = s.c.api.wait_deployment(dep, LONG);
    (s, report)
}

#[test]
fn the_seed_example_where_everything_succeeds() {
    let (s, report) = run(&[]);
    assert_eq!(report["status"], "success", "{report:#}");
    for g in [
        "ntp-node",
        "control-nodes",
        "monitoring-nodes",
        "compute-nodes-1",
        "compute-nodes-2",
    ] {
        assert_eq!(group(&report, g)["state"], "succeeded", "{g}: {report:#}");
    }
    // ntp-node runs before control-nodes, which runs before both compute groups.
    let order: Vec<&str> = report["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    let at = |g: &str| order.iter().position(|o| *o == g).unwrap();
    assert!(at("ntp-node") < at("control-nodes"));
    assert!(
        at("control-nodes") < at("compute-nodes-1") && at("control-nodes") < at("compute-nodes-2")
    );
    for a in &s.agents {
        assert_eq!(
            read(&a.work().join("phases")).unwrap(),
            "prepared\ndeployd\n",
            "{} ran both phases in order",
            a.name
        );
        assert_eq!(node_line(&report, &a.name).unwrap()["status"], "success");
    }
}

#[test]
fn the_seed_example_where_ntp_node_fails_prepare() {
    let (s, report) = run(&[("ntp01", "prepare")]);
    assert_eq!(report["status"], "failed", "{report:#}");
    let ntp = group(&report, "ntp-node");
    assert_eq!(ntp["state"], "failed");
    assert!(
        ntp["reason"].as_str().unwrap().contains("minimum"),
        "{ntp:#}"
    );
    for g in ["control-nodes", "compute-nodes-1", "compute-nodes-2"] {
        let line = group(&report, g);
        assert_eq!(line["state"], "failed", "{g}");
        assert!(
            line["reason"].as_str().unwrap().contains("depend"),
            "{g}: {line:#}"
        );
        assert!(
            line["succeeded"].as_array().unwrap().is_empty()
                && line["failed"].as_array().unwrap().is_empty()
        );
    }
    assert_eq!(group(&report, "monitoring-nodes")["state"], "succeeded");
    assert_eq!(node_line(&report, "ntp01").unwrap()["status"], "failure");
    assert_eq!(node_line(&report, "mon01").unwrap()["status"], "success");
    for n in ["ctl01", "cmp101", "cmp202"] {
        assert_eq!(
            node_line(&report, n).unwrap()["status"],
            "not_started",
            "{n}"
        );
        let a = s.agents.iter().find(|a| a.name == n).unwrap();
        assert!(
            !a.work().join("phases").exists(),
            "{n} was never sent anything"
        );
    }
    let ntp_agent = s.agents.iter().find(|a| a.name == "ntp01").unwrap();
    assert!(
        !ntp_agent.work().join("phases").exists(),
        "ntp01 was not deployed after failing prepare"
    );
    // The failed node's roles did not move; the successful one's node status is ready.
    let nodes = s.c.api.get("/nodes").unwrap();
    let status = |n: &str| {
        nodes
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == n)
            .unwrap()["status"]
            .clone()
    };
    assert_eq!(status("ntp01"), "error");
    assert_eq!(status("mon01"), "ready");
}

#[test]
fn the_seed_example_where_compute_nodes_2_fail_deploy() {
    let (_s, report) = run(&[("cmp201", "deploy"), ("cmp202", "deploy")]);
    assert_eq!(report["status"], "success_with_failures", "{report:#}");
    let c2 = group(&report, "compute-nodes-2");
    assert_eq!(c2["state"], "failed");
    assert!(c2["reason"].as_str().unwrap().contains("percent"), "{c2:#}");
    assert_eq!(names(&c2["failed"]), ["cmp201", "cmp202"]);
    for g in [
        "ntp-node",
        "control-nodes",
        "monitoring-nodes",
        "compute-nodes-1",
    ] {
        assert_eq!(group(&report, g)["state"], "succeeded", "{g}");
    }
    let cmp = node_line(&report, "cmp201").unwrap();
    assert_eq!(cmp["status"], "failure");
    assert_eq!(cmp["failed_phase"], "deploy");
    assert!(cmp["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["phase"] == "prepare" && t["status"] == "succeeded"));
}

#[test]
fn a_node_that_never_reports_fails_its_phase_at_the_timeout() {
    let c = Controller::start();
    let key = c.public_key();
    let _a = Agent::start_with(&c, "alive", &["x"], &key, "");
    let mut gone = Agent::start_with(&c, "gone", &["x"], &key, "");
    let ids: Vec<u64> = c.api.wait_nodes(2).into_iter().map(|(_, id)| id).collect();
    gone.kill();
    let cluster = c.api.cluster_with_graph(
        "t",
        json!({"deploy": {"tasks": [shell("work", &["x"], "true")]}}),
        &ids,
    );
    let strategy = "groups:\n  - {name: all, critical: true, depends_on: [], selectors: [], success_criteria: {percent_successful_nodes: 100}}\nphases: [{name: deploy, graph_type: deploy, timeout: 3}]\n";
    let r = c.api.raw(
        "PUT",
        &format!("/clusters/{cluster}/strategies/short/"),
        Some(&c.api.token),
        Some(("application/yaml", strategy.as_bytes().to_vec())),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let dep = c.api.deploy(cluster, "strategy=short");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "failed", "{report:#}");
    assert_eq!(node_line(&report, "alive").unwrap()["status"], "success");
    assert_eq!(node_line(&report, "gone").unwrap()["status"], "failure");
    let g = group(&report, "all");
    assert!(g["reason"].as_str().unwrap().contains("time"), "{g:#}");
}

#[test]
fn independent_groups_run_together_only_when_allowed() {
    for (concurrent, overlap) in [(2, true), (1, false)] {
        let c = Controller::start();
        let key = c.public_key();
        let shared = tempfile::tempdir().unwrap();
        let _a = Agent::start_with(&c, "a1", &["a"], &key, "");
        let _b = Agent::start_with(&c, "b1", &["b"], &key, "");
        let ids: Vec<u64> = c.api.wait_nodes(2).into_iter().map(|(_, id)| id).collect();
        let dir = shared.path().display().to_string();
        let graph = json!({"deploy": {"tasks": [
            shell("a-work", &["a"], &format!("touch {dir}/a-start; sleep 2; touch {dir}/a-end")),
            shell("b-work", &["b"], &format!("touch {dir}/b-start; sleep 2; touch {dir}/b-end")),
        ]}});
        let cluster = c.api.cluster_with_graph("conc", graph, &ids);
        let strategy = format!(
            "groups:\n  - {{name: ga, critical: true, depends_on: [], selectors: [{{node_tags: [a]}}]}}\n  - {{name: gb, critical: true, depends_on: [], selectors: [{{node_tags: [b]}}]}}\nphases: [{{name: deploy, graph_type: deploy}}]\nmax_concurrent_groups: {concurrent}\n"
        );
        let r = c.api.raw(
            "POST",
            &format!("/clusters/{cluster}/strategies/?name=s"),
            Some(&c.api.token),
            Some(("application/yaml", strategy.into_bytes())),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        let report = c
            .api
            .wait_deployment(c.api.deploy(cluster, "strategy=s"), LONG);
        assert_eq!(report["status"], "success", "{report:#}");
        let mtime = |f: &str| {
            std::fs::metadata(shared.path().join(f))
                .unwrap()
                .modified()
                .unwrap()
        };
        let b_started_before_a_ended = mtime("b-start") < mtime("a-end");
        assert_eq!(
            b_started_before_a_ended, overlap,
            "max_concurrent_groups {concurrent}"
        );
    }
}

#[test]
fn invalid_strategies_are_refused_with_the_group_and_field_and_change_nothing() {
    let c = Controller::start();
    let _a = Agent::start(&c, "n1", &["x"]);
    let ids: Vec<u64> = c.api.wait_nodes(1).into_iter().map(|(_, id)| id).collect();
    let cluster = c
        .api
        .cluster_with_graph("v", json!({"deploy": {"tasks": []}}), &ids);
    let bad = "groups:\n  - {name: a, critical: true, depends_on: [b], selectors: []}\n  - {name: b, critical: maybe, depends_on: [a], selectors: [], success_criteria: {percent_successful_nodes: 120}}\n";
    let r = c.api.raw(
        "POST",
        &format!("/clusters/{cluster}/strategies/?name=bad"),
        Some(&c.api.token),
        Some(("application/yaml", bad.as_bytes().to_vec())),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let findings = r.body["error"]["details"]["findings"].as_array().unwrap();
    let text = serde_json::to_string(findings).unwrap();
    assert!(
        text.contains("critical") && text.contains("percent_successful_nodes"),
        "{text}"
    );
    let cycle = "groups:\n  - {name: a, critical: true, depends_on: [b], selectors: []}\n  - {name: b, critical: true, depends_on: [a], selectors: []}\n";
    let r = c.api.raw(
        "POST",
        &format!("/clusters/{cluster}/strategies/?name=cyc"),
        Some(&c.api.token),
        Some(("application/yaml", cycle.as_bytes().to_vec())),
    );
    assert_eq!(r.status, 422);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("a -> b -> a")
            || r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("b -> a -> b"),
        "{}",
        r.body
    );
    assert_eq!(
        c.api
            .get(&format!("/clusters/{cluster}/strategies/"))
            .unwrap(),
        json!([]),
        "nothing was stored"
    );
    // Validation against the cluster's nodes, without storing.
    let good =
        "groups:\n  - {name: all, critical: true, depends_on: [], selectors: [{node_tags: [x]}]}\n";
    let r = c.api.raw(
        "POST",
        &format!("/clusters/{cluster}/strategies/validate/"),
        Some(&c.api.token),
        Some(("application/yaml", good.as_bytes().to_vec())),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body["text"].as_str().unwrap().contains("n1"),
        "{}",
        r.body
    );
    // The same through plinthctl, which reads the answer into its type: the words, or the JSON as sent.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("good.yaml");
    std::fs::write(&file, good).unwrap();
    let ctl = |extra: &[&str]| {
        let cert = c.cert_path();
        let out = std::process::Command::new(bin("plinthctl"))
            .args([
                "--controller",
                c.url.as_str(),
                "--token",
                c.api.token.as_str(),
            ])
            .args(["--ca-cert", cert.to_str().unwrap()])
            .args(extra)
            .args([
                "strategy",
                "validate",
                &cluster.to_string(),
                file.to_str().unwrap(),
            ])
            .output()
            .expect("plinthctl runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(ctl(&[]), r.body["text"].as_str().unwrap());
    let json: serde_json::Value = serde_json::from_str(&ctl(&["-o", "json"])).unwrap();
    assert_eq!(json, r.body);
    // Naming a strategy that does not exist refuses the deployment.
    let d = c.api.send(
        "PUT",
        &format!("/clusters/{cluster}/deploy/?strategy=nope"),
        None,
    );
    assert_eq!(d.status, 404, "{}", d.body);
}
