//! Tasks that do nothing on the node: `stage` and `group` anchors kept for ordering (they succeed),
//! `skipped` tasks (reported skipped), and, in a no-op deployment, every kind but `puppet` (reported
//! skipped: nothing ran). A task carrying a `skip_reason` is reported skipped before any executor is
//! asked.

use super::{AttemptContext, BoxFuture, Outcome, ParamError, Prepared, RetryPolicy, TaskExecutor};
use plinth_common::wire::{ResultStatus, TaskKind, TaskSpec};

/// Prepares a no-op task. `stage` and `group` anchors succeed; a `skipped` task (Fuel's type for a
/// step that does not run) is reported skipped, as Nailgun's history shows it, with the `reason`
/// its parameters give (the Fuel steps Plinth replaces say why).
pub fn prepare(task: &TaskSpec) -> Result<Prepared, ParamError> {
    let (status, message) = if task.kind == TaskKind::Skipped {
        let why = task
            .parameters
            .get("reason")
            .and_then(|r| r.as_str())
            .unwrap_or("a task of type skipped runs nothing");
        (ResultStatus::Skipped, format!("skipped: {why}"))
    } else {
        (
            ResultStatus::Succeeded,
            format!("{} task: nothing to run", super::kind_name(task.kind)),
        )
    };
    Ok(Prepared {
        policy: RetryPolicy::once(),
        executor: Box::new(Noop { status, message }),
    })
}

/// A task of a no-op deployment that does not run: reported skipped, saying so.
pub fn dry_run(task: &TaskSpec) -> Prepared {
    Prepared {
        policy: RetryPolicy::once(),
        executor: Box::new(Noop {
            status: ResultStatus::Skipped,
            message: format!(
                "no-op deployment: {} tasks do not run (only puppet runs, with --noop)",
                super::kind_name(task.kind)
            ),
        }),
    }
}

/// A task that does nothing.
#[derive(Debug)]
pub struct Noop {
    status: ResultStatus,
    message: String,
}

impl TaskExecutor for Noop {
    fn run<'a>(&'a self, _ctx: &'a AttemptContext) -> BoxFuture<'a, Outcome> {
        Box::pin(async move { Outcome::simple(self.status, self.message.clone()) })
    }

    fn does_work(&self) -> bool {
        false
    }
}
