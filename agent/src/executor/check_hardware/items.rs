//! Expected disks and NICs matched to distinct ones of the node ([`assign`]), each match or, for an
//! expected item left without one, every item of the node and why it is not that one.

use super::assign::assign;
use super::compare::Verdict;
use super::profile::{DiskWant, NicWant};
use plinth_common::wire::{Disk, Nic};

const GIB: u64 = 1 << 30;

/// A device of the node that a profile lists expectations of (a disk, a NIC).
pub trait Item {
    /// What the profile expects of one.
    type Want;
    /// Its name in messages: `disk`, `nic` (`disk 2 (size_gb >= 1000)`).
    const LABEL: &'static str;
    /// Its name in prose: `disk`, `NIC` (`no disk left that matches`).
    const NOUN: &'static str;
    /// What is said when the node reports none.
    const NONE: &'static str;

    /// The kernel's name of the device (`sda`, `eth0`).
    fn name(&self) -> &str;
    /// Why the device does not count as one of the node's, when it does not.
    fn not_counted(&self) -> Option<&'static str>;
    /// What the device lacks for `want`, one phrase each (`has 8.00 GiB`); empty when it fits.
    fn misses(&self, want: &Self::Want) -> Vec<String>;
    /// What a match shows beside the name (`, 447.13 GiB`).
    fn shown(&self) -> String;
    /// The expectations written out (`size_gb >= 1000`, `rotational false`).
    fn asked(want: &Self::Want) -> Vec<String>;
}

impl Item for Disk {
    type Want = DiskWant;
    const LABEL: &'static str = "disk";
    const NOUN: &'static str = "disk";
    const NONE: &'static str = "the node reports no disks";

    fn name(&self) -> &str {
        &self.name
    }

    fn not_counted(&self) -> Option<&'static str> {
        if self.name.starts_with("sr") {
            Some("is an optical drive")
        } else if self.name.starts_with("fd") {
            Some("is a floppy drive")
        } else if self.size_bytes == 0 {
            Some("is empty")
        } else if self.removable == Some(true) {
            Some("is removable")
        } else {
            None
        }
    }

    fn misses(&self, want: &DiskWant) -> Vec<String> {
        let size = want
            .size_gb
            .filter(|size| !size.holds_in(u128::from(self.size_bytes), GIB))
            .map(|_| format!("has {}", gib_text(self.size_bytes)));
        let spins = flag_miss(
            want.rotational,
            self.rotational,
            ["is rotational", "is not rotational"],
            "does not say whether it is rotational",
        );
        size.into_iter().chain(spins).collect()
    }

    fn shown(&self) -> String {
        format!(", {}", gib_text(self.size_bytes))
    }

    fn asked(want: &DiskWant) -> Vec<String> {
        let size = want.size_gb.map(|s| format!("size_gb {s}"));
        let spins = want.rotational.map(|r| format!("rotational {r}"));
        size.into_iter().chain(spins).collect()
    }
}

impl Item for Nic {
    type Want = NicWant;
    const LABEL: &'static str = "nic";
    const NOUN: &'static str = "NIC";
    const NONE: &'static str = "the node reports no physical NICs";

    fn name(&self) -> &str {
        &self.name
    }

    fn not_counted(&self) -> Option<&'static str> {
        None
    }

    fn misses(&self, want: &NicWant) -> Vec<String> {
        let speed = want.speed_mbps.and_then(|speed| match self.speed_mbps {
            Some(have) if speed.holds(u64::from(have)) => None,
            Some(have) => Some(format!("has {have} Mb/s")),
            None => Some("reports no speed".to_string()),
        });
        let link = flag_miss(
            want.link_up,
            self.link_up,
            ["has its link up", "has its link down"],
            "does not say whether its link is up",
        );
        speed.into_iter().chain(link).collect()
    }

    fn shown(&self) -> String {
        self.speed_mbps
            .map(|s| format!(", {s} Mb/s"))
            .unwrap_or_default()
    }

    fn asked(want: &NicWant) -> Vec<String> {
        let speed = want.speed_mbps.map(|s| format!("speed_mbps {s}"));
        let link = want.link_up.map(|u| format!("link_up {u}"));
        speed.into_iter().chain(link).collect()
    }
}

/// Matches `wants` to distinct items among `all` that count, notes each match or difference in
/// `verdict`, and answers, for each expected item, the name of the one matched to it.
pub fn match_items<H: Item>(
    verdict: &mut Verdict,
    wants: &[H::Want],
    all: &[&H],
) -> Vec<Option<String>> {
    let counted: Vec<&H> = all
        .iter()
        .copied()
        .filter(|h| h.not_counted().is_none())
        .collect();
    let matched = assign(wants.len(), counted.len(), |w, h| {
        counted[h].misses(&wants[w]).is_empty()
    });
    let holder = |item: &H| {
        matched
            .iter()
            .position(|m| m.is_some_and(|h| counted[h].name() == item.name()))
    };
    for (w, want) in wants.iter().enumerate() {
        let label = label(H::LABEL, w, H::asked(want));
        if let Some(item) = matched[w].map(|h| counted[h]) {
            verdict
                .matched
                .push(format!("{label}: {}{}", item.name(), item.shown()));
            continue;
        }
        let reasons: Vec<String> = all
            .iter()
            .map(|item| {
                let why = match (item.not_counted(), holder(item)) {
                    (Some(reason), _) => reason.to_string(),
                    (None, Some(other)) => format!("went to {} {}", H::LABEL, other + 1),
                    (None, None) => item.misses(want).join(" and "),
                };
                format!("{} {why}", item.name())
            })
            .collect();
        let reasons = if reasons.is_empty() {
            H::NONE.to_string()
        } else {
            reasons.join("; ")
        };
        verdict.differences.push(format!(
            "{label}: no {} left that matches ({reasons})",
            H::NOUN
        ));
    }
    matched
        .iter()
        .map(|m| m.map(|h| counted[h].name().to_string()))
        .collect()
}

/// `disk 2 (size_gb >= 1000, rotational false)`, counting from 1; `(any)` when nothing is asked.
fn label(what: &str, index: usize, asked: Vec<String>) -> String {
    if asked.is_empty() {
        format!("{what} {} (any)", index + 1)
    } else {
        format!("{what} {} ({})", index + 1, asked.join(", "))
    }
}

/// What a device has instead of the Boolean the profile wants: `said[0]` when it has true, `said[1]`
/// when false, `unknown` when it does not say; `None` when it has what is wanted or nothing is asked.
fn flag_miss(
    want: Option<bool>,
    have: Option<bool>,
    said: [&str; 2],
    unknown: &str,
) -> Option<String> {
    match (want, have) {
        (Some(w), Some(h)) if w != h => Some(said[usize::from(!h)].to_string()),
        (Some(_), None) => Some(unknown.to_string()),
        _ => None,
    }
}

/// A size in GiB with two decimals (`447.13 GiB`).
fn gib_text(bytes: u64) -> String {
    // Precision is lost only past 2^53 bytes (8 PiB), and only in the last shown digits.
    #[allow(clippy::cast_precision_loss)]
    let gib = bytes as f64 / GIB as f64;
    format!("{gib:.2} GiB")
}
