//! The agent process given everything on its kernel command line, as a network boot image is
//! (`plinth.controller=`, `plinth.key=`, `plinth.tls=sha256:...`), over real mutual TLS: the pin of the
//! controller's TLS key admits that controller and no other, whatever the other's certificate says.

use crate::support;

use plinth_common::wire::ResultStatus as S;
use serde_json::json;
use std::time::Duration;
use support::*;

const LIMIT: Duration = Duration::from_secs(30);

/// Waits for `cond`, failing with the agent's log when it does not come.
fn wait_showing(agent: &AgentProcess, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + LIMIT;
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}: {}",
            agent.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_tls_key_pin_admits_its_controller_and_refuses_another() {
    let right = FakeController::start();
    let wrong = FakeController::start();
    assert_ne!(right.tls_pin(), wrong.tls_pin());
    // Both answer 401 until the node registers with them, as a controller that does not know a key does
    // (else the agent, whose first registration went to the wrong one, would poll the right one
    // without registering).
    right.log(|l| l.forget = true);
    wrong.log(|l| l.forget = true);

    // Given the wrong controller first and the right one second: it refuses the first at the
    // handshake, moves on, registers with the right one and runs what it sends.
    let agent = AgentProcess::start_from_cmdline(&format!(
        "console=ttyS0 plinth.controller={},{} plinth.key={} plinth.tls={}",
        wrong.url,
        right.url,
        right.public_key(),
        right.tls_pin()
    ));
    wait_showing(&agent, "registration with the pinned controller", || {
        right.log(|l| !l.registrations.is_empty())
    });
    let node = agent.fingerprint();
    right.push_list(list(
        &node,
        1,
        json!([{"id": "hello", "type": "shell", "parameters": {"cmd": "echo pinned"}}]),
    ));
    wait_showing(&agent, "the task's result", || {
        right.log(|l| {
            l.results
                .iter()
                .any(|r| r.task_id == "hello" && r.status == S::Succeeded)
        })
    });
    let log = agent.log();
    assert!(
        log.contains(&format!("not the pinned plinth.tls={}", right.tls_pin()))
            && log.contains(&wrong.tls_pin()),
        "the refusal names both keys: {log}"
    );
    assert!(
        log.contains(&format!("switching to controller {}/", right.url)),
        "{log}"
    );
    assert!(wrong.log(|l| l.registrations.is_empty() && l.polls == 0));

    // Given only the other controller, with the first one's pin: it never registers, and says why.
    let refused = AgentProcess::start_from_cmdline(&format!(
        "plinth.controller={} plinth.key={} plinth.tls={}",
        wrong.url,
        right.public_key(),
        right.tls_pin()
    ));
    wait_showing(&refused, "the agent's refusal of the controller", || {
        refused
            .log()
            .matches(&format!("not the pinned plinth.tls={}", right.tls_pin()))
            .count()
            >= 2
    });
    assert!(wrong.log(|l| l.registrations.is_empty() && l.polls == 0));
}

#[test]
fn a_malformed_pin_stops_the_agent_naming_the_key() {
    let ctl = FakeController::start();
    let mut agent = AgentProcess::start_from_cmdline(&format!(
        "plinth.controller={} plinth.key={} plinth.tls=sha256:0123",
        ctl.url,
        ctl.public_key()
    ));
    wait_until("the agent to stop", LIMIT, || {
        agent.log().contains("plinth.tls")
    });
    assert_eq!(agent.terminate(), Some(2), "{}", agent.log());
    let log = agent.log();
    assert!(
        log.contains("4 hex characters after sha256:, want 64"),
        "{log}"
    );
    assert!(ctl.log(|l| l.registrations.is_empty()));
}
