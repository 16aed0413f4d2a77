use super::*;
use std::process::Stdio;

fn key(task: &str) -> AttemptKey {
    AttemptKey {
        deployment_id: 4,
        revision: 9,
        task_id: task.into(),
        attempt: 1,
    }
}

/// Lines in a file, 0 when missing.
fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// Starts a writer as a task would (a grandchild in a session of its own that appends a line every 50 ms)
/// and leaves it as a killed agent would: held, recorded, never released.
async fn abandon_a_writer(tracker: &Tracker, file: &Path) -> u32 {
    abandon(tracker, file, false).await
}

/// As [`abandon_a_writer`]; with `leader_dies`, the command's first process is killed as the agent's
/// death signal would, so the writer in its own session has no parent left to be found through.
async fn abandon(tracker: &Tracker, file: &Path, leader_dies: bool) -> u32 {
    let mut hold = tracker.hold(key("writer")).unwrap();
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(format!(
            "setsid sh -c 'while :; do echo x >> {f}; sleep 0.05; done' & \
             while :; do echo y >> {f}; sleep 0.05; done",
            f = file.display()
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    hold.prepare(&mut command);
    let child = command.spawn().unwrap();
    let pid = child.id().unwrap();
    hold.started(pid).unwrap();
    std::mem::forget(hold);
    let start = std::time::Instant::now();
    let both_wrote = || {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        text.lines().any(|l| l == "x") && text.lines().any(|l| l == "y")
    };
    while !both_wrote() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the writers never wrote"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if leader_dies {
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
    }
    drop(child);
    pid
}

/// Sweeps with `fresh` and checks that at least `writers` processes were ended and nothing writes.
async fn assert_sweep_ends_the_writer(state: &Path, file: &Path, fresh: Tracker, writers: usize) {
    let swept = fresh.sweep(Duration::from_millis(500)).await;
    assert_eq!(swept.len(), 1, "{swept:?}");
    assert_eq!(swept[0].attempt, key("writer"));
    assert!(
        swept[0].ended >= writers,
        "every writer was found: {swept:?}"
    );
    assert_eq!(swept[0].remaining, 0);
    assert_eq!(fresh.swept(&key("writer")), Some(swept[0].clone()));
    assert_eq!(fresh.swept(&key("other")), None);
    let after = lines(file);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(lines(file), after, "a writer still writes");
    assert!(
        Records::new(state).load().0.is_empty(),
        "the record is gone"
    );
}

#[tokio::test]
async fn a_killed_agents_command_is_ended_by_the_next_start_through_its_cgroup() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let tracker = Tracker::detect(&state);
    if tracker.containment() != Containment::Cgroup {
        eprintln!("no usable cgroup2 here: only process groups are tested");
        return;
    }
    let file = dir.path().join("out");
    abandon_a_writer(&tracker, &file).await;
    let cgroup = Records::new(&state).load().0[0].cgroup.clone().unwrap();
    assert!(cgroup.is_dir());
    assert_sweep_ends_the_writer(&state, &file, Tracker::detect(&state), 2).await;
    assert!(!cgroup.exists(), "the cgroup is removed");
}

#[tokio::test]
async fn a_killed_agents_command_is_ended_by_the_next_start_through_its_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let tracker = Tracker::with_process_groups(&state);
    let file = dir.path().join("out");
    abandon_a_writer(&tracker, &file).await;
    assert_sweep_ends_the_writer(&state, &file, Tracker::with_process_groups(&state), 2).await;
}

#[tokio::test]
async fn without_a_cgroup_an_orphan_in_its_own_session_is_found_by_its_tag() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let tracker = Tracker::with_process_groups(&state);
    let file = dir.path().join("out");
    abandon(&tracker, &file, true).await;
    // Only the writer in its own session is left.
    assert_sweep_ends_the_writer(&state, &file, Tracker::with_process_groups(&state), 1).await;
}

#[tokio::test]
async fn a_reused_pid_is_not_taken_for_the_recorded_group() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    // A live process leading its own group, recorded with another start time: the pid was reused.
    let mut stranger = std::process::Command::new("sleep");
    std::os::unix::process::CommandExt::process_group(&mut stranger, 0);
    let mut stranger = stranger.arg("30").spawn().unwrap();
    let pid = stranger.id() as i32;
    let start = procfs::stat(pid).unwrap().start_time;
    Records::new(&state)
        .save(&Record {
            id: "0000000000000001".into(),
            attempt: key("old"),
            cgroup: None,
            group: Some(GroupId {
                pgid: pid,
                leader_start: start + 1,
            }),
            boot_id: current_boot(),
            left_running: false,
        })
        .unwrap();
    let swept = Tracker::with_process_groups(&state)
        .sweep(Duration::from_millis(200))
        .await;
    assert_eq!(swept.len(), 1);
    assert_eq!(swept[0].ended, 0, "{swept:?}");
    assert!(
        stranger.try_wait().unwrap().is_none(),
        "a process that only shares the pid was killed"
    );
    stranger.kill().unwrap();
    stranger.wait().unwrap();
}

#[tokio::test]
async fn a_record_from_an_earlier_boot_names_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    // A live group leader recorded with its true start time, but in another boot.
    let mut sleeper = std::process::Command::new("sleep");
    std::os::unix::process::CommandExt::process_group(&mut sleeper, 0);
    let mut sleeper = sleeper.arg("30").spawn().unwrap();
    let pid = sleeper.id() as i32;
    Records::new(&state)
        .save(&Record {
            id: "0000000000000002".into(),
            attempt: key("before-reboot"),
            cgroup: None,
            group: Some(GroupId {
                pgid: pid,
                leader_start: procfs::stat(pid).unwrap().start_time,
            }),
            boot_id: Some("another-boot".into()),
            left_running: false,
        })
        .unwrap();
    let swept = Tracker::with_process_groups(&state)
        .sweep(Duration::from_millis(200))
        .await;
    assert_eq!(swept.len(), 1);
    assert_eq!(swept[0].ended, 0, "{swept:?}");
    assert!(Records::new(&state).load().0.is_empty());
    assert!(
        sleeper.try_wait().unwrap().is_none(),
        "a process of this boot was taken for one of the last"
    );
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}

#[test]
fn the_first_process_of_a_command_hears_of_the_death_of_the_thread_that_started_it() {
    let dir = tempfile::tempdir().unwrap();
    let tracker = Tracker::with_process_groups(&dir.path().join("state"));
    let hold = tracker.hold(key("orphaned")).unwrap();
    // The command is started from a thread that then ends, as the agent's would when it dies.
    let pid = std::thread::scope(|s| {
        s.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let mut command = tokio::process::Command::new("sleep");
                command.arg("60");
                hold.prepare(&mut command);
                let child = command.spawn().unwrap();
                let pid = child.id().unwrap() as i32;
                std::mem::forget(child);
                pid
            })
        })
        .join()
        .unwrap()
    });
    let start = std::time::Instant::now();
    // SIGTERM ends `sleep`; it stays a zombie of this process until reaped.
    while procfs::stat(pid).is_some_and(|s| !s.is_zombie()) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the command outlived the thread that started it"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = nix::sys::wait::waitpid(Pid::from_raw(pid), None);
    hold.release();
}
