//! SIGHUP reloads the configuration: new tags reach the controller in a new registration, settings that
//! need a restart are logged and kept, a broken file keeps the running configuration.

use crate::support;

use nix::sys::signal::Signal;
use plinth_common::wire::ResultStatus as S;
use serde_json::json;
use std::time::Duration;
use support::*;

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn sighup_reloads_tags_and_keeps_what_needs_a_restart() {
    let ctl = FakeController::start();
    let agent = AgentProcess::start(&ctl, "", "tags = [\"compute\"]\n");
    wait_until("registration", LIMIT, || {
        ctl.log(|l| !l.registrations.is_empty())
    });
    let original = std::fs::read_to_string(&agent.config).unwrap();

    // New tags and a new controller address: the tags apply, the address needs a restart.
    let changed = original
        .replace(
            "tags = [\"compute\"]",
            "tags = [\"compute\", \"gpu\"]\nrack = \"r7\"",
        )
        .replace(&ctl.url, "https://127.0.0.1:9");
    std::fs::write(&agent.config, changed).unwrap();
    agent.signal(Signal::SIGHUP);
    wait_until("a registration with the new tags", LIMIT, || {
        ctl.log(|l| {
            l.registrations.last().is_some_and(|r| {
                r.tags == vec!["compute", "gpu"] && r.rack.as_deref() == Some("r7")
            })
        })
    });
    assert!(agent.log().contains("need a restart"), "{}", agent.log());

    // Still talking to the same controller: a list runs.
    ctl.push_list(list(
        &agent.fingerprint(),
        1,
        json!([{"id": "t", "type": "shell", "parameters": {"cmd": "true"}}]),
    ));
    wait_until("the list's result", LIMIT, || {
        ctl.log(|l| {
            l.results
                .iter()
                .any(|r| r.task_id == "t" && r.status == S::Succeeded)
        })
    });

    // A broken file is refused and the agent goes on.
    std::fs::write(&agent.config, "tags = 5\n").unwrap();
    let registrations = ctl.log(|l| l.registrations.len());
    agent.signal(Signal::SIGHUP);
    wait_until("the refusal in the log", LIMIT, || {
        agent.log().contains("configuration not reloaded")
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(ctl.log(|l| l.registrations.len()), registrations);
    let mut agent = agent;
    assert_eq!(agent.terminate(), Some(0), "{}", agent.log());
}
