//! Choosing the disk an operating system image is written to, by root device hints in OpenStack
//! Ironic's syntax and semantics (`{"size": ">= 100", "rotational": false}`), or by Ironic's default
//! (the smallest disk of at least 4 GiB) when there are none; Plinth departs from Ironic only where
//! Ironic's choice is a trap, each place listed in `docs/PROVISIONING.md` ("Choosing the disk").
//!
//! | module | owns |
//! |---|---|
//! | `grammar` | Ironic's expression grammar: the operator an expression starts with, its values |
//! | `parse` | [`Hints::parse`]: hint names, types, what is refused ([`HintError`]) |
//! | `operators` | the comparisons on texts and sizes |
//! | `matching` | whether a disk satisfies hints, the first hint it fails |
//! | `eligible` | disks never chosen (optical, read-only, in use) and those only hints choose |
//! | `no_disk` | [`NoDisk`], the sentence that says why no disk was chosen |

mod eligible;
mod grammar;
mod matching;
mod no_disk;
mod operators;
mod parse;

#[cfg(test)]
mod tests;

pub use eligible::{Unfit, MIN_DEFAULT_SIZE};
pub use matching::Failure;
pub use no_disk::{NoDisk, Reason};
pub use parse::{HintError, HintName, Hints};

use plinth_common::wire::Disk;

/// The device path of a disk: `/dev/` and its kernel name.
pub fn device_path(disk: &Disk) -> String {
    format!("/dev/{}", disk.name)
}

/// Chooses the disk to write the image to. With hints (and at least one), the first disk in `disks`'
/// order that satisfies every hint, among those that can be chosen at all (not an optical, floppy or
/// empty drive, not read-only, not holding the running system's mounts). Without hints, the smallest
/// of those of at least 4 GiB that are not removable, the name breaking ties. `NoDisk` names every
/// disk and why it was ruled out.
pub fn choose<'d>(disks: &'d [Disk], hints: Option<&Hints>) -> Result<&'d Disk, NoDisk> {
    match hints.filter(|h| !h.is_empty()) {
        Some(hints) => by_hints(disks, hints),
        None => by_default(disks),
    }
}

fn by_hints<'d>(disks: &'d [Disk], hints: &Hints) -> Result<&'d Disk, NoDisk> {
    let mut ruled_out = Vec::new();
    for disk in disks {
        let reason = match eligible::never(disk) {
            Some(unfit) => Reason::Unfit(unfit),
            None => match matching::first_failure(disk, hints) {
                Some(failure) => Reason::Failed(failure),
                None => return Ok(disk),
            },
        };
        ruled_out.push((disk.name.clone(), reason));
    }
    Err(NoDisk {
        with_hints: true,
        disks: ruled_out,
    })
}

fn by_default(disks: &[Disk]) -> Result<&Disk, NoDisk> {
    disks
        .iter()
        .filter(|d| eligible::not_by_default(d).is_none())
        .min_by(|a, b| (a.size_bytes, &a.name).cmp(&(b.size_bytes, &b.name)))
        .ok_or_else(|| NoDisk {
            with_hints: false,
            disks: disks
                .iter()
                .filter_map(|d| {
                    eligible::not_by_default(d).map(|u| (d.name.clone(), Reason::Unfit(u)))
                })
                .collect(),
        })
}
