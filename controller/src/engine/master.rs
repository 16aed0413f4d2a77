//! The controller's own host in a deployment. A graph may place tasks on `master` (Fuel's master
//! node: `master_shell` commands, image builds); resolution gives them to node
//! [`MASTER_NODE_ID`]. The agent named by `master_node` in the configuration runs on the
//! controller's host and takes them: its node joins the deployment under its own id and name, with
//! the tag `master`, and every wait on the master becomes a wait on it.
//!
//! Without a master agent, the master's tasks are not run: a deployment whose master would run
//! `master_shell` commands is refused (the nodes would go on as if they had run), and one whose master
//! would run other tasks starts with a warning naming them.

use super::plan::DeployNode;
use super::StartError;
use crate::store::{NodeAdmission, Store};
use plinth_common::graph::{Finding, MASTER_NODE_ID};
use plinth_common::model::TaskType;
use plinth_common::snapshot::Resolved;
use plinth_common::strategy::{InventoryNode, Strategy};
use plinth_common::tags::MASTER_TAG;
use std::sync::Arc;

/// Gives the tasks resolved for the master to the configured master agent's node and answers that
/// node (to deploy beside `nodes`); `None` when no graph type places a task on the master, or none is
/// configured (a warning then names what does not run).
pub(super) fn place(
    store: &dyn Store,
    configured: Option<&str>,
    resolved: &mut Resolved,
    nodes: &[DeployNode],
) -> Result<Option<DeployNode>, StartError> {
    if !resolved.phases.values().any(|p| p.places_on_master()) {
        return Ok(None);
    }
    let Some(name) = configured else {
        unplaced(resolved)?;
        return Ok(None);
    };
    let master = find(store, name)?;
    if nodes.iter().any(|n| n.id == master.id) {
        return Err(StartError::Invalid(format!(
            "node {name} is the master (`master_node`): it takes the tasks placed on `master` and cannot also be deployed as a node of the cluster"
        )));
    }
    for phase in resolved.phases.values_mut() {
        if phase.places_on_master() {
            Arc::make_mut(phase).assign_master(master.id);
        }
    }
    Ok(Some(master))
}

/// Refuses a strategy that puts the master in none of its groups: its tasks would not run, and the
/// nodes waiting for them would go on without them.
pub(super) fn check_selected(
    strategy: &Strategy,
    master: &InventoryNode,
) -> Result<(), StartError> {
    if strategy.groups.iter().any(|g| g.selects(master)) {
        return Ok(());
    }
    Err(StartError::Invalid(format!(
        "no group of the strategy selects the master node {} (`master_node`), which has tasks placed on `{MASTER_TAG}`: add a group selecting the tag `{MASTER_TAG}`",
        master.name
    )))
}

/// Gives the master's tasks of a deployment taken on from its record to its master node again.
pub(super) fn reassign(resolved: &mut Resolved, master: u64) {
    for phase in resolved.phases.values_mut() {
        if phase.places_on_master() {
            Arc::make_mut(phase).assign_master(master);
        }
    }
}

/// The configured master's node, accepted.
fn find(store: &dyn Store, name: &str) -> Result<DeployNode, StartError> {
    let id = store
        .node_names()?
        .into_iter()
        .find(|(_, n)| n == name)
        .map(|(id, _)| id)
        .ok_or_else(|| {
            StartError::Invalid(format!(
                "the master node {name:?} (`master_node`) is not registered: start the agent on the controller's host first"
            ))
        })?;
    let record = store.get_node(id)?;
    if record.admission != NodeAdmission::Accepted {
        return Err(StartError::Invalid(format!(
            "the master node {name:?} (`master_node`) is not accepted yet"
        )));
    }
    Ok(DeployNode::from(record))
}

/// No master agent: refuses `master_shell` work the nodes would take as done, warns of the rest.
fn unplaced(resolved: &mut Resolved) -> Result<(), StartError> {
    let mut shells = Vec::new();
    let mut others = Vec::new();
    for (graph_type, plan) in &resolved.plans {
        let Some(master) = plan.node(MASTER_NODE_ID) else {
            continue;
        };
        for task in master.tasks.iter() {
            match task.task_type {
                TaskType::MasterShell => shells.push(format!("{graph_type}/{}", task.id)),
                TaskType::Skipped | TaskType::Stage | TaskType::Group => {}
                _ => others.push(format!("{graph_type}/{}", task.id)),
            }
        }
    }
    if !shells.is_empty() {
        return Err(StartError::Invalid(format!(
            "{} master_shell command(s) run on the controller's host, and no agent is the master: name the node of the agent on this host with `master_node` (first: {})",
            shells.len(),
            shells[..shells.len().min(5)].join(", ")
        )));
    }
    if !others.is_empty() {
        resolved.findings.push(Finding::warning(
            "master_not_configured",
            format!(
                "{} task(s) placed on {MASTER_TAG} do not run: no agent is the master (`master_node`): {}",
                others.len(),
                others[..others.len().min(10)].join(", ")
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_common::strategy::Selector;

    /// The one group of a deployment without a strategy takes the master; a strategy whose groups
    /// select computes only is refused, naming the tag that would take it.
    #[test]
    fn a_strategy_must_put_the_master_in_a_group() {
        let master = InventoryNode::new("ctl").with_tag(MASTER_TAG);
        assert!(check_selected(&Strategy::all_nodes(), &master).is_ok());
        let mut computes = Strategy::all_nodes();
        computes.groups[0].selectors = vec![Selector {
            node_tags: vec!["compute".into()],
            ..Selector::default()
        }];
        let refused = check_selected(&computes, &master).unwrap_err().to_string();
        assert!(
            refused.contains("ctl") && refused.contains("tag `master`"),
            "{refused}"
        );
        computes.groups[0].selectors.push(Selector {
            node_tags: vec![MASTER_TAG.into()],
            ..Selector::default()
        });
        assert!(check_selected(&computes, &master).is_ok());
    }
}
