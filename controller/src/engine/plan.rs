//! What a deployment runs: its strategy (named, configured, or one group of every node) with its phase
//! timeouts, and its nodes as the strategy's selectors see them. The task lists themselves come from [`plinth_common::snapshot::resolve`].

use super::StartError;
use crate::store::{NodeRecord, Store, StoreError};
use plinth_common::strategy::{
    DeploymentConfiguration, InventoryNode, Phase, Strategy, DEFAULT_STRATEGY_NAME,
};
use std::collections::BTreeMap;

/// What a deployment keeps of each node it deploys, from the node's record: what its run, its strategy
/// and its primaries read. A start holds one for every node through resolution, beside the deployment
/// data, so the rest of the record (keys, roles, tags, facts) is not kept.
#[derive(Debug, Clone)]
pub struct DeployNode {
    /// The node's id.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// The fingerprint of its key (its lists are signed for it).
    pub node_key: String,
    /// Its labels (strategies select by them).
    pub labels: BTreeMap<String, String>,
    /// Its rack (strategies select by it).
    pub rack: Option<String>,
    /// The tags it was elected primary for, as recorded.
    pub primary_tags: Vec<String>,
}

impl From<NodeRecord> for DeployNode {
    fn from(record: NodeRecord) -> DeployNode {
        DeployNode {
            id: record.id,
            name: record.name,
            node_key: record.node_key,
            labels: record.labels,
            rack: record.rack,
            primary_tags: record.model.primary_tags,
        }
    }
}

/// How many of a cluster's nodes one read gives (a retry's request, a running deployment taken on).
const NODES_PER_PAGE: usize = if cfg!(test) { 2 } else { 5_000 };

/// Every node of a cluster, read a page at a time, each page handed to `take` as it is read (so a
/// caller can cut each record down before the next page is read).
fn cluster_pages(
    store: &dyn Store,
    cluster_id: u64,
    mut take: impl FnMut(Vec<NodeRecord>),
) -> Result<(), StoreError> {
    let mut filter = crate::store::NodeFilter {
        cluster_id: Some(cluster_id),
        limit: NODES_PER_PAGE,
        ..Default::default()
    };
    loop {
        let page = store.list_nodes_page(&filter)?;
        let Some(last) = page.last().map(|n| n.id) else {
            return Ok(());
        };
        let full = page.len() == NODES_PER_PAGE;
        take(page);
        if !full {
            return Ok(());
        }
        filter.after_id = last;
    }
}

/// A cluster's nodes, without their facts, read a page at a time: the facts of every node at once
/// would be the largest thing a request holds (a retry resolves from its stored inputs, which have
/// them).
pub fn cluster_nodes_without_facts(
    store: &dyn Store,
    cluster_id: u64,
) -> Result<Vec<NodeRecord>, StoreError> {
    let mut out = Vec::new();
    cluster_pages(store, cluster_id, |page| {
        out.extend(page.into_iter().map(|mut n| {
            n.facts = serde_json::Value::Null;
            n
        }))
    })?;
    Ok(out)
}

/// The nodes of a running deployment taken on from its record (after a restart, or by the controller
/// that takes the sequencing over), in its order. Its cluster's nodes are read a page at a time, each
/// record cut to what the deployment keeps as it is read: read one by one, a takeover of 100,000
/// nodes made 100,000 round trips to the database. A node no longer in the cluster is read alone; one
/// that is gone is left out.
pub fn deployment_nodes(
    store: &dyn Store,
    cluster_id: u64,
    node_ids: &[u64],
) -> Result<Vec<DeployNode>, StoreError> {
    let wanted: std::collections::HashSet<u64> = node_ids.iter().copied().collect();
    let mut found: std::collections::HashMap<u64, DeployNode> =
        std::collections::HashMap::with_capacity(node_ids.len());
    cluster_pages(store, cluster_id, |page| {
        found.extend(
            page.into_iter()
                .filter(|n| wanted.contains(&n.id))
                .map(|n| (n.id, DeployNode::from(n))),
        )
    })?;
    Ok(node_ids
        .iter()
        .filter_map(|id| {
            found
                .remove(id)
                .or_else(|| store.get_node(*id).ok().map(DeployNode::from))
        })
        .collect())
}

/// A node as a strategy selects it: by its tags (roles' tags, operator changes, primaries elected),
/// labels and rack.
pub fn inventory_node(node: &DeployNode, tags: &BTreeMap<u64, Vec<String>>) -> InventoryNode {
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

/// The strategy a deployment runs, and how it was chosen.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// The strategy, with the deployment configuration's timeouts applied.
    pub strategy: Strategy,
    /// The stored strategy's name; `None` when every node runs at once.
    pub name: Option<String>,
    /// How the strategy and its timeouts were chosen, in words.
    pub chosen_by: String,
}

/// The strategy of a deployment and its phase timeouts.
///
/// The strategy: the one named in the request; else, unless a graph type is asked for, the one the
/// cluster's deployment configuration names (`physical_provisioner.deployment_strategy`, default
/// `deployment-strategy`, the seed's name) when it is stored; else one critical group of every node running
/// `graph_type` in a single `deploy` phase. A configuration that names a strategy the cluster does not have
/// refuses the deployment (Shipyard's reserved `all-at-once` excepted). The timeouts: the configuration's
/// `prepare_node_timeout` and `deploy_timeout` for the phases named `prepare` and `deploy` (unless the
/// strategy sets a phase's own), else the strategy's `phase_timeout` (the controller's for every node at
/// once).
pub fn strategy_for(
    store: &dyn Store,
    cluster_id: u64,
    name: Option<&str>,
    graph_type: Option<&str>,
    action: Option<&SiteAction>,
    phase_timeout_secs: u64,
) -> Result<Chosen, StartError> {
    let configuration = match store.get_configuration(cluster_id) {
        Ok(record) => Some(
            serde_json::from_value::<DeploymentConfiguration>(record.configuration).map_err(|e| {
                StartError::Invalid(format!(
                    "the stored deployment configuration of cluster {cluster_id} does not read back: {e}"
                ))
            })?,
        ),
        Err(StoreError::NotFound { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let stored = |name: &str| -> Result<Strategy, StartError> {
        let record = store.get_strategy(cluster_id, name)?;
        plinth_common::strategy::strategy_from_value(&record.document)
            .map_err(|e| StartError::Invalid(format!("stored strategy {name:?} is not valid: {e}")))
    };
    let config_words = configuration
        .as_ref()
        .map(|c| format!("deployment configuration {:?}", c.name));
    let mut chosen = match (name, graph_type) {
        (Some(_), Some(_)) => {
            return Err(StartError::Invalid(
                "a strategy's phases choose the graph types: leave out graph_type when naming a strategy".into(),
            ))
        }
        (Some(name), None) => Chosen {
            strategy: stored(name)?,
            name: Some(name.to_string()),
            chosen_by: format!("strategy {name:?} named in the request"),
        },
        (None, Some(graph_type)) => all_at_once(
            graph_type,
            phase_timeout_secs,
            format!("graph type {graph_type:?} asked for: every node at once, no strategy"),
        ),
        (None, None) => {
            let default = configuration
                .as_ref()
                .map_or(DEFAULT_STRATEGY_NAME, |c| c.strategy_name());
            let named = configuration
                .as_ref()
                .and_then(|c| c.deployment_strategy.as_deref());
            match store.get_strategy(cluster_id, default) {
                Ok(_) => Chosen {
                    strategy: stored(default)?,
                    name: Some(default.to_string()),
                    chosen_by: match (named, &config_words) {
                        (Some(_), Some(words)) => {
                            format!("strategy {default:?} named by the {words}")
                        }
                        _ => format!("strategy {default:?}, the default name"),
                    },
                },
                Err(StoreError::NotFound { .. }) => match named {
                    Some(named) if named != ALL_AT_ONCE => {
                        return Err(StartError::Invalid(format!(
                            "the {} names strategy {named:?} (physical_provisioner.deployment_strategy), which \
                             cluster {cluster_id} does not have: store it, or change the configuration",
                            config_words.unwrap_or_default()
                        )))
                    }
                    _ => all_at_once(
                        "default",
                        phase_timeout_secs,
                        match named {
                            Some(_) => format!(
                                "the {} says {ALL_AT_ONCE:?}: every node at once",
                                config_words.clone().unwrap_or_default()
                            ),
                            None => format!(
                                "no strategy named {DEFAULT_STRATEGY_NAME:?} is stored: every node at once"
                            ),
                        },
                    ),
                },
                Err(e) => return Err(e.into()),
            }
        }
    };
    if let Some(SiteAction::RedeployServer { node }) = action {
        chosen = redeploy(chosen, node);
    }
    if let Some(configuration) = &configuration {
        configuration.apply(&mut chosen.strategy);
        chosen.chosen_by.push_str(&format!(
            "; phase timeouts from the {} (prepare_node_timeout {} s, deploy_timeout {} s)",
            config_words.unwrap_or_default(),
            configuration.prepare_node_timeout,
            configuration.deploy_timeout
        ));
    }
    Ok(chosen)
}

/// Shipyard's name for running every node at once, without a strategy document.
pub const ALL_AT_ONCE: &str = "all-at-once";

/// One critical group of every node running `graph_type` in a single `deploy` phase.
fn all_at_once(graph_type: &str, phase_timeout_secs: u64, chosen_by: String) -> Chosen {
    let mut s = Strategy::all_nodes();
    s.phases = vec![Phase {
        name: "deploy".into(),
        graph_type: graph_type.to_string(),
        timeout: None,
    }];
    s.phase_timeout = phase_timeout_secs;
    Chosen {
        strategy: s,
        name: None,
        chosen_by,
    }
}

/// What a deployment runs, as the start response and `plinthctl deploy start` show it: the strategy's
/// name (none for every node at once), how it was chosen, and each phase with its graph type and timeout.
pub fn summary(
    strategy: &Strategy,
    name: Option<&str>,
    chosen_by: Option<&str>,
) -> plinth_api::deployments::StrategySummary {
    plinth_api::deployments::StrategySummary {
        name: name.map(str::to_string),
        chosen_by: chosen_by.map(str::to_string),
        phases: strategy
            .phases
            .iter()
            .map(|p| plinth_api::deployments::PhaseSummary {
                name: p.name.clone(),
                graph_type: p.graph_type.clone(),
                timeout_secs: strategy.timeout_of(p),
            })
            .collect(),
    }
}

/// Shipyard's actions as Plinth runs them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SiteAction {
    /// `deploy_site`: every group of the strategy through its phases.
    DeploySite,
    /// `update_site`: the same on a deployed site (nodes whose tasks have not changed have nothing to do).
    UpdateSite,
    /// `redeploy_server`: one node through prepare and deploy, outside any group of the strategy.
    RedeployServer {
        /// The node's name.
        node: String,
    },
}

impl SiteAction {
    /// Shipyard's name of the action.
    pub fn name(&self) -> &'static str {
        match self {
            SiteAction::DeploySite => "deploy_site",
            SiteAction::UpdateSite => "update_site",
            SiteAction::RedeployServer { .. } => "redeploy_server",
        }
    }

    /// The action named `name` (`node` for `redeploy_server`, and only there).
    pub fn parse(name: &str, node: Option<&str>) -> Result<SiteAction, String> {
        match (name, node) {
            ("deploy_site", None) => Ok(SiteAction::DeploySite),
            ("update_site", None) => Ok(SiteAction::UpdateSite),
            ("redeploy_server", Some(node)) if !node.is_empty() => Ok(SiteAction::RedeployServer {
                node: node.to_string(),
            }),
            ("redeploy_server", _) => Err("redeploy_server needs the node's name (`node`)".into()),
            ("deploy_site" | "update_site", Some(_)) => Err(format!(
                "{name} runs every group; `node` goes with redeploy_server only"
            )),
            (other, _) => Err(format!(
                "{other:?} is not an action; use deploy_site, update_site or redeploy_server"
            )),
        }
    }
}

/// The name of the one group `redeploy_server` runs.
pub const REDEPLOY_GROUP: &str = "redeploy_server";

/// `redeploy_server`: the node alone in one critical group that needs it, through the strategy's phases
/// (prepare and deploy when every node would run at once); the configuration's timeouts apply afterwards.
fn redeploy(chosen: Chosen, node: &str) -> Chosen {
    let phases = match chosen.name {
        Some(_) => chosen.strategy.phases.clone(),
        None => Phase::defaults(),
    };
    let mut strategy = Strategy::from_groups(vec![plinth_common::strategy::Group {
        name: REDEPLOY_GROUP.to_string(),
        critical: true,
        depends_on: Vec::new(),
        selectors: vec![plinth_common::strategy::Selector {
            node_names: vec![node.to_string()],
            ..Default::default()
        }],
        success_criteria: Some(plinth_common::strategy::SuccessCriteria {
            minimum_successful_nodes: Some(1),
            ..Default::default()
        }),
    }]);
    strategy.name = chosen.strategy.name.clone();
    strategy.phases = phases;
    strategy.phase_timeout = chosen.strategy.phase_timeout;
    Chosen {
        strategy,
        name: chosen.name,
        chosen_by: format!(
            "redeploy_server: node {node:?} alone through the phases of {}",
            chosen.chosen_by
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;
    use crate::store::suite::{reg, release_and_cluster};
    use crate::store::{NodeAdmission, NodeAssignment};

    #[test]
    fn a_deployments_nodes_are_read_by_pages_in_its_order() {
        let s = SqliteStore::in_memory().unwrap();
        let (_, c) = release_and_cluster(&s);
        let ids: Vec<u64> = (0..7)
            .map(|i| {
                s.register_node(&reg(&format!("k{i}")), NodeAdmission::Accepted)
                    .unwrap()
                    .id
            })
            .collect();
        // Six in the cluster (three pages), the seventh outside it (read alone), one gone.
        let assigned: Vec<NodeAssignment> = ids[..6]
            .iter()
            .map(|id| NodeAssignment {
                id: *id,
                roles: Vec::new(),
            })
            .collect();
        s.assign_nodes(c.id, &assigned).unwrap();
        let wanted = [ids[5], ids[0], ids[6], 9_999, ids[3]];
        let got = deployment_nodes(&s, c.id, &wanted).unwrap();
        let got_ids: Vec<u64> = got.iter().map(|n| n.id).collect();
        assert_eq!(got_ids, [ids[5], ids[0], ids[6], ids[3]]);
        assert_eq!(
            (
                got[0].name.as_str(),
                got[0].node_key.as_str(),
                got[0].rack.as_deref()
            ),
            ("host-k5", "k5", Some("r1"))
        );
        // A retry's request: every node of the cluster, over the pages, none with its facts.
        let all = cluster_nodes_without_facts(&s, c.id).unwrap();
        assert_eq!(all.iter().map(|n| n.id).collect::<Vec<_>>(), ids[..6]);
        assert!(all.iter().all(|n| n.facts.is_null()));
    }
}
