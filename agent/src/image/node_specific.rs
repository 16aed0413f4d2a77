//! What must not be baked into an image that boots many nodes. `/etc/hostname` is removed and
//! `/etc/machine-id` emptied (systemd makes both at first boot, the machine id from the node's own
//! randomness); anything else that belongs to one machine (SSH host keys, a random seed, DHCP leases,
//! another node's agent state, puppet's certificates, ...) is reported so the image builder can remove it.
//! The rules are written once and read through [`Listing`], which a directory tree and a disk image
//! (through `debugfs`) both implement.

use std::path::{Path, PathBuf};

/// The file removed from every image: systemd sets the host name at boot (from DHCP, the kernel command
/// line's `systemd.hostname=`, or the controller through a task).
pub const HOSTNAME: &str = "/etc/hostname";
/// The file emptied in every image: systemd writes a fresh machine id into an empty one at first boot.
pub const MACHINE_ID: &str = "/etc/machine-id";

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// Anything else (link, device, ...).
    Other,
}

/// One entry of a directory of the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name inside the directory.
    pub name: String,
    /// Its kind.
    pub kind: Kind,
    /// Its size in bytes (files).
    pub size: u64,
}

/// Reads directories of an image.
pub trait Listing {
    /// The entries of `dir` (an absolute path inside the image), without `.` and `..`; empty when the
    /// directory does not exist.
    fn entries(&self, dir: &str) -> Vec<Entry>;
}

/// One kind of node-specific file.
struct Rule {
    dir: &'static str,
    matches: fn(&Entry) -> bool,
    why: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        dir: "/etc/ssh",
        matches: |e| e.name.starts_with("ssh_host_"),
        why: "an SSH host key: every node booted from the image would present the same one; remove \
              the keys and let each node make its own at first boot (`ssh-keygen -A` before sshd starts)",
    },
    Rule {
        dir: "/var/lib/dbus",
        matches: |e| e.name == "machine-id" && e.kind == Kind::File && e.size > 0,
        why: "a copy of the building machine's id; make it a link to /etc/machine-id",
    },
    Rule {
        dir: "/var/lib/systemd",
        matches: |e| e.name == "random-seed" || e.name == "credential.secret",
        why: "every node would start from the same secret; remove it (systemd makes it at first boot)",
    },
    Rule {
        dir: "/etc/udev/rules.d",
        matches: |e| e.name == "70-persistent-net.rules",
        why: "it binds interface names to the building machine's MAC addresses",
    },
    Rule {
        dir: "/var/lib/dhcp",
        matches: |e| e.name.ends_with(".leases") && e.size > 0,
        why: "DHCP leases of the building machine",
    },
    Rule {
        dir: "/var/lib/plinth-agent",
        matches: |e| {
            ["revision", "list.json", "finished", "journal", "reboot.json"].contains(&e.name.as_str())
        },
        why: "the agent state of a node that ran from this tree; remove /var/lib/plinth-agent",
    },
    Rule {
        dir: "/var/lib/puppet/ssl/private_keys",
        matches: |_| true,
        why: "a puppet agent's private key, which names one node",
    },
    Rule {
        dir: "/etc/puppetlabs/puppet/ssl/private_keys",
        matches: |_| true,
        why: "a puppet agent's private key, which names one node",
    },
    Rule {
        dir: "/var/lib/cloud",
        matches: |e| e.name == "instance" || e.name == "instances",
        why: "cloud-init's record of the instance that ran, so it would not run again on a new node",
    },
];

/// The warnings for what `listing` finds: `path: why`, one per file, in rule order.
pub fn scan(listing: &dyn Listing) -> Vec<String> {
    let mut out = Vec::new();
    for rule in RULES {
        let mut hits: Vec<Entry> = listing
            .entries(rule.dir)
            .into_iter()
            .filter(|e| (rule.matches)(e))
            .collect();
        hits.sort_by(|a, b| a.name.cmp(&b.name));
        for e in hits {
            out.push(format!("{}/{}: {}", rule.dir, e.name, rule.why));
        }
    }
    out
}

/// A root file system directory.
pub struct Tree<'a>(pub &'a Path);

impl Listing for Tree<'_> {
    fn entries(&self, dir: &str) -> Vec<Entry> {
        let Ok(read) = std::fs::read_dir(self.0.join(dir.trim_start_matches('/'))) else {
            return Vec::new();
        };
        read.flatten()
            .filter_map(|d| {
                let meta = d.path().symlink_metadata().ok()?;
                let kind = if meta.is_file() {
                    Kind::File
                } else if meta.is_dir() {
                    Kind::Dir
                } else {
                    Kind::Other
                };
                Some(Entry {
                    name: d.file_name().to_string_lossy().into_owned(),
                    kind,
                    size: meta.len(),
                })
            })
            .collect()
    }
}

/// Removes `/etc/hostname` and empties `/etc/machine-id` in a tree; returns what it changed, as paths
/// inside the image.
pub fn clear_tree(root: &Path) -> Result<Vec<String>, super::ImageError> {
    let mut changed = Vec::new();
    let hostname = inside(root, HOSTNAME);
    if hostname.symlink_metadata().is_ok() {
        std::fs::remove_file(&hostname).map_err(|source| super::ImageError::Write {
            path: hostname.clone(),
            source,
        })?;
        changed.push(HOSTNAME.to_string());
    }
    let machine_id = inside(root, MACHINE_ID);
    if let Ok(meta) = machine_id.symlink_metadata() {
        if meta.is_file() && meta.len() > 0 {
            // Truncated in place: the file (and its mode) stays, so a read-only root still has one to
            // mount the generated id over.
            std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&machine_id)
                .map_err(|source| super::ImageError::Write {
                    path: machine_id.clone(),
                    source,
                })?;
            changed.push(MACHINE_ID.to_string());
        }
    }
    Ok(changed)
}

fn inside(root: &Path, path: &str) -> PathBuf {
    root.join(path.trim_start_matches('/'))
}

/// Parses `debugfs -R "ls -p DIR"` output (`/inode/mode/uid/gid/name/size/` per line).
pub fn parse_debugfs_ls(out: &str) -> Vec<Entry> {
    out.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.trim().split('/').collect();
            // "", inode, mode, uid, gid, name, size, "" (a name holds no '/').
            if f.len() != 8 || f[5] == "." || f[5] == ".." || f[5].is_empty() {
                return None;
            }
            let mode = u32::from_str_radix(f[2], 8).ok()?;
            let kind = match mode & 0o170000 {
                0o100000 => Kind::File,
                0o040000 => Kind::Dir,
                _ => Kind::Other,
            };
            Some(Entry {
                name: f[5].to_string(),
                kind,
                size: f[6].parse().unwrap_or(0),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debugfs_listings_parse() {
        let out = "/2/040755/0/0/./4096/\n/2/040755/0/0/../4096/\n\
                   /131/100600/0/0/ssh_host_ed25519_key/411/\n/132/120777/0/0/link//\n\
                   /140/040700/0/0/journal//\n";
        let e = parse_debugfs_ls(out);
        assert_eq!(
            e,
            vec![
                Entry {
                    name: "ssh_host_ed25519_key".into(),
                    kind: Kind::File,
                    size: 411
                },
                Entry {
                    name: "link".into(),
                    kind: Kind::Other,
                    size: 0
                },
                Entry {
                    name: "journal".into(),
                    kind: Kind::Dir,
                    size: 0
                },
            ]
        );
    }

    #[test]
    fn a_clean_tree_gets_no_warning_and_a_used_one_gets_one_per_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in [
            "etc/ssh",
            "var/lib/dbus",
            "var/lib/dhcp",
            "var/lib/plinth-agent/work",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("etc/ssh/sshd_config"), "Port 22\n").unwrap();
        // An empty leases file and a link to /etc/machine-id are what a clean image has.
        std::fs::write(root.join("var/lib/dhcp/dhclient.leases"), "").unwrap();
        std::os::unix::fs::symlink("/etc/machine-id", root.join("var/lib/dbus/machine-id"))
            .unwrap();
        assert_eq!(scan(&Tree(root)), Vec::<String>::new());

        std::fs::write(root.join("etc/ssh/ssh_host_rsa_key"), "k").unwrap();
        std::fs::write(root.join("etc/ssh/ssh_host_ed25519_key"), "k").unwrap();
        std::fs::write(root.join("var/lib/dhcp/dhclient.leases"), "lease {}").unwrap();
        std::fs::write(root.join("var/lib/plinth-agent/revision"), "7").unwrap();
        let w = scan(&Tree(root));
        assert_eq!(w.len(), 4, "{w:#?}");
        assert!(w[0].starts_with("/etc/ssh/ssh_host_ed25519_key: an SSH host key"));
        assert!(w[1].starts_with("/etc/ssh/ssh_host_rsa_key: "));
        assert!(w[2].starts_with("/var/lib/dhcp/dhclient.leases: DHCP leases"));
        assert!(w[3].starts_with("/var/lib/plinth-agent/revision: the agent state"));
    }

    #[test]
    fn hostname_goes_and_machine_id_is_emptied_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("etc")).unwrap();
        std::fs::write(root.join("etc/hostname"), "builder\n").unwrap();
        std::fs::write(
            root.join("etc/machine-id"),
            "0123456789abcdef0123456789abcdef\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            root.join("etc/machine-id"),
            std::fs::Permissions::from_mode(0o444),
        )
        .unwrap();
        assert_eq!(clear_tree(root).unwrap(), vec![HOSTNAME, MACHINE_ID]);
        assert!(!root.join("etc/hostname").exists());
        let meta = std::fs::metadata(root.join("etc/machine-id")).unwrap();
        assert_eq!(meta.len(), 0);
        assert_eq!(meta.permissions().mode() & 0o777, 0o444);
        // A second run has nothing left to do.
        assert_eq!(clear_tree(root).unwrap(), Vec::<String>::new());
    }
}
