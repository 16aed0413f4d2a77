//! A deployment's inputs as one value, and the one function that resolves them.
//!
//! [`Snapshot`] is everything a deployment resolves from: the release, the enabled plugins, the cluster
//! (settings, generated attributes, tags metadata), the graphs of the types it runs, every node of the
//! cluster, the nodes the operator named, and the old states `changed()` compares with. The controller
//! reads it from its store in one read transaction; `plinthctl` reads it from files. Both then call
//! [`resolve`], so what a task author sees offline is what the controller does.
//!
//! The serialized form (stored with each deployment, so a restart or a retry resolves the same inputs)
//! leaves out the old states: they are read again each time, as they stand then.

mod expressions;
mod resolve;

pub use expressions::{register_helpers, Expressions};
pub use resolve::{resolve, resolve_owned, PhasePlan, ResolutionError, Resolved};

use crate::deploy::{DeployData, OldStates, YaqlFields};
use crate::graph::FieldEvaluator;
use crate::model::{default_node_filter, Cluster, Node, Plugin, Release};
use crate::tags::{cluster_tags, Catalog};
use serde::{Deserialize, Serialize};

/// The model a deployment resolves from, as of its start.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Snapshot {
    /// The cluster's id.
    pub cluster_id: u64,
    /// The release, with the graphs of the types the deployment runs.
    pub release: Release,
    /// The enabled plugins, in enabling order, with their graphs of those types.
    pub plugins: Vec<Plugin>,
    /// The cluster, with its graphs of those types.
    pub cluster: Cluster,
    /// Every node of the cluster.
    pub nodes: Vec<Node>,
    /// The nodes the operator named (`None`: the graphs' node filters and pending changes choose).
    pub named: Option<Vec<u64>>,
    /// Treat the old state as empty.
    pub forced: bool,
    /// What each task last ran against on each node (not serialized: read anew each time).
    #[serde(skip)]
    pub old: OldStates,
}

impl Snapshot {
    /// The roles and tags the cluster knows.
    pub fn catalog(&self) -> Catalog {
        let plugins: Vec<&Plugin> = self.plugins.iter().collect();
        Catalog::new(&self.release, &plugins, Some(&self.cluster))
    }

    /// The data expressions see.
    pub fn data(&self, catalog: &Catalog) -> DeployData {
        let tags = cluster_tags(&self.nodes, catalog);
        DeployData::build(
            self.cluster_id,
            &self.cluster,
            &self.release,
            &self.nodes,
            &tags,
        )
    }

    /// The data expressions see, each node's facts moved into it (they read `null` here afterwards):
    /// for a snapshot that resolves once and is dropped, so a deployment's start holds every node's
    /// facts once, not twice.
    pub fn take_data(&mut self, catalog: &Catalog) -> DeployData {
        let tags = cluster_tags(&self.nodes, catalog);
        let facts = self
            .nodes
            .iter_mut()
            .map(|n| std::mem::take(&mut n.facts))
            .collect();
        DeployData::build_with_facts(
            self.cluster_id,
            &self.cluster,
            &self.release,
            &self.nodes,
            facts,
            &tags,
        )
    }

    /// A YAQL evaluator over this snapshot's data and old states.
    pub fn evaluator(&self, exprs: &Expressions) -> YaqlFields {
        let catalog = self.catalog();
        YaqlFields::new(
            exprs.engine.clone(),
            exprs.cache.clone(),
            self.data(&catalog),
            self.old.clone(),
            self.forced,
        )
    }

    /// Whether the release, an enabled plugin or the cluster defines a graph of this type.
    pub fn defines(&self, graph_type: &str) -> bool {
        self.release.graphs.contains_key(graph_type)
            || self.cluster.graphs.contains_key(graph_type)
            || self
                .plugins
                .iter()
                .any(|p| p.graphs.contains_key(graph_type))
    }
}

/// The nodes a graph runs on: the named ones; else, when the graph has a node filter, those it selects
/// (it decides alone); else those Nailgun's default filter selects and those with pending changes
/// (added, or given roles). Never a node pending deletion.
pub fn selection(
    snapshot: &Snapshot,
    node_filter: Option<&str>,
    evaluator: &dyn FieldEvaluator,
) -> Result<Vec<u64>, String> {
    if let Some(named) = &snapshot.named {
        return Ok(named.clone());
    }
    let mut out = Vec::new();
    for node in &snapshot.nodes {
        if node.pending_deletion {
            continue;
        }
        let chosen = match node_filter {
            Some(expr) => evaluator.node_filter(node, expr)?,
            None => {
                default_node_filter(node) || node.pending_addition || !node.pending_roles.is_empty()
            }
        };
        if chosen {
            out.push(node.id);
        }
    }
    Ok(out)
}
