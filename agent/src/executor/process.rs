//! Running one command for a task: in its own process group, standard input closed, standard output and
//! error captured (the last [`OUTPUT_TAIL_BYTES`] of each), until it exits, its timeout passes or the
//! agent stops. At the timeout or the stop the whole group, and every descendant that left it for a
//! session of its own, gets SIGTERM and, after the grace, SIGKILL, so nothing the command started
//! outlives it. Shared by the task types that run programs (`shell`,
//! `puppet`, `reboot`).

use super::output::{capture_into, Tail};
use crate::shutdown::Shutdown;
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

/// Starts `command` in its own process group and waits for it as the module documentation says. Fails
/// only when the command cannot be started.
pub async fn run(
    mut command: tokio::process::Command,
    timeout: Duration,
    kill_grace: Duration,
    shutdown: &Shutdown,
) -> std::io::Result<Finished> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn()?;
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
            Some(group) => stop_group(group, &mut child, kill_grace).await,
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

/// SIGTERM to the whole group and to every descendant of the leader (programs such as puppet start
/// their commands in sessions of their own, outside the group), then SIGKILL to whatever is left once the
/// grace is over. Returns the leader's exit status.
async fn stop_group(
    group: Pid,
    child: &mut tokio::process::Child,
    grace: Duration,
) -> Option<ExitStatus> {
    let mut known: Vec<Pid> = descendants(&[group]);
    let _ = killpg(group, Signal::SIGTERM);
    for pid in &known {
        let _ = kill(*pid, Signal::SIGTERM);
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
        for pid in descendants(&alive) {
            if !known.contains(&pid) {
                let _ = kill(pid, Signal::SIGTERM);
                known.push(pid);
            }
        }
        // Signal 0 probes: an error means no process is left.
        let group_gone = killpg(group, None).is_err();
        if status.is_some() && group_gone && alive.is_empty() {
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
    match status {
        Some(s) => Some(s),
        None => child.wait().await.ok(),
    }
}

/// Every process descending from `roots` (not the roots themselves), read from `/proc`.
fn descendants(roots: &[Pid]) -> Vec<Pid> {
    if roots.is_empty() {
        return Vec::new();
    }
    let mut parents: Vec<(Pid, Pid)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            if let Some(ppid) = parent_of(pid) {
                parents.push((Pid::from_raw(pid), Pid::from_raw(ppid)));
            }
        }
    }
    let mut found: Vec<Pid> = Vec::new();
    let mut frontier: Vec<Pid> = roots.to_vec();
    while let Some(parent) = frontier.pop() {
        for (pid, ppid) in &parents {
            if *ppid == parent && !found.contains(pid) && !roots.contains(pid) {
                found.push(*pid);
                frontier.push(*pid);
            }
        }
    }
    found
}

/// The parent of a process, from `/proc/<pid>/stat` (the field after the command name's closing
/// parenthesis and the state).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
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

    #[tokio::test]
    async fn descendants_in_other_sessions_are_stopped_too() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("escaped");
        // setsid puts the grandchild in a session (and group) of its own, as puppet does with its execs.
        let mut command = tokio::process::Command::new("/bin/sh");
        command.arg("-c").arg(format!(
            "setsid sh -c 'sleep 2; touch {}' & echo started; sleep 60",
            marker.display()
        ));
        let (_t, sd) = crate::shutdown::channel();
        let f = run(
            command,
            Duration::from_millis(500),
            Duration::from_millis(300),
            &sd,
        )
        .await
        .unwrap();
        assert!(matches!(f.end, End::TimedOut), "{:?}", f.end);
        assert_eq!(f.stdout.text(), "started\n");
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(!marker.exists(), "a process in its own session survived");
    }

    #[test]
    fn parents_are_read_from_proc() {
        let me = std::process::id() as i32;
        assert_eq!(parent_of(me), Some(nix::unistd::getppid().as_raw()));
        assert_eq!(parent_of(-5), None);
    }
}
