//! [`resolve`]: a snapshot's graph types resolved into every node's list, with the cross-node rules the
//! controller's gate enforces. The controller's engine and `plinthctl graph resolve` both call it.

use super::{selection, Expressions, Snapshot};
use crate::deploy::{DeployData, NodeState};
use crate::graph::{
    check_and_resolve, merge_for_cluster, Finding, Plan, ResolveError, ResolveRequest, Severity,
};
use crate::model::{Plugin, Policy, ProvisionOverrides, StrategyKind, TaskType};
use crate::tags::{cluster_tags, Catalog};
use crate::wire::{TaskSpec, Tasks};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Why a snapshot does not resolve.
#[derive(Debug, thiserror::Error)]
pub enum ResolutionError {
    /// No source defines a graph of this type.
    #[error(
        "graph type {0:?} is defined by neither the release, an enabled plugin, nor the cluster"
    )]
    UndefinedGraphType(String),
    /// The release's, plugins' and cluster's graphs do not merge.
    #[error(transparent)]
    Merge(Box<ResolveError>),
    /// The graph's node filter does not evaluate (the message names the node and the expression).
    #[error("{0}")]
    NodeFilter(String),
    /// The pre-deployment checks found errors (warnings ride along).
    #[error("the pre-deployment checks failed: {}", errors(.findings))]
    Checks {
        /// Every finding of the graph type that failed, errors and warnings.
        findings: Vec<Finding>,
        /// The plan as far as it resolves regardless (offline tools show it beside the findings).
        plan: Option<Box<Plan>>,
        /// Why it does not resolve, when it does not.
        unresolved: Option<Box<ResolveError>>,
    },
    /// The merged graph does not resolve (a cycle, an unknown dependency, ...).
    #[error("{error}")]
    Unresolved {
        /// What is wrong.
        error: Box<ResolveError>,
        /// The warnings the checks found before it.
        findings: Vec<Finding>,
    },
    /// A resolved task cannot be sent to an agent (a task type no agent runs, ...).
    #[error("{0}")]
    TaskSpec(String),
}

fn errors(findings: &[Finding]) -> String {
    findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.message.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

/// One graph type resolved for a deployment: what its run enforces.
pub use crate::run::GraphPlan as PhasePlan;

/// A deployment resolved: per graph type, and the findings of the pre-deployment checks.
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    /// By graph type.
    pub phases: BTreeMap<String, Arc<PhasePlan>>,
    /// Warnings (errors refuse the deployment before this exists).
    pub findings: Vec<Finding>,
    /// Each node's state, recorded per task when the task succeeds (for `changed()` next time).
    pub states: BTreeMap<u64, NodeState>,
    /// The plans themselves (for dry runs, `serialized_tasks` and `plinthctl graph resolve`).
    pub plans: BTreeMap<String, Plan>,
    /// Each node's tags, primaries elected, sorted (strategies select nodes by these). A list, not a
    /// set: a set's smallest node holds eleven, and this is one per node of a deployment.
    pub tags: BTreeMap<u64, Vec<String>>,
    /// The elected primaries: tag → node.
    pub primaries: BTreeMap<String, u64>,
}

/// Resolves every graph type of `graph_types` (each once) from `snapshot`: merges release → plugins →
/// cluster graphs, chooses the nodes, runs the pre-deployment checks (errors refuse), and resolves and
/// orders every node's list.
pub fn resolve(
    snapshot: &Snapshot,
    graph_types: &[String],
    exprs: &Expressions,
) -> Result<Resolved, ResolutionError> {
    let catalog = snapshot.catalog();
    let data = snapshot.data(&catalog);
    resolve_with(snapshot, &catalog, data, graph_types, exprs)
}

/// As [`resolve`], for a snapshot used for nothing else: each node's facts move into the deployment
/// data instead of being copied there, so a large deployment's start holds them once.
pub fn resolve_owned(
    mut snapshot: Snapshot,
    graph_types: &[String],
    exprs: &Expressions,
) -> Result<Resolved, ResolutionError> {
    let catalog = snapshot.catalog();
    let data = snapshot.take_data(&catalog);
    resolve_with(&snapshot, &catalog, data, graph_types, exprs)
}

/// Resolves `snapshot` with its deployment data already built (its nodes' facts are read from `data`).
fn resolve_with(
    snapshot: &Snapshot,
    catalog: &Catalog,
    data: DeployData,
    graph_types: &[String],
    exprs: &Expressions,
) -> Result<Resolved, ResolutionError> {
    let elected = cluster_tags(&snapshot.nodes, catalog);
    let states: BTreeMap<u64, NodeState> = snapshot
        .nodes
        .iter()
        .filter_map(|n| data.state(n.id).map(|s| (n.id, s)))
        .collect();
    let evaluator = crate::deploy::YaqlFields::new(
        exprs.engine.clone(),
        exprs.cache.clone(),
        data,
        snapshot.old.clone(),
        snapshot.forced,
    );
    let plugins: Vec<&Plugin> = snapshot.plugins.iter().collect();
    let mut out = Resolved {
        states,
        primaries: elected.primaries,
        tags: elected
            .nodes
            .into_iter()
            .map(|(id, t)| (id, t.tags.into_iter().collect()))
            .collect(),
        ..Resolved::default()
    };
    let mut seen: HashSet<Finding> = HashSet::new();
    for graph_type in graph_types {
        if out.phases.contains_key(graph_type) {
            continue;
        }
        if !snapshot.defines(graph_type) {
            return Err(ResolutionError::UndefinedGraphType(graph_type.clone()));
        }
        let merged = merge_for_cluster(&snapshot.release, &plugins, &snapshot.cluster, graph_type)
            .map_err(|e| ResolutionError::Merge(Box::new(e)))?;
        let chosen = selection(snapshot, merged.node_filter.as_deref(), &evaluator)
            .map_err(ResolutionError::NodeFilter)?;
        let request = ResolveRequest {
            graph_type,
            graph: &merged,
            catalog,
            nodes: &snapshot.nodes,
            selection: Some(&chosen),
            evaluator: &evaluator,
        };
        // The checks resolve every node; that resolution is the one deployed.
        let (findings, resolved) = check_and_resolve(&request);
        if findings.iter().any(|f| f.severity == Severity::Error) {
            let (plan, unresolved) = match resolved {
                Ok(plan) => (Some(Box::new(plan)), None),
                Err(e) => (None, Some(Box::new(e))),
            };
            return Err(ResolutionError::Checks {
                findings,
                plan,
                unresolved,
            });
        }
        // Each finding once across the phases' graph types (a warning per node can be 100,000 of them:
        // a set, not a search of the list for each).
        for f in findings {
            if seen.insert(f.clone()) {
                out.findings.push(f);
            }
        }
        let mut plan = resolved.map_err(|error| ResolutionError::Unresolved {
            error: Box::new(error),
            findings: out.findings.clone(),
        })?;
        put_provision_overrides(&mut plan, &snapshot.cluster.replaced_provisioning_info);
        out.phases
            .insert(graph_type.clone(), Arc::new(phase_plan(&plan)?));
        out.plans.insert(graph_type.clone(), plan);
    }
    Ok(out)
}

/// Puts the operator's uploaded provisioning facts over the parameters of each node's `provision`
/// tasks (only the nodes they touch get lists of their own).
fn put_provision_overrides(plan: &mut Plan, overrides: &ProvisionOverrides) {
    if overrides.is_empty() {
        return;
    }
    for node in &mut plan.nodes {
        if !node
            .tasks
            .iter()
            .any(|t| t.task_type == TaskType::Provision)
        {
            continue;
        }
        for task in Arc::make_mut(&mut node.tasks) {
            if task.task_type == TaskType::Provision {
                task.parameters = Arc::new(overrides.apply(node.node_id, &task.parameters));
            }
        }
    }
}

fn phase_plan(plan: &Plan) -> Result<PhasePlan, ResolutionError> {
    let mut out = PhasePlan {
        fault_tolerance: plan.fault_tolerance_groups.clone(),
        wait_sets: plan.wait_sets.clone(),
        ..PhasePlan::default()
    };
    let mut interned = Interned::default();
    for node in &plan.nodes {
        let specs = plan
            .task_specs(node)
            .map_err(|e| ResolutionError::TaskSpec(e.to_string()))?;
        for task in node.tasks.iter() {
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
            out.specs.insert(node.node_id, interned.share(specs));
        }
    }
    Ok(out)
}

/// One copy of each distinct list: nodes whose lists are equal share it.
#[derive(Default)]
struct Interned(HashMap<u64, Vec<Tasks>>);

impl Interned {
    fn share(&mut self, specs: Vec<TaskSpec>) -> Tasks {
        // The hash of the list's JSON finds candidates; equality decides.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        serde_json::to_string(&specs)
            .unwrap_or_default()
            .hash(&mut hasher);
        let same = self.0.entry(hasher.finish()).or_default();
        if let Some(found) = same.iter().find(|s| ***s == specs) {
            return found.clone();
        }
        let shared = Tasks::from(specs);
        same.push(shared.clone());
        shared
    }
}
