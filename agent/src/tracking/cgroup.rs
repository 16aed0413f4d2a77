//! cgroup v2 directories: finding the unified hierarchy (from `/proc/self/mountinfo`, so a hybrid layout
//! that mounts it at `/sys/fs/cgroup/unified` is found as well as a pure one at `/sys/fs/cgroup`), the
//! agent's own cgroup (from `/proc/self/cgroup`), and one cgroup's members, signals and removal. No
//! controller is enabled: a cgroup here is only a container the kernel keeps every descendant in, whatever
//! session or process group it moves to.

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Finds where the cgroup2 file system is mounted, from the text of `/proc/self/mountinfo`. Only a mount
/// of the hierarchy's root counts.
pub fn unified_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        // `id parent major:minor root mount-point options [optional fields] - fstype source super-options`
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mut fields = left.split_whitespace();
        let root = fields.nth(3)?;
        let mount_point = fields.next()?;
        (root == "/").then(|| PathBuf::from(unescape(mount_point)))
    })
}

/// The agent's own cgroup v2 path (`/system.slice/plinth-agent.service`), from the text of
/// `/proc/self/cgroup` (the `0::` line).
pub fn own_path(proc_cgroup: &str) -> Option<String> {
    proc_cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .filter(|p| p.starts_with('/') && !p.ends_with(" (deleted)"))
        .map(str::to_string)
}

/// Mountinfo escapes space, tab, newline and backslash as `\ooo`.
pub(crate) fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let value =
                (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(value);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One cgroup directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroup {
    path: PathBuf,
}

impl Cgroup {
    /// The cgroup at a directory of the mounted hierarchy.
    pub fn at(path: PathBuf) -> Cgroup {
        Cgroup { path }
    }

    /// Creates the cgroup (its parent must exist).
    pub fn create(path: PathBuf) -> io::Result<Cgroup> {
        fs::create_dir(&path)?;
        Ok(Cgroup { path })
    }

    /// Its directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens its `cgroup.procs` for writing: a process that writes `0` to it moves itself in.
    pub fn open_procs(&self) -> io::Result<fs::File> {
        OpenOptions::new()
            .write(true)
            .open(self.path.join("cgroup.procs"))
    }

    /// Moves process `pid` into the cgroup.
    pub fn add(&self, pid: Pid) -> io::Result<()> {
        self.open_procs()?
            .write_all(pid.as_raw().to_string().as_bytes())
    }

    /// Every process in the cgroup and the cgroups below it. A cgroup that is gone has none.
    pub fn pids(&self) -> Vec<Pid> {
        let mut out = Vec::new();
        collect_pids(&self.path, &mut out, 0);
        out
    }

    /// True while any process is in the cgroup or below it (`populated 1` in `cgroup.events`).
    pub fn populated(&self) -> bool {
        match fs::read_to_string(self.path.join("cgroup.events")) {
            Ok(events) => events.lines().any(|l| l.trim() == "populated 1"),
            Err(_) => false,
        }
    }

    /// Sends `signal` to every process in it; returns the processes signalled.
    pub fn signal(&self, signal: Signal) -> Vec<Pid> {
        let pids = self.pids();
        for pid in &pids {
            let _ = kill(*pid, signal);
        }
        pids
    }

    /// Kills every process in it and below it: through `cgroup.kill` where the kernel has it (5.14), which
    /// also catches processes forking meanwhile; by SIGKILL to each member otherwise.
    pub fn kill_all(&self) {
        let done = OpenOptions::new()
            .write(true)
            .open(self.path.join("cgroup.kill"))
            .and_then(|mut f| f.write_all(b"1"));
        if done.is_err() {
            self.signal(Signal::SIGKILL);
        }
    }

    /// Removes the cgroup and the empty cgroups below it. Fails while a process is still in it.
    pub fn remove(&self) -> io::Result<()> {
        remove_tree(&self.path, 0)
    }
}

/// Deeper than this, a task's own cgroup tree is not walked.
const MAX_DEPTH: usize = 32;

fn collect_pids(dir: &Path, out: &mut Vec<Pid>, depth: usize) {
    if let Ok(text) = fs::read_to_string(dir.join("cgroup.procs")) {
        out.extend(
            text.lines()
                .filter_map(|l| l.trim().parse::<i32>().ok())
                .map(Pid::from_raw),
        );
    }
    if depth >= MAX_DEPTH {
        return;
    }
    for child in subdirectories(dir) {
        collect_pids(&child, out, depth + 1);
    }
}

fn remove_tree(dir: &Path, depth: usize) -> io::Result<()> {
    if depth < MAX_DEPTH {
        for child in subdirectories(dir) {
            let _ = remove_tree(&child, depth + 1);
        }
    }
    match fs::remove_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

fn subdirectories(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .map(|e| e.path())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn the_unified_hierarchy_is_found_in_a_hybrid_layout() {
        assert_eq!(
            unified_mount(HYBRID),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let pure =
            "30 24 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(unified_mount(pure), Some(PathBuf::from("/sys/fs/cgroup")));
        // A bind mount of a sub-tree is not the hierarchy's root; an escaped space is unescaped.
        let odd = "50 24 0:26 /sub /mnt/sub rw - cgroup2 cgroup2 rw\n\
                   51 24 0:26 / /mnt/my\\040cgroups rw - cgroup2 cgroup2 rw\n";
        assert_eq!(unified_mount(odd), Some(PathBuf::from("/mnt/my cgroups")));
        assert_eq!(
            unified_mount("31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"),
            None
        );
    }

    #[test]
    fn the_own_cgroup_is_the_unified_line() {
        let text = "9:name=systemd:/system.slice/x.service\n0::/system.slice/x.service\n";
        assert_eq!(own_path(text).as_deref(), Some("/system.slice/x.service"));
        assert_eq!(own_path("0::/\n").as_deref(), Some("/"));
        assert_eq!(own_path("4:memory:/a\n"), None);
    }
}
