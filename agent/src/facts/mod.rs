//! Hardware and system facts, one submodule per source. Every reader takes a [`Sources`] whose root can be a
//! fake tree (tests build one in a temporary directory), and a missing or unreadable source is reported as
//! absent, never as a failure.

mod bmc;
mod cpu;
mod disks;
mod dmi;
mod file;
mod memory;
mod mounts;
mod nics;
mod sysfs;
mod system;

use crate::cmdline::KernelCmdline;
use plinth_common::wire::Facts;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub use file::{read_file, FactsFileError};
pub use nics::live_addresses;

/// Where interface addresses come from.
#[derive(Debug, Clone)]
pub enum AddressSource {
    /// The running kernel (through `sysinfo`).
    Live,
    /// A fixed map from interface name to CIDR addresses (tests).
    Fixed(BTreeMap<String, Vec<String>>),
}

/// Where the readers look.
#[derive(Debug, Clone)]
pub struct Sources {
    /// The file system root the readers join their paths to (`/` on a real machine).
    pub root: PathBuf,
    /// Where interface addresses come from.
    pub addresses: AddressSource,
    /// The kernel command line (for PXE detection).
    pub cmdline: KernelCmdline,
    /// Whether the readers may ask the running system directly when a file is missing (hostname, CPU
    /// counts). False for fake trees.
    pub live: bool,
}

impl Sources {
    /// The running machine.
    pub fn live(cmdline: KernelCmdline) -> Sources {
        Sources {
            root: PathBuf::from("/"),
            addresses: AddressSource::Live,
            cmdline,
            live: true,
        }
    }

    /// A fake tree rooted at `root`, with fixed addresses and nothing asked of the running system.
    pub fn fake(
        root: &Path,
        cmdline: KernelCmdline,
        addresses: BTreeMap<String, Vec<String>>,
    ) -> Sources {
        Sources {
            root: root.to_path_buf(),
            addresses: AddressSource::Fixed(addresses),
            cmdline,
            live: false,
        }
    }

    /// `rel` (an absolute path such as `/sys/block`) under the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }
}

/// Collects every fact and records how long it took.
pub fn collect(src: &Sources) -> Facts {
    let start = Instant::now();
    let mut facts = Facts {
        hostname: system::hostname(src),
        kernel: system::kernel(src),
        os: system::os_release(src),
        dmi: dmi::read(src),
        cpu: cpu::read(src),
        memory: memory::read(src),
        disks: disks::read(src),
        nics: nics::read(src),
        bmc_address: bmc::address(src),
        collected_in_us: None,
    };
    facts.collected_in_us = Some(u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX));
    facts
}

#[cfg(test)]
mod tests;
