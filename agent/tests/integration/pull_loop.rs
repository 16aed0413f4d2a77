//! The agent process against a scripted controller over real mutual TLS: registration, long-poll, signed
//! lists, results, refusals, re-registration, clean stop and resume.

use crate::support;

use plinth_common::wire::ResultStatus as S;
use serde_json::json;
use std::time::Duration;
use support::*;

const LIMIT: Duration = Duration::from_secs(30);

fn trail(ctl: &FakeController) -> Vec<(String, u32, S, bool)> {
    ctl.log(|l| {
        l.results
            .iter()
            .map(|r| (r.task_id.clone(), r.attempt, r.status, r.last))
            .collect()
    })
}

fn has(ctl: &FakeController, task: &str, attempt: u32, status: S, last: bool) -> bool {
    trail(ctl).contains(&(task.to_string(), attempt, status, last))
}

#[test]
fn registers_runs_a_list_reports_and_resumes_after_a_stop() {
    let ctl = FakeController::start();
    let mut agent = AgentProcess::start(
        &ctl,
        "ro quiet plinth.tags=gpu plinth.labels=row=a",
        "name = \"n1\"\ntags = [\"compute\"]\n",
    );
    wait_until("registration", LIMIT, || {
        ctl.log(|l| !l.registrations.is_empty())
    });
    let node = agent.fingerprint();
    ctl.log(|l| {
        let r = &l.registrations[0];
        assert_eq!(r.name.as_deref(), Some("n1"));
        assert_eq!(r.tags, vec!["compute", "gpu"]);
        assert_eq!(r.labels.get("row").map(String::as_str), Some("a"));
        assert!(r.facts.kernel.is_some() && r.facts.collected_in_us.is_some());
        // The TLS client certificate carries the node key.
        assert_eq!(l.peers[0], node);
    });

    let work = agent.work();
    ctl.push_list(list(
        &node,
        1,
        json!([
            {"id": "hello", "type": "shell", "parameters": {"cmd": "echo hi > out; echo done"}},
            {"id": "anchor", "type": "stage"},
            {"id": "boom", "type": "shell", "parameters": {"cmd": "echo broken >&2; exit 3", "retries": 0}},
            {"id": "never", "type": "shell", "parameters": {"cmd": "touch never"}},
        ]),
    ));
    wait_until("the list's last result", LIMIT, || {
        has(&ctl, "never", 1, S::Skipped, true)
    });
    assert_eq!(
        trail(&ctl),
        vec![
            ("hello".into(), 1, S::Running, false),
            ("hello".into(), 1, S::Succeeded, true),
            ("anchor".into(), 1, S::Succeeded, true),
            ("boom".into(), 1, S::Running, false),
            ("boom".into(), 1, S::Failed, true),
            ("never".into(), 1, S::Skipped, true),
        ],
        "{}",
        agent.log()
    );
    ctl.log(|l| {
        let hello = &l.results[1];
        assert_eq!(hello.stdout_tail, "done\n");
        let boom = &l.results[4];
        assert_eq!(boom.exit_code, Some(3));
        assert_eq!(boom.stderr_tail, "broken\n");
        assert_eq!(l.results[5].message, "not run: task boom failed");
    });
    assert_eq!(std::fs::read_to_string(work.join("out")).unwrap(), "hi\n");
    assert!(!work.join("never").exists());
    assert_eq!(
        std::fs::read_to_string(agent.state().join("revision")).unwrap(),
        "1"
    );
    wait_until("a heartbeat", LIMIT, || ctl.log(|l| l.heartbeats > 0));

    // A long task; the agent is stopped while it runs.
    let runs = work.join("runs");
    ctl.push_list(list(
        &node,
        2,
        json!([{"id": "long", "type": "shell", "parameters": {
            "cmd": format!("echo run >> {r}; if [ $(wc -l < {r}) -lt 2 ]; then sleep 60; fi", r = p(&runs)),
            "retries": 1, "interval": 0}}]),
    ));
    wait_until("the long task to start", LIMIT, || {
        has(&ctl, "long", 1, S::Running, false)
    });
    assert_eq!(agent.terminate(), Some(0), "{}", agent.log());
    let journal = std::fs::read_to_string(agent.state().join("journal/results.jsonl")).unwrap();
    assert!(journal.contains("\"interrupted\""), "{journal}");

    // Restarted, it reports the interrupted attempt and runs the next one.
    agent.spawn();
    wait_until("the resumed task to succeed", LIMIT, || {
        has(&ctl, "long", 2, S::Succeeded, true)
    });
    assert!(
        has(&ctl, "long", 1, S::Interrupted, false),
        "{:?}",
        trail(&ctl)
    );
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "run\nrun\n");
    assert_eq!(agent.terminate(), Some(0));
}

#[test]
fn refuses_forged_lists_and_registers_again_when_forgotten() {
    let ctl = FakeController::start();
    let agent = AgentProcess::start(&ctl, "", "");
    wait_until("registration", LIMIT, || {
        ctl.log(|l| !l.registrations.is_empty())
    });
    let node = agent.fingerprint();
    let marker = agent.work().join("MARKER");
    let tasks = json!([{"id": "plant", "type": "shell", "parameters": {"cmd": format!("touch {}", p(&marker))}}]);

    let forged = list(&node, 5, tasks.clone());
    let stranger = plinth_common::signing::signing_key_from_seed([5; 32]);
    ctl.push(Box::new(move |nonce| {
        let mut l = forged.clone();
        l.nonce = nonce.to_string();
        serde_json::to_vec(&plinth_common::signing::sign_task_list(&stranger, &l)).unwrap()
    }));
    let other_node = plinth_common::signing::fingerprint(
        &plinth_common::signing::signing_key_from_seed([6; 32]).verifying_key(),
    );
    ctl.push_list(list(&other_node, 5, tasks.clone()));
    ctl.push(Box::new(|_| {
        vec![b' '; plinth_common::wire::MAX_TASK_LIST_BYTES + 1]
    }));
    wait_until("three refusals", LIMIT, || {
        ctl.log(|l| l.refusals.len() == 3)
    });
    ctl.log(|l| {
        assert!(
            l.refusals[0].reason.contains("signature"),
            "{}",
            l.refusals[0].reason
        );
        assert_eq!(l.refusals[0].claimed_revision, Some(5));
        assert!(
            l.refusals[1].reason.contains("not this node"),
            "{}",
            l.refusals[1].reason
        );
        assert!(
            l.refusals[2].reason.contains("limit"),
            "{}",
            l.refusals[2].reason
        );
        assert!(l.results.is_empty());
    });
    assert!(!marker.exists(), "a refused list ran");
    assert_eq!(
        std::fs::read_to_string(agent.state().join("revision")).ok(),
        None,
        "no revision was accepted"
    );

    // The controller forgets the node: the next 401 makes the agent register again.
    ctl.log(|l| l.forget = true);
    wait_until("a second registration", LIMIT, || {
        ctl.log(|l| l.registrations.len() >= 2)
    });
    ctl.push_list(list(&node, 5, tasks));
    wait_until("the genuine list to run", LIMIT, || {
        has(&ctl, "plant", 1, S::Succeeded, true)
    });
    assert!(marker.exists());
}

#[test]
fn results_made_while_the_controller_answers_503_arrive_when_it_is_back() {
    let ctl = FakeController::start();
    let agent = AgentProcess::start(&ctl, "", "");
    wait_until("registration", LIMIT, || {
        ctl.log(|l| !l.registrations.is_empty())
    });
    let node = agent.fingerprint();
    let gate = agent.work().join("go");
    // The task waits for the test to let it finish, so the controller is down when it ends.
    ctl.push_list(list(
        &node,
        1,
        json!([{"id": "slow", "type": "shell", "parameters": {
            "cmd": format!("while [ ! -f {} ]; do sleep 0.05; done; echo finished", p(&gate))}}]),
    ));
    wait_until("the task to start", LIMIT, || {
        has(&ctl, "slow", 1, S::Running, false)
    });
    ctl.log(|l| l.down = true);
    std::fs::write(&gate, "").unwrap();
    let journal = agent.state().join("journal/results.jsonl");
    wait_until("the result to be journaled", LIMIT, || {
        std::fs::read_to_string(&journal)
            .map(|j| j.contains("\"succeeded\""))
            .unwrap_or(false)
    });
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !has(&ctl, "slow", 1, S::Succeeded, true),
        "sent while down?"
    );
    ctl.log(|l| l.down = false);
    wait_until("the result to arrive", LIMIT, || {
        has(&ctl, "slow", 1, S::Succeeded, true)
    });
    ctl.log(|l| {
        let r = l.results.iter().find(|r| r.status == S::Succeeded).unwrap();
        assert_eq!(r.stdout_tail, "finished\n");
    });
    // The agent kept polling through the outage and is still serving: a new list runs.
    ctl.push_list(list(&node, 2, json!([{"id": "after", "type": "stage"}])));
    wait_until("the next list", LIMIT, || {
        has(&ctl, "after", 1, S::Succeeded, true)
    });
}
