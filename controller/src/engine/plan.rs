//! What a deployment runs: the strategy, the merged graph of each phase's graph type, and each node's
//! ordered task list for a phase. Checked whole before a deployment starts, so that a graph that cannot be
//! resolved for some node refuses the deployment instead of failing it half-way.

use super::StartError;
use crate::resolve;
use crate::store::{GraphOwner, NodeRecord, Store, StoreError};
use plinth_common::strategy::{InventoryNode, Phase, Strategy};
use plinth_common::wire::TaskSpec;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The tags a node is matched by: its own tags, its deployed roles and its pending roles.
pub fn node_tags(node: &NodeRecord) -> BTreeSet<String> {
    node.tags
        .iter()
        .chain(&node.roles)
        .chain(&node.pending_roles)
        .cloned()
        .collect()
}

/// A node as a strategy selects it.
pub fn inventory_node(node: &NodeRecord) -> InventoryNode {
    let mut inv = InventoryNode::new(node.name.clone());
    for tag in node_tags(node) {
        inv = inv.with_tag(tag);
    }
    for (k, v) in &node.labels {
        inv = inv.with_label(k.clone(), v.clone());
    }
    if let Some(rack) = &node.rack {
        inv = inv.in_rack(rack.clone());
    }
    inv
}

/// The strategy of a deployment: the named one of the cluster, or one critical group of every node
/// running `graph_type` in a single `deploy` phase.
pub fn strategy_for(
    store: &dyn Store,
    cluster_id: u64,
    name: Option<&str>,
    graph_type: Option<&str>,
    phase_timeout_secs: u64,
) -> Result<Strategy, StartError> {
    match name {
        Some(name) => {
            if graph_type.is_some() {
                return Err(StartError::Invalid(
                    "a strategy's phases choose the graph types: leave out graph_type when naming a strategy".into(),
                ));
            }
            let record = store.get_strategy(cluster_id, name)?;
            plinth_common::strategy::strategy_from_value(&record.document).map_err(|e| {
                StartError::Invalid(format!("stored strategy {name:?} is not valid: {e}"))
            })
        }
        None => {
            let mut s = Strategy::all_nodes();
            s.phases = vec![Phase {
                name: "deploy".into(),
                graph_type: graph_type.unwrap_or("default").to_string(),
                timeout: None,
            }];
            s.phase_timeout = phase_timeout_secs;
            Ok(s)
        }
    }
}

/// The merged graph of each graph type the strategy's phases run (release, then cluster).
pub fn merged_graphs(
    store: &dyn Store,
    release_id: u64,
    cluster_id: u64,
    strategy: &Strategy,
) -> Result<BTreeMap<String, Vec<Value>>, StartError> {
    let mut out = BTreeMap::new();
    for phase in &strategy.phases {
        if out.contains_key(&phase.graph_type) {
            continue;
        }
        let mut sources = Vec::new();
        for owner in [
            GraphOwner::Release(release_id),
            GraphOwner::Cluster(cluster_id),
        ] {
            match store.get_graph(owner, &phase.graph_type) {
                Ok(g) => sources.push(g.body.tasks),
                Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if sources.is_empty() {
            return Err(StartError::Invalid(format!(
                "phase {:?} runs graph type {:?}, which neither the release nor the cluster has",
                phase.name, phase.graph_type
            )));
        }
        let refs: Vec<&[Value]> = sources.iter().map(Vec::as_slice).collect();
        out.insert(phase.graph_type.clone(), resolve::merge(&refs)?);
    }
    Ok(out)
}

/// A node's ordered tasks for one graph type.
pub fn tasks_for(
    graphs: &BTreeMap<String, Vec<Value>>,
    graph_type: &str,
    node: &NodeRecord,
) -> Result<Vec<TaskSpec>, StartError> {
    let merged = graphs
        .get(graph_type)
        .map(Vec::as_slice)
        .unwrap_or_default();
    Ok(resolve::tasks_for_node(
        merged,
        &node.name,
        &node_tags(node),
    )?)
}
