//! [`find_root_partition`]: which of a disk's partitions holds the installed system's root file system.
//! An explicit selector wins (a partition number, or a label: the GPT partition name or the file
//! system's label); otherwise the GPT type "Linux root (x86-64)" of the Discoverable Partitions
//! Specification (what `make-image --format disk` gives its root); otherwise the one partition whose
//! file system holds `/etc/os-release` (or `/usr/lib/os-release`), each mounted read-only in turn to
//! look. None, or more than one, is an error naming the disk and the candidates.

use super::blockdev::{self, KernelPartition};
use super::filesystem;
use super::mount::{private_dir, Mount};
use super::table::{self, ROOT_X86_64_TYPE};
use super::InstalledError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How to choose the root partition.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RootSelector {
    /// By the GPT root type, else by `/etc/os-release`.
    #[default]
    Auto,
    /// The partition of this number (1 for the first).
    Number(u32),
    /// The partition whose GPT name or file system label is this.
    Label(String),
}

/// How the root partition was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundBy {
    /// Its number, as the selector said.
    Number,
    /// Its label, as the selector said.
    Label,
    /// Its GPT type, "Linux root (x86-64)".
    GptType,
    /// Its file system holds `/etc/os-release`.
    OsRelease,
}

/// The partition holding the root file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootPartition {
    /// Its device node.
    pub device: PathBuf,
    /// Its number.
    pub number: u32,
    /// How it was found.
    pub found_by: FoundBy,
}

/// Finds the partition of `disk` holding the root file system, as `selector` says (see the module's
/// text). The kernel is made to read the disk's partition table first.
pub fn find_root_partition(
    disk: &Path,
    selector: &RootSelector,
) -> Result<RootPartition, InstalledError> {
    let gpt = table::read(disk)?;
    let parts = blockdev::reread(disk, gpt.as_ref().map(|t| t.expected()).as_deref())?;
    let none = |why: String| InstalledError::NoRoot {
        disk: disk.to_path_buf(),
        why,
    };
    let found = |p: &KernelPartition, found_by| RootPartition {
        device: p.device.clone(),
        number: p.number,
        found_by,
    };
    match selector {
        RootSelector::Number(n) => parts
            .iter()
            .find(|p| p.number == *n)
            .map(|p| found(p, FoundBy::Number))
            .ok_or_else(|| none(format!("no partition {n} (it has {})", numbers(&parts)))),
        RootSelector::Label(label) => {
            let mut hits = Vec::new();
            for p in &parts {
                let gpt_name = gpt
                    .as_ref()
                    .and_then(|t| t.entries.iter().find(|e| e.number == p.number))
                    .map(|e| e.name.as_str());
                if gpt_name == Some(label.as_str())
                    || filesystem::label(&p.device)?.as_deref() == Some(label.as_str())
                {
                    hits.push(p);
                }
            }
            one(disk, hits, FoundBy::Label, &format!("labelled {label:?}"))
        }
        RootSelector::Auto => {
            if let Some(t) = &gpt {
                let typed = table::of_type(t, ROOT_X86_64_TYPE);
                let hits: Vec<&KernelPartition> =
                    parts.iter().filter(|p| typed.contains(&p.number)).collect();
                if !hits.is_empty() {
                    return one(
                        disk,
                        hits,
                        FoundBy::GptType,
                        "of GPT type Linux root (x86-64)",
                    );
                }
            }
            let mut hits = Vec::new();
            for p in &parts {
                if holds_os_release(&p.device)? {
                    hits.push(p);
                }
            }
            one(
                disk,
                hits,
                FoundBy::OsRelease,
                "of GPT type Linux root (x86-64) or holding /etc/os-release",
            )
        }
    }
    .map_err(|e| match e {
        InstalledError::NoRoot { disk, why } if parts.is_empty() => InstalledError::NoRoot {
            disk,
            why: format!("{why}; the disk has no partitions"),
        },
        e => e,
    })
}

fn numbers(parts: &[KernelPartition]) -> String {
    if parts.is_empty() {
        return "none".to_string();
    }
    parts
        .iter()
        .map(|p| p.number.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The one partition of `hits`, or an error naming what was looked for.
fn one(
    disk: &Path,
    hits: Vec<&KernelPartition>,
    found_by: FoundBy,
    what: &str,
) -> Result<RootPartition, InstalledError> {
    match hits.as_slice() {
        [p] => Ok(RootPartition {
            device: p.device.clone(),
            number: p.number,
            found_by,
        }),
        [] => Err(InstalledError::NoRoot {
            disk: disk.to_path_buf(),
            why: format!("no partition {what}"),
        }),
        many => Err(InstalledError::AmbiguousRoot {
            disk: disk.to_path_buf(),
            candidates: many.iter().map(|p| p.device.clone()).collect(),
            why: format!("each is {what}: choose one by number or label"),
        }),
    }
}

/// Whether the file system on `partition` (when it has one the kernel mounts) holds an os-release.
fn holds_os_release(partition: &Path) -> Result<bool, InstalledError> {
    if filesystem::probe(partition)?.is_none() {
        return Ok(false);
    }
    let dir = private_dir("probe")?;
    let Ok(mut m) = Mount::new(partition, &dir, true, true) else {
        let _ = std::fs::remove_dir(&dir);
        return Ok(false);
    };
    let found = ["etc/os-release", "usr/lib/os-release"]
        .iter()
        .any(|p| std::fs::symlink_metadata(m.target().join(p)).is_ok());
    m.unmount()?;
    Ok(found)
}
