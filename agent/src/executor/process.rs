//! Running one command for a task: held by the agent's [`crate::tracking`] (a cgroup of its own where
//! the system allows, its own process group always, recorded durably before it starts), standard input
//! closed, standard output and error captured (the last [`OUTPUT_TAIL_BYTES`] of each), until it exits,
//! its timeout passes or the agent stops. At the timeout or the stop everything in its cgroup, its whole
//! group, and every descendant that left the group for a session of its own, gets SIGTERM and, after the
//! grace, SIGKILL, so nothing the command started outlives it. Shared by the task types that run
//! programs (`shell`, `puppet`, `reboot`).

use super::output::{capture_into, Tail};
use super::AttemptContext;
use crate::tracking::{procfs, Members, KILL_WAIT};
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use plinth_common::wire::OUTPUT_TAIL_BYTES;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// How long output is still read after the command ended (a daemon it started may hold the pipes).
pub const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

/// How the wait for a command ended.
#[derive(Debug)]
pub enum End {
    /// It exited (or was killed by a signal) by itself.
    Exited(ExitStatus),
    /// Its timeout passed; its group was stopped.
    TimedOut,
    /// The agent is stopping; its group was stopped.
    Stopped,
    /// Waiting for it failed; its group was stopped.
    Lost(std::io::Error),
}

/// What a finished command left.
#[derive(Debug)]
pub struct Finished {
    /// How the wait ended.
    pub end: End,
    /// The exit status, when the process could be reaped.
    pub status: Option<ExitStatus>,
    /// The tail of standard output.
    pub stdout: Tail,
    /// The tail of standard error.
    pub stderr: Tail,
}

impl Finished {
    /// The exit code, when the process exited with one.
    pub fn exit_code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// Byte counts of the output, for an outcome's details.
    pub fn output_details(&self) -> serde_json::Value {
        serde_json::json!({
            "stdout_bytes": self.stdout.total(),
            "stderr_bytes": self.stderr.total(),
            "output_truncated": self.stdout.truncated() || self.stderr.truncated(),
        })
    }
}

/// Starts `command` for the attempt `ctx`, held and recorded by the agent's tracker, and waits for it as
/// the module documentation says, `timeout` at most. Fails only when the command cannot be started
/// (which includes: its record cannot be written).
pub async fn run(
    mut command: tokio::process::Command,
    ctx: &AttemptContext,
    timeout: Duration,
) -> std::io::Result<Finished> {
    let kill_grace = ctx.kill_grace;
    let shutdown = &ctx.shutdown;
    let mut hold = ctx.services.tracker.hold(ctx.attempt_key())?;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    hold.prepare(&mut command);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            hold.release();
            return Err(e);
        }
    };
    if let Some(pid) = child.id() {
        if let Err(e) = hold.started(pid) {
            tracing::warn!(error = %e, task = %ctx.task_id, "cannot record the command's process group");
        }
    }
    let members = hold.members();
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let stdout = Arc::new(Mutex::new(Tail::new(OUTPUT_TAIL_BYTES)));
    let stderr = Arc::new(Mutex::new(Tail::new(OUTPUT_TAIL_BYTES)));
    let readers = [
        child
            .stdout
            .take()
            .map(|r| tokio::spawn(capture_into(r, stdout.clone()))),
        child
            .stderr
            .take()
            .map(|r| tokio::spawn(capture_into(r, stderr.clone()))),
    ];

    let end = tokio::select! {
        r = child.wait() => match r {
            Ok(status) => End::Exited(status),
            Err(e) => End::Lost(e),
        },
        _ = tokio::time::sleep(timeout) => End::TimedOut,
        _ = shutdown.wait() => End::Stopped,
    };
    let status = match &end {
        End::Exited(status) => Some(*status),
        End::TimedOut | End::Stopped | End::Lost(_) => match group {
            Some(group) => stop_group(group, &mut child, &members, kill_grace).await,
            None => child.wait().await.ok(),
        },
    };

    // The command has ended; read what is left of its output, but do not wait on a daemon it left
    // holding the pipes.
    let drain_until = Instant::now() + OUTPUT_DRAIN;
    for reader in readers.into_iter().flatten() {
        let abort = reader.abort_handle();
        if tokio::time::timeout_at(drain_until, reader).await.is_err() {
            abort.abort();
        }
    }
    hold.release();
    Ok(Finished {
        end,
        status,
        stdout: snapshot(&stdout),
        stderr: snapshot(&stderr),
    })
}

/// Describes an exit status: `exited with code 3`, `killed by signal SIGKILL`.
pub fn describe_status(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(sig)) => {
            let name = Signal::try_from(sig)
                .map(|s| s.as_str().to_string())
                .unwrap_or_else(|_| sig.to_string());
            format!("killed by signal {name}")
        }
        (None, None) => format!("ended with {status}"),
    }
}

/// SIGTERM to the whole group, to everything in the command's cgroup and to every descendant of the
/// leader (programs such as puppet start their commands in sessions of their own, outside the group),
/// then SIGKILL to whatever is left once the grace is over. Returns the leader's exit status.
async fn stop_group(
    group: Pid,
    child: &mut tokio::process::Child,
    members: &Members,
    grace: Duration,
) -> Option<ExitStatus> {
    let mut known: Vec<Pid> = procfs::descendants(&[group]);
    let _ = killpg(group, Signal::SIGTERM);
    for pid in &known {
        let _ = kill(*pid, Signal::SIGTERM);
    }
    for pid in members.signal(Signal::SIGTERM) {
        if !known.contains(&pid) {
            known.push(pid);
        }
    }
    let deadline = Instant::now() + grace;
    let mut status = None;
    loop {
        if status.is_none() {
            if let Ok(Some(s)) = child.try_wait() {
                status = Some(s);
            }
        }
        // Processes started since the last look, by any process still known alive.
        let alive: Vec<Pid> = known
            .iter()
            .copied()
            .filter(|p| kill(*p, None).is_ok())
            .collect();
        let contained = members.pids();
        for pid in procfs::descendants(&alive)
            .into_iter()
            .chain(contained.iter().copied())
        {
            if !known.contains(&pid) {
                let _ = kill(pid, Signal::SIGTERM);
                known.push(pid);
            }
        }
        // Signal 0 probes: an error means no process is left.
        let group_gone = killpg(group, None).is_err();
        if status.is_some() && group_gone && alive.is_empty() && contained.is_empty() {
            return status;
        }
        if Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = killpg(group, Signal::SIGKILL);
    for pid in &known {
        let _ = kill(*pid, Signal::SIGKILL);
    }
    members.kill_all();
    let status = match status {
        Some(s) => Some(s),
        None => child.wait().await.ok(),
    };
    // Killed processes go at once unless stuck in the kernel; wait a little so the cgroup can be removed.
    let until = Instant::now() + KILL_WAIT;
    while !members.pids().is_empty() && Instant::now() < until {
        members.kill_all();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    status
}

fn snapshot(tail: &Arc<Mutex<Tail>>) -> Tail {
    match tail.lock() {
        Ok(t) => t.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tracking::{Containment, Tracker};

    fn shell(script: String) -> tokio::process::Command {
        let mut command = tokio::process::Command::new("/bin/sh");
        command.arg("-c").arg(script);
        command
    }

    #[tokio::test]
    async fn descendants_in_other_sessions_are_stopped_too() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("escaped");
        let (_t, sd) = crate::shutdown::channel();
        let mut ctx = crate::testutil::attempt(dir.path(), sd);
        // Process groups alone: the grandchild is found through its parent.
        let mut services = crate::executor::Services::local(dir.path().join("state"));
        services.tracker = Arc::new(Tracker::with_process_groups(&dir.path().join("state")));
        ctx.services = Arc::new(services);
        // setsid puts the grandchild in a session (and group) of its own, as puppet does with its execs.
        let command = shell(format!(
            "setsid sh -c 'sleep 2; touch {}' & echo started; sleep 60",
            marker.display()
        ));
        let f = run(command, &ctx, Duration::from_millis(500))
            .await
            .unwrap();
        assert!(matches!(f.end, End::TimedOut), "{:?}", f.end);
        assert_eq!(f.stdout.text(), "started\n");
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(!marker.exists(), "a process in its own session survived");
    }

    #[tokio::test]
    async fn an_orphan_in_a_session_of_its_own_is_stopped_through_the_cgroup() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("orphan");
        let (_t, sd) = crate::shutdown::channel();
        let ctx = crate::testutil::attempt(dir.path(), sd);
        if ctx.services.tracker.containment() != Containment::Cgroup {
            eprintln!("no usable cgroup2 here: only process groups are tested");
            return;
        }
        // The orphan's parent exits at once: nothing links it to the command but its cgroup.
        let command = shell(format!(
            "setsid sh -c '(sleep 2; touch {}) &'; echo started; sleep 60",
            marker.display()
        ));
        let f = run(command, &ctx, Duration::from_millis(500))
            .await
            .unwrap();
        assert!(matches!(f.end, End::TimedOut), "{:?}", f.end);
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(!marker.exists(), "an orphan in its own session survived");
        assert!(
            crate::tracking::Records::new(&dir.path().join("state"))
                .load()
                .0
                .is_empty(),
            "the stopped command's record is gone"
        );
    }

    #[tokio::test]
    async fn a_daemon_a_finished_command_left_is_not_ended_by_the_next_start() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("daemon");
        let (_t, sd) = crate::shutdown::channel();
        let ctx = crate::testutil::attempt(dir.path(), sd);
        let command = shell(format!(
            "(sleep 1; touch {}) >/dev/null 2>&1 & exit 0",
            marker.display()
        ));
        let f = run(command, &ctx, Duration::from_secs(30)).await.unwrap();
        assert!(
            matches!(f.end, End::Exited(s) if s.success()),
            "{:?}",
            f.end
        );
        // The next start sweeps: the daemon is not the attempt's to end.
        let tracker = Tracker::detect(&dir.path().join("state"));
        let swept = tracker.sweep(Duration::from_millis(300)).await;
        assert!(swept.is_empty(), "{swept:?}");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(marker.exists(), "the daemon was killed");
        // Once it is gone, a later sweep removes its empty cgroup and the record.
        tracker.sweep(Duration::from_millis(300)).await;
        assert!(crate::tracking::Records::new(&dir.path().join("state"))
            .load()
            .0
            .is_empty());
    }

    /// What holding a command costs: `/bin/true` run through [`run`] (cgroup made, record written twice
    /// with fsync, cgroup and record removed) against a bare spawn. A figure for docs/BENCHMARKS.md:
    /// `cargo test -p plinth-agent --release --lib -- --ignored held_command_overhead --nocapture`.
    #[tokio::test]
    #[ignore]
    async fn held_command_overhead() {
        const N: u32 = 200;
        let dir = tempfile::tempdir().unwrap();
        let (_t, sd) = crate::shutdown::channel();
        let ctx = crate::testutil::attempt(dir.path(), sd);
        let started = std::time::Instant::now();
        for _ in 0..N {
            tokio::process::Command::new("/bin/true")
                .status()
                .await
                .unwrap();
        }
        let bare = started.elapsed() / N;
        let started = std::time::Instant::now();
        for _ in 0..N {
            let f = run(
                tokio::process::Command::new("/bin/true"),
                &ctx,
                Duration::from_secs(10),
            )
            .await
            .unwrap();
            assert!(matches!(f.end, End::Exited(s) if s.success()));
        }
        let held = started.elapsed() / N;
        println!(
            "containment {}: bare spawn {bare:?} per command, held {held:?} per command",
            ctx.services.tracker.containment().name()
        );
    }
}
