//! The last word of each task. A deployment has few distinct task ids and many nodes, so a run keeps
//! each id once ([`TaskNames`]) and each node's words as a short sorted list of (id's index, status)
//! pairs ([`Words`]): 8 bytes a task, where a map from shared ids to statuses took about 40.

use std::collections::HashMap;
use std::sync::Arc;

use crate::wire::ResultStatus;

/// The task ids of a run, each kept once and named by its index.
#[derive(Debug, Clone, Default)]
pub(super) struct TaskNames {
    names: Vec<Arc<str>>,
    index: HashMap<Arc<str>, u32>,
}

impl TaskNames {
    /// The index of `task`, given one if it has none yet.
    pub(super) fn intern(&mut self, task: &str) -> u32 {
        if let Some(i) = self.index.get(task) {
            return *i;
        }
        // A run names far fewer than 2^32 distinct tasks: its graphs' tasks, each once.
        let i = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        let name: Arc<str> = Arc::from(task);
        self.names.push(name.clone());
        self.index.insert(name, i);
        i
    }

    /// The index of `task`, if it has one (a task without one has no word anywhere).
    pub(super) fn find(&self, task: &str) -> Option<u32> {
        self.index.get(task).copied()
    }

    /// The id at `index`.
    pub(super) fn name(&self, index: u32) -> &Arc<str> {
        &self.names[index as usize]
    }
}

/// One node's tasks' last words, the first one of each task only, sorted by the id's index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Words(Vec<(u32, ResultStatus)>);

impl Words {
    /// The word of the task at `index`.
    pub(super) fn get(&self, index: u32) -> Option<ResultStatus> {
        self.0
            .binary_search_by_key(&index, |(i, _)| *i)
            .ok()
            .map(|at| self.0[at].1)
    }

    /// Whether the task at `index` has its word.
    pub(super) fn contains(&self, index: u32) -> bool {
        self.get(index).is_some()
    }

    /// Records a task's word unless it has one already (the first last word stands).
    pub(super) fn insert_first(&mut self, index: u32, status: ResultStatus) {
        if let Err(at) = self.0.binary_search_by_key(&index, |(i, _)| *i) {
            self.0.insert(at, (index, status));
        }
    }

    /// Every word, by the id's index.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, ResultStatus)> + '_ {
        self.0.iter().copied()
    }

    /// Lets go of the room kept for more words: the node's list is complete.
    pub(super) fn complete(&mut self) {
        self.0.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_last_word_stands_and_ids_are_kept_once() {
        let mut names = TaskNames::default();
        let (b, a) = (names.intern("b"), names.intern("a"));
        assert_eq!(names.intern("b"), b, "one index per id");
        assert_eq!(names.find("c"), None);
        let mut words = Words::default();
        words.insert_first(b, ResultStatus::Failed);
        words.insert_first(a, ResultStatus::Succeeded);
        words.insert_first(b, ResultStatus::Succeeded);
        assert_eq!(
            words.get(b),
            Some(ResultStatus::Failed),
            "the first word stands"
        );
        assert!(words.contains(a));
        let named: Vec<(&str, ResultStatus)> =
            words.iter().map(|(i, s)| (&**names.name(i), s)).collect();
        assert_eq!(
            named,
            vec![("b", ResultStatus::Failed), ("a", ResultStatus::Succeeded)]
        );
    }
}
