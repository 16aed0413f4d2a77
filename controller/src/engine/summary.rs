//! The deployment summary: the report without task output, so a page watching a thousand nodes gets a
//! few bytes per node (status, phase, progress, reason) and asks for one node's tasks when it needs them.
//! The types (and the conversion from the report) live in `plinth_api::deployments`.

pub use plinth_api::deployments::{GroupBrief, NodeBrief, Summary};
