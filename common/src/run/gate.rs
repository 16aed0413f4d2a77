//! The gate: whether a gated task may start now. Ready when every `all`-policy dependency has finished
//! well, one of its `any`-policy dependencies has, and its concurrency limit (`one_by_one`, `parallel`
//! with an amount) leaves a slot, which the node then holds until the task's last result (or until the
//! node's list is settled).

use crate::model::Policy;
use crate::wire::ResultStatus;

use super::Run;

/// The gate's answer for one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateStatus {
    /// The task may start.
    pub ready: bool,
    /// The task can never start: a task it waits for failed, or its node settled without it.
    pub blocked: bool,
    /// What it still waits for, in words.
    pub waiting_for: Vec<String>,
}

impl Run {
    /// The gate's answer for `task` on `node`; `None` when the task is not in a list the node holds in
    /// this running deployment. A ready answer for a limited task takes a slot for the node.
    pub fn gate(&mut self, node_id: u64, task: &str) -> Option<GateStatus> {
        if self.finished.is_some() {
            return None;
        }
        let cur = self.current.get(&node_id)?;
        let spec = cur.list.tasks.iter().find(|t| t.id == task)?;
        let graph_type = cur.at.graph_type.as_str();
        let status = |node: u64, task: &str| self.done.get(graph_type, node, task);
        let settled = |node: u64| self.current.get(&node).is_none_or(|c| c.settled);
        let mut waiting = Vec::new();
        let mut blocked = false;
        for dep in &spec.waits_for {
            match status(dep.node_id, &dep.task) {
                Some(ResultStatus::Succeeded | ResultStatus::Skipped) => {}
                Some(_) => blocked = true,
                None if settled(dep.node_id) => blocked = true,
                None => waiting.push(format!("{} on node {}", dep.task, dep.node_id)),
            }
        }
        let phase = self.plan.graphs.get(graph_type);
        let sets = phase.and_then(|p| {
            p.gated_waits
                .get(&(node_id, task.to_string()))
                .map(|w| (p, w))
        });
        if let Some((phase, sets)) = sets {
            for set in sets.iter().filter_map(|w| phase.wait_sets.get(*w as usize)) {
                let mut met = false;
                let mut open = Vec::new();
                let mut failed = false;
                for (n, t) in set.entries_for(node_id) {
                    let here = self
                        .current
                        .get(&n)
                        .filter(|c| c.at.graph_type == graph_type);
                    match status(n, t) {
                        Some(ResultStatus::Succeeded | ResultStatus::Skipped) => met = true,
                        Some(_) => failed = true,
                        // A node that runs this graph type now and has not finished the task.
                        None if here.is_some_and(|c| !c.settled) => {
                            open.push(format!("{t} on node {n}"))
                        }
                        // Settled without it.
                        None if here.is_some() => failed = true,
                        // Not running this graph type (a later group).
                        None => {}
                    }
                }
                match set.policy {
                    Policy::All if failed => blocked = true,
                    Policy::All => {
                        if let Some(first) = open.first() {
                            waiting.push(format!("{first} and {} more", open.len() - 1));
                        }
                    }
                    Policy::Any if met => {}
                    Policy::Any if open.is_empty() => blocked = failed,
                    Policy::Any => waiting.push(format!("any of: {}", open.join(", "))),
                }
            }
        }
        let limit = phase.and_then(|p| p.limits.get(task)).copied();
        let graph_type = graph_type.to_string();
        if waiting.is_empty() && !blocked {
            if let Some(limit) = limit {
                let holders = self
                    .slots
                    .entry((graph_type, task.to_string()))
                    .or_default();
                if !holders.contains(&node_id) {
                    if holders.len() >= limit {
                        let others: Vec<u64> = holders.iter().copied().collect();
                        waiting.push(format!(
                            "{task} runs on at most {limit} node(s) at once (now on {others:?})"
                        ));
                    } else {
                        holders.insert(node_id);
                    }
                }
            }
        }
        Some(GateStatus {
            ready: waiting.is_empty() && !blocked,
            blocked,
            waiting_for: waiting,
        })
    }
}
