//! The resolved plan: every node's ordered tasks, the shared cross-node wait sets, fault tolerance groups.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::model::{Concurrency, FaultTolerance, Policy, StrategyKind, TaskType};
use crate::wire::{CrossDependency, TaskKind, TaskSpec};

/// The result of resolving a graph on a cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The graph type resolved.
    pub graph_type: String,
    /// Each node's tasks: the controller's own host first (id 0) when it has tasks, then by node id.
    pub nodes: Vec<NodePlan>,
    /// Cross-node waits, shared by every task that waits on the same thing; tasks refer to them by index.
    pub wait_sets: Vec<WaitSet>,
    /// Each group with the plan's nodes it covers and how many of them may fail.
    pub fault_tolerance_groups: Vec<FaultToleranceGroup>,
    /// The primary of each `has_primary` tag: tag → node id.
    pub primaries: BTreeMap<String, u64>,
}

/// One node's share of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodePlan {
    /// The node's id ([`super::MASTER_NODE_ID`] for the controller's own host).
    pub node_id: u64,
    /// The node's name (`master` for the controller's own host).
    pub name: String,
    /// The node's tags after election (explicit tags, then implicit role-name tags not among them).
    pub tags: Vec<String>,
    /// For each instance tag the node carries (`mysql:1`), every node carrying it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub instances: BTreeMap<String, Vec<u64>>,
    /// The tasks in the order to run them: one copy shared by every node of a class of alike nodes
    /// when none of the class's tasks computes anything per node (a field, `parameters`, a
    /// condition), so a 100,000-node phase holds a few lists of tasks, not 100,000.
    pub tasks: Arc<Vec<ResolvedTask>>,
}

/// One task resolved for one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedTask {
    /// The task's id.
    pub id: Arc<str>,
    /// Its type; [`TaskType::Skipped`] when its condition is false.
    #[serde(rename = "type")]
    pub task_type: TaskType,
    /// Its parameters with computed values evaluated (empty for a skipped task). Shared between nodes
    /// when nothing in them is computed.
    pub parameters: Arc<Map<String, Value>>,
    /// Why the task is skipped; it stays in the list so that dependencies through it hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<String>,
    /// Indexes into [`Plan::wait_sets`]: what must finish on other nodes before this task starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waits: Vec<u32>,
    /// The concurrency across nodes the controller enforces (`parameters.strategy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Concurrency>,
    /// The fault tolerance of the group the task runs in on this node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_tolerance: Option<FaultTolerance>,
    /// The group the task runs in on this node, when it belongs to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<Arc<str>>,
    /// The task's other fields (`test_pre`, `refresh_on`, ...), computed like the parameters (empty for
    /// a skipped task). They do not reach the agent.
    #[serde(default, skip_serializing_if = "map_is_empty")]
    pub extra: Arc<Map<String, Value>>,
}

fn map_is_empty(map: &Arc<Map<String, Value>>) -> bool {
    map.is_empty()
}

/// Tasks on other nodes that a task waits for.
///
/// An entry naming the waiting node itself is already satisfied: tasks of the same node are ordered in
/// its list (and a task never waits for itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitSet {
    /// `all`: every entry must be done; `any`: one is enough.
    pub policy: Policy,
    /// The tasks and the nodes they run on.
    pub targets: Vec<WaitTarget>,
}

impl WaitSet {
    /// The `(node, task)` pairs of the set other than on `node_id`, in order.
    pub fn entries_for(&self, node_id: u64) -> impl Iterator<Item = (u64, &str)> + '_ {
        self.targets.iter().flat_map(move |t| {
            t.nodes
                .iter()
                .filter(move |n| **n != node_id)
                .map(move |n| (*n, t.task.as_str()))
        })
    }
}

/// One task and the nodes it runs on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitTarget {
    /// The task.
    pub task: String,
    /// The nodes, ascending.
    pub nodes: Vec<u64>,
}

/// A group of nodes sharing a fault tolerance (Fuel's group tasks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultToleranceGroup {
    /// The group task's id.
    pub name: String,
    /// The plan's nodes the group covers.
    pub node_ids: Vec<u64>,
    /// How many may fail (absent: no limit set by the graph).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_tolerance: Option<FaultTolerance>,
}

/// Why a resolved task cannot become a [`TaskSpec`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("node {node_id}, task {task:?}: type {task_type:?} has no agent task kind")]
pub struct SpecError {
    /// The node.
    pub node_id: u64,
    /// The task.
    pub task: String,
    /// Its type.
    pub task_type: String,
}

/// The most `all`-policy entries a task's [`TaskSpec::waits_for`] lists; a task waiting on more (Fuel's
/// compute-to-every-compute dependencies) is gated instead and the controller answers from the shared
/// [`WaitSet`], so lists stay small and the total stays linear in the number of nodes.
pub const MAX_INLINE_WAITS: usize = 64;

/// The agent's kind for a task type, if the agent runs it.
pub fn task_kind(task_type: &TaskType) -> Option<TaskKind> {
    Some(match task_type {
        TaskType::Puppet => TaskKind::Puppet,
        TaskType::Shell => TaskKind::Shell,
        TaskType::UploadFile => TaskKind::UploadFile,
        TaskType::CopyFiles => TaskKind::CopyFiles,
        TaskType::Sync => TaskKind::Sync,
        TaskType::Reboot => TaskKind::Reboot,
        TaskType::Provision => TaskKind::Provision,
        TaskType::EraseNode => TaskKind::EraseNode,
        TaskType::CheckHardware => TaskKind::CheckHardware,
        TaskType::MoveToBootstrap => TaskKind::MoveToBootstrap,
        TaskType::BootDevice => TaskKind::BootDevice,
        // Placed on the controller's host by the resolver, where it is a shell command.
        TaskType::MasterShell => TaskKind::Shell,
        TaskType::Group => TaskKind::Group,
        TaskType::Stage => TaskKind::Stage,
        TaskType::Skipped => TaskKind::Skipped,
        TaskType::Other(_) => return None,
    })
}

impl Plan {
    /// The plan of node `node_id`.
    pub fn node(&self, node_id: u64) -> Option<&NodePlan> {
        self.nodes
            .binary_search_by_key(&node_id, |n| n.node_id)
            .ok()
            .map(|i| &self.nodes[i])
    }

    /// True when every wait of `task` (a task of node `node_id`) is met, `done(node, task)` telling
    /// which tasks have finished (successfully or skipped): an `all` set needs each of its entries on
    /// other nodes, an `any` set one of them (a set with no entry on another node is met). The controller
    /// answers gated tasks with this.
    pub fn waits_met(
        &self,
        node_id: u64,
        task: &ResolvedTask,
        mut done: impl FnMut(u64, &str) -> bool,
    ) -> bool {
        task.waits.iter().all(|&w| {
            let Some(set) = self.wait_sets.get(w as usize) else {
                return true;
            };
            let mut entries = set.entries_for(node_id).peekable();
            if entries.peek().is_none() {
                return true;
            }
            match set.policy {
                Policy::All => entries.all(|(n, t)| done(n, t)),
                Policy::Any => entries.any(|(n, t)| done(n, t)),
            }
        })
    }

    /// A node's tasks as the agent's [`TaskSpec`]s. `all`-policy waits become `waits_for` entries (other
    /// nodes only) when they are at most [`MAX_INLINE_WAITS`]; a task with more, with an `any`-policy
    /// wait, or with a concurrency limit (one by one, or parallel with an amount) is `gated`: the agent
    /// asks the controller, which decides from the plan's wait sets. Fails on a task type the agent does
    /// not run.
    pub fn task_specs(&self, node: &NodePlan) -> Result<Vec<TaskSpec>, SpecError> {
        node.tasks
            .iter()
            .map(|t| {
                let kind = task_kind(&t.task_type).ok_or_else(|| SpecError {
                    node_id: node.node_id,
                    task: t.id.to_string(),
                    task_type: t.task_type.to_string(),
                })?;
                let mut waits_for = Vec::new();
                let mut gated = t
                    .strategy
                    .is_some_and(|s| s.kind == StrategyKind::OneByOne || s.amount.is_some());
                let sets = || {
                    t.waits
                        .iter()
                        .filter_map(|&w| self.wait_sets.get(w as usize))
                };
                let inline: usize = sets()
                    .filter(|s| s.policy == Policy::All)
                    .map(|s| s.targets.iter().map(|t| t.nodes.len()).sum::<usize>())
                    .sum();
                for set in sets() {
                    let mut entries = set.entries_for(node.node_id).peekable();
                    if entries.peek().is_none() {
                        continue;
                    }
                    if set.policy == Policy::Any || inline > MAX_INLINE_WAITS {
                        gated = true;
                        continue;
                    }
                    waits_for.extend(entries.map(|(node_id, task)| CrossDependency {
                        node_id,
                        task: task.to_string(),
                    }));
                }
                gated |= !waits_for.is_empty();
                let mut parameters = (*t.parameters).clone();
                // An installed system is named as the controller names the node, unless told.
                if kind == TaskKind::Provision && t.skip_reason.is_none() {
                    parameters
                        .entry("hostname")
                        .or_insert_with(|| Value::String(node.name.clone()));
                }
                Ok(TaskSpec {
                    id: t.id.to_string(),
                    kind,
                    parameters,
                    skip_reason: t.skip_reason.clone(),
                    waits_for,
                    gated,
                    manifests: Default::default(),
                })
            })
            .collect()
    }
}
