//! `skipped`, `stage` and `group` tasks: anchors kept for ordering. They do nothing and succeed (a task
//! carrying a `skip_reason` is reported skipped before any executor is asked).

use super::{AttemptContext, BoxFuture, Outcome, ParamError, Prepared, RetryPolicy, TaskExecutor};
use plinth_common::wire::{ResultStatus, TaskSpec};

/// Prepares a no-op task.
pub fn prepare(task: &TaskSpec) -> Result<Prepared, ParamError> {
    Ok(Prepared {
        policy: RetryPolicy::once(),
        executor: Box::new(Noop {
            kind: super::kind_name(task.kind),
        }),
    })
}

/// A task that does nothing.
#[derive(Debug)]
pub struct Noop {
    kind: String,
}

impl TaskExecutor for Noop {
    fn run<'a>(&'a self, _ctx: &'a AttemptContext) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            Outcome::simple(
                ResultStatus::Succeeded,
                format!("{} task: nothing to run", self.kind),
            )
        })
    }

    fn does_work(&self) -> bool {
        false
    }
}
