//! What file system a partition holds (`blkid`, reading the partition itself, no cache), and growing an
//! ext2/3/4 file system to its partition: `e2fsck -f -p` first, as `resize2fs` asks of a file system
//! it grows offline, then `resize2fs`.

use super::tool;
use super::InstalledError;
use std::path::Path;
use std::process::Command;

/// What happened to the file system of a grown partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FsGrowth {
    /// It was checked and grown to fill the partition.
    Grown {
        /// Its type (`ext4`).
        fs: String,
    },
    /// It was left as it was: only the partition grew.
    NotGrown {
        /// Its type, when one was found.
        fs: Option<String>,
        /// Why it was not grown.
        why: String,
    },
}

/// The file system type `blkid` finds on `partition` (`ext4`, `xfs`, `vfat`, ...), `None` when it
/// finds none.
pub(crate) fn probe(partition: &Path) -> Result<Option<String>, InstalledError> {
    let out = tool::run(
        partition,
        Command::new("blkid")
            .args(["--probe", "--output", "value", "--match-tag", "TYPE"])
            .arg(partition),
        // 2: nothing found.
        &[0, 2],
    )?;
    let fs = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok((!fs.is_empty()).then_some(fs))
}

/// The file system label `blkid` finds on `partition`, if any.
pub(crate) fn label(partition: &Path) -> Result<Option<String>, InstalledError> {
    let out = tool::run(
        partition,
        Command::new("blkid")
            .args(["--probe", "--output", "value", "--match-tag", "LABEL"])
            .arg(partition),
        &[0, 2],
    )?;
    let label = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok((!label.is_empty()).then_some(label))
}

/// Grows the file system on the (unmounted) `partition` to the partition's size, when it is one this
/// knows how to grow.
pub(crate) fn grow(partition: &Path) -> Result<FsGrowth, InstalledError> {
    let fs = probe(partition)?;
    match fs.as_deref() {
        Some(kind @ ("ext2" | "ext3" | "ext4")) => {
            // e2fsck: 0 clean, 1 errors corrected, 2 corrected and the system should reboot (nothing
            // runs from this file system); 4 and above: left uncorrected or failed.
            tool::run(
                partition,
                Command::new("e2fsck").args(["-f", "-p"]).arg(partition),
                &[0, 1, 2],
            )?;
            tool::run(partition, Command::new("resize2fs").arg(partition), &[0])?;
            Ok(FsGrowth::Grown {
                fs: kind.to_string(),
            })
        }
        Some(other) => Ok(FsGrowth::NotGrown {
            fs: Some(other.to_string()),
            why: format!("growing {other} is not supported: only the partition was grown"),
        }),
        None => Ok(FsGrowth::NotGrown {
            fs: None,
            why: "blkid finds no file system on it: only the partition was grown".to_string(),
        }),
    }
}
