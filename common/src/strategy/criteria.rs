//! Evaluating a group's success criteria against how many of its nodes succeeded.
//!
//! Every criterion given is checked and each failing one is reported with its numbers. Nodes that did not
//! succeed (failed, timed out, never reported or never attempted) all count as failed. A group with no
//! nodes counts as 100% successful with 0 successes and 0 failures, so a `minimum_successful_nodes` above 0
//! fails it (the seed's rule; Shipyard's code lets such a group pass).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::model::SuccessCriteria;

/// One of the three success criteria.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Criterion {
    /// `percent_successful_nodes`.
    PercentSuccessfulNodes,
    /// `minimum_successful_nodes`.
    MinimumSuccessfulNodes,
    /// `maximum_failed_nodes`.
    MaximumFailedNodes,
}

impl Criterion {
    /// The criterion's field name in the document.
    pub fn field(self) -> &'static str {
        match self {
            Criterion::PercentSuccessfulNodes => "percent_successful_nodes",
            Criterion::MinimumSuccessfulNodes => "minimum_successful_nodes",
            Criterion::MaximumFailedNodes => "maximum_failed_nodes",
        }
    }
}

/// A criterion a group did not meet, with the numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CriterionFailure {
    /// Which criterion.
    pub criterion: Criterion,
    /// The value the document asks for.
    pub needed: u64,
    /// The value reached: a percentage rounded down, a count of successes, or a count of failures.
    pub actual: u64,
    /// Nodes of the group that succeeded.
    pub succeeded: u64,
    /// Nodes in the group.
    pub total: u64,
}

impl fmt::Display for CriterionFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = self.criterion.field();
        match self.criterion {
            Criterion::PercentSuccessfulNodes => write!(
                f,
                "{field}: needed {}%, got {}% ({} of {} succeeded)",
                self.needed,
                self.actual,
                self.succeeded,
                nodes(self.total)
            ),
            Criterion::MinimumSuccessfulNodes => write!(
                f,
                "{field}: needed {}, got {} (of {})",
                self.needed,
                self.actual,
                nodes(self.total)
            ),
            Criterion::MaximumFailedNodes => write!(
                f,
                "{field}: at most {} may fail, {} did (of {})",
                self.needed,
                self.actual,
                nodes(self.total)
            ),
        }
    }
}

/// "1 node", "3 nodes".
fn nodes(count: u64) -> String {
    format!("{count} node{}", if count == 1 { "" } else { "s" })
}

impl SuccessCriteria {
    /// The criteria not met when `succeeded` of the group's `total` nodes succeeded (empty: success).
    pub fn evaluate(&self, succeeded: u64, total: u64) -> Vec<CriterionFailure> {
        let succeeded = succeeded.min(total);
        let failed = total - succeeded;
        let failure = |criterion, needed, actual| CriterionFailure {
            criterion,
            needed,
            actual,
            succeeded,
            total,
        };
        let mut failures = Vec::new();
        if let Some(needed) = self.percent_successful_nodes {
            // Compare exactly (succeeded / total >= needed / 100); an empty group is 100% successful.
            let met =
                total == 0 || u128::from(succeeded) * 100 >= u128::from(needed) * u128::from(total);
            if !met {
                let actual = (u128::from(succeeded) * 100 / u128::from(total)) as u64;
                failures.push(failure(Criterion::PercentSuccessfulNodes, needed, actual));
            }
        }
        if let Some(needed) = self.minimum_successful_nodes {
            if succeeded < needed {
                failures.push(failure(
                    Criterion::MinimumSuccessfulNodes,
                    needed,
                    succeeded,
                ));
            }
        }
        if let Some(needed) = self.maximum_failed_nodes {
            if failed > needed {
                failures.push(failure(Criterion::MaximumFailedNodes, needed, failed));
            }
        }
        failures
    }
}

/// The criteria not met by a group with these criteria (none given: always met).
pub(crate) fn evaluate(
    criteria: Option<&SuccessCriteria>,
    succeeded: u64,
    total: u64,
) -> Vec<CriterionFailure> {
    criteria.map_or_else(Vec::new, |criteria| criteria.evaluate(succeeded, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn criteria(
        percent: Option<u64>,
        minimum: Option<u64>,
        maximum: Option<u64>,
    ) -> SuccessCriteria {
        SuccessCriteria {
            percent_successful_nodes: percent,
            minimum_successful_nodes: minimum,
            maximum_failed_nodes: maximum,
        }
    }

    #[test]
    fn percent_is_exact() {
        let c = criteria(Some(75), None, None);
        assert!(c.evaluate(3, 4).is_empty());
        let failures = c.evaluate(2, 4);
        assert_eq!(failures[0].actual, 50);
        // 2 of 3 is 66.67%: passes 66, fails 67.
        assert!(criteria(Some(66), None, None).evaluate(2, 3).is_empty());
        assert_eq!(criteria(Some(67), None, None).evaluate(2, 3)[0].actual, 66);
    }

    #[test]
    fn every_failing_criterion_is_reported() {
        let failures = criteria(Some(90), Some(3), Some(1)).evaluate(2, 4);
        let kinds: Vec<Criterion> = failures.iter().map(|f| f.criterion).collect();
        assert_eq!(
            kinds,
            [
                Criterion::PercentSuccessfulNodes,
                Criterion::MinimumSuccessfulNodes,
                Criterion::MaximumFailedNodes
            ]
        );
        assert_eq!(failures[2].actual, 2);
        assert_eq!(
            failures[0].to_string(),
            "percent_successful_nodes: needed 90%, got 50% (2 of 4 nodes succeeded)"
        );
    }

    #[test]
    fn empty_group_is_fully_successful_but_has_no_successes() {
        assert!(criteria(Some(100), None, Some(0)).evaluate(0, 0).is_empty());
        assert!(criteria(None, Some(0), None).evaluate(0, 0).is_empty());
        let failures = criteria(Some(100), Some(1), None).evaluate(0, 0);
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].criterion, Criterion::MinimumSuccessfulNodes);
        assert!(evaluate(None, 0, 5).is_empty());
    }
}
