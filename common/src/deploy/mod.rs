//! Where resolution meets the expression language: the data a deployment shows its expressions
//! (Nailgun's shape, per node) and the [`crate::graph::FieldEvaluator`] that evaluates computed task
//! fields, graph node filters and role restrictions with YAQL.
//!
//! | module | owns |
//! |---|---|
//! | `data` | [`DeployData`]: the cluster part (`$common`) and each node's part (`$node`), merged into `$` |
//! | `evaluator` | [`YaqlFields`]: computed fields with `new()`/`old()`/`changed()` against [`OldStates`] |
//! | `quotes` | [`straighten_quotes`]: `‘…’` and `“…”` as copied from Fuel's typeset specifications |
//! | `restriction` | Nailgun's `settings:path == value` conditions, read into YAQL |

mod data;
mod evaluator;
mod quotes;
mod restriction;

pub use data::{DeployData, NodeState, NOT_FACTS};
pub use evaluator::{OldStates, YaqlFields};
pub use quotes::straighten_quotes;
pub use restriction::restriction_to_yaql;
