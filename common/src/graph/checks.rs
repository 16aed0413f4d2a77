//! Pre-deployment checks: everything that should stop a deployment, or that the operator should know,
//! as findings with a severity and a message naming the task, node or role concerned.

use std::collections::BTreeSet;

use super::error::ResolveError;
use super::finding::Finding;
use super::resolve::{resolve, ResolveRequest};
use super::MASTER_NODE_ID;
use crate::model::TaskType;
use crate::tags::{check_limits, node_tags, validate_catalog, Owner, PRIMARY_PREFIX};

/// The code of a resolution error's finding.
fn code(e: &ResolveError) -> &'static str {
    match e {
        ResolveError::DuplicateTask { .. } => "duplicate_task",
        ResolveError::PluginOverlap { .. } => "plugin_overlap",
        ResolveError::UnknownTask { .. } => "unknown_task",
        ResolveError::BadField { .. } => "bad_field",
        ResolveError::Computed { .. } => "computed_field",
        ResolveError::NodeFilter { .. } => "node_filter",
        ResolveError::BadNode(..) => "bad_node",
        ResolveError::Cycle { .. } => "cycle",
    }
}

/// Runs every pre-deployment check on a cluster and its merged graph:
///
/// - roles listing undefined tags (error), role conflicts on a node (error), restrictions that hold for
///   an assigned role (error; a condition that cannot be evaluated is a warning);
/// - role limits (`min`/`max` errors, `recommended` warnings);
/// - release tags assigned to no node (warning, seed 000);
/// - the graph itself: resolution errors (cycles, unknown tasks, plugin overlaps, computed fields, ...);
/// - tasks of a type no agent runs placed on a node (warning).
///
/// Errors come before warnings; within a severity, findings keep the order above.
pub fn check_deployment(request: &ResolveRequest<'_>) -> Vec<Finding> {
    check_and_resolve(request).0
}

/// [`check_deployment`], and the resolution the checks made ([`resolve`] of the same request), so that
/// a caller that goes on to deploy does not resolve every node a second time.
pub fn check_and_resolve(
    request: &ResolveRequest<'_>,
) -> (Vec<Finding>, Result<super::Plan, ResolveError>) {
    let catalog = request.catalog;
    let mut out: Vec<Finding> = validate_catalog(catalog)
        .into_iter()
        .map(|e| Finding::error("unknown_tag", e.to_string()))
        .collect();
    let live: Vec<_> = request
        .nodes
        .iter()
        .filter(|n| !n.pending_deletion)
        .collect();
    for node in &live {
        let roles: Vec<&String> = node.roles.iter().chain(&node.pending_roles).collect();
        for (i, role) in roles.iter().enumerate() {
            for other in roles.iter().skip(i + 1).filter(|o| o != &role) {
                let clash = |a: &str, b: &str| {
                    catalog
                        .role(a)
                        .is_some_and(|r| r.meta.conflicts.excludes(b))
                };
                if clash(role, other) || clash(other, role) {
                    out.push(Finding::error(
                        "role_conflict",
                        format!(
                            "role {role:?} conflicts with role {other:?} on node {}",
                            node.display_name()
                        ),
                    ));
                }
            }
            let Some(entry) = catalog.role(role) else {
                out.push(Finding::error(
                    "unknown_role",
                    format!(
                        "node {} has role {role:?}, which is not defined",
                        node.display_name()
                    ),
                ));
                continue;
            };
            for r in entry
                .meta
                .restrictions
                .iter()
                .filter(|r| r.blocks_assignment())
            {
                match request.evaluator.cluster_expression(&r.condition) {
                    Ok(v) if super::truthy(&v) => out.push(Finding::error(
                        "role_restriction",
                        format!(
                            "role {role:?} on node {}: {}",
                            node.display_name(),
                            r.message
                                .clone()
                                .unwrap_or_else(|| format!("restricted by {}", r.condition))
                        ),
                    )),
                    Ok(_) => {}
                    Err(message) => out.push(Finding::warning(
                        "role_restriction",
                        format!(
                            "role {role:?} on node {}: restriction {:?} cannot be evaluated: {message}",
                            node.display_name(),
                            r.condition
                        ),
                    )),
                }
            }
        }
    }
    out.extend(check_limits(catalog, request.nodes, request.evaluator));
    let carried: BTreeSet<String> = live
        .iter()
        .flat_map(|n| {
            let t = node_tags(n, catalog);
            t.tags.into_iter().chain(t.roles)
        })
        .collect();
    for (name, tag) in &catalog.tags {
        if tag.owner == Owner::Release
            && !carried.contains(name)
            && !carried.contains(&format!("{PRIMARY_PREFIX}{name}"))
        {
            out.push(Finding::warning(
                "unassigned_tag",
                format!("tag {name:?} of the release is assigned to no node"),
            ));
        }
    }
    // The graph's shape whatever the nodes (a cycle among tasks no node gets is still refused), then
    // what resolving for these nodes finds; the same error is said once.
    out.extend(super::shape::check_shape(request.graph));
    let resolved = resolve(request);
    match &resolved {
        Err(e) if out.iter().any(|f| f.message == e.to_string()) => {}
        Err(e) => out.push(Finding::error(code(e), e.to_string())),
        Ok(plan) => {
            out.extend(primary_tag_findings(request, plan));
            out.extend(override_findings(request));
            for node in plan.nodes.iter().filter(|n| n.node_id != MASTER_NODE_ID) {
                for t in node.tasks.iter() {
                    // A type no one defines is an error of the graph's shape already.
                    if let TaskType::Other(kind) = &t.task_type {
                        if !super::FUEL_ONLY_TYPES.contains(&kind.as_str()) {
                            continue;
                        }
                        out.push(Finding::warning(
                            "task_type",
                            format!(
                                "task {:?} of type {kind:?} is placed on node {}, whose agent does not run that type",
                                t.id, node.name
                            ),
                        ));
                    }
                }
            }
        }
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    (out, resolved)
}

/// A task placed by a tag (`controller`) that does not run on a node because the node holds that
/// tag's primary (`primary-controller`) in its place (Nailgun's rule for `has_primary` tags, which the
/// example of seed 000 does not show): said, with the way to run it there.
fn primary_tag_findings(request: &ResolveRequest<'_>, plan: &super::Plan) -> Vec<Finding> {
    let mut out = Vec::new();
    for node in plan.nodes.iter().filter(|n| n.node_id != MASTER_NODE_ID) {
        for merged in &request.graph.tasks {
            let task = &merged.task;
            if node.tasks.iter().any(|t| *t.id == *task.id) {
                continue;
            }
            let Some((field, list)) = task.placement() else {
                continue;
            };
            let lost: Vec<&String> = list
                .iter()
                .filter(|tag| {
                    let primary = format!("{PRIMARY_PREFIX}{tag}");
                    !node.tags.contains(tag) && node.tags.contains(&primary)
                })
                .collect();
            if let Some(tag) = lost.first() {
                out.push(Finding::warning(
                    "primary_tag",
                    format!(
                        "task {:?} does not run on node {}: its {field} name {tag:?}, and the node holds \
                         {PRIMARY_PREFIX}{tag} in its place (one node of the cluster carries the primary \
                         of a has_primary tag instead of the tag, as Nailgun's rule); add \
                         {PRIMARY_PREFIX}{tag} to the task's {field} to run it there too",
                        task.id, node.name
                    ),
                ));
            }
        }
    }
    out
}

/// What merging did that a task author would not see otherwise: an override that leaves a task with no
/// placement (it runs on no node), and a task two plugins define whose roles share no node (the later
/// plugin's replaces the earlier's everywhere, as seed 003 allows).
fn override_findings(request: &ResolveRequest<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    let members: BTreeSet<&str> = request
        .graph
        .tasks
        .iter()
        .filter_map(|t| t.task.tasks.as_ref())
        .flat_map(|l| l.iter().map(String::as_str))
        .collect();
    for merged in &request.graph.tasks {
        let task = &merged.task;
        let Some(last) = merged.replaced.last() else {
            continue;
        };
        if task.placement().is_none()
            && !task.has_computed_placement()
            && !matches!(task.task_type, TaskType::Stage)
            && !members.contains(task.id.as_str())
        {
            out.push(Finding::warning(
                "override_placement",
                format!(
                    "task {:?} from the {} graph replaces the {}'s and names no tags, roles or groups: \
                     it runs on no node (an override replaces the whole task; repeat its placement)",
                    task.id, merged.origin, last
                ),
            ));
        }
    }
    for o in &request.graph.plugin_overlaps {
        out.push(Finding::warning(
            "plugin_overlap",
            format!(
                "task {:?} is defined by plugins {} and {}: no node carries roles of both, so {}'s \
                 replaces {}'s, which runs nowhere",
                o.task, o.first, o.second, o.second, o.first
            ),
        ));
    }
    out
}
