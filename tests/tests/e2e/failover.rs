//! Agents given several controllers (`controllers = [A, B]`) fail over between them, with real
//! processes: a first controller that is not there is passed over for the second; a controller killed
//! mid-deployment is replaced by another one on the same data (another port), and the agent takes its
//! results and its next work there.

use plinth_e2e::*;
use serde_json::json;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

/// How the agent's log says it switched to `url`.
fn switched_to(url: &str) -> String {
    format!("switching to controller {url}/")
}

#[test]
fn a_dead_first_controller_is_passed_over_for_the_second() {
    let c = Controller::start();
    // Nothing listens on this port (held, never listening): connections to it are refused.
    let dead_port = reserve_port();
    let dead = format!("https://127.0.0.1:{}", dead_port.port);
    let agent = Agent::start_for_controllers(&c, &[&dead, &c.url], "n1", &["x"]);
    let nodes = c.api.wait_nodes(1);

    // A file from the controller (a download) and a shell task, reported back.
    let files = c.data_dir().join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("motd"), "served by the second controller\n").unwrap();
    let copied = agent.work().join("etc/motd");
    let graph = json!({"default": {"tasks": [
        {"id": "copy-motd", "type": "copy_files", "tags": ["x"],
         "parameters": {"files": [{"src": "motd", "dst": copied}]}},
        shell("hello", &["x"], "echo hello > hello"),
    ]}});
    let cid = c.api.cluster_with_graph("failover", graph, &[nodes[0].1]);
    let dep = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(dep, LONG);
    let log = || format!("{}\n--- agent ---\n{}", c.log(), agent.log());
    assert_eq!(report["status"], "success", "{report:#}\n{}", log());
    for task in ["copy-motd", "hello"] {
        assert_eq!(
            task_line(&report, "n1", task).unwrap()["status"],
            "succeeded",
            "{report:#}"
        );
    }
    assert_eq!(read(&copied).unwrap(), "served by the second controller\n");
    assert_eq!(read(&agent.work().join("hello")).unwrap().trim(), "hello");

    let log = agent.log();
    assert!(log.contains(&switched_to(&c.url)), "{log}");
    assert!(
        !log.contains(&switched_to(&dead)),
        "the agent stays with the controller that works: {log}"
    );
}

#[test]
fn a_killed_controller_is_replaced_by_another_on_the_same_data() {
    let mut c = Controller::start();
    let first = c.url.clone();
    let second_port = reserve_port();
    let second = format!("https://127.0.0.1:{}", second_port.port);
    let agent = Agent::start_for_controllers(&c, &[&first, &second], "n1", &["x"]);
    let nodes = c.api.wait_nodes(1);
    let work = agent.work();

    // The first task waits for the test's word, so the first controller dies while it runs.
    let graph = json!({"default": {"tasks": [
        shell("wait", &["x"], "touch started; while [ ! -f go ]; do sleep 0.1; done; echo 1 >> steps"),
        {"id": "after", "type": "shell", "tags": ["x"], "requires": ["wait"],
         "parameters": {"cmd": "echo 2 >> steps", "timeout": 60, "retries": 0}},
    ]}});
    let cid = c.api.cluster_with_graph("takeover", graph, &[nodes[0].1]);
    let dep = c.api.deploy(cid, "");
    wait_until("the first task to start", LONG, || {
        work.join("started").exists()
    });
    c.kill();
    std::fs::write(work.join("go"), "").unwrap();
    wait_until("both tasks to run while no controller is up", LONG, || {
        read(&work.join("steps"))
            .map(|s| s.lines().count() == 2)
            .unwrap_or(false)
    });

    // Another controller on the same database and keys, at the agent's second address.
    c.restart_on(second_port);
    assert_eq!(c.url, second);
    let report = c.api.wait_deployment(dep, LONG);
    let log = || format!("{}\n--- agent ---\n{}", c.log(), agent.log());
    assert_eq!(report["status"], "success", "{report:#}\n{}", log());
    let node = node_line(&report, "n1").unwrap();
    assert_eq!(
        node["finished_tasks"], 2,
        "every result reached the second controller: {node:#}"
    );
    assert!(agent.log().contains(&switched_to(&second)), "{}", log());

    // New work comes from the second controller.
    let graph = json!({"tasks": [shell("next", &["x"], "echo next > next")]});
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/deployment_graphs/next/"),
        Some(&graph),
    );
    let dep = c.api.deploy(cid, "graph_type=next");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success", "{report:#}\n{}", log());
    assert_eq!(read(&work.join("next")).unwrap().trim(), "next");
    assert_eq!(
        read(&work.join("steps")).unwrap(),
        "1\n2\n",
        "each task ran once"
    );
}
