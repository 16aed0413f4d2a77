//! What a deployment runs: its strategy (named, or one group of every node), and its nodes as the
//! strategy's selectors see them. The task lists themselves come from [`super::resolution`].

use super::StartError;
use crate::store::{NodeRecord, Store};
use plinth_common::strategy::{InventoryNode, Phase, Strategy};
use std::collections::{BTreeMap, BTreeSet};

/// A node as a strategy selects it: by its tags (roles' tags, operator changes, primaries elected),
/// labels and rack.
pub fn inventory_node(node: &NodeRecord, tags: &BTreeMap<u64, BTreeSet<String>>) -> InventoryNode {
    let mut inv = InventoryNode::new(node.name.clone());
    for tag in tags.get(&node.id).into_iter().flatten() {
        inv = inv.with_tag(tag.clone());
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
