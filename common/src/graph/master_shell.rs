//! `master_shell` tasks (Fuel's type): a shell command that runs on the controller's own host once for
//! each node the task is placed on, with that node's data. Resolution places and computes the task on
//! each node like any other; this pass then moves the work to the master:
//!
//! - the master's list gets one copy per node, `<task>@<node name>`, with the node's computed
//!   parameters, waiting (a cross-node wait) for the task before it in the node's list;
//! - on the node the task becomes a stand-in (a `stage`, which does nothing) that waits for the master's
//!   copy, so the node's later tasks run after the command did, as Fuel's ordering says.
//!
//! The copies follow the master's own tasks in its list, by node id. A copy does not keep the task's
//! `strategy`: the master runs its list one task at a time, which is already one by one.

use super::plan::{NodePlan, Plan, ResolvedTask, WaitSet, WaitTarget};
use super::MASTER_NODE_ID;
use crate::model::{Policy, TaskType};
use crate::tags::MASTER_TAG;
use std::sync::Arc;

/// The id of `task`'s copy on the master for `node`.
pub fn copy_id(task: &str, node: &str) -> String {
    format!("{task}@{node}")
}

/// Moves every `master_shell` task placed on a node to the master (see the module's text).
pub(crate) fn place_master_shells(plan: &mut Plan) {
    let mut copies: Vec<ResolvedTask> = Vec::new();
    for n in 0..plan.nodes.len() {
        let node_id = plan.nodes[n].node_id;
        if node_id == MASTER_NODE_ID
            || !plan.nodes[n]
                .tasks
                .iter()
                .any(|t| t.task_type == TaskType::MasterShell)
        {
            continue;
        }
        let name = plan.nodes[n].name.clone();
        let mut tasks: Vec<ResolvedTask> = plan.nodes[n].tasks.as_ref().clone();
        for i in 0..tasks.len() {
            if tasks[i].task_type != TaskType::MasterShell {
                continue;
            }
            let id = copy_id(&tasks[i].id, &name);
            let mut waits = tasks[i].waits.clone();
            if let Some(before) = i.checked_sub(1).map(|b| tasks[b].id.to_string()) {
                waits.push(add_set(&mut plan.wait_sets, before, node_id));
            }
            copies.push(ResolvedTask {
                id: Arc::from(id.as_str()),
                task_type: TaskType::MasterShell,
                parameters: tasks[i].parameters.clone(),
                skip_reason: None,
                waits,
                strategy: None,
                fault_tolerance: None,
                group: None,
                extra: tasks[i].extra.clone(),
            });
            let stand_in = &mut tasks[i];
            stand_in.task_type = TaskType::Stage;
            stand_in.parameters = Arc::default();
            stand_in.strategy = None;
            stand_in.waits = vec![add_set(&mut plan.wait_sets, id, MASTER_NODE_ID)];
        }
        plan.nodes[n].tasks = Arc::new(tasks);
    }
    if copies.is_empty() {
        return;
    }
    if plan.nodes.first().map(|n| n.node_id) != Some(MASTER_NODE_ID) {
        plan.nodes.insert(
            0,
            NodePlan {
                node_id: MASTER_NODE_ID,
                name: MASTER_TAG.to_string(),
                tags: vec![MASTER_TAG.to_string()],
                instances: Default::default(),
                tasks: Arc::default(),
            },
        );
    }
    let master = &mut plan.nodes[0];
    let mut tasks = master.tasks.as_ref().clone();
    tasks.extend(copies);
    master.tasks = Arc::new(tasks);
}

/// Adds a wait set of one task on one node; returns its index.
fn add_set(sets: &mut Vec<WaitSet>, task: String, node: u64) -> u32 {
    sets.push(WaitSet {
        policy: Policy::All,
        targets: vec![WaitTarget {
            task,
            nodes: vec![node],
        }],
    });
    // Plans hold far fewer than 2^32 wait sets: each is a task of a node.
    u32::try_from(sets.len() - 1).unwrap_or(u32::MAX)
}
