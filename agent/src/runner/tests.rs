use super::*;
use crate::journal::Journal;
use crate::shutdown;
use crate::testutil::{list, shell, task};
use plinth_common::wire::{ResultStatus as S, TaskKind};
use serde_json::json;
use std::collections::VecDeque;
use std::sync::Mutex;

/// A gate that answers from a script, then "ready".
#[derive(Default)]
struct ScriptedGate {
    answers: Mutex<VecDeque<Result<GateAnswer, String>>>,
    asked: Mutex<u32>,
}

impl Gatekeeper for ScriptedGate {
    fn ask<'a>(&'a self, _d: u64, _t: &'a str) -> BoxFuture<'a, Result<GateAnswer, String>> {
        *self.asked.lock().unwrap() += 1;
        let next = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Ok(GateAnswer {
                node_key: String::new(),
                deployment: 0,
                task: String::new(),
                nonce: String::new(),
                ready: true,
                waiting_for: vec![],
                blocked: false,
            }));
        Box::pin(async move { next })
    }
}

struct Fixture {
    dir: tempfile::TempDir,
    journal: SharedJournal,
    gate: ScriptedGate,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let journal = SharedJournal::new(Journal::open(&dir.path().join("journal")).unwrap());
        Fixture {
            dir,
            journal,
            gate: ScriptedGate::default(),
        }
    }

    fn settings(&self) -> RunnerSettings {
        RunnerSettings {
            work_dir: self.dir.path().join("work"),
            kill_grace: Duration::from_millis(200),
            backoff_min: Duration::from_millis(10),
            backoff_max: Duration::from_millis(50),
            services: Arc::new(Services::local(self.dir.path().join("state"))),
        }
    }

    async fn run(&self, l: &TaskList) -> RunEnd {
        let (_t, sd) = shutdown::channel();
        Runner::new(self.journal.clone(), &self.gate, self.settings(), sd)
            .run(l)
            .await
            .unwrap()
    }

    /// (task, attempt, status, last) of every record.
    fn trail(&self) -> Vec<(String, u32, S, bool)> {
        self.journal.with(|j| {
            j.records()
                .iter()
                .map(|r| (r.task_id.clone(), r.attempt, r.status, r.last))
                .collect()
        })
    }

    fn records(&self) -> Vec<TaskResult> {
        self.journal.with(|j| j.records().to_vec())
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

fn t(id: &str, attempt: u32, status: S, last: bool) -> (String, u32, S, bool) {
    (id.to_string(), attempt, status, last)
}

fn quick(cmd: &str) -> serde_json::Value {
    json!({"cmd": cmd, "retries": 0})
}

#[tokio::test]
async fn tasks_run_in_order_and_every_step_is_journaled() {
    let f = Fixture::new();
    let out = f.path("order");
    let mut skipped = shell("c", json!({"cmd": format!("echo c >> {out}")}));
    skipped.skip_reason = Some("condition is false".into());
    let l = list(
        1,
        vec![
            shell("a", json!({"cmd": format!("echo a >> {out}")})),
            task("b", TaskKind::Stage, json!({})),
            skipped,
            shell("d", json!({"cmd": format!("echo d >> {out}")})),
        ],
    );
    assert_eq!(f.run(&l).await, RunEnd::Completed { failed_task: None });
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "a\nd\n");
    assert_eq!(
        f.trail(),
        vec![
            t("a", 1, S::Running, false),
            t("a", 1, S::Succeeded, true),
            t("b", 1, S::Succeeded, true),
            t("c", 1, S::Skipped, true),
            t("d", 1, S::Running, false),
            t("d", 1, S::Succeeded, true),
        ]
    );
    let r = f.records();
    assert_eq!(r[3].message, "condition is false");
    assert!(r.iter().all(|r| r.deployment_id == 42 && r.revision == 1));
    assert_eq!(r[1].exit_code, Some(0));
}

#[tokio::test]
async fn a_failed_task_skips_the_rest() {
    let f = Fixture::new();
    let l = list(
        2,
        vec![
            shell("a", quick("echo nope >&2; exit 4")),
            shell("b", quick("true")),
            task("c", TaskKind::Group, json!({})),
        ],
    );
    assert_eq!(
        f.run(&l).await,
        RunEnd::Completed {
            failed_task: Some("a".into())
        }
    );
    assert_eq!(
        f.trail(),
        vec![
            t("a", 1, S::Running, false),
            t("a", 1, S::Failed, true),
            t("b", 1, S::Skipped, true),
            t("c", 1, S::Skipped, true),
        ]
    );
    let r = f.records();
    assert_eq!(r[1].exit_code, Some(4));
    assert_eq!(r[1].stderr_tail, "nope\n");
    assert_eq!(r[2].message, "not run: task a failed");
}

#[tokio::test]
async fn retries_follow_the_policy_with_the_interval_between_attempts() {
    let f = Fixture::new();
    let count = f.path("count");
    // Fails twice, succeeds on the third attempt.
    let cmd = format!(
        "n=$(cat {count} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {count}; [ $n -ge 3 ]"
    );
    let l = list(
        3,
        vec![shell(
            "flaky",
            json!({"cmd": cmd, "retries": 2, "interval": 0.3}),
        )],
    );
    assert_eq!(f.run(&l).await, RunEnd::Completed { failed_task: None });
    assert_eq!(
        f.trail(),
        vec![
            t("flaky", 1, S::Running, false),
            t("flaky", 1, S::Failed, false),
            t("flaky", 2, S::Running, false),
            t("flaky", 2, S::Failed, false),
            t("flaky", 3, S::Running, false),
            t("flaky", 3, S::Succeeded, true),
        ]
    );
    let r = f.records();
    assert!(
        r[2].started_at_ms - r[1].started_at_ms >= 300,
        "interval respected"
    );

    // With one retry fewer it fails for good.
    let f = Fixture::new();
    let count = f.path("count");
    let cmd = format!(
        "n=$(cat {count} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {count}; [ $n -ge 3 ]"
    );
    let l = list(
        3,
        vec![shell(
            "flaky",
            json!({"cmd": cmd, "retries": 1, "interval": 0}),
        )],
    );
    assert_eq!(
        f.run(&l).await,
        RunEnd::Completed {
            failed_task: Some("flaky".into())
        }
    );
    assert_eq!(f.trail().last().unwrap(), &t("flaky", 2, S::Failed, true));
}

#[tokio::test]
async fn bad_parameters_fail_clearly() {
    let f = Fixture::new();
    let l = list(
        4,
        vec![
            task("p", TaskKind::Puppet, json!({"manifest": "x.pp"})),
            shell("b", quick("true")),
        ],
    );
    f.run(&l).await;
    assert_eq!(
        f.trail(),
        vec![t("p", 1, S::Failed, true), t("b", 1, S::Skipped, true)]
    );
    assert!(
        f.records()[0]
            .message
            .contains("task p: parameter `puppet_manifest`: is required for puppet tasks"),
        "{}",
        f.records()[0].message
    );

    let f = Fixture::new();
    let l = list(5, vec![shell("nocmd", json!({"timeout": 5}))]);
    f.run(&l).await;
    assert_eq!(f.trail(), vec![t("nocmd", 1, S::Failed, true)]);
    assert!(
        f.records()[0].message.contains("`cmd`"),
        "{}",
        f.records()[0].message
    );
}

#[tokio::test]
async fn a_crash_during_an_attempt_is_reported_interrupted_and_retried() {
    let f = Fixture::new();
    let done = f.path("done");
    let l = list(
        6,
        vec![
            shell("first", json!({"cmd": format!("echo ran >> {done}")})),
            shell(
                "second",
                json!({"cmd": "echo second", "retries": 1, "interval": 0}),
            ),
            shell("third", quick("true")),
        ],
    );
    // The journal a killed agent leaves: `first` done, `second` running.
    let rec = |task: &str, status: S, last: bool| TaskResult {
        deployment_id: 42,
        revision: 6,
        task_id: task.into(),
        attempt: 1,
        status,
        last,
        exit_code: None,
        started_at_ms: 1,
        duration_ms: 0,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        message: String::new(),
        details: serde_json::Value::Null,
    };
    f.journal.record(rec("first", S::Running, false)).unwrap();
    f.journal.record(rec("first", S::Succeeded, true)).unwrap();
    f.journal.record(rec("second", S::Running, false)).unwrap();

    assert_eq!(f.run(&l).await, RunEnd::Completed { failed_task: None });
    assert!(
        !std::path::Path::new(&done).exists(),
        "a finished task is not run again"
    );
    assert_eq!(
        f.trail()[3..].to_vec(),
        vec![
            t("second", 1, S::Interrupted, false),
            t("second", 2, S::Running, false),
            t("second", 2, S::Succeeded, true),
            t("third", 1, S::Running, false),
            t("third", 1, S::Succeeded, true),
        ]
    );
}

#[tokio::test]
async fn an_interrupted_last_attempt_fails_the_task_and_skips_the_rest() {
    let f = Fixture::new();
    let l = list(
        7,
        vec![shell("only", quick("true")), shell("next", quick("true"))],
    );
    f.journal
        .record(TaskResult {
            deployment_id: 42,
            revision: 7,
            task_id: "only".into(),
            attempt: 1,
            status: S::Running,
            last: false,
            exit_code: None,
            started_at_ms: 1,
            duration_ms: 0,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
            message: String::new(),
            details: serde_json::Value::Null,
        })
        .unwrap();
    assert_eq!(
        f.run(&l).await,
        RunEnd::Completed {
            failed_task: Some("only".into())
        }
    );
    assert_eq!(
        f.trail()[1..].to_vec(),
        vec![
            t("only", 1, S::Interrupted, true),
            t("next", 1, S::Skipped, true)
        ]
    );
}

#[tokio::test]
async fn stopping_interrupts_and_the_next_run_goes_on() {
    let f = Fixture::new();
    let l = list(
        8,
        vec![shell(
            "long",
            json!({"cmd": "sleep 30; echo done", "retries": 1, "interval": 0}),
        )],
    );
    let (trigger, sd) = shutdown::channel();
    let runner = Runner::new(f.journal.clone(), &f.gate, f.settings(), sd);
    let (end, _) = tokio::join!(runner.run(&l), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.trigger();
    });
    assert_eq!(end.unwrap(), RunEnd::Stopped);
    assert_eq!(
        f.trail(),
        vec![
            t("long", 1, S::Running, false),
            t("long", 1, S::Interrupted, false)
        ]
    );

    // After the restart the second (last) attempt runs; make it quick by resuming a list whose command
    // the test can observe finishing.
    let l2 = list(
        8,
        vec![shell(
            "long",
            json!({"cmd": "echo resumed", "retries": 1, "interval": 0}),
        )],
    );
    assert_eq!(f.run(&l2).await, RunEnd::Completed { failed_task: None });
    assert_eq!(
        f.trail()[2..].to_vec(),
        vec![
            t("long", 2, S::Running, false),
            t("long", 2, S::Succeeded, true)
        ]
    );
}

#[tokio::test]
async fn gated_tasks_wait_for_ready_and_fail_when_blocked() {
    let f = Fixture::new();
    let waiting = GateAnswer {
        node_key: String::new(),
        deployment: 0,
        task: String::new(),
        nonce: String::new(),
        ready: false,
        waiting_for: vec!["node 2: ceph-mon".into()],
        blocked: false,
    };
    f.gate
        .answers
        .lock()
        .unwrap()
        .extend([Err("connection refused".to_string()), Ok(waiting.clone())]);
    let mut gated = shell("g", quick("true"));
    gated.gated = true;
    let l = list(9, vec![gated.clone()]);
    assert_eq!(f.run(&l).await, RunEnd::Completed { failed_task: None });
    assert_eq!(*f.gate.asked.lock().unwrap(), 3);
    assert_eq!(f.trail().last().unwrap(), &t("g", 1, S::Succeeded, true));

    let f = Fixture::new();
    f.gate.answers.lock().unwrap().push_back(Ok(GateAnswer {
        node_key: String::new(),
        deployment: 0,
        task: String::new(),
        nonce: String::new(),
        ready: false,
        waiting_for: vec!["node 2: ceph-mon".into()],
        blocked: true,
    }));
    let l = list(10, vec![gated, shell("after", quick("true"))]);
    f.run(&l).await;
    assert_eq!(
        f.trail(),
        vec![t("g", 1, S::Failed, true), t("after", 1, S::Skipped, true)]
    );
    assert!(f.records()[0].message.contains("node 2: ceph-mon"));
}

#[tokio::test]
async fn a_reboot_is_resumed_after_the_restart_not_reported_interrupted() {
    let f = Fixture::new();
    let boot = f.dir.path().join("boot_id");
    std::fs::write(&boot, "boot-1\n").unwrap();
    let mut services = Services::local(f.dir.path().join("state"));
    services.reboot.boot_id_path = boot.clone();
    services.reboot.command = vec!["true".into()];
    let settings = RunnerSettings {
        services: Arc::new(services),
        ..f.settings()
    };
    let l = list(
        10,
        vec![
            task("reboot", TaskKind::Reboot, json!({"timeout": 60})),
            shell("after", quick("true")),
        ],
    );
    let marker = f.dir.path().join("state/reboot.json");
    let (trigger, sd) = shutdown::channel();
    let runner = Runner::new(f.journal.clone(), &f.gate, settings.clone(), sd);
    let (end, _) = tokio::join!(runner.run(&l), async {
        while !marker.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        trigger.trigger();
    });
    assert_eq!(end.unwrap(), RunEnd::Stopped);
    assert_eq!(f.trail(), vec![t("reboot", 1, S::Running, false)]);

    std::fs::write(&boot, "boot-2\n").unwrap();
    let (_t, sd) = shutdown::channel();
    let end = Runner::new(f.journal.clone(), &f.gate, settings, sd)
        .run(&l)
        .await
        .unwrap();
    assert_eq!(end, RunEnd::Completed { failed_task: None });
    assert_eq!(
        f.trail(),
        vec![
            t("reboot", 1, S::Running, false),
            t("reboot", 1, S::Succeeded, true),
            t("after", 1, S::Running, false),
            t("after", 1, S::Succeeded, true),
        ]
    );
}

#[tokio::test]
async fn a_noop_list_runs_nothing_but_puppet() {
    let f = Fixture::new();
    let marker = f.path("ran");
    let mut l = list(
        11,
        vec![
            shell("sh", quick(&format!("touch {marker}"))),
            task(
                "up",
                TaskKind::UploadFile,
                json!({"path": marker, "data": "x"}),
            ),
            task("rb", TaskKind::Reboot, json!({})),
        ],
    );
    l.noop = true;
    assert_eq!(f.run(&l).await, RunEnd::Completed { failed_task: None });
    assert_eq!(
        f.trail(),
        vec![
            t("sh", 1, S::Skipped, true),
            t("up", 1, S::Skipped, true),
            t("rb", 1, S::Skipped, true),
        ]
    );
    assert!(!std::path::Path::new(&marker).exists());
    assert!(f.records()[0].message.contains("no-op deployment"));
}

#[tokio::test]
async fn an_interrupted_attempt_says_what_the_start_up_sweep_ended() {
    use crate::tracking::{AttemptKey, Tracker};
    let f = Fixture::new();
    let state = f.dir.path().join("state");
    // What a killed agent leaves: attempt 1 of `long` running, its command still running and recorded.
    let earlier = Tracker::detect(&state);
    let mut hold = earlier
        .hold(AttemptKey {
            deployment_id: 42,
            revision: 6,
            task_id: "long".into(),
            attempt: 1,
        })
        .unwrap();
    let mut command = tokio::process::Command::new("sleep");
    command.arg("60");
    hold.prepare(&mut command);
    let child = command.spawn().unwrap();
    hold.started(child.id().unwrap()).unwrap();
    std::mem::forget(hold);
    drop(child);
    f.journal
        .record(TaskResult {
            deployment_id: 42,
            revision: 6,
            task_id: "long".into(),
            attempt: 1,
            status: S::Running,
            last: false,
            exit_code: None,
            started_at_ms: 1,
            duration_ms: 0,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
            message: String::new(),
            details: serde_json::Value::Null,
        })
        .unwrap();

    let tracker = Tracker::detect(&state);
    tracker.sweep(Duration::from_millis(200)).await;
    let mut services = Services::local(state);
    services.tracker = Arc::new(tracker);
    let mut settings = f.settings();
    settings.services = Arc::new(services);
    let (_t, sd) = shutdown::channel();
    let l = list(
        6,
        vec![shell(
            "long",
            json!({"cmd": "true", "retries": 1, "interval": 0}),
        )],
    );
    let end = Runner::new(f.journal.clone(), &f.gate, settings, sd)
        .run(&l)
        .await
        .unwrap();
    assert_eq!(end, RunEnd::Completed { failed_task: None });
    let interrupted = f
        .records()
        .into_iter()
        .find(|r| r.status == S::Interrupted)
        .unwrap();
    assert!(
        interrupted
            .message
            .contains("1 of its processes were still running and were ended"),
        "{}",
        interrupted.message
    );
    assert_eq!(interrupted.details["processes_ended"], 1);
    assert_eq!(interrupted.details["processes_remaining"], 0);
}
