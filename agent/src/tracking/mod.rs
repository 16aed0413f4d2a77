//! Where a task's processes are held, and how a restarted agent finds and ends the ones a killed agent
//! left behind, so that a task never runs twice side by side.
//!
//! Every command a task runs (shell, puppet, reboot) gets a [`Hold`] before it starts:
//!
//! - **a cgroup of its own** (cgroup v2, found from `/proc/self/mountinfo`, under the agent's own cgroup:
//!   `<agent's cgroup>/plinth-tasks/<id>`; under systemd the unit delegates that subtree with
//!   `Delegate=yes`). The command joins it between `fork` and `exec`, so nothing it runs is ever outside,
//!   and whatever session, process group or parent its descendants move to, they stay in it;
//! - **its own process group**, and `PR_SET_PDEATHSIG` (SIGTERM) on the command's first process, so it
//!   hears of the agent's death at once. Where no cgroup can be made (no cgroup2, not allowed) this is
//!   the whole containment: descendants that left the group are found through their parents while these
//!   live, and through the [`TAG_VARIABLE`] entry they inherit in their environment (unless they
//!   cleared it).
//!
//! Before the command's first instruction runs, its [`Record`] (the cgroup's path; then the group id and
//! its leader's start time, so a reused pid is never taken for it) is durably in
//! `<state_dir>/procs/`. On start the agent [`Tracker::sweep`]s: every recorded command's processes get
//! SIGTERM, then SIGKILL after the grace, before any list resumes; the runner then reports the attempt
//! interrupted, saying how many processes it ended, and retries by the task's policy.
//!
//! | module | owns |
//! |---|---|
//! | [`cgroup`] | the cgroup2 mount, the agent's own cgroup, one cgroup's members, signals, removal |
//! | [`procfs`] | `/proc/<pid>/stat` (parent, group, start time), group members, descendants |
//! | [`record`] | the durable records in `<state_dir>/procs/` |

pub mod cgroup;
pub mod procfs;
pub mod record;

pub use record::{AttemptKey, GroupId, Record, Records};

use cgroup::Cgroup;
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// The environment variable that tags every process of a command with its record's id, so that where no
/// cgroup holds them, descendants that left the process group and lost their parent are still found.
pub const TAG_VARIABLE: &str = "PLINTH_ATTEMPT_TAG";
/// The directory under the agent's own cgroup that holds its commands' cgroups.
pub const TASKS_CGROUP: &str = "plinth-tasks";
/// How long processes are given to disappear after SIGKILL (one stuck in the kernel goes when its I/O
/// ends; it never runs another instruction).
pub const KILL_WAIT: Duration = Duration::from_secs(5);
/// How often a stop looks for processes again.
const POLL: Duration = Duration::from_millis(50);

/// How commands are contained, as logs and results name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Containment {
    /// A cgroup per command, and its process group.
    Cgroup,
    /// The command's process group only.
    ProcessGroup,
}

impl Containment {
    /// `cgroup` or `process group`.
    pub fn name(self) -> &'static str {
        match self {
            Containment::Cgroup => "cgroup",
            Containment::ProcessGroup => "process group",
        }
    }
}

/// What the start-up sweep found of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Swept {
    /// The attempt whose command was running when the agent stopped.
    pub attempt: AttemptKey,
    /// How it was contained.
    pub containment: Containment,
    /// Processes that were still running and were ended.
    pub ended: usize,
    /// Processes still there after SIGKILL and [`KILL_WAIT`] (stuck in the kernel).
    pub remaining: usize,
}

/// Holds the agent's commands and remembers them across restarts.
#[derive(Debug)]
pub struct Tracker {
    records: Records,
    /// Where commands' cgroups are made; `None` when cgroups cannot be used.
    tasks_cgroup: Mutex<Option<PathBuf>>,
    swept: Mutex<Vec<Swept>>,
}

impl Tracker {
    /// A tracker for the agent with state directory `state_dir`, using cgroups when the unified hierarchy
    /// is mounted and the agent may make a directory under its own cgroup, process groups otherwise.
    pub fn detect(state_dir: &Path) -> Tracker {
        let tracker = Tracker::with_process_groups(state_dir);
        match tasks_cgroup() {
            Ok(dir) => {
                tracing::debug!(cgroup = %dir.display(), "task commands run in cgroups of their own");
                *lock(&tracker.tasks_cgroup) = Some(dir);
            }
            Err(why) => tracing::warn!(
                reason = %why,
                "task commands cannot get cgroups of their own; each runs in its own process group"
            ),
        }
        tracker
    }

    /// A tracker that never makes cgroups.
    pub fn with_process_groups(state_dir: &Path) -> Tracker {
        Tracker {
            records: Records::new(state_dir),
            tasks_cgroup: Mutex::new(None),
            swept: Mutex::new(Vec::new()),
        }
    }

    /// How commands started now are contained.
    pub fn containment(&self) -> Containment {
        match *lock(&self.tasks_cgroup) {
            Some(_) => Containment::Cgroup,
            None => Containment::ProcessGroup,
        }
    }

    /// Stops making cgroups (one could not be joined); later commands use process groups.
    pub fn give_up_cgroups(&self, why: &io::Error) {
        if lock(&self.tasks_cgroup).take().is_some() {
            tracing::warn!(error = %why, "a command could not join its cgroup; task commands now run in process groups only");
        }
    }

    /// Prepares to start a command of `attempt`: makes its cgroup (when cgroups are used) and durably
    /// records it. Fails when the record cannot be written: a command that could not be found again
    /// after a crash is not started.
    pub fn hold(&self, attempt: AttemptKey) -> io::Result<Hold> {
        let id = random_id()?;
        let parent = lock(&self.tasks_cgroup).clone();
        let mut cgroup = None;
        let mut procs = None;
        if let Some(parent) = parent {
            match Cgroup::create(parent.join(&id)).and_then(|c| Ok((c.open_procs()?, c))) {
                Ok((file, c)) => {
                    procs = Some(file);
                    cgroup = Some(c);
                }
                Err(e) => {
                    tracing::warn!(error = %e, cgroup = %parent.display(), "cannot make a cgroup for the command; it runs in its own process group");
                }
            }
        }
        let record = Record {
            id,
            attempt,
            cgroup: cgroup.as_ref().map(|c| c.path().to_path_buf()),
            group: None,
            boot_id: current_boot(),
            left_running: false,
        };
        if let Err(e) = self.records.save(&record) {
            if let Some(c) = &cgroup {
                let _ = c.remove();
            }
            return Err(io::Error::new(
                e.kind(),
                format!(
                    "cannot record the command's processes in {}: {e}",
                    self.records.dir().display()
                ),
            ));
        }
        Ok(Hold {
            records: self.records.clone(),
            record,
            cgroup,
            procs,
        })
    }

    /// Ends the processes of every command a previous run of the agent left recorded: SIGTERM, then
    /// SIGKILL after `grace`. Returns (and remembers, for [`Tracker::swept`]) what it found per attempt.
    pub async fn sweep(&self, grace: Duration) -> Vec<Swept> {
        let (records, bad) = self.records.load();
        for (path, why) in bad {
            tracing::warn!(file = %path.display(), error = %why, "unreadable process record dropped");
            self.records.discard(&path);
        }
        let mut found = Vec::new();
        let boot = current_boot();
        for record in records {
            if record.boot_id.is_some() && record.boot_id != boot {
                // The node rebooted since: the command's processes went with the old boot.
                let _ = self.records.remove(&record.id);
                if !record.left_running {
                    found.push(Swept {
                        attempt: record.attempt,
                        containment: match record.cgroup {
                            Some(_) => Containment::Cgroup,
                            None => Containment::ProcessGroup,
                        },
                        ended: 0,
                        remaining: 0,
                    });
                }
                continue;
            }
            let cgroup = record.cgroup.clone().map(Cgroup::at);
            let containment = match cgroup {
                Some(_) => Containment::Cgroup,
                None => Containment::ProcessGroup,
            };
            if record.left_running {
                // Processes a finished command left (a daemon) are not ended; the cgroup goes once empty.
                if cgroup.as_ref().is_none_or(|c| c.remove().is_ok()) {
                    let _ = self.records.remove(&record.id);
                }
                continue;
            }
            let members = Members::of(&record);
            let (ended, remaining) = end(&members, grace).await;
            if ended > 0 {
                tracing::warn!(
                    task = %record.attempt.task_id,
                    attempt = record.attempt.attempt,
                    processes = ended,
                    remaining,
                    containment = containment.name(),
                    "ended the processes an attempt left running when the agent stopped"
                );
            }
            if let Some(c) = &cgroup {
                if let Err(e) = c.remove() {
                    tracing::warn!(cgroup = %c.path().display(), error = %e, "cannot remove a task cgroup");
                }
            }
            if let Err(e) = self.records.remove(&record.id) {
                tracing::warn!(error = %e, "cannot remove a process record");
            }
            found.push(Swept {
                attempt: record.attempt,
                containment,
                ended,
                remaining,
            });
        }
        lock(&self.swept).extend(found.iter().cloned());
        found
    }

    /// What the start-up sweep found of an attempt, if it had a command running.
    pub fn swept(&self, attempt: &AttemptKey) -> Option<Swept> {
        let swept = lock(&self.swept);
        let mine: Vec<&Swept> = swept.iter().filter(|s| &s.attempt == attempt).collect();
        let first = mine.first()?;
        Some(Swept {
            attempt: attempt.clone(),
            containment: first.containment,
            ended: mine.iter().map(|s| s.ended).sum(),
            remaining: mine.iter().map(|s| s.remaining).sum(),
        })
    }
}

/// One command's containment, from before it starts until it and what it started are gone.
#[derive(Debug)]
pub struct Hold {
    records: Records,
    record: Record,
    cgroup: Option<Cgroup>,
    /// The cgroup's `cgroup.procs`, open so the forked child joins with one `write`.
    procs: Option<std::fs::File>,
}

impl Hold {
    /// How this command is contained.
    pub fn containment(&self) -> Containment {
        match self.cgroup {
            Some(_) => Containment::Cgroup,
            None => Containment::ProcessGroup,
        }
    }

    /// Sets `command` up to start inside the hold: its own process group; between `fork` and `exec` it
    /// joins the cgroup (failing the start when it cannot) and asks for SIGTERM when the agent's thread
    /// that started it dies (the runner starts commands from the agent's main thread, which lives as long
    /// as the agent).
    pub fn prepare(&self, command: &mut tokio::process::Command) {
        command.process_group(0).env(TAG_VARIABLE, &self.record.id);
        let procs_fd = self.procs.as_ref().map(|f| f.as_raw_fd());
        let agent = nix::unistd::getpid();
        // SAFETY: the closure runs in the forked child before `exec`, where only async-signal-safe calls
        // are allowed: it makes three system calls (write, prctl, getppid) and allocates nothing.
        unsafe {
            command.pre_exec(move || {
                if let Some(fd) = procs_fd {
                    // `0` moves the writing process itself into the cgroup.
                    let fd = std::os::fd::BorrowedFd::borrow_raw(fd);
                    nix::unistd::write(fd, b"0").map_err(io::Error::from)?;
                }
                nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).map_err(io::Error::from)?;
                if nix::unistd::getppid() != agent {
                    // The agent died before the request took effect.
                    return Err(io::Error::other("the agent is gone"));
                }
                Ok(())
            });
        }
    }

    /// Records the started command's process group and its leader's start time (durably).
    pub fn started(&mut self, pid: u32) -> io::Result<()> {
        let pid = i32::try_from(pid).map_err(io::Error::other)?;
        let stat = procfs::stat(pid)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("/proc/{pid}/stat")))?;
        self.record.group = Some(GroupId {
            pgid: pid,
            leader_start: stat.start_time,
        });
        self.records.save(&self.record)
    }

    /// The command's processes, as they can be found now.
    pub fn members(&self) -> Members {
        Members::of(&self.record)
    }

    /// Ends the hold once the command has ended and, if it was stopped, its processes are gone. Processes
    /// it left running after ending by itself (a daemon it started) are left alone; its cgroup is removed
    /// once empty.
    pub fn release(mut self) {
        self.procs = None;
        let populated = self.cgroup.as_ref().is_some_and(Cgroup::populated);
        if populated {
            self.record.left_running = true;
            if let Err(e) = self.records.save(&self.record) {
                tracing::warn!(error = %e, "cannot update a process record");
            }
            return;
        }
        if let Some(c) = &self.cgroup {
            let _ = c.remove();
        }
        if let Err(e) = self.records.remove(&self.record.id) {
            tracing::warn!(error = %e, "cannot remove a process record");
        }
    }
}

/// The processes of one command, found through its cgroup, its process group and its tag.
#[derive(Debug, Clone)]
pub struct Members {
    cgroup: Option<Cgroup>,
    group: Option<GroupId>,
    /// `PLINTH_ATTEMPT_TAG=<id>`.
    tag: String,
}

impl Members {
    /// The processes of the command a record names.
    pub fn of(record: &Record) -> Members {
        Members {
            cgroup: record.cgroup.clone().map(Cgroup::at),
            group: record.group,
            tag: format!("{TAG_VARIABLE}={}", record.id),
        }
    }

    /// The live processes: the cgroup's, the group's (when the group is still the recorded one), and
    /// without a cgroup, the descendants of the group's members and the processes carrying the tag.
    pub fn pids(&self) -> Vec<Pid> {
        let mut pids = match &self.cgroup {
            Some(c) => c.pids(),
            None => procfs::with_env_entry(&self.tag),
        };
        if let Some(group) = self.group.filter(|g| group_is_ours(*g)) {
            let members = procfs::group_members(group.pgid);
            let escaped = match self.cgroup {
                Some(_) => Vec::new(),
                None => procfs::descendants(&members),
            };
            for pid in members.into_iter().chain(escaped) {
                if !pids.contains(&pid) {
                    pids.push(pid);
                }
            }
        }
        pids
    }

    /// Sends `signal` to every process; returns them.
    pub fn signal(&self, signal: Signal) -> Vec<Pid> {
        let pids = self.pids();
        if let Some(group) = self.group.filter(|g| group_is_ours(*g)) {
            let _ = killpg(Pid::from_raw(group.pgid), signal);
        }
        for pid in &pids {
            let _ = kill(*pid, signal);
        }
        pids
    }

    /// SIGKILL to every process (through `cgroup.kill` where there is one).
    pub fn kill_all(&self) {
        if let Some(c) = &self.cgroup {
            c.kill_all();
        }
        self.signal(Signal::SIGKILL);
    }
}

/// A recorded group is still the one recorded when its leader is gone (a pid is not given out again
/// while a group of that id has members) or is the same process (same start time).
fn group_is_ours(group: GroupId) -> bool {
    match procfs::stat(group.pgid) {
        None => true,
        Some(leader) => leader.start_time == group.leader_start,
    }
}

/// SIGTERM to every process, again to any that appears, until none is left or `grace` passes; then
/// SIGKILL, and up to [`KILL_WAIT`] for them to go. Returns how many processes were found and how many
/// were still there at the end.
pub async fn end(members: &Members, grace: Duration) -> (usize, usize) {
    let mut seen: Vec<Pid> = Vec::new();
    let deadline = Instant::now() + grace;
    loop {
        let pids = members.pids();
        if pids.is_empty() {
            return (seen.len(), 0);
        }
        for pid in pids {
            if !seen.contains(&pid) {
                let _ = kill(pid, Signal::SIGTERM);
                seen.push(pid);
            }
        }
        if Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    let until = Instant::now() + KILL_WAIT;
    loop {
        members.kill_all();
        let left = members.pids();
        for pid in &left {
            if !seen.contains(pid) {
                seen.push(*pid);
            }
        }
        if left.is_empty() || Instant::now() >= until {
            return (seen.len(), left.len());
        }
        tokio::time::sleep(POLL).await;
    }
}

/// [`find_tasks_cgroup`], looked for once per process.
fn tasks_cgroup() -> Result<PathBuf, String> {
    static FOUND: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    FOUND.get_or_init(find_tasks_cgroup).clone()
}

/// `<unified mount>/<agent's cgroup>/plinth-tasks`, made when missing, once a process was seen to join a
/// cgroup made there.
fn find_tasks_cgroup() -> Result<PathBuf, String> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let mount = cgroup::unified_mount(&mountinfo).ok_or("no cgroup2 file system is mounted")?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let own = cgroup::own_path(&own).ok_or("/proc/self/cgroup names no cgroup2 path")?;
    let mut dir = mount;
    dir.push(own.trim_start_matches('/'));
    dir.push(TASKS_CGROUP);
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot make {}: {e}", dir.display())),
    }
    probe(&dir).map_err(|e| {
        format!(
            "a process cannot join a cgroup under {}: {e}",
            dir.display()
        )
    })?;
    Ok(dir)
}

/// Starts `/bin/sh -c 'exit 0'` in a fresh cgroup under `dir`, as commands will be started.
fn probe(dir: &Path) -> io::Result<()> {
    use std::os::unix::process::CommandExt;
    let cgroup = Cgroup::create(dir.join(format!("probe-{}", random_id()?)))?;
    let joined = (|| {
        let procs = cgroup.open_procs()?;
        let fd = procs.as_raw_fd();
        let mut command = std::process::Command::new("/bin/sh");
        command.args(["-c", "exit 0"]);
        // SAFETY: one `write` system call between fork and exec, no allocation.
        unsafe {
            command.pre_exec(move || {
                let fd = std::os::fd::BorrowedFd::borrow_raw(fd);
                nix::unistd::write(fd, b"0").map_err(io::Error::from)?;
                Ok(())
            });
        }
        let status = command.status()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!("the probe {status}")))
        }
    })();
    // The probe has exited; its cgroup is empty.
    let _ = cgroup.remove();
    joined
}

/// This boot's id, when the kernel tells it.
fn current_boot() -> Option<String> {
    std::fs::read_to_string(crate::executor::services::DEFAULT_BOOT_ID_PATH)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// 64 random bits in hex.
fn random_id() -> io::Result<String> {
    let n = getrandom::u64().map_err(|e| io::Error::other(e.to_string()))?;
    Ok(format!("{n:016x}"))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Nothing panics while holding these locks; a poisoned one still holds a consistent value.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests;
