//! Where a task stands according to the journal: not started, an attempt that was running when the agent
//! stopped (interrupted), between attempts, or done.

use plinth_common::wire::{ResultStatus, TaskResult};

/// A task's state read from its journal records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// No record.
    NotStarted,
    /// Attempt `attempt` has a `running` record and no end: the agent stopped while it ran.
    Interrupted {
        /// The attempt.
        attempt: u32,
    },
    /// Attempt `attempt` ended without being the last word: the next attempt follows.
    Between {
        /// The attempt that ended.
        attempt: u32,
    },
    /// The task has its last word.
    Done {
        /// How it ended.
        status: ResultStatus,
    },
}

impl TaskState {
    /// True when the task ended in a way that stops the list.
    pub fn failed(self) -> bool {
        matches!(self, TaskState::Done { status } if !matches!(status, ResultStatus::Succeeded | ResultStatus::Skipped))
    }
}

/// The state of `task_id` from the records of its list.
pub fn task_state(records: &[&TaskResult], task_id: &str) -> TaskState {
    let mine: Vec<&&TaskResult> = records.iter().filter(|r| r.task_id == task_id).collect();
    if let Some(last) = mine.iter().find(|r| r.last && r.status.is_terminal()) {
        return TaskState::Done {
            status: last.status,
        };
    }
    let Some(attempt) = mine.iter().map(|r| r.attempt).max() else {
        return TaskState::NotStarted;
    };
    let ended = mine
        .iter()
        .any(|r| r.attempt == attempt && r.status.is_terminal());
    if ended {
        TaskState::Between { attempt }
    } else {
        TaskState::Interrupted { attempt }
    }
}
