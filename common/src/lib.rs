//! Plinth's shared logic.
//!
//! Everything in this crate is deterministic and testable without a network or a disk: the controller, the
//! agent and `plinthctl`'s offline commands all call these functions, so what a task author sees offline is
//! what the controller does.
//!
//! | module | owns |
//! |---|---|
//! | [`model`] | releases, plugins, clusters, nodes, tasks and graphs as data |
//! | [`tags`] | node tags, primary election, task-to-node matching |
//! | [`graph`] | merging graphs, resolving tasks per node, ordering them |
//! | [`expr`] | the expression language (YAQL) and the deployment helpers |
//! | [`json`] | `Json`, the compact read-only JSON tree expressions read a deployment's data from |
//! | [`deploy`] | a deployment's data per node and the YAQL evaluator resolution calls |
//! | [`snapshot`] | a deployment's inputs as one value, and the one `resolve` the controller and `plinthctl` call |
//! | [`strategy`] | deployment strategies: groups, selectors, criteria, sequencing |
//! | [`wire`] | the messages agents and the controller exchange |
//! | `cli_docs` | shell completions and man pages from a binary's command line (feature `cli`) |
//! | [`log_text`] | text logs whose lines nothing they carry can forge (control characters escaped) |
//! | [`signing`] | canonical bytes and ed25519 signatures of task lists |

#[cfg(feature = "cli")]
pub mod cli_docs;
pub mod deploy;
/// The expression language, YAQL: the crate `plinth-yaql`.
pub use plinth_yaql as expr;
pub mod graph;
pub mod log_text;
/// The compact JSON tree expressions read: `plinth_yaql::json`.
pub use plinth_yaql::json;
pub mod model;
pub mod run;
pub mod signing;
pub mod site;
pub mod snapshot;
pub mod strategy;
pub mod tags;
pub mod wire;
