//! Preparing a system the agent has just written to a disk, before the machine reboots into it: the
//! partition table fitted to the disk, the root file system grown to the end of it, the root found and
//! mounted, the node's own files written into it (host name, network, SSH keys, any file), and the
//! firmware told what to boot. The agent runs this in the discovery image, after the image is on the
//! disk and before it reboots.
//!
//! | module | owns |
//! |---|---|
//! | `blockdev` | a disk's size and sector size, its partitions as the kernel sees them, re-reading the table |
//! | `table` | the GPT (read and written with the `gpt` crate), moving its backup to the disk's end |
//! | `grow` | growing the last partition to the disk's end, then its file system |
//! | `filesystem` | what file system a partition holds; `e2fsck` and `resize2fs` |
//! | `root` | which partition holds the root file system |
//! | `mount` | [`MountedRoot`]: the root (and its EFI system partition) mounted until dropped |
//! | `files` | [`place_file`] and what is written with it: host name, authorized keys |
//! | `network` | [`NetworkConfig`] as systemd-networkd files |
//! | `boot` | the firmware's boot entry on UEFI ([`set_boot_target`]) |
//!
//! Every function names the disk or partition it works on in its errors ([`InstalledError`]).

mod blockdev;
mod boot;
mod error;
mod files;
mod filesystem;
mod grow;
mod mount;
mod network;
mod root;
mod table;
mod tool;

#[cfg(test)]
mod tests;

pub use boot::{set_boot_target, BootTarget};
pub use error::InstalledError;
pub use files::{place_file, write_authorized_keys, write_hostname};
pub use filesystem::FsGrowth;
pub use grow::{grow_last_partition, GrowReport};
pub use mount::{mount_root, MountedRoot};
pub use network::{write_network, InterfaceConfig, NetworkConfig, NetworkOutcome};
pub use root::{find_root_partition, FoundBy, RootPartition, RootSelector};
pub use table::{relocate_backup_gpt, Relocation};
