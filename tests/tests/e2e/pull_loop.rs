//! The pull loop end to end: register → accept → deploy → results → report, with real processes.

use plinth_e2e::*;
use serde_json::json;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

#[test]
fn register_accept_deploy_report_with_several_agents() {
    let c = Controller::start_with(&[]);
    let agents = [
        Agent::start(&c, "web-1", &["web"]),
        Agent::start(&c, "web-2", &["web"]),
        Agent::start(&c, "db-1", &["db"]),
    ];
    let nodes = c.api.wait_nodes(3);
    let all = c.api.get("/nodes").unwrap();
    assert!(
        all.as_array()
            .unwrap()
            .iter()
            .all(|n| n["admission"] == "discovered"),
        "new nodes wait for an operator: {all:#}"
    );
    for (_, id) in &nodes {
        let accepted = c.api.ok("POST", &format!("/nodes/{id}/accept"), None);
        assert_eq!(accepted["admission"], "accepted");
    }
    let shown = c.api.get(&format!("/nodes/{}", nodes[0].1)).unwrap();
    assert!(
        shown["facts"]["kernel"].is_string(),
        "facts are shown: {shown:#}"
    );
    assert_eq!(shown["online"], true);

    let graph = json!({"default": {"tasks": [
        shell("prepare", &["*"], "mkdir -p site && echo prepared > site/prepare"),
        {"id": "flaky", "type": "shell", "tags": ["web"], "requires": ["prepare"],
         "parameters": {"cmd": "if [ -f .once ]; then echo second; else touch .once; echo first >&2; exit 3; fi",
                        "retries": 2, "interval": 0, "timeout": 30}},
        shell("web-only", &["web"], "echo web > site/web"),
        shell("db-only", &["db"], "echo db > site/db"),
    ]}});
    let ids: Vec<u64> = nodes.iter().map(|(_, id)| *id).collect();
    let cid = c.api.cluster_with_graph("e2e", graph, &ids);
    let dep = c.api.deploy(cid, "graph_type=default");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(
        report["status"],
        "success",
        "report: {report:#}\n{}",
        c.log()
    );

    for a in &agents {
        assert_eq!(
            read(&a.work().join("site/prepare")).unwrap().trim(),
            "prepared"
        );
        let line = node_line(&report, &a.name).unwrap();
        assert_eq!(line["status"], "success");
    }
    assert!(
        agents[0].work().join("site/web").exists() && agents[1].work().join("site/web").exists()
    );
    assert!(
        !agents[2].work().join("site/web").exists(),
        "web tasks do not run on the db node"
    );
    assert!(agents[2].work().join("site/db").exists());
    let flaky = task_line(&report, "web-1", "flaky").unwrap();
    assert_eq!(
        flaky["attempts"], 2,
        "the failed first attempt was retried: {flaky:#}"
    );
    assert_eq!(flaky["status"], "succeeded");
    assert!(task_line(&report, "db-1", "flaky").is_none());

    // Roles moved from pending to deployed, nodes are ready.
    let node = c.api.get(&format!("/nodes/{}", ids[0])).unwrap();
    assert_eq!(node["status"], "ready");

    // A second deployment while none runs is fine; a failing task fails the default (critical) group.
    let graph = json!({"tasks": [shell("boom", &["db"], "echo broken >&2; exit 7")]});
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/deployment_graphs/breakdb/"),
        Some(&graph),
    );
    let dep = c.api.deploy(cid, "graph_type=breakdb");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "failed");
    let boom = task_line(&report, "db-1", "boom").unwrap();
    assert_eq!(boom["exit_code"], 7);
    assert!(boom["stderr_tail"].as_str().unwrap().contains("broken"));
    assert_eq!(
        node_line(&report, "web-1").unwrap()["status"],
        "success",
        "nodes without the task succeed"
    );
}

#[test]
fn a_second_deployment_on_a_cluster_gets_409() {
    let c = Controller::start();
    let _a = Agent::start(&c, "slow-1", &["x"]);
    let nodes = c.api.wait_nodes(1);
    let cid = c.api.cluster_with_graph(
        "busy",
        json!({"default": {"tasks": [shell("sleep", &["x"], "sleep 3")]}}),
        &[nodes[0].1],
    );
    let first = c.api.deploy(cid, "");
    let second = c.api.send("PUT", &format!("/clusters/{cid}/deploy/"), None);
    assert_eq!(second.status, 409, "{}", second.body);
    assert_eq!(second.body["error"]["code"], "conflict");
    assert_eq!(c.api.wait_deployment(first, LONG)["status"], "success");
}

#[test]
fn a_controller_killed_mid_deployment_resumes_and_loses_no_result() {
    let mut c = Controller::start();
    let a = Agent::start(&c, "n1", &["x"]);
    let b = Agent::start(&c, "n2", &["x"]);
    let nodes = c.api.wait_nodes(2);
    let tasks: Vec<_> = (1..=6)
        .map(|i| {
            shell(
                &format!("step-{i}"),
                &["x"],
                &format!("sleep 0.5; echo {i} >> steps"),
            )
        })
        .collect();
    let ids: Vec<u64> = nodes.iter().map(|(_, id)| *id).collect();
    let cid = c
        .api
        .cluster_with_graph("resume", json!({"default": {"tasks": tasks}}), &ids);
    let dep = c.api.deploy(cid, "");
    wait_until("the first steps to run", LONG, || {
        read(&a.work().join("steps"))
            .map(|s| s.lines().count() >= 2)
            .unwrap_or(false)
    });
    c.kill();
    std::thread::sleep(Duration::from_secs(1));
    c.restart();
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success", "{report:#}\n{}", c.log());
    for name in ["n1", "n2"] {
        let node = node_line(&report, name).unwrap();
        assert_eq!(
            node["finished_tasks"], 6,
            "every result is in the report: {node:#}"
        );
    }
    assert_eq!(
        read(&b.work().join("steps")).unwrap().lines().count(),
        6,
        "each step ran once"
    );
}

#[test]
fn results_made_while_the_controller_is_down_arrive_when_it_is_back() {
    let mut c = Controller::start();
    let a = Agent::start(&c, "n1", &["x"]);
    let nodes = c.api.wait_nodes(1);
    let cid = c.api.cluster_with_graph(
        "down",
        json!({"default": {"tasks": [shell("wait", &["x"], "sleep 2; touch done-1"), shell("after", &["x"], "touch done-2")]}}),
        &[nodes[0].1],
    );
    let dep = c.api.deploy(cid, "");
    wait_until("the task to start", LONG, || {
        c.api
            .get(&format!("/deployments/{dep}"))
            .map(|r| task_line(&r, "n1", "wait").is_some())
            .unwrap_or(false)
    });
    c.kill();
    wait_until(
        "the agent to finish while the controller is down",
        LONG,
        || a.work().join("done-2").exists(),
    );
    c.restart();
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(
        task_line(&report, "n1", "after").unwrap()["status"],
        "succeeded"
    );
}

#[test]
fn an_agent_killed_mid_task_reports_it_interrupted_then_retries() {
    let c = Controller::start();
    let mut a = Agent::start(&c, "n1", &["x"]);
    let nodes = c.api.wait_nodes(1);
    let task = json!({"id": "long", "type": "shell", "tags": ["x"],
        "parameters": {"cmd": "echo run >> runs; sleep 3", "retries": 1, "interval": 0, "timeout": 60}});
    let cid = c.api.cluster_with_graph(
        "interrupt",
        json!({"default": {"tasks": [task]}}),
        &[nodes[0].1],
    );
    let dep = c.api.deploy(cid, "");
    wait_until("the task to start", LONG, || a.work().join("runs").exists());
    a.kill();
    a.restart();
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success", "{report:#}\n{}", a.log());
    assert_eq!(
        read(&a.work().join("runs")).unwrap().lines().count(),
        2,
        "the task ran again"
    );
    let results = c.api.get(&format!("/deployments/{dep}")).unwrap();
    assert_eq!(task_line(&results, "n1", "long").unwrap()["attempts"], 2);
    // With no retries left the interruption fails the task.
    let task = json!({"id": "once", "type": "shell", "tags": ["x"],
        "parameters": {"cmd": "echo run >> once; sleep 3", "retries": 0, "timeout": 60}});
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/deployment_graphs/once/"),
        Some(&json!({"tasks": [task]})),
    );
    let dep = c.api.deploy(cid, "graph_type=once");
    wait_until("the task to start", LONG, || a.work().join("once").exists());
    a.kill();
    a.restart();
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "failed");
    assert_eq!(
        task_line(&report, "n1", "once").unwrap()["status"],
        "interrupted",
        "{report:#}"
    );
}

#[test]
fn sighup_reloads_the_controllers_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("controller.toml");
    std::fs::write(&config, "offline_after_secs = 60\n").unwrap();
    let c = Controller::start_with(&["--config", config.to_str().unwrap()]);
    let key = c.public_key();
    let _early = Agent::start_with(&c, "early", &[], &key, "enrollment_token = \"let-me-in\"");
    let nodes = c.api.wait_nodes(1);
    let early = c.api.get(&format!("/nodes/{}", nodes[0].1)).unwrap();
    assert_eq!(
        early["admission"], "discovered",
        "no token is configured yet"
    );

    std::fs::write(
        &config,
        "offline_after_secs = 60\nenrollment_token = \"let-me-in\"\n",
    )
    .unwrap();
    c.hangup();
    wait_until("the reload", LONG, || {
        c.log().contains("configuration reloaded")
    });
    let _late = Agent::start_with(&c, "late", &[], &key, "enrollment_token = \"let-me-in\"");
    wait_until("the late node admitted by the reloaded token", LONG, || {
        c.api.node_ids().iter().any(|(name, id)| {
            name == "late" && c.api.get(&format!("/nodes/{id}")).unwrap()["admission"] == "accepted"
        })
    });

    std::fs::write(&config, "offline_after_secs = \"soon\"\n").unwrap();
    c.hangup();
    wait_until("the refused reload", LONG, || {
        c.log().contains("configuration not reloaded")
    });
    assert!(
        c.api.get("/nodes").is_ok(),
        "a bad file leaves the controller serving with the old configuration"
    );
}
