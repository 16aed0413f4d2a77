use super::*;
use plinth_common::wire::ResultStatus;

fn result(revision: u64, task: &str, attempt: u32, status: ResultStatus, last: bool) -> TaskResult {
    TaskResult {
        deployment_id: 1,
        revision,
        task_id: task.into(),
        attempt,
        status,
        last,
        exit_code: None,
        started_at_ms: 1,
        duration_ms: 0,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        message: String::new(),
        details: serde_json::Value::Null,
    }
}

#[test]
fn appended_results_survive_reopen_until_acked() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::open(dir.path()).unwrap();
    j.append(result(1, "a", 1, ResultStatus::Running, false))
        .unwrap();
    j.append(result(1, "a", 1, ResultStatus::Succeeded, true))
        .unwrap();
    j.append(result(1, "b", 1, ResultStatus::Running, false))
        .unwrap();
    assert_eq!(j.unacked_count(), 3);
    let first = j.records()[0].key();
    assert_eq!(j.record_acks(&[first.clone(), first.clone()]).unwrap(), 1);
    drop(j);

    let j = Journal::open(dir.path()).unwrap();
    assert_eq!(j.records().len(), 3);
    assert_eq!(j.unacked_count(), 2);
    let pending = j.unacked(10, usize::MAX);
    assert_eq!(pending[0].status, ResultStatus::Succeeded);
    assert_eq!(pending[1].task_id, "b");
}

#[test]
fn unknown_acks_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::open(dir.path()).unwrap();
    j.append(result(1, "a", 1, ResultStatus::Running, false))
        .unwrap();
    let stranger = result(9, "zz", 1, ResultStatus::Failed, true).key();
    assert_eq!(j.record_acks(&[stranger]).unwrap(), 0);
    assert_eq!(j.unacked_count(), 1);
}

#[test]
fn batches_respect_count_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::open(dir.path()).unwrap();
    for i in 0..10 {
        let mut r = result(1, &format!("t{i}"), 1, ResultStatus::Succeeded, true);
        r.stdout_tail = "x".repeat(1000);
        j.append(r).unwrap();
    }
    assert_eq!(j.unacked(4, usize::MAX).len(), 4);
    assert_eq!(j.unacked(100, 2500).len(), 2);
    // One oversized record still goes alone.
    assert_eq!(j.unacked(100, 10).len(), 1);
}

#[test]
fn a_torn_last_line_is_dropped_and_appends_continue_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::open(dir.path()).unwrap();
    j.append(result(1, "a", 1, ResultStatus::Running, false))
        .unwrap();
    drop(j);
    let path = dir.path().join(RESULTS_FILE);
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(br#"{"deployment_id":1,"revis"#).unwrap();
    drop(f);

    let mut j = Journal::open(dir.path()).unwrap();
    assert_eq!(j.skipped_lines(), 1);
    assert_eq!(j.records().len(), 1);
    j.append(result(1, "a", 1, ResultStatus::Succeeded, true))
        .unwrap();
    drop(j);
    let j = Journal::open(dir.path()).unwrap();
    assert_eq!(j.skipped_lines(), 0);
    assert_eq!(j.records().len(), 2);
}

#[test]
fn compaction_waits_for_acks_and_keeps_the_running_list() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::open(dir.path()).unwrap();
    j.append(result(1, "a", 1, ResultStatus::Succeeded, true))
        .unwrap();
    j.append(result(2, "a", 1, ResultStatus::Running, false))
        .unwrap();
    j.set_active_revision(Some(2));
    assert!(
        !j.compact().unwrap(),
        "nothing is dropped while results are unacked"
    );
    let keys: Vec<_> = j.records().iter().map(TaskResult::key).collect();
    j.record_acks(&keys).unwrap();
    assert!(j.compact().unwrap());
    assert_eq!(j.records().len(), 1);
    assert_eq!(j.records()[0].revision, 2);
    assert_eq!(j.unacked_count(), 0);
    // Appends after compaction land in the new files.
    j.append(result(2, "a", 1, ResultStatus::Succeeded, true))
        .unwrap();
    drop(j);
    let mut j = Journal::open(dir.path()).unwrap();
    assert_eq!(j.records().len(), 2);
    assert_eq!(j.unacked_count(), 1, "the ack of the kept record survived");
    let keys: Vec<_> = j.records().iter().map(TaskResult::key).collect();
    j.record_acks(&keys).unwrap();
    j.set_active_revision(None);
    assert!(j.compact().unwrap());
    drop(j);
    assert_eq!(
        std::fs::read(dir.path().join(RESULTS_FILE)).unwrap().len(),
        0
    );
    assert_eq!(std::fs::read(dir.path().join(ACKS_FILE)).unwrap().len(), 0);
}

#[test]
fn task_states_from_records() {
    use ResultStatus::*;
    let rs = [
        result(1, "done", 1, Running, false),
        result(1, "done", 1, Succeeded, true),
        result(1, "cut", 1, Running, false),
        result(1, "cut", 1, Failed, false),
        result(1, "cut", 2, Running, false),
        result(1, "between", 1, Running, false),
        result(1, "between", 1, TimedOut, false),
        result(1, "failed", 1, Failed, true),
        result(1, "skipped", 1, Skipped, true),
    ];
    let refs: Vec<&TaskResult> = rs.iter().collect();
    assert_eq!(
        task_state(&refs, "done"),
        TaskState::Done { status: Succeeded }
    );
    assert_eq!(
        task_state(&refs, "cut"),
        TaskState::Interrupted { attempt: 2 }
    );
    assert_eq!(
        task_state(&refs, "between"),
        TaskState::Between { attempt: 1 }
    );
    assert_eq!(task_state(&refs, "nothing"), TaskState::NotStarted);
    assert!(task_state(&refs, "failed").failed());
    assert!(!task_state(&refs, "skipped").failed());
    assert!(!task_state(&refs, "done").failed());
}

#[test]
fn interrupted_attempt_is_found_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::open(dir.path()).unwrap();
    j.append(result(5, "install", 1, ResultStatus::Running, false))
        .unwrap();
    drop(j); // the agent dies here
    let j = Journal::open(dir.path()).unwrap();
    let records = j.records_of(1, 5);
    assert_eq!(
        task_state(&records, "install"),
        TaskState::Interrupted { attempt: 1 }
    );
    assert!(j.records_of(1, 4).is_empty());
}
