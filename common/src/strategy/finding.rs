//! Problems found in a strategy document, and the error that carries all of them.

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// One problem in a strategy document: where it is (group and field) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The group the problem is in: its name, or its position (`groups[2]`) when it has no usable name.
    /// `None` for problems outside any group.
    pub group: Option<String>,
    /// The field, as a path inside the group (`success_criteria.percent_successful_nodes`), or inside the
    /// document for problems outside any group (`data.phases[1].graph_type`). Empty for the whole document.
    pub field: String,
    /// What is wrong, in words.
    pub message: String,
}

impl Finding {
    /// A finding in the named group (or outside any group when `group` is `None`).
    pub fn new(
        group: Option<&str>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Finding {
        Finding {
            group: group.map(str::to_string),
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.group, self.field.is_empty()) {
            (Some(group), false) => write!(
                f,
                "group {group:?}, field {:?}: {}",
                self.field, self.message
            ),
            (Some(group), true) => write!(f, "group {group:?}: {}", self.message),
            (None, false) => write!(f, "field {:?}: {}", self.field, self.message),
            (None, true) => write!(f, "{}", self.message),
        }
    }
}

/// Why a strategy document was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StrategyError {
    /// The text is not YAML or JSON, or holds no strategy document; the message says where.
    #[error("cannot read the strategy document: {0}")]
    Syntax(String),
    /// The document was read but breaks the rules; every problem found is listed.
    #[error("{}", FindingList(.0))]
    Invalid(Vec<Finding>),
}

impl StrategyError {
    /// The problems found (empty for a syntax error).
    pub fn findings(&self) -> &[Finding] {
        match self {
            StrategyError::Syntax(_) => &[],
            StrategyError::Invalid(findings) => findings,
        }
    }
}

/// Displays findings as a count followed by one line each.
struct FindingList<'a>(&'a [Finding]);

impl fmt::Display for FindingList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.0.len();
        write!(
            f,
            "the strategy document has {count} problem{}:",
            if count == 1 { "" } else { "s" }
        )?;
        for finding in self.0 {
            write!(f, "\n  - {finding}")?;
        }
        Ok(())
    }
}
