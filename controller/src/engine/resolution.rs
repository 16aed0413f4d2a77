//! Resolving a deployment: the cluster's model at the deployment's start (its *inputs*, stored with the
//! deployment so a restart resolves it identically), the old states `changed()` compares with, and for
//! each graph type its phases run, every node's task list with the cross-node rules the gate enforces.

use super::StartError;
use crate::cluster_model::ClusterModel;
use crate::expressions::Expressions;
use crate::store::Store;
use plinth_common::deploy::{DeployData, NodeState, OldStates, YaqlFields};
use plinth_common::graph::{
    check_deployment, merge_for_cluster, resolve, FieldEvaluator, Finding, Plan, ResolveRequest,
    Severity,
};
use plinth_common::model::{
    default_node_filter, Cluster, Node, Plugin, Policy, Release, StrategyKind,
};
use plinth_common::tags::{cluster_tags, Catalog};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The model a deployment resolves from, as of its start.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Inputs {
    /// The cluster's id.
    pub cluster_id: u64,
    /// The release, with the graphs of the types the deployment runs.
    pub release: Release,
    /// The enabled plugins, with their graphs of those types.
    pub plugins: Vec<Plugin>,
    /// The cluster, with its graphs of those types.
    pub cluster: Cluster,
    /// Every node of the cluster.
    pub nodes: Vec<Node>,
    /// The nodes the operator named (`None`: the graphs' node filters and pending changes choose).
    pub named: Option<Vec<u64>>,
    /// Treat the old state as empty.
    pub forced: bool,
}

impl Inputs {
    /// The inputs of a loaded cluster model.
    pub fn from_model(model: ClusterModel, named: Option<Vec<u64>>, forced: bool) -> Inputs {
        Inputs {
            cluster_id: model.record.id,
            release: model.release,
            plugins: model.plugins,
            cluster: model.cluster,
            nodes: model.nodes,
            named,
            forced,
        }
    }

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
}

/// One graph type resolved for a deployment: what a running deployment enforces.
pub use plinth_common::run::GraphPlan as PhasePlan;

/// A deployment resolved: per graph type, and the findings of the pre-deployment checks.
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    /// By graph type.
    pub phases: BTreeMap<String, Arc<PhasePlan>>,
    /// Warnings (errors refuse the deployment before this exists).
    pub findings: Vec<Finding>,
    /// Each node's state, recorded per task when the task succeeds (for `changed()` next time).
    pub states: BTreeMap<u64, NodeState>,
    /// The plans themselves (for dry runs and `serialized_tasks`).
    pub plans: BTreeMap<String, Plan>,
    /// Each node's tags, primaries elected (strategies select nodes by these).
    pub tags: BTreeMap<u64, std::collections::BTreeSet<String>>,
    /// The elected primaries: tag → node.
    pub primaries: BTreeMap<String, u64>,
}

/// Loads the old states of these nodes' tasks.
pub fn old_states(store: &dyn Store, node_ids: &[u64]) -> Result<OldStates, StartError> {
    let rows = store.task_states(node_ids)?;
    let hashes: Vec<String> = rows
        .iter()
        .flat_map(|(_, _, r)| ["common", "node"].map(|key| r.get(key).and_then(Value::as_str)))
        .flatten()
        .collect::<std::collections::BTreeSet<&str>>()
        .into_iter()
        .map(str::to_string)
        .collect();
    let blobs: HashMap<String, Arc<Value>> = store
        .state_blobs(&hashes)?
        .into_iter()
        .map(|(h, v)| (h, Arc::new(v)))
        .collect();
    let mut old = OldStates::new();
    for (node, task, r) in rows {
        let part = |key: &str| {
            r.get(key)
                .and_then(Value::as_str)
                .and_then(|h| blobs.get(h))
                .cloned()
        };
        if let (Some(common), Some(own)) = (part("common"), part("node")) {
            old.insert(node, task, NodeState { common, node: own });
        }
    }
    Ok(old)
}

/// The content hash a state blob is stored under.
pub fn blob_hash(value: &Value) -> String {
    hex::encode(Sha256::digest(value.to_string().as_bytes()))
}

/// The nodes a graph runs on: the named ones; else, when the graph has a node filter, those it selects
/// (it decides alone); else those Nailgun's default filter selects and those with pending changes
/// (added, or given roles). Never a node pending deletion.
pub fn selection(
    inputs: &Inputs,
    node_filter: Option<&str>,
    evaluator: &dyn FieldEvaluator,
) -> Result<Vec<u64>, String> {
    if let Some(named) = &inputs.named {
        return Ok(named.clone());
    }
    let mut out = Vec::new();
    for node in &inputs.nodes {
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

/// Resolves every graph type of a deployment. Errors of the pre-deployment checks refuse it.
pub fn resolve_all(
    inputs: &Inputs,
    graph_types: &[String],
    exprs: &Expressions,
    old: OldStates,
) -> Result<Resolved, StartError> {
    let catalog = inputs.catalog();
    let elected = cluster_tags(&inputs.nodes, &catalog);
    let data = inputs.data(&catalog);
    let states: BTreeMap<u64, NodeState> = inputs
        .nodes
        .iter()
        .filter_map(|n| data.state(n.id).map(|s| (n.id, s)))
        .collect();
    let evaluator = YaqlFields::new(
        exprs.engine.clone(),
        exprs.cache.clone(),
        data,
        old,
        inputs.forced,
    );
    let plugins: Vec<&Plugin> = inputs.plugins.iter().collect();
    let mut out = Resolved {
        states,
        tags: elected
            .nodes
            .iter()
            .map(|(id, t)| (*id, t.tags.clone()))
            .collect(),
        primaries: elected.primaries.clone(),
        ..Resolved::default()
    };
    for graph_type in graph_types {
        if out.phases.contains_key(graph_type) {
            continue;
        }
        let defined = inputs.release.graphs.contains_key(graph_type)
            || inputs.cluster.graphs.contains_key(graph_type)
            || inputs
                .plugins
                .iter()
                .any(|p| p.graphs.contains_key(graph_type));
        if !defined {
            return Err(StartError::Invalid(format!(
                "graph type {graph_type:?} is defined by neither the release, an enabled plugin, nor the cluster"
            )));
        }
        let merged = merge_for_cluster(&inputs.release, &plugins, &inputs.cluster, graph_type)?;
        let chosen = selection(inputs, merged.node_filter.as_deref(), &evaluator)
            .map_err(StartError::Invalid)?;
        let request = ResolveRequest {
            graph_type,
            graph: &merged,
            catalog: &catalog,
            nodes: &inputs.nodes,
            selection: Some(&chosen),
            evaluator: &evaluator,
        };
        let findings = check_deployment(&request);
        if findings.iter().any(|f| f.severity == Severity::Error) {
            return Err(StartError::Checks(findings));
        }
        for f in findings {
            if !out.findings.contains(&f) {
                out.findings.push(f);
            }
        }
        let plan = resolve(&request)?;
        out.phases
            .insert(graph_type.clone(), Arc::new(phase_plan(&plan)?));
        out.plans.insert(graph_type.clone(), plan);
    }
    Ok(out)
}

fn phase_plan(plan: &Plan) -> Result<PhasePlan, StartError> {
    let mut out = PhasePlan {
        fault_tolerance: plan.fault_tolerance_groups.clone(),
        wait_sets: plan.wait_sets.clone(),
        ..PhasePlan::default()
    };
    for node in &plan.nodes {
        let specs = plan
            .task_specs(node)
            .map_err(|e| StartError::Invalid(e.to_string()))?;
        for task in &node.tasks {
            if let Some(s) = task.strategy {
                let limit = match (s.kind, s.amount) {
                    (StrategyKind::OneByOne, _) => Some(1),
                    (_, Some(n)) => Some(usize::try_from(n).unwrap_or(usize::MAX).max(1)),
                    _ => None,
                };
                if let Some(limit) = limit {
                    out.limits.insert(task.id.to_string(), limit);
                }
            }
        }
        for (task, spec) in node.tasks.iter().zip(&specs) {
            // Waits the list carries inline are checked from the list; the others from the sets.
            let inline = !spec.waits_for.is_empty();
            let sets: Vec<u32> = task
                .waits
                .iter()
                .copied()
                .filter(|&w| {
                    plan.wait_sets
                        .get(w as usize)
                        .is_some_and(|s| s.policy == Policy::Any || !inline)
                })
                .collect();
            if spec.gated && !sets.is_empty() {
                out.gated_waits
                    .insert((node.node_id, task.id.to_string()), sets);
            }
        }
        if !specs.is_empty() {
            out.specs.insert(node.node_id, specs);
        }
    }
    Ok(out)
}
