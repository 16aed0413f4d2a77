//! The comparison of a [`Profile`] with the node's facts: every difference named, or what matched.

use super::bound::Bound;
use super::items::match_items;
use super::profile::{canonical_arch, Profile};
use plinth_common::wire::{Disk, Facts, Nic};
use serde_json::{json, Value};

const MIB: u64 = 1 << 20;

/// What the comparison found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// What met the profile, one phrase each (`cpus 8 (>= 4)`, `disk 1 (size_gb >= 100): sda, 447.13 GiB`).
    pub matched: Vec<String>,
    /// What did not, one phrase each (`cpus: expected >= 4, has 2`).
    pub differences: Vec<String>,
    /// For each expected disk, the node's disk it was matched to.
    pub disks: Vec<Option<String>>,
    /// For each expected NIC, the node's NIC it was matched to.
    pub nics: Vec<Option<String>>,
}

impl Verdict {
    /// True when nothing differs.
    pub fn passed(&self) -> bool {
        self.differences.is_empty()
    }

    /// The task's message: every difference in one sentence, or everything that matched.
    pub fn message(&self) -> String {
        if self.passed() {
            format!(
                "the hardware matches the profile: {}",
                self.matched.join("; ")
            )
        } else {
            format!(
                "the hardware differs from the profile: {}",
                self.differences.join("; ")
            )
        }
    }

    /// The task's details: differences, matches and the disks and NICs chosen.
    pub fn details(&self) -> Value {
        json!({
            "differences": self.differences,
            "matched": self.matched,
            "disks": self.disks,
            "nics": self.nics,
        })
    }
}

/// Compares the node's `facts` and architecture (`uname -m`; `None` when unknown) with `profile`.
pub fn compare(profile: &Profile, facts: &Facts, arch: Option<&str>) -> Verdict {
    let mut verdict = Verdict::default();
    let threads = facts.cpu.as_ref().map(|c| u64::from(c.threads));
    number(&mut verdict, "cpus", profile.cpus, threads);
    let memory = facts.memory.as_ref().map(|m| m.total_bytes / MIB);
    number(&mut verdict, "memory_mb", profile.memory_mb, memory);
    if let Some(want) = &profile.arch {
        match arch.map(canonical_arch) {
            Some(have) if have == *want => verdict.matched.push(format!("arch {have}")),
            Some(have) => verdict
                .differences
                .push(format!("arch: expected {want}, has {have}")),
            None => verdict
                .differences
                .push(format!("arch: expected {want}, the node reports none")),
        }
    }
    let disks: Vec<&Disk> = facts.disks.iter().collect();
    verdict.disks = match_items(&mut verdict, &profile.disks, &disks);
    // Virtual interfaces (loopback, bridges, bonds, VLANs, ...) are no hardware of the node.
    let nics: Vec<&Nic> = facts.nics.iter().filter(|n| !n.virtual_device).collect();
    verdict.nics = match_items(&mut verdict, &profile.nics, &nics);
    verdict
}

fn number(verdict: &mut Verdict, field: &str, want: Option<Bound>, have: Option<u64>) {
    let Some(want) = want else { return };
    match have {
        Some(have) if want.holds(have) => verdict.matched.push(format!("{field} {have} ({want})")),
        Some(have) => verdict
            .differences
            .push(format!("{field}: expected {want}, has {have}")),
        None => verdict
            .differences
            .push(format!("{field}: expected {want}, the node reports none")),
    }
}
