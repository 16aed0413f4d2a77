//! The shape of every error the operator API answers with: `{"error": {"code", "message", "details"}}`
//! beside the HTTP status.

use serde::{Deserialize, Serialize};

/// An error answer's body.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorDetail {
    /// A stable machine-readable code (`not_found`, `conflict`, `checks_failed`, ...).
    pub code: String,
    /// A message for people, naming the file, field or record at fault.
    pub message: String,
    /// Structured details (`findings` of failed checks, a strategy's problems, ...), or null.
    #[serde(default)]
    pub details: serde_json::Value,
}

/// One problem in an error's details (`findings`): a pre-deployment check's finding, or a strategy's
/// problem by group and field. Every part is optional, as the two kinds differ.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct Problem {
    /// `error` or `warning` (findings).
    pub severity: Option<String>,
    /// A stable code (findings).
    pub code: Option<String>,
    /// The group at fault (strategies).
    pub group: Option<String>,
    /// The field at fault (strategies).
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl ErrorDetail {
    /// The problems listed in `details.findings` (none when there are none or they do not read).
    pub fn findings(&self) -> Vec<Problem> {
        self.details
            .get("findings")
            .cloned()
            .and_then(|f| serde_json::from_value(f).ok())
            .unwrap_or_default()
    }
}
