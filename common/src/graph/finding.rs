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
    /// The file (or upload) the finding points into, when it concerns one place of a document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The line (1-based) of that place, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The place in the document, as a path of keys and list positions (`tasks[3].parameters.timout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl Finding {
    /// An error finding.
    pub fn error(code: &str, message: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Error,
            code: code.to_string(),
            message: message.into(),
            file: None,
            line: None,
            path: None,
        }
    }

    /// A warning finding.
    pub fn warning(code: &str, message: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Warning,
            code: code.to_string(),
            message: message.into(),
            file: None,
            line: None,
            path: None,
        }
    }
}

impl Finding {
    /// The same finding, pointing at `path` in `file` (at `line` when known).
    pub fn at(mut self, file: &str, line: Option<usize>, path: &str) -> Finding {
        self.file = Some(file.to_string());
        self.line = line;
        self.path = Some(path.to_string());
        self
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.severity, self.message)
    }
}
