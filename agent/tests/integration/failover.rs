//! The agent process with two scripted controllers of one site (same certificate, same signing key)
//! over real mutual TLS: a controller answering 503 is left for the next, the agent stays with the one
//! that works, and results journaled while it changes controller reach the new one.

use crate::support;

use plinth_common::wire::ResultStatus as S;
use serde_json::json;
use std::time::Duration;
use support::*;

const LIMIT: Duration = Duration::from_secs(30);

fn has(ctl: &FakeController, task: &str, status: S) -> bool {
    ctl.log(|l| {
        l.results
            .iter()
            .any(|r| r.task_id == task && r.status == status)
    })
}

#[test]
fn a_controller_answering_503_is_left_for_the_next_and_results_follow() {
    let a = FakeController::start();
    let b = FakeController::start_beside(&a);
    // The first controller is down behind its proxy from the start; the second answers 401 until the
    // node registers with it, as a controller that does not know a key does.
    a.log(|l| l.down = true);
    b.log(|l| l.forget = true);
    let agent = AgentProcess::start_for(&[&a, &b], "", "");
    std::thread::sleep(Duration::from_secs(3));
    eprintln!("LOG {}", agent.log());
    std::thread::sleep(Duration::from_secs(3));
    eprintln!("LOG {}", agent.log());
    wait_until("registration with the second controller", LIMIT, || {
        b.log(|l| !l.registrations.is_empty())
    });
    assert!(a.log(|l| l.registrations.is_empty()));
    let node = agent.fingerprint();

    // A list from the second controller runs; its task waits for the test.
    let gate = agent.work().join("go");
    b.push_list(list(
        &node,
        1,
        json!([{"id": "slow", "type": "shell", "parameters": {
            "cmd": format!("while [ ! -f {} ]; do sleep 0.05; done; echo finished", p(&gate))}}]),
    ));
    wait_until("the task to start", LIMIT, || has(&b, "slow", S::Running));
    // Several seconds of polls, results and heartbeats: all of them stay with the second controller.
    wait_until("heartbeats to the second controller", LIMIT, || {
        b.log(|l| l.heartbeats >= 2)
    });
    assert_eq!(a.log(|l| l.polls + l.heartbeats), 0);

    // Now the second goes down and the first comes back: the result goes to the first.
    a.log(|l| l.down = false);
    b.log(|l| l.down = true);
    std::fs::write(&gate, "").unwrap();
    wait_until("the result at the first controller", LIMIT, || {
        has(&a, "slow", S::Succeeded)
    });
    assert!(!has(&b, "slow", S::Succeeded), "the second was down");
    // Its work comes from the first controller from here on.
    a.push_list(list(&node, 2, json!([{"id": "after", "type": "stage"}])));
    wait_until("the next list from the first controller", LIMIT, || {
        has(&a, "after", S::Succeeded)
    });

    let log = agent.log();
    assert!(
        log.contains(&format!("switching to controller {}/", b.url)),
        "{log}"
    );
    assert!(
        log.contains(&format!("switching to controller {}/", a.url)),
        "{log}"
    );
}
