//! Operators stop what they started (`plinthctl deploy cancel`, Nailgun's `stop_deployment`) and continue
//! what failed (`plinthctl deploy retry`), with real agents: a cancelled deployment's running tasks are
//! ended, nothing new starts, and the report says who cancelled it.

use plinth_e2e::*;
use serde_json::json;
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(120);

fn plinthctl(c: &Controller, args: &[&str]) -> (bool, String, String) {
    c.plinthctl(args)
}

#[test]
fn a_cancelled_deployment_ends_its_running_tasks_and_a_retry_finishes_the_work() {
    let c = Controller::start();
    let agents = [
        Agent::start(&c, "cancel-1", &[]),
        Agent::start(&c, "cancel-2", &[]),
    ];
    let ids: Vec<u64> = c.api.wait_nodes(2).iter().map(|(_, id)| *id).collect();
    // The long task sleeps unless the node was made fast; each run writes a line, so a second run shows.
    // Its shell writes its process id: once that process has ended, `long-done` can never be written.
    let long = "echo run >> runs; if [ ! -e fast ]; then echo $$ > long.pid; touch started; sleep 47; fi; \
                touch long-done";
    let graph = json!({"default": {"tasks": [
        shell("long", &["*"], long),
        {"id": "after", "type": "shell", "tags": ["*"], "requires": ["long"],
         "parameters": {"cmd": "touch after", "retries": 0}},
    ]}});
    let cid = c.api.cluster_with_graph("cancel", graph, &ids);
    let dep = c.api.deploy(cid, "");
    for a in &agents {
        let started = a.work().join("started");
        wait_until("the long task to start", LONG, || started.exists());
    }
    let asked = Instant::now();
    let (ok, out, err) = plinthctl(&c, &["deploy", "cancel", &dep.to_string()]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("cancelled"), "{out}");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "cancelled", "{report:#}");
    assert!(
        report["notices"]
            .to_string()
            .contains("cancelled by token admin"),
        "the report says who: {report:#}"
    );
    for a in &agents {
        assert_eq!(
            task_line(&report, &a.name, "long").map(|t| t["status"].clone()),
            Some(json!("interrupted")),
            "{report:#}"
        );
        // The running task was ended: its sleep never finishes, and nothing after it starts.
        let marker = a.work().join("long-done");
        wait_until("the agents to end the running task", LONG, || {
            a.log().contains("the controller cancelled the deployment")
        });
        wait_ended(
            "the long task's shell to end",
            &a.work().join("long.pid"),
            LONG,
        );
        assert!(!marker.exists() && !a.work().join("after").exists());
    }
    assert!(
        asked.elapsed() < Duration::from_secs(45),
        "ended well before the sleep would have"
    );
    let none = c
        .api
        .send("PUT", &format!("/clusters/{cid}/stop_deployment/"), None);
    assert_eq!(none.status, 409, "nothing runs any more: {}", none.body);
    let again = c
        .api
        .send("POST", &format!("/deployments/{dep}/cancel"), None);
    assert_eq!(again.status, 409);

    // Retry: the nodes that did not succeed, with the same inputs.
    for a in &agents {
        std::fs::write(a.work().join("fast"), "").unwrap();
    }
    let (ok, out, err) = plinthctl(&c, &["deploy", "retry", &dep.to_string(), "--watch"]);
    assert!(ok, "{out}{err}");
    for a in &agents {
        assert!(a.work().join("after").exists(), "{}", a.log());
        assert_eq!(read(&a.work().join("runs")).unwrap().lines().count(), 2);
    }
    let retried = c.api.get("/deployments").unwrap();
    let latest = retried
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_u64().unwrap())
        .max()
        .unwrap();
    assert_ne!(latest, dep);
    assert_eq!(
        c.api.get(&format!("/deployments/{latest}")).unwrap()["status"],
        "success"
    );
    let nothing = c
        .api
        .send("POST", &format!("/deployments/{latest}/retry"), None);
    assert_eq!(
        nothing.status, 422,
        "every node succeeded: {}",
        nothing.body
    );
}

#[test]
fn nailguns_stop_deployment_cancels_the_clusters_running_deployment() {
    let c = Controller::start();
    let agent = Agent::start(&c, "stop-1", &[]);
    let id = c.api.wait_nodes(1)[0].1;
    let graph = json!({"default": {"tasks": [shell("long", &["*"], "touch started; sleep 53")]}});
    let cid = c.api.cluster_with_graph("stop", graph, &[id]);
    let dep = c.api.deploy(cid, "");
    wait_until("the task to start", LONG, || {
        agent.work().join("started").exists()
    });
    let stopped = c
        .api
        .send("PUT", &format!("/clusters/{cid}/stop_deployment/"), None);
    assert_eq!(stopped.status, 202, "{}", stopped.body);
    assert_eq!(stopped.body["status"], "cancelled");
    assert_eq!(c.api.wait_deployment(dep, LONG)["status"], "cancelled");
    let (made, viewer, err) = c.command(&["token", "create", "--name", "viewer", "--read-only"]);
    assert!(made, "the read-only token is made: {err}");
    let viewer = viewer.trim().to_string();
    let refused = c.api.raw(
        "POST",
        &format!("/deployments/{dep}/cancel"),
        Some(&viewer),
        None,
    );
    assert_eq!(refused.status, 403, "a read-only token cannot cancel");
}
