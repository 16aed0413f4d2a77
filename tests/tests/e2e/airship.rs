//! Airship as its operators have it, end to end: a global + site pair of strategies from a real site
//! (rendered as Deckhand renders it, with the site's layering policy), a DeploymentConfiguration choosing
//! the strategy and the phase timeouts, Shipyard's actions (`update_site`, `redeploy_server`) with their
//! steps, the seed's timeout rule, and `simulate` failures that never apply. Real controller and agent processes; `plinthctl` as operators run it.

use plinth_e2e::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(180);

fn corpus() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus")).to_path_buf()
}

/// The treasuremap site's layering policy: Deckhand renders a site only with one.
fn layering_policy() -> PathBuf {
    corpus().join("treasuremap-v1.9/global/layering-policy.yaml")
}

fn plinthctl(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin("plinthctl"))
        .args(args)
        .output()
        .expect("plinthctl runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// `plinthctl` against this controller.
fn ctl(c: &Controller, args: &[&str]) -> (i32, String, String) {
    let cert = c.cert_path();
    let head = [
        "--controller",
        c.url.as_str(),
        "--token",
        c.api.token.as_str(),
        "--ca-cert",
        cert.to_str().unwrap(),
    ];
    plinthctl(&[&head[..], args].concat())
}

/// Prepare and deploy graphs: each node appends the phase to `phases` in its work directory.
fn phase_graphs() -> Value {
    let task = |phase: &str| {
        json!({"id": format!("{phase}-node"), "type": "shell", "tags": ["*"],
               "parameters": {"cmd": format!("echo {phase} >> phases"), "retries": 0, "timeout": 60}})
    };
    json!({"prepare": {"tasks": [task("prepare")]}, "deploy": {"tasks": [task("deploy")]},
           "default": {"tasks": [task("default")]}})
}

const CONFIGURATION: &str = r#"
schema: shipyard/DeploymentConfiguration/v1
metadata:
  schema: metadata/Document/v1
  name: deployment-configuration
  layeringDefinition: {abstract: false, layer: global}
  storagePolicy: cleartext
data:
  physical_provisioner:
    deployment_strategy: deployment-strategy
    prepare_node_timeout: 1200
    deploy_timeout: 2400
    deploy_node_timeout: 5
  armada:
    manifest: full-site
"#;

#[test]
fn a_site_design_with_its_configuration_deploys_through_shipyards_actions() {
    let c = Controller::start();
    let key = c.public_key();
    // The treasuremap site's node names for its first rack; `masters` and `workers` tags as its global
    // strategy assumes.
    let agents: Vec<Agent> = [
        ("stl1r01s01", "masters"),
        ("stl1r01s05", "workers"),
        ("stl1r01s06", "workers"),
    ]
    .iter()
    .map(|(name, tag)| Agent::start_with(&c, name, &[tag], &key, ""))
    .collect();
    let ids: Vec<u64> = c.api.wait_nodes(3).into_iter().map(|(_, id)| id).collect();
    let cluster = c.api.cluster_with_graph("stl1", phase_graphs(), &ids);
    let cl = cluster.to_string();
    let dir = tempfile::tempdir().unwrap();

    // The site's global and site strategies, as the corpus has them: the site one replaces the global one.
    let global = corpus().join("shipyard/treasuremap/global-deployment-strategy.yaml");
    let site = corpus().join("shipyard/treasuremap/stl1-deployment-strategy.yaml");
    let policy = layering_policy();
    let (code, out, err) = ctl(
        &c,
        &[
            "strategy",
            "create",
            &cl,
            "-f",
            policy.to_str().unwrap(),
            "-f",
            global.to_str().unwrap(),
            "-f",
            site.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}{out}");
    assert!(out.contains("deployment-strategy"), "{out}");
    assert!(
        err.contains("strategy from")
            && err.contains("stl1-deployment-strategy.yaml document 1")
            && err.contains("replacing")
            && err.contains("global-deployment-strategy.yaml"),
        "{err}"
    );
    assert!(err.contains("\"replacement\" appears twice"), "{err}");
    // GET gives the document as uploaded (the site document, envelope and metadata); plain on request.
    let uploaded = c
        .api
        .get(&format!(
            "/clusters/{cluster}/strategies/deployment-strategy/"
        ))
        .unwrap();
    assert_eq!(
        uploaded["document"]["schema"],
        "shipyard/DeploymentStrategy/v1"
    );
    assert_eq!(uploaded["document"]["metadata"]["replacement"], true);
    assert_eq!(
        uploaded["document"]["metadata"]["layeringDefinition"]["layer"],
        "site"
    );
    let plain = c
        .api
        .get(&format!(
            "/clusters/{cluster}/strategies/deployment-strategy/?format=plain"
        ))
        .unwrap();
    assert_eq!(plain["document"]["groups"][1]["name"], "worker_group_0");
    assert!(plain["document"].get("metadata").is_none());

    // The deployment configuration names the strategy and the timeouts; an unknown key is kept and named.
    let config = dir.path().join("deployment-configuration.yaml");
    std::fs::write(&config, CONFIGURATION).unwrap();
    let (code, out, err) = ctl(&c, &["config", "set", &cl, config.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}{out}");
    assert!(
        err.contains("data.physical_provisioner.deploy_node_timeout")
            && err.contains("did you mean \"deploy_timeout\"?"),
        "{err}"
    );

    // update_site without naming a strategy: the configured one, with the configured timeouts.
    let (code, out, err) = ctl(&c, &["deploy", "start", &cl, "--action", "update_site"]);
    assert_eq!(code, 0, "{err}{out}");
    assert!(err.contains("strategy: deployment-strategy"), "{err}");
    assert!(
        err.contains("named by the deployment configuration \"deployment-configuration\""),
        "{err}"
    );
    assert!(
        err.contains("phase prepare (graph type prepare): times out after 1200 s")
            && err.contains("phase deploy (graph type deploy): times out after 2400 s"),
        "{err}"
    );
    let id = out
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string();
    let report = c.api.wait_deployment(id.parse().unwrap(), LONG);
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(report["action"], "update_site");
    let steps: Vec<&str> = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "prepare masters",
            "deploy masters",
            "prepare worker_group_0",
            "deploy worker_group_0",
            "prepare workers",
            "deploy workers"
        ]
    );
    let (code, out, err) = ctl(&c, &["deploy", "report", &id]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Action: update_site"), "{out}");
    assert!(out.contains(&format!("step/{id}/prepare/masters")), "{out}");
    assert!(out.contains("at least 60% succeed"), "{out}");
    let (_, out, _) = ctl(&c, &["deploy", "report", &id, "-o", "json"]);
    let json: Value = serde_json::from_str(&out).unwrap();
    let workers = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "workers")
        .unwrap();
    assert_eq!(
        workers["success_criteria"],
        json!({"percent_successful_nodes": 60})
    );
    assert_eq!(workers["depends_on"], json!(["worker_group_0"]));

    // redeploy_server: one node through prepare and deploy, outside the strategy's groups.
    let (code, out, err) = ctl(
        &c,
        &[
            "deploy",
            "start",
            &cl,
            "--action",
            "redeploy_server",
            "--node",
            "stl1r01s06",
            "--watch",
            "-o",
            "json",
        ],
    );
    assert_eq!(code, 0, "{err}{out}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["action"], "redeploy_server");
    let chosen_by = report["chosen_by"].as_str().unwrap();
    assert!(
        chosen_by.starts_with("redeploy_server: node \"stl1r01s06\" alone")
            && chosen_by.contains("prepare_node_timeout 1200 s, deploy_timeout 2400 s"),
        "{chosen_by}"
    );
    let groups: Vec<&str> = report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(groups, ["redeploy_server"]);
    let nodes: Vec<&str> = report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, ["stl1r01s06"]);
    let redeployed = agents.iter().find(|a| a.name == "stl1r01s06").unwrap();
    let phases = std::fs::read_to_string(redeployed.work().join("phases")).unwrap();
    assert_eq!(phases, "prepare\ndeploy\nprepare\ndeploy\n");
    let other = agents.iter().find(|a| a.name == "stl1r01s05").unwrap();
    let phases = std::fs::read_to_string(other.work().join("phases")).unwrap();
    assert_eq!(
        phases, "prepare\ndeploy\n",
        "the other nodes were left alone"
    );

    // A configuration naming a strategy the cluster does not have refuses the deployment, clearly.
    let missing = CONFIGURATION.replace(
        "deployment_strategy: deployment-strategy",
        "deployment_strategy: stl2-strategy",
    );
    std::fs::write(&config, missing).unwrap();
    assert_eq!(
        ctl(&c, &["config", "set", &cl, config.to_str().unwrap()]).0,
        0
    );
    let (code, _, err) = ctl(&c, &["deploy", "start", &cl]);
    assert_eq!(code, 3, "refused by the controller: {err}");
    assert!(
        err.contains("names strategy \"stl2-strategy\"") && err.contains("does not have"),
        "{err}"
    );
    // Shipyard's own configuration samples: the bad one is refused naming the field; the full one says
    // `all-at-once`, which no stored strategy is named: every node at once, with its deploy_timeout.
    let sample = |name: &str| corpus().join("shipyard").join(name);
    let bad = sample("deploymentConfiguration_bad_manifest.yaml");
    let (code, _, err) = ctl(&c, &["config", "set", &cl, bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("data.armada.manifest"), "{err}");
    let full = sample("deploymentConfiguration_full_valid.yaml");
    assert_eq!(
        ctl(&c, &["config", "set", &cl, full.to_str().unwrap()]).0,
        0
    );
    let (code, out, err) = ctl(&c, &["deploy", "start", &cl, "--watch"]);
    assert_eq!(code, 0, "{err}{out}");
    assert!(
        err.contains("strategy: none (every node at once)")
            && err.contains("says \"all-at-once\"")
            && err.contains("phase deploy (graph type default): times out after 3600 s"),
        "{err}"
    );
    // Shipyard's documents load as PyYAML reads them; unknown group fields are kept and named.
    let doc =
        "schema: shipyard/DeploymentStrategy/v1\nmetadata: {name: yes-no}\ndata:\n  groups:\n    \
               - {name: all, critical: yes, depends_on: [], selectors: [], owner: ops}\n";
    let r = c.api.raw(
        "POST",
        &format!("/clusters/{cluster}/strategies/"),
        Some(&c.api.token),
        Some(("application/yaml", doc.as_bytes().to_vec())),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["document"]["data"]["groups"][0]["owner"], "ops");
    assert!(
        r.body["source"]["warnings"][0]
            .as_str()
            .unwrap()
            .contains("group \"all\", field \"owner\": unknown field"),
        "{}",
        r.body
    );
    let plain = c
        .api
        .get(&format!(
            "/clusters/{cluster}/strategies/yes-no/?format=plain"
        ))
        .unwrap();
    assert_eq!(plain["document"]["groups"][0]["critical"], true);
}

#[test]
fn a_phase_reaching_its_timeout_fails_its_group_and_withdraws_unfinished_lists() {
    let c = Controller::start();
    let key = c.public_key();
    let _a = Agent::start_with(&c, "n1", &["x"], &key, "");
    let _b = Agent::start_with(&c, "n2", &["x"], &key, "");
    let mut late = Agent::start_with(&c, "late", &["x"], &key, "");
    let nodes = c.api.wait_nodes(3);
    let ids: Vec<u64> = nodes.iter().map(|(_, id)| *id).collect();
    let late_id = nodes.iter().find(|(n, _)| n == "late").unwrap().1;
    late.kill();
    let graphs = json!({
        "deploy": {"tasks": [shell("work", &["x"], "touch ran-deploy")]},
        "after": {"tasks": [shell("after", &["x"], "touch ran-after")]},
    });
    let cluster = c.api.cluster_with_graph("t", graphs, &ids);
    // Stored under the default name, the strategy is used without naming it. Two of three nodes meet the
    // criteria; the timeout fails the group all the same. (15 s: ample for the two live nodes' one task.)
    let strategy = "groups:\n  - {name: all, critical: true, depends_on: [], selectors: [], \
                    success_criteria: {percent_successful_nodes: 50}}\n\
                    phases: [{name: deploy, graph_type: deploy, timeout: 15}]\n";
    let r = c.api.raw(
        "PUT",
        &format!("/clusters/{cluster}/strategies/deployment-strategy/"),
        Some(&c.api.token),
        Some(("application/yaml", strategy.as_bytes().to_vec())),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let started = c
        .api
        .ok("PUT", &format!("/clusters/{cluster}/deploy/"), None);
    assert_eq!(started["strategy"]["name"], "deployment-strategy");
    assert_eq!(started["strategy"]["phases"][0]["timeout_secs"], 15);
    // What it runs is the summary above; the orchestration state itself is not sent.
    assert_eq!(started["state"], Value::Null, "{started:#}");
    let first = started["id"].as_u64().unwrap();
    let report = c.api.wait_deployment(first, LONG);
    assert_eq!(report["status"], "failed", "{report:#}");
    let group = &report["groups"][0];
    assert_eq!(
        group["reason"],
        "deploy timed out after 15 s with 1 node unfinished (late)"
    );
    assert_eq!(node_line(&report, "n1").unwrap()["status"], "success");
    let late_line = node_line(&report, "late").unwrap();
    assert_eq!(late_line["status"], "failure");
    assert_eq!(late_line["reason"], "timed out after 15 s in phase deploy");

    // The late node's list was withdrawn: back online, it runs the next deployment, never the old list.
    late.restart();
    wait_until("the late agent registers again", LONG, || {
        late.log().matches("registered; admitted").count() >= 2
    });
    let next = c
        .api
        .deploy(cluster, &format!("graph_type=after&nodes={late_id}"));
    let report = c.api.wait_deployment(next, LONG);
    assert_eq!(report["status"], "success", "{report:#}");
    assert!(late.work().join("ran-after").exists());
    assert!(
        !late.work().join("ran-deploy").exists(),
        "the withdrawn list ran:\n{}",
        late.log()
    );
}

#[test]
fn simulate_reports_failures_that_never_apply_and_speaks_in_sentences() {
    let dir = tempfile::tempdir().unwrap();
    let strategy = dir.path().join("s.yaml");
    let inventory = dir.path().join("nodes.yaml");
    std::fs::write(
        &strategy,
        "groups:\n  - {name: ntp, critical: true, depends_on: [], selectors: [{node_names: [ntp01]}], \
         success_criteria: {minimum_successful_nodes: 1}}\n  \
         - {name: ctl, critical: true, depends_on: [ntp], selectors: [{node_tags: [control]}]}\n",
    )
    .unwrap();
    std::fs::write(
        &inventory,
        "- {name: ntp01, tags: [ntp]}\n- {name: ctl01, tags: [control]}\n- {name: spare}\n",
    )
    .unwrap();
    let (s, inv) = (strategy.to_str().unwrap(), inventory.to_str().unwrap());
    // A site design's two layers, offline: the site strategy replaces the global one.
    let site_inventory = dir.path().join("site.yaml");
    std::fs::write(
        &site_inventory,
        "- {name: m1, tags: [masters]}\n- {name: stl1r01s05, tags: [workers]}\n- {name: w9, tags: [workers]}\n",
    )
    .unwrap();
    let global = corpus().join("shipyard/treasuremap/global-deployment-strategy.yaml");
    let site = corpus().join("shipyard/treasuremap/stl1-deployment-strategy.yaml");
    let policy = layering_policy();
    let (code, out, err) = plinthctl(&[
        "strategy",
        "check",
        policy.to_str().unwrap(),
        global.to_str().unwrap(),
        site.to_str().unwrap(),
        "--inventory",
        site_inventory.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("worker_group_0") && out.contains("stl1r01s05"),
        "{out}"
    );
    assert!(
        err.contains("replacing") && err.contains("global-deployment-strategy.yaml"),
        "{err}"
    );
    let (code, out, _) = plinthctl(&[
        "strategy",
        "simulate",
        "-f",
        policy.to_str().unwrap(),
        "-f",
        global.to_str().unwrap(),
        "-f",
        site.to_str().unwrap(),
        "--inventory",
        site_inventory.to_str().unwrap(),
        "--fail",
        "w9:deploy",
        "-o",
        "json",
    ]);
    let report: Value = serde_json::from_str(&out).unwrap();
    // workers needs 60%: 1 of 2 is 50%, and workers is critical.
    assert_eq!((code, report["status"].as_str()), (1, Some("failed")));

    // ntp01 fails prepare, so ctl01 never reaches deploy and spare is in no group.
    let (code, out, err) = plinthctl(&[
        "strategy",
        "simulate",
        s,
        "--inventory",
        inv,
        "--fail",
        "ntp01:prepare",
        "--fail",
        "ctl01:deploy",
        "--fail",
        "spare:prepare",
        "--fail",
        "ntp01:deploy",
    ]);
    assert_eq!(code, 1, "the deployment fails: {err}");
    assert!(
        out.contains("ctl01:deploy (failed) never applied: ctl01 never reached deploy"),
        "{out}"
    );
    assert!(
        out.contains("spare:prepare (failed) never applied: no group selects spare"),
        "{out}"
    );
    assert!(
        out.contains(
            "ntp01:deploy (failed) never applied: ntp01 failed prepare before reaching deploy"
        ),
        "{out}"
    );
    for text in [&out, &err] {
        assert!(
            !text.contains(" { ") && !text.contains("Some("),
            "a debug structure: {text}"
        );
    }
    let (_, out, _) = plinthctl(&[
        "strategy",
        "simulate",
        s,
        "--inventory",
        inv,
        "--fail",
        "ctl01:deploy",
        "-o",
        "json",
    ]);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["status"], "success_with_failures");
    // ctl01 fails deploy here: it applied, nothing is left over.
    assert_eq!(report["never_applied"], json!([]));
}
