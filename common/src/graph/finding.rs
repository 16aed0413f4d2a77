//! Findings of the pre-deployment checks.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The deployment may go ahead; the operator should know.
    Warning,
    /// The deployment cannot go ahead.
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// One finding: its severity, what it concerns, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// A short code naming the kind of finding (`unassigned_tag`, `role_limit`, `role_conflict`,
    /// `plugin_overlap`, `cycle`, `unknown_task`, ...).
    pub code: String,
    /// The message, naming the task, node or role concerned.
    pub message: String,
}

impl Finding {
    /// An error finding.
    pub fn error(code: &str, message: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Error,
            code: code.to_string(),
            message: message.into(),
        }
    }

    /// A warning finding.
    pub fn warning(code: &str, message: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Warning,
            code: code.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.severity, self.message)
    }
}
