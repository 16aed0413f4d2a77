//! What `/proc` tells about processes: a process's state, parent, process group and start time (from
//! `/proc/<pid>/stat`), the members of a process group, the descendants of a set of processes, and the
//! processes whose environment carries a given entry.

use nix::unistd::Pid;

/// The fields of `/proc/<pid>/stat` the agent uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// The state letter (`R`, `S`, `D`, `Z`, ...).
    pub state: char,
    /// The parent's pid.
    pub ppid: i32,
    /// The process group id.
    pub pgrp: i32,
    /// When the process started, in clock ticks since boot: with the pid, it names one process for the
    /// whole uptime (a pid is reused, a pid and its start time are not).
    pub start_time: u64,
}

impl Stat {
    /// True for a process that has exited and waits to be reaped.
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z'
    }
}

/// Parses the text of `/proc/<pid>/stat`. The command name (field 2) may hold spaces and parentheses, so
/// the fields are counted from its last closing parenthesis.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state (3), ppid (4), pgrp (5), ... starttime (22).
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

/// Reads `/proc/<pid>/stat`; `None` when the process does not exist (any more).
pub fn stat(pid: i32) -> Option<Stat> {
    if pid <= 0 {
        return None;
    }
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process on the system with its stat, read from `/proc`.
fn all() -> Vec<(Pid, Stat)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            Some((Pid::from_raw(pid), stat(pid)?))
        })
        .collect()
}

/// The live (not zombie) members of process group `pgrp`.
pub fn group_members(pgrp: i32) -> Vec<Pid> {
    all()
        .into_iter()
        .filter(|(_, s)| s.pgrp == pgrp && !s.is_zombie())
        .map(|(pid, _)| pid)
        .collect()
}

/// Every live process (but this one) whose environment holds the entry `entry` (`NAME=value`), as it was
/// when the process started (`/proc/<pid>/environ`).
pub fn with_env_entry(entry: &str) -> Vec<Pid> {
    // An entry is `NAME=value`; an empty one would match the end of every environment.
    if entry
        .split_once('=')
        .is_none_or(|(name, _)| name.is_empty())
    {
        return Vec::new();
    }
    let me = std::process::id() as i32;
    let needle = entry.as_bytes();
    all()
        .into_iter()
        .filter(|(pid, s)| pid.as_raw() != me && !s.is_zombie())
        .filter(|(pid, _)| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|b| *b == 0).any(|e| e == needle))
                .unwrap_or(false)
        })
        .map(|(pid, _)| pid)
        .collect()
}

/// Every live process descending from `roots` (not the roots themselves).
pub fn descendants(roots: &[Pid]) -> Vec<Pid> {
    if roots.is_empty() {
        return Vec::new();
    }
    let procs = all();
    let mut found: Vec<Pid> = Vec::new();
    let mut frontier: Vec<Pid> = roots.to_vec();
    while let Some(parent) = frontier.pop() {
        for (pid, s) in &procs {
            if s.ppid == parent.as_raw()
                && !s.is_zombie()
                && !found.contains(pid)
                && !roots.contains(pid)
            {
                found.push(*pid);
                frontier.push(*pid);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_name() {
        let text =
            "4242 (a (weird) name) S 1 4240 4240 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 \
                    1000 100 18446744073709551615";
        let s = parse_stat(text).unwrap();
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 1);
        assert_eq!(s.pgrp, 4240);
        assert_eq!(s.start_time, 987654);
        assert!(parse_stat("12 (short) S 1").is_none());
    }

    #[test]
    fn this_process_is_read_from_proc() {
        let me = std::process::id() as i32;
        let s = stat(me).unwrap();
        assert_eq!(s.ppid, nix::unistd::getppid().as_raw());
        assert_eq!(s.pgrp, nix::unistd::getpgrp().as_raw());
        assert!(!s.is_zombie());
        assert_eq!(stat(-5), None);
        assert!(group_members(s.pgrp).contains(&Pid::from_raw(me)));
    }

    #[test]
    fn processes_are_found_by_an_environment_entry() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("PLINTH_TEST_TAG", "f00d")
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(child.id() as i32);
        let found = with_env_entry("PLINTH_TEST_TAG=f00d");
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(found, vec![pid]);
        assert!(with_env_entry("PLINTH_TEST_TAG=f00").is_empty());
        assert!(with_env_entry("").is_empty());
    }
}
