//! Seed 004's prepare phase checking hardware: a strategy whose groups' prepare phase runs
//! `check_hardware` against each role's expected profile, on real agents. The compute nodes' profile asks
//! for more CPUs than any machine has: they fail in prepare with the difference named, their group fails
//! its success criteria and is not deployed, the group that depends on it is not run, and the others
//! deploy.

use plinth_e2e::*;
use serde_json::{json, Value};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(180);

const STRATEGY: &str = r#"
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
      depends_on: []
      selectors:
        - {node_names: [], node_labels: [], node_tags: [control], rack_names: []}
      success_criteria: {minimum_successful_nodes: 2}
    - name: compute-nodes
      critical: false
      depends_on: [control-nodes]
      selectors:
        - {node_names: [], node_labels: [], node_tags: [compute], rack_names: []}
      success_criteria: {percent_successful_nodes: 50}
    - name: storage-nodes
      critical: false
      depends_on: [compute-nodes]
      selectors:
        - {node_names: [], node_labels: [], node_tags: [storage], rack_names: []}
    - name: monitoring-nodes
      critical: false
      depends_on: [control-nodes]
      selectors:
        - {node_names: [mon01], node_labels: [], node_tags: [], rack_names: []}
"#;

const SITE: &[(&str, &str)] = &[
    ("ctl01", "control"),
    ("ctl02", "control"),
    ("cmp01", "compute"),
    ("cmp02", "compute"),
    ("stor01", "storage"),
    ("mon01", "monitoring"),
];

/// What `uname -m` says here: the agents run on this machine.
fn arch() -> String {
    let out = std::process::Command::new("uname")
        .arg("-m")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Logical CPUs here, as the agents' facts count them.
fn cpus() -> usize {
    std::thread::available_parallelism().unwrap().get()
}

/// Prepare: each role's hardware profile; the compute nodes' asks for 4096 CPUs. Deploy: one task.
fn graphs() -> Value {
    let fits = json!({"cpus": ">= 1", "memory_mb": ">= 64", "arch": arch(),
                      "disks": [{"size_gb": ">= 1"}], "retries": 0});
    let too_much = json!({"cpus": ">= 4096", "memory_mb": ">= 64", "disks": [{"size_gb": ">= 1"}]});
    json!({
        "prepare": {"tasks": [
            {"id": "check-hardware", "type": "check_hardware",
             "tags": ["control", "storage", "monitoring"], "parameters": fits},
            {"id": "check-hardware-compute", "type": "check_hardware",
             "tags": ["compute"], "parameters": too_much},
        ]},
        "deploy": {"tasks": [shell("deploy-node", &["*"], "echo deployed >> deployed")]},
    })
}

fn step<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no step {name}: {report:#}"))
}

#[test]
fn nodes_whose_hardware_differs_from_the_profile_fail_prepare_and_their_dependents_do_not_run() {
    let c = Controller::start_with(&["--auto-accept"]);
    let key = c.public_key();
    let agents: Vec<Agent> = SITE
        .iter()
        .map(|(name, tag)| Agent::start_with(&c, name, &[tag], &key, ""))
        .collect();
    let ids: Vec<u64> = c
        .api
        .wait_nodes(SITE.len())
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    let cluster = c.api.cluster_with_graph("site", graphs(), &ids);
    let created = c.api.raw(
        "POST",
        &format!("/clusters/{cluster}/strategies/"),
        Some(&c.api.token),
        Some(("application/yaml", STRATEGY.as_bytes().to_vec())),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let dep = c.api.deploy(cluster, "strategy=deployment-strategy");
    let report = c.api.wait_deployment(dep, LONG);

    // A non-critical group failed: the deployment succeeds with failures.
    assert_eq!(report["status"], "success_with_failures", "{report:#}");
    let agent = |n: &str| agents.iter().find(|a| a.name == n).unwrap();
    let deployed = |n: &str| agent(n).work().join("deployed").exists();

    // The compute nodes fail in prepare, each with the difference named.
    let expected = format!(
        "the hardware differs from the profile: cpus: expected >= 4096, has {}",
        cpus()
    );
    for n in ["cmp01", "cmp02"] {
        let node = node_line(&report, n).unwrap();
        assert_eq!(node["status"], "failure", "{n}: {node:#}");
        assert_eq!(node["failed_phase"], "prepare", "{n}: {node:#}");
        let task = task_line(&report, n, "check-hardware-compute").unwrap();
        assert_eq!(task["status"], "failed", "{task:#}");
        assert_eq!(task["message"], expected, "{task:#}");
        assert!(!deployed(n), "{n} was deployed after failing prepare");
    }
    let compute = group(&report, "compute-nodes");
    assert_eq!(compute["state"], "failed", "{compute:#}");
    assert!(
        compute["reason"].as_str().unwrap().contains("percent"),
        "{compute:#}"
    );
    assert_eq!(step(&report, "prepare compute-nodes")["state"], "failed");
    assert_eq!(
        step(&report, "deploy compute-nodes")["detail"],
        "FAILED, due to prepare failure"
    );

    // The group that depends on it never runs.
    let storage = group(&report, "storage-nodes");
    assert_eq!(storage["state"], "failed", "{storage:#}");
    assert!(
        storage["reason"].as_str().unwrap().contains("depend"),
        "{storage:#}"
    );
    assert_eq!(
        step(&report, "prepare storage-nodes")["detail"],
        "FAILED, due to dependency (compute-nodes)"
    );
    assert_eq!(
        node_line(&report, "stor01").unwrap()["status"],
        "not_started"
    );
    assert!(task_line(&report, "stor01", "check-hardware").is_none());
    assert!(!deployed("stor01"), "stor01 was never sent anything");

    // The others pass the check, saying what matched, and deploy.
    for (g, nodes) in [
        ("control-nodes", &["ctl01", "ctl02"][..]),
        ("monitoring-nodes", &["mon01"][..]),
    ] {
        assert_eq!(group(&report, g)["state"], "succeeded", "{g}: {report:#}");
        for n in nodes {
            let task = task_line(&report, n, "check-hardware").unwrap();
            assert_eq!(task["status"], "succeeded", "{task:#}");
            let message = task["message"].as_str().unwrap();
            assert!(
                message.starts_with(&format!(
                    "the hardware matches the profile: cpus {} (>= 1); memory_mb ",
                    cpus()
                )) && message.contains(&format!("arch {}", arch()))
                    && message.contains("disk 1 (size_gb >= 1): "),
                "{message}"
            );
            assert_eq!(node_line(&report, n).unwrap()["status"], "success");
            assert!(deployed(n), "{n} was deployed");
        }
    }

    // The operator's report says the same.
    let (ok, out, err) = c.plinthctl(&["deploy", "report", &dep.to_string()]);
    assert!(ok, "{err}");
    assert!(out.contains("cpus: expected >= 4096"), "{out}");
}
