//! What a running deployment is made of: its nodes and, per graph type, every node's resolved list with
//! the limits, wait sets and fault tolerance groups resolution found. Built once by the controller (from
//! a resolution) or by a test (from a case file); never changed while the deployment runs.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::graph::{FaultToleranceGroup, WaitSet, MASTER_NODE_ID};
use crate::wire::Tasks;

/// One node of a deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunNode {
    /// Its name (strategies select and report nodes by name).
    pub name: String,
    /// Its key fingerprint (lists are addressed to it).
    pub node_key: String,
}

/// One graph type resolved for a deployment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphPlan {
    /// Each node's list (nodes the graph does not run on are absent). Nodes with identical lists share
    /// one (resolution interns them: nodes of one class usually have the same tasks and parameters).
    pub specs: HashMap<u64, Tasks>,
    /// Tasks limited to so many nodes at once (`one_by_one`: 1; `parallel` with an `amount`).
    pub limits: HashMap<String, usize>,
    /// The plan's shared wait sets.
    pub wait_sets: Vec<WaitSet>,
    /// Gated tasks' waits the list does not carry inline (`any` policy, or too many to list): (node,
    /// task) → indexes into `wait_sets`.
    pub gated_waits: HashMap<(u64, String), Vec<u32>>,
    /// Groups whose nodes' failures beyond their tolerance stop the deployment.
    pub fault_tolerance: Vec<FaultToleranceGroup>,
}

/// Everything a running deployment needs besides its state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunPlan {
    /// The deployment's id (every list and result carries it).
    pub deployment_id: u64,
    /// Its nodes, by id.
    pub nodes: BTreeMap<u64, RunNode>,
    /// Each graph type a phase runs, resolved.
    pub graphs: BTreeMap<String, Arc<GraphPlan>>,
    /// Whether the lists run puppet in no-op mode.
    pub noop: bool,
    /// Whether an operator named (or configured) the strategy. Without one, a failed node that no fault
    /// tolerance group covers stops the deployment, and the one `default` group tolerates as many failed
    /// nodes as the graphs' groups allow in all ([`crate::run::tolerate_failures`]).
    pub named_strategy: bool,
}

impl RunPlan {
    /// The id of the node with this name.
    pub fn id_of(&self, name: &str) -> Option<u64> {
        self.nodes
            .iter()
            .find(|(_, n)| n.name == name)
            .map(|(id, _)| *id)
    }
}

impl GraphPlan {
    /// Gives the controller's own host's tasks (resolved for node [`MASTER_NODE_ID`]) to the agent
    /// registered as node `master`: its list, every wait on it, the wait sets and fault tolerance
    /// groups naming it. Lists that shared one copy of their tasks still share one afterwards.
    pub fn assign_master(&mut self, master: u64) {
        let rename = |n: &mut u64| {
            if *n == MASTER_NODE_ID {
                *n = master;
            }
        };
        if let Some(tasks) = self.specs.remove(&MASTER_NODE_ID) {
            self.specs.insert(master, tasks);
        }
        let mut renamed: HashMap<usize, Tasks> = HashMap::new();
        for tasks in self.specs.values_mut() {
            let waits_on_master = tasks
                .iter()
                .any(|t| t.waits_for.iter().any(|w| w.node_id == MASTER_NODE_ID));
            if !waits_on_master {
                continue;
            }
            let copy = renamed.entry(tasks.copy_id()).or_insert_with(|| {
                let mut copy: Vec<_> = tasks.to_vec();
                for spec in &mut copy {
                    spec.waits_for
                        .iter_mut()
                        .for_each(|w| rename(&mut w.node_id));
                }
                Tasks::from(copy)
            });
            *tasks = copy.clone();
        }
        for set in &mut self.wait_sets {
            for target in &mut set.targets {
                if target.nodes.contains(&MASTER_NODE_ID) {
                    target.nodes.iter_mut().for_each(rename);
                    target.nodes.sort_unstable();
                }
            }
        }
        if self.gated_waits.keys().any(|(n, _)| *n == MASTER_NODE_ID) {
            self.gated_waits = std::mem::take(&mut self.gated_waits)
                .into_iter()
                .map(|((mut n, task), sets)| {
                    rename(&mut n);
                    ((n, task), sets)
                })
                .collect();
        }
        for group in &mut self.fault_tolerance {
            group.node_ids.iter_mut().for_each(rename);
        }
    }

    /// Whether the controller's own host has tasks in this graph type.
    pub fn places_on_master(&self) -> bool {
        self.specs.contains_key(&MASTER_NODE_ID)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{WaitTarget, MASTER_NODE_ID};
    use crate::model::Policy;
    use crate::wire::{CrossDependency, TaskKind, TaskSpec};

    fn spec(id: &str, waits_on: &[(u64, &str)]) -> TaskSpec {
        TaskSpec {
            id: id.into(),
            kind: TaskKind::Shell,
            parameters: Default::default(),
            skip_reason: None,
            waits_for: waits_on
                .iter()
                .map(|(n, t)| CrossDependency {
                    node_id: *n,
                    task: t.to_string(),
                })
                .collect(),
            gated: false,
            manifests: Default::default(),
        }
    }

    /// The master's list, the waits on it and the sets naming it all move to the agent's node id, and
    /// two nodes that shared a list before share one after.
    #[test]
    fn the_masters_tasks_and_every_wait_on_them_move_to_its_agent() {
        let waiting: Tasks = vec![spec("disable_netboot", &[(MASTER_NODE_ID, "sync@n")])].into();
        let mut plan = GraphPlan {
            specs: [
                (
                    MASTER_NODE_ID,
                    vec![spec("sync@n", &[(2, "before")])].into(),
                ),
                (2, waiting.clone()),
                (3, waiting),
            ]
            .into(),
            wait_sets: vec![WaitSet {
                policy: Policy::All,
                targets: vec![WaitTarget {
                    task: "sync@n".into(),
                    nodes: vec![MASTER_NODE_ID, 4],
                }],
            }],
            gated_waits: [((MASTER_NODE_ID, "sync@n".to_string()), vec![0])].into(),
            fault_tolerance: vec![FaultToleranceGroup {
                name: "g".into(),
                node_ids: vec![MASTER_NODE_ID, 2],
                fault_tolerance: None,
            }],
            ..GraphPlan::default()
        };
        assert!(plan.places_on_master());
        plan.assign_master(9);
        assert!(!plan.places_on_master());
        assert_eq!(plan.specs[&9][0].id, "sync@n");
        assert_eq!(plan.specs[&2][0].waits_for[0].node_id, 9);
        assert!(plan.specs[&2].shares(&plan.specs[&3]), "still one copy");
        assert_eq!(plan.wait_sets[0].targets[0].nodes, [4, 9], "kept ascending");
        assert!(plan.gated_waits.contains_key(&(9, "sync@n".to_string())));
        assert_eq!(plan.fault_tolerance[0].node_ids, [9, 2]);
    }
}
