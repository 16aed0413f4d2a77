//! Whether a disk satisfies hints, and when not, the first hint it fails and what it has instead.

use super::grammar;
use super::operators::GIB;
use super::parse::{Hint, HintName, Hints, Test};
use plinth_common::wire::Disk;
use std::fmt;

/// The first hint a disk fails.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// The hint's name.
    pub hint: HintName,
    /// The hint's expression as given, in JSON (`">= 100"`, `false`).
    pub written: String,
    /// What the disk has for it, as shown to people; `None` when it reports nothing.
    pub have: Option<String>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fails {} {} (", self.hint, self.written)?;
        match &self.have {
            Some(have) => write!(f, "it has {have})"),
            None => write!(f, "it reports none)"),
        }
    }
}

/// The first hint `disk` fails, in the hints' order; `None` when it satisfies them all.
pub fn first_failure(disk: &Disk, hints: &Hints) -> Option<Failure> {
    hints
        .hints
        .iter()
        .find(|hint| !holds(disk, hint))
        .map(|hint| Failure {
            hint: hint.name,
            written: hint.written.clone(),
            have: shown(disk, hint.name),
        })
}

/// Whether one hint holds for `disk`. A value the disk does not report (or reports blank) satisfies no
/// hint, whatever its operator.
fn holds(disk: &Disk, hint: &Hint) -> bool {
    match &hint.test {
        Test::Size(cmp, gib) => cmp.holds_for_size(disk.size_bytes, gib),
        Test::Flag(want) => disk.rotational == Some(*want),
        Test::Text(cmp, values) => texts(disk, hint.name)
            .iter()
            .any(|have| cmp.holds_for_text(have, values)),
    }
}

/// The disk's normalised values for a text hint: none when it reports none, several only for by-path
/// names (any of them may match).
fn texts(disk: &Disk, hint: HintName) -> Vec<String> {
    let one = |v: &Option<String>| v.iter().map(|s| grammar::normalize(s)).collect::<Vec<_>>();
    let values = match hint {
        HintName::Model => one(&disk.model),
        HintName::Vendor => one(&disk.vendor),
        HintName::Serial => one(&disk.serial),
        HintName::Wwn => one(&disk.wwn),
        HintName::WwnWithExtension => one(&disk.wwn_with_extension),
        HintName::WwnVendorExtension => one(&disk.wwn_vendor_extension),
        HintName::Hctl => one(&disk.hctl),
        HintName::Name => vec![grammar::normalize(&super::device_path(disk))],
        HintName::ByPath => disk
            .by_path
            .iter()
            .map(|link| grammar::normalize(&format!("/dev/disk/by-path/{link}")))
            .collect(),
        HintName::Size | HintName::Rotational => Vec::new(),
    };
    values.into_iter().filter(|v| !v.is_empty()).collect()
}

/// What the disk has for a hint, for messages.
fn shown(disk: &Disk, hint: HintName) -> Option<String> {
    match hint {
        HintName::Size => Some(gib_text(disk.size_bytes)),
        HintName::Rotational => disk.rotational.map(|r| r.to_string()),
        HintName::ByPath if !disk.by_path.is_empty() => Some(
            disk.by_path
                .iter()
                .map(|l| format!("{l:?}"))
                .collect::<Vec<_>>()
                .join(" and "),
        ),
        HintName::Name => Some(format!("{:?}", super::device_path(disk))),
        _ => {
            let raw = match hint {
                HintName::Model => &disk.model,
                HintName::Vendor => &disk.vendor,
                HintName::Serial => &disk.serial,
                HintName::Wwn => &disk.wwn,
                HintName::WwnWithExtension => &disk.wwn_with_extension,
                HintName::WwnVendorExtension => &disk.wwn_vendor_extension,
                HintName::Hctl => &disk.hctl,
                _ => return None,
            };
            raw.as_deref()
                .filter(|v| !grammar::py_strip(v).is_empty())
                .map(|v| format!("{v:?}"))
        }
    }
}

/// A size in GiB with two decimals, as people read it (`465.76 GiB`).
pub fn gib_text(bytes: u64) -> String {
    // Precision is lost only past 2^53 bytes (8 PiB), and only in the last shown digits.
    #[allow(clippy::cast_precision_loss)]
    let gib = bytes as f64 / GIB as f64;
    format!("{gib:.2} GiB")
}
