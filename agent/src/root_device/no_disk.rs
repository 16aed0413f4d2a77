//! Why no disk was chosen, as one sentence that names every disk and what ruled it out.

use super::eligible::Unfit;
use super::matching::Failure;
use std::fmt;

/// What ruled one disk out.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// It can never be chosen, or not without hints.
    Unfit(Unfit),
    /// It fails this hint.
    Failed(Failure),
}

/// No disk can be chosen. Its `Display` is one sentence naming each disk and why it was ruled out.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct NoDisk {
    /// Whether hints were given.
    pub(crate) with_hints: bool,
    /// Each disk's name and what ruled it out, in the facts' order.
    pub(crate) disks: Vec<(String, Reason)>,
}

impl NoDisk {
    /// Each disk's name and what ruled it out, in the facts' order.
    pub fn disks(&self) -> &[(String, Reason)] {
        &self.disks
    }
}

impl fmt::Display for NoDisk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.with_hints {
            f.write_str("no disk matches the root device hints: ")?;
        } else {
            f.write_str("no disk can be chosen without root device hints: ")?;
        }
        if self.disks.is_empty() {
            return f.write_str("the facts list no disks.");
        }
        for (i, (name, reason)) in self.disks.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            match reason {
                Reason::Unfit(unfit) => write!(f, "{name} {unfit}")?,
                Reason::Failed(failure) => write!(f, "{name} {failure}")?,
            }
        }
        f.write_str(".")
    }
}
