//! Cross-node waits, built once per distinct dependency and shared by every node that has it, so that
//! many-to-many dependencies stay linear in the number of nodes.

use std::collections::{BTreeMap, HashMap};

use super::classes::{Class, Graphs};
use super::compile::Selector;
use super::plan::{WaitSet, WaitTarget};
use crate::model::{Policy, StringList};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum WaitKey {
    /// `cross_depends`: the tasks named, on the nodes selected.
    Forward {
        name: String,
        tags: Option<StringList>,
        role: Option<StringList>,
        policy: Policy,
    },
    /// `cross_depended_by`: one task on one class's nodes.
    Backward {
        class: usize,
        task: usize,
        policy: Policy,
    },
}

/// The wait sets and, per class, each task's waits (indexes into the sets).
pub(crate) struct Waits {
    pub(crate) sets: Vec<WaitSet>,
    pub(crate) by_class: Vec<HashMap<usize, Vec<u32>>>,
}

fn push_unique(list: &mut Vec<u32>, v: u32) {
    if !list.contains(&v) {
        list.push(v);
    }
}

/// Builds every cross-node wait of the plan.
pub(crate) fn build_waits(graphs: &Graphs<'_>, classes: &[Class<'_>]) -> Waits {
    let compiled = &graphs.base;
    let mut sets: Vec<WaitSet> = Vec::new();
    let mut index: HashMap<WaitKey, Option<u32>> = HashMap::new();
    let mut by_class: Vec<HashMap<usize, Vec<u32>>> = vec![HashMap::new(); classes.len()];
    let add_set = |sets: &mut Vec<WaitSet>, set: WaitSet| -> Option<u32> {
        if set.targets.is_empty() {
            return None;
        }
        let i = u32::try_from(sets.len()).ok()?;
        sets.push(set);
        Some(i)
    };
    for (x, class) in classes.iter().enumerate() {
        for t in (0..compiled.tasks.len()).filter(|&t| class.scheduled[t]) {
            let (forward, backward) = class.deps(graphs.of(class), t);
            for d in forward
                .iter()
                .filter(|d| !matches!(d.selector, Selector::SelfNode))
            {
                let key = WaitKey::Forward {
                    name: d.raw.name.clone(),
                    tags: d.raw.tags.clone(),
                    role: d.raw.role.clone(),
                    policy: d.policy,
                };
                let idx = match index.get(&key) {
                    Some(i) => *i,
                    None => {
                        let mut targets: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
                        for y in classes
                            .iter()
                            .filter(|y| d.selector.matches(&y.tags, y.is_master))
                        {
                            for &u in d.targets.iter().filter(|&&u| y.scheduled[u]) {
                                targets
                                    .entry(u)
                                    .or_default()
                                    .extend(y.members.iter().map(|m| m.id));
                            }
                        }
                        let set = WaitSet {
                            policy: d.policy,
                            targets: targets
                                .into_iter()
                                .map(|(u, mut nodes)| {
                                    nodes.sort_unstable();
                                    nodes.dedup();
                                    WaitTarget {
                                        task: compiled.task(u).id.clone(),
                                        nodes,
                                    }
                                })
                                .collect(),
                        };
                        let i = add_set(&mut sets, set);
                        index.insert(key, i);
                        i
                    }
                };
                if let Some(i) = idx {
                    // A set that holds only this very task on this very node is no wait at all.
                    let only_self = class.members.len() == 1
                        && sets[i as usize].targets.iter().all(|w| {
                            w.task == compiled.task(t).id && w.nodes == [class.members[0].id]
                        });
                    if !only_self {
                        push_unique(by_class[x].entry(t).or_default(), i);
                    }
                }
            }
            for d in backward
                .iter()
                .filter(|d| !matches!(d.selector, Selector::SelfNode))
            {
                for (y, other) in classes.iter().enumerate() {
                    if !d.selector.matches(&other.tags, other.is_master) {
                        continue;
                    }
                    for &u in d.targets.iter().filter(|&&u| other.scheduled[u]) {
                        if y == x && u == t && class.members.len() == 1 {
                            continue;
                        }
                        let key = WaitKey::Backward {
                            class: x,
                            task: t,
                            policy: d.policy,
                        };
                        let idx = match index.get(&key) {
                            Some(i) => *i,
                            None => {
                                let mut nodes: Vec<u64> =
                                    class.members.iter().map(|m| m.id).collect();
                                nodes.sort_unstable();
                                let set = WaitSet {
                                    policy: d.policy,
                                    targets: vec![WaitTarget {
                                        task: compiled.task(t).id.clone(),
                                        nodes,
                                    }],
                                };
                                let i = add_set(&mut sets, set);
                                index.insert(key, i);
                                i
                            }
                        };
                        if let Some(i) = idx {
                            push_unique(by_class[y].entry(u).or_default(), i);
                        }
                    }
                }
            }
        }
    }
    Waits { sets, by_class }
}
