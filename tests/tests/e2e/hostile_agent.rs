//! A killed agent leaves nothing running twice. An agent killed with SIGKILL in the middle of a task
//! leaves the task's processes behind (its grandchildren do not hear of the death); the restarted agent
//! must end them, report the attempt interrupted, and only then retry. Real controller and agent
//! processes; the tasks' writers append to a file, which shows who ran when.

use plinth_e2e::*;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(180);

/// The lines of the shared log (missing: none).
fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Deploys `task` (made for the agent's work directory) to a fresh agent, kills the agent (SIGKILL) once the first attempt's writers write to
/// `log` in its work directory, shows they outlive it, restarts it, and checks what a user would see:
/// the deployment succeeds on the second attempt, the first is reported interrupted, no writer of the
/// first attempt writes once the second started (`retry_marker` lines are the second attempt's), and
/// nothing writes after the deployment ended.
fn kill_mid_attempt_then_retry(name: &str, task: impl FnOnce(&Path) -> Value, retry_marker: &str) {
    let c = Controller::start();
    let mut a = Agent::start(&c, name, &["x"]);
    let nodes = c.api.wait_nodes(1);
    let task = task(&a.work());
    let task_id = task["id"].as_str().unwrap().to_string();
    let cid = c
        .api
        .cluster_with_graph(name, json!({"default": {"tasks": [task]}}), &[nodes[0].1]);
    let dep = c.api.deploy(cid, "");
    let events = c.api.follow_events(dep);
    let log = a.work().join("log");
    wait_until("the first attempt's writers", LONG, || {
        lines(&log).len() >= 10
    });

    a.kill();
    let at_kill = lines(&log).len();
    wait_until("the writers to go on without the agent", LONG, || {
        lines(&log).len() >= at_kill + 10
    });
    a.restart();
    let report = c.api.wait_deployment(dep, LONG);
    let agent_log = a.log();
    assert_eq!(report["status"], "success", "{report:#}\n{agent_log}");
    let line = task_line(&report, name, &task_id).unwrap();
    assert_eq!(line["status"], "succeeded", "{line:#}");
    assert_eq!(line["attempts"], 2, "{line:#}");

    // No two writers: every line of the first attempt comes before the second attempt's first line.
    let written = lines(&log);
    let first_retry = written
        .iter()
        .position(|l| l == retry_marker)
        .unwrap_or_else(|| panic!("the retry never wrote: {written:?}"));
    let late: Vec<&String> = written[first_retry..]
        .iter()
        .filter(|l| *l != retry_marker)
        .collect();
    assert!(
        late.is_empty(),
        "the first attempt's processes wrote {} lines while the retry ran: {late:?}\n{agent_log}",
        late.len()
    );
    // The file stops growing: every writer of the first attempt has ended (each wrote its process id).
    wait_ended(
        "the first attempt's writers to end",
        &a.work().join("writers"),
        LONG,
    );
    assert_eq!(lines(&log).len(), written.len(), "something still writes");

    // The operator saw the first attempt interrupted, and the agent says what it ended.
    let events = events.join().expect("the event stream");
    assert!(
        events.iter().any(|e| e["event"] == "task_result"
            && e["task"] == task_id
            && e["attempt"] == 1
            && e["status"] == "interrupted"),
        "attempt 1 reported interrupted: {events:#?}"
    );
    assert!(
        agent_log.contains("ended the processes an attempt left running"),
        "{agent_log}"
    );
}

#[test]
fn a_killed_agents_shell_task_is_ended_before_its_retry_and_never_runs_twice() {
    // Attempt 1 leaves a writer in its process group and one in a session of its own, and sleeps;
    // attempt 2 writes twice a second apart and succeeds.
    let cmd = r#"if [ "$PLINTH_ATTEMPT" = 1 ]; then
  sh -c 'echo $$ >> writers; while :; do echo group >> log; sleep 0.05; done' &
  setsid sh -c 'echo $$ >> writers; while :; do echo session >> log; sleep 0.05; done' &
  sleep 600
else
  echo retry >> log; sleep 1; echo retry >> log
fi"#;
    let task = json!({"id": "writer", "type": "shell", "tags": ["x"],
        "parameters": {"cmd": cmd, "retries": 1, "interval": 0, "timeout": 900}});
    kill_mid_attempt_then_retry("shell-node", |_| task, "retry");
}

#[test]
fn a_killed_agents_puppet_run_is_ended_before_its_retry_and_never_runs_twice() {
    // Real puppet: its exec runs the command in a session of its own. On attempt 1 the command leaves
    // a writer and sleeps; on attempt 2 it writes once and puppet succeeds.
    let task = |work: &Path| {
        let manifest = work.join("site.pp");
        std::fs::write(
            &manifest,
            format!(
                r#"exec {{ 'writer':
  command  => 'if [ "$PLINTH_ATTEMPT" = 1 ]; then sh -c "echo \$\$ >> writers; while :; do echo puppet >> log; sleep 0.05; done" & sleep 600; else echo retry >> log; fi',
  cwd      => '{work}',
  provider => shell,
  timeout  => 900,
}}
"#,
                work = work.display()
            ),
        )
        .unwrap();
        json!({"id": "writer", "type": "puppet", "tags": ["x"],
            "parameters": {"puppet_manifest": manifest, "retries": 1, "interval": 0, "timeout": 900}})
    };
    kill_mid_attempt_then_retry("puppet-node", task, "retry");
}
