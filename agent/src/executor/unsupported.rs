//! Task kinds this agent cannot run yet: each attempt fails at once with a message naming the kind, and no
//! retry is made.

use super::{AttemptContext, BoxFuture, Outcome, ParamError, Prepared, RetryPolicy, TaskExecutor};
use plinth_common::wire::{ResultStatus, TaskSpec};

/// Prepares a task of a kind this agent does not run.
pub fn prepare(task: &TaskSpec) -> Result<Prepared, ParamError> {
    Ok(Prepared {
        policy: RetryPolicy::once(),
        executor: Box::new(Unsupported {
            kind: super::kind_name(task.kind),
        }),
    })
}

/// Fails every attempt.
#[derive(Debug)]
pub struct Unsupported {
    kind: String,
}

impl TaskExecutor for Unsupported {
    fn run<'a>(&'a self, _ctx: &'a AttemptContext) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            Outcome::simple(
                ResultStatus::Failed,
                format!(
                    "task type {} is not supported by this agent yet (plinth-agent {})",
                    self.kind,
                    crate::AGENT_VERSION
                ),
            )
        })
    }

    fn does_work(&self) -> bool {
        false
    }
}
