//! What a running deployment is made of: its nodes and, per graph type, every node's resolved list with
//! the limits, wait sets and fault tolerance groups resolution found. Built once by the controller (from
//! a resolution) or by a test (from a case file); never changed while the deployment runs.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::graph::{FaultToleranceGroup, WaitSet};
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
