use super::*;
use crate::executor::Services;
use crate::shutdown;
use crate::testutil;
use plinth_common::wire::OUTPUT_TAIL_BYTES;
use serde_json::json;
use std::sync::Arc;

fn ctx(work_dir: &std::path::Path, shutdown: crate::shutdown::Shutdown) -> AttemptContext {
    AttemptContext {
        work_dir: work_dir.to_path_buf(),
        kill_grace: Duration::from_millis(300),
        deployment_id: 42,
        revision: 7,
        task_id: "t1".into(),
        attempt: 1,
        shutdown,
        noop: false,
        services: Arc::new(Services::local(work_dir.join("state"))),
    }
}

async fn run(params: serde_json::Value, work_dir: &std::path::Path) -> Outcome {
    let (_trigger, sd) = shutdown::channel();
    let prepared = prepare(&testutil::shell("t1", params)).unwrap();
    prepared.executor.run(&ctx(work_dir, sd)).await
}

#[tokio::test]
async fn success_captures_output() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(json!({"cmd": "echo hello; echo warn >&2"}), dir.path()).await;
    assert_eq!(o.status, ResultStatus::Succeeded);
    assert_eq!(o.exit_code, Some(0));
    assert_eq!(o.stdout_tail, "hello\n");
    assert_eq!(o.stderr_tail, "warn\n");
    assert_eq!(o.details["stdout_bytes"], 6);
}

#[tokio::test]
async fn failure_reports_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(json!({"cmd": "echo broken >&2; exit 3"}), dir.path()).await;
    assert_eq!(o.status, ResultStatus::Failed);
    assert_eq!(o.exit_code, Some(3));
    assert_eq!(o.stderr_tail, "broken\n");
    assert!(o.message.contains("code 3"), "{}", o.message);
}

#[tokio::test]
async fn a_command_killed_by_a_signal_fails() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(json!({"cmd": "kill -9 $$"}), dir.path()).await;
    assert_eq!(o.status, ResultStatus::Failed);
    assert_eq!(o.exit_code, None);
    assert!(o.message.contains("SIGKILL"), "{}", o.message);
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group_including_grandchildren() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let stubborn = dir.path().join("stubborn");
    // One grandchild that would write a marker after 2 s, one that ignores SIGTERM and would write another.
    let cmd = format!(
        "(sleep 2; touch {m}) & (trap '' TERM; sleep 2; touch {s}) & echo started; sleep 60",
        m = marker.display(),
        s = stubborn.display()
    );
    let started = std::time::Instant::now();
    let o = run(json!({"cmd": cmd, "timeout": 0.5}), dir.path()).await;
    assert_eq!(o.status, ResultStatus::TimedOut);
    assert_eq!(o.stdout_tail, "started\n");
    assert!(o.message.contains("timed out"), "{}", o.message);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!marker.exists(), "a grandchild survived the timeout");
    assert!(!stubborn.exists(), "a grandchild ignoring SIGTERM survived");
}

#[tokio::test]
async fn output_keeps_only_the_tail() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(
        json!({"cmd": "head -c 100000 /dev/zero | tr '\\000' a; echo END"}),
        dir.path(),
    )
    .await;
    assert_eq!(o.status, ResultStatus::Succeeded);
    assert_eq!(o.stdout_tail.len(), OUTPUT_TAIL_BYTES);
    assert!(o.stdout_tail.ends_with("aaaEND\n"));
    assert_eq!(o.details["stdout_bytes"], 100_004);
    assert_eq!(o.details["output_truncated"], true);
}

#[tokio::test]
async fn env_and_cwd_are_applied() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let o = run(
        json!({"cmd": "pwd; echo \"$GREETING $COUNT $PLINTH_TASK_ID $PLINTH_DEPLOYMENT_ID $PLINTH_ATTEMPT\"",
               "cwd": "sub", "env": {"GREETING": "hi there", "COUNT": 3}}),
        dir.path(),
    )
    .await;
    assert_eq!(o.status, ResultStatus::Succeeded, "{o:?}");
    let real = std::fs::canonicalize(dir.path().join("sub")).unwrap();
    assert_eq!(
        o.stdout_tail,
        format!("{}\nhi there 3 t1 42 1\n", real.display())
    );
    // The default working directory is the work directory, made when missing.
    let work = dir.path().join("work");
    let o = run(json!({"cmd": "pwd"}), &work).await;
    assert_eq!(
        o.stdout_tail.trim(),
        std::fs::canonicalize(&work).unwrap().display().to_string()
    );
}

#[tokio::test]
async fn a_missing_cwd_fails_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(
        json!({"cmd": "true", "cwd": "/nonexistent/place"}),
        dir.path(),
    )
    .await;
    assert_eq!(o.status, ResultStatus::Failed);
    assert!(o.message.contains("/nonexistent/place"), "{}", o.message);
}

#[tokio::test]
async fn stopping_the_agent_interrupts_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let (trigger, sd) = shutdown::channel();
    let prepared = prepare(&testutil::shell("t1", json!({"cmd": "sleep 60"}))).unwrap();
    let c = ctx(dir.path(), sd);
    let started = std::time::Instant::now();
    let (o, _) = tokio::join!(prepared.executor.run(&c), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.trigger();
    });
    assert_eq!(o.status, ResultStatus::Interrupted);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn parameters_are_checked() {
    for (params, field) in [
        (json!({}), "cmd"),
        (json!({"cmd": ""}), "cmd"),
        (json!({"cmd": ["ls"]}), "cmd"),
        (json!({"cmd": "x", "cwd": 5}), "cwd"),
        (json!({"cmd": "x", "env": "A=1"}), "env"),
        (json!({"cmd": "x", "env": {"A": {"b": 1}}}), "env"),
        (json!({"cmd": "x", "env": {"A=B": "1"}}), "env"),
        (json!({"cmd": "x", "timeout": -1}), "timeout"),
    ] {
        let e = prepare(&testutil::shell("bad", params.clone())).unwrap_err();
        assert_eq!(e.field, field, "{params}");
        assert_eq!(e.task, "bad");
    }
    let p = prepare(&testutil::shell("ok", json!({"cmd": "true"}))).unwrap();
    assert_eq!(p.policy, DEFAULTS);
}
