//! The durable record of an attempt's processes: one JSON file per running command in
//! `<state_dir>/procs/`, written (temporary file, fsync, rename, directory fsync) before the command's
//! first instruction runs, so an agent killed at any moment finds on restart what it must end.

use crate::fsutil;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};

/// The records' directory inside the state directory.
pub const PROCS_DIR: &str = "procs";

/// Which attempt a command belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AttemptKey {
    /// The deployment.
    pub deployment_id: u64,
    /// The list's revision.
    pub revision: u64,
    /// The task id.
    pub task_id: String,
    /// The attempt, from 1.
    pub attempt: u32,
}

/// A process group and its leader, named so that a reused pid is never taken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupId {
    /// The process group id (the leader's pid).
    pub pgid: i32,
    /// The leader's start time, clock ticks since boot (`/proc/<pid>/stat`, field 22).
    pub leader_start: u64,
}

/// What identifies one command's processes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// A random id: the record's file name and the cgroup's directory name.
    pub id: String,
    /// The attempt.
    pub attempt: AttemptKey,
    /// The cgroup directory holding every process of the command, when cgroups are used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<PathBuf>,
    /// The command's process group, once it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupId>,
    /// The boot the command started in (`/proc/sys/kernel/random/boot_id`): after a reboot its processes
    /// are gone, and its pids and start times name nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// The command ended by itself and left processes running (a daemon it started): they are not the
    /// attempt's to end; the record stays only so the empty cgroup is removed later.
    #[serde(default)]
    pub left_running: bool,
}

/// The records of one state directory.
#[derive(Debug, Clone)]
pub struct Records {
    dir: PathBuf,
}

impl Records {
    /// The records under `state_dir`.
    pub fn new(state_dir: &Path) -> Records {
        Records {
            dir: state_dir.join(PROCS_DIR),
        }
    }

    /// The directory holding the records.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// Writes a record durably.
    pub fn save(&self, record: &Record) -> io::Result<()> {
        fsutil::ensure_dir(&self.dir, 0o700)?;
        let bytes = serde_json::to_vec(record).map_err(io::Error::other)?;
        fsutil::write_atomic(&self.path(&record.id), &bytes, 0o600)
    }

    /// Removes a record durably.
    pub fn remove(&self, id: &str) -> io::Result<()> {
        match std::fs::remove_file(self.path(id)) {
            Ok(()) => fsutil::sync_dir(&self.dir),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Every record, with the files that could not be read (path and why).
    pub fn load(&self) -> (Vec<Record>, Vec<(PathBuf, String)>) {
        let mut records = Vec::new();
        let mut bad = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return (records, bad);
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            match std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice::<Record>(&b).map_err(|e| e.to_string()))
            {
                Ok(r) => records.push(r),
                Err(e) => bad.push((path, e)),
            }
        }
        records.sort_by(|a, b| a.id.cmp(&b.id));
        (records, bad)
    }

    /// Removes a file that does not hold a record.
    pub fn discard(&self, path: &Path) {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_survive_a_reload_and_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let records = Records::new(dir.path());
        let r = Record {
            id: "00ff".into(),
            attempt: AttemptKey {
                deployment_id: 1,
                revision: 2,
                task_id: "t".into(),
                attempt: 3,
            },
            cgroup: Some(PathBuf::from("/sys/fs/cgroup/x")),
            group: Some(GroupId {
                pgid: 77,
                leader_start: 99,
            }),
            boot_id: Some("b".into()),
            left_running: false,
        };
        records.save(&r).unwrap();
        std::fs::write(dir.path().join(PROCS_DIR).join("torn.json"), b"{\"id\"").unwrap();
        let (loaded, bad) = records.load();
        assert_eq!(loaded, vec![r.clone()]);
        assert_eq!(bad.len(), 1);
        records.remove(&r.id).unwrap();
        records.remove(&r.id).unwrap();
        assert!(records.load().0.is_empty());
    }
}
