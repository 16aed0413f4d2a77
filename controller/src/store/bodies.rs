//! Task lists are stored with their tasks apart. A phase publishes one list per node, and nodes of one
//! role get the same tasks: stored whole, 20,000 lists of a Fuel-sized graph are gigabytes written in
//! one hand-over, almost all of it the same text again and again. So a list is stored as its header
//! (the list with no tasks: node, revision, phase, ...) and the hash of its tasks' JSON text; each
//! distinct text is stored once, under that hash, in `task_bodies`. Lists stored before (no hash) hold
//! their tasks in the header's place and read back as they are.
//!
//! Both backends use this module to split lists before writing and to join them when reading.

use super::{StoreError, StoreResult};
use plinth_common::wire::{TaskList, Tasks};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// Lists split for writing, in the lists' order.
#[derive(Debug, Default)]
pub(crate) struct Split {
    /// Each list's header: its JSON text with no tasks.
    pub headers: Vec<String>,
    /// Each list's tasks hash.
    pub hashes: Vec<String>,
    /// Each distinct tasks text once: (hash, text).
    pub bodies: Vec<(String, String)>,
}

/// Splits lists into headers, hashes and distinct bodies.
pub(crate) fn split(lists: &mut [TaskList]) -> Split {
    let mut out = Split {
        headers: Vec::with_capacity(lists.len()),
        hashes: Vec::with_capacity(lists.len()),
        bodies: Vec::new(),
    };
    // The hash of each shared copy of tasks met (lists sharing a copy are serialised once), and of
    // each text met (equal tasks in separate copies are stored once too).
    let mut copies: HashMap<usize, String> = HashMap::new();
    let mut seen: HashMap<String, String> = HashMap::new();
    for list in lists.iter_mut() {
        let tasks = std::mem::take(&mut list.tasks);
        out.headers.push(text(&*list));
        list.tasks = tasks;
        if let Some(hash) = copies.get(&list.tasks.copy_id()) {
            out.hashes.push(hash.clone());
            continue;
        }
        let body = text(&list.tasks);
        let hash = match seen.get(&body) {
            Some(hash) => hash.clone(),
            None => {
                let hash = hex::encode(Sha256::digest(body.as_bytes()));
                out.bodies.push((hash.clone(), body.clone()));
                seen.insert(body, hash.clone());
                hash
            }
        };
        copies.insert(list.tasks.copy_id(), hash.clone());
        out.hashes.push(hash);
    }
    out
}

fn text<T: serde::Serialize + ?Sized>(v: &T) -> String {
    // Task lists always serialise (no maps with non-string keys, no failing serialisers).
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

/// Joins stored lists back: parses each distinct tasks text once, and the lists that name it share
/// one copy.
#[derive(Debug, Default)]
pub(crate) struct Joiner {
    parsed: HashMap<String, Tasks>,
}

impl Joiner {
    /// A list from its stored row: its header, its tasks hash, and the text stored under that hash (a
    /// list stored whole has neither).
    pub fn join(
        &mut self,
        header: &str,
        hash: Option<&str>,
        body: Option<&str>,
    ) -> StoreResult<TaskList> {
        let mut list: TaskList = serde_json::from_str(header)
            .map_err(|e| StoreError::Corrupt(format!("task list: {e}")))?;
        let Some(hash) = hash else {
            return Ok(list);
        };
        if let Some(tasks) = self.parsed.get(hash) {
            list.tasks = tasks.clone();
            return Ok(list);
        }
        let body = body.ok_or_else(|| {
            StoreError::Corrupt(format!(
                "task list of node {} revision {}: its tasks ({hash}) are not stored",
                list.node_id, list.revision
            ))
        })?;
        let tasks: Tasks = serde_json::from_str(body)
            .map_err(|e| StoreError::Corrupt(format!("tasks {hash}: {e}")))?;
        self.parsed.insert(hash.to_string(), tasks.clone());
        list.tasks = tasks;
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_common::wire::{TaskKind, TaskSpec};

    fn list(node_id: u64, cmd: &str) -> TaskList {
        let tasks = vec![TaskSpec {
            id: "t".into(),
            kind: TaskKind::Shell,
            parameters: serde_json::json!({"cmd": cmd})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            skip_reason: None,
            waits_for: Vec::new(),
            gated: false,
            manifests: Default::default(),
        }];
        TaskList {
            revision: node_id + 10,
            ..TaskList::unpublished(format!("k{node_id}"), node_id, 1, "deploy", tasks.into())
        }
    }

    #[test]
    fn equal_tasks_are_one_body_and_every_list_joins_back_as_it_was() {
        let mut lists = vec![list(1, "a"), list(2, "b"), list(3, "a"), list(4, "b")];
        // The fourth shares the second's copy of its tasks, as lists published together do.
        lists[3].tasks = lists[1].tasks.clone();
        assert!(lists[3].tasks.shares(&lists[1].tasks));
        let original = lists.clone();
        let split = split(&mut lists);
        assert_eq!(lists, original, "splitting leaves the lists as they were");
        assert_eq!(split.bodies.len(), 2, "two distinct task texts");
        assert_eq!(
            split.hashes[0], split.hashes[2],
            "equal tasks in two copies"
        );
        assert_eq!(split.hashes[1], split.hashes[3], "one shared copy");
        assert_ne!(split.hashes[0], split.hashes[1]);
        assert!(
            !split.headers[0].contains("\"cmd\""),
            "a header holds no tasks: {}",
            split.headers[0]
        );
        let bodies: HashMap<&str, &str> = split
            .bodies
            .iter()
            .map(|(h, b)| (h.as_str(), b.as_str()))
            .collect();
        let mut joiner = Joiner::default();
        let joined: Vec<TaskList> = split
            .headers
            .iter()
            .zip(&split.hashes)
            .map(|(h, hash)| {
                joiner
                    .join(h, Some(hash), bodies.get(hash.as_str()).copied())
                    .unwrap()
            })
            .collect();
        assert_eq!(joined, original);
    }

    #[test]
    fn a_list_stored_whole_reads_back_and_a_missing_body_is_named() {
        let whole = list(4, "x");
        let mut joiner = Joiner::default();
        let text = serde_json::to_string(&whole).unwrap();
        assert_eq!(joiner.join(&text, None, None).unwrap(), whole);
        let err = joiner
            .join(&text, Some("abc"), None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("node 4 revision 14") && err.contains("abc"),
            "{err}"
        );
    }
}
