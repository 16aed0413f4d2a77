//! Resolution: which tasks go to which node, their computed fields, their order and their waits.

use serde_json::Map;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use super::classes::{build_classes, master_member, Class, Graphs, Member, Placed};
use super::compile::{compile, Compiled};
use super::compute::{compute_map, condition_skip_reason, Target};
use super::error::ResolveError;
use super::evaluate::FieldEvaluator;
use super::master_shell::place_master_shells;
use super::merge::MergedGraph;
use super::plan::{FaultToleranceGroup, NodePlan, Plan, ResolvedTask};
use super::schedule::schedule;
use super::structure::{compile_variants, compute_variants, has_computed_structure, Subject};
use super::waits::build_waits;
use super::MASTER_NODE_ID;
use crate::model::{
    contains_expression, default_node_filter, Concurrency, FaultTolerance, Node, TaskType,
};
use crate::tags::{cluster_tags, instances, Catalog, NodeTags, Owner};

/// What to resolve.
#[derive(Clone, Copy)]
pub struct ResolveRequest<'a> {
    /// The graph type (reported in the plan).
    pub graph_type: &'a str,
    /// The merged graph.
    pub graph: &'a MergedGraph,
    /// The cluster's roles and tags.
    pub catalog: &'a Catalog,
    /// Every node of the cluster (primary election looks at all of them).
    pub nodes: &'a [Node],
    /// The nodes to run on, by id; `None` runs on the nodes the graph's node filter selects (or
    /// [`crate::model::DEFAULT_NODE_FILTER`] when it has none).
    pub selection: Option<&'a [u64]>,
    /// Evaluates computed fields and node filters.
    pub evaluator: &'a dyn FieldEvaluator,
}

fn check_nodes(nodes: &[Node]) -> Result<(), ResolveError> {
    let mut seen = HashSet::new();
    for n in nodes {
        if n.id == MASTER_NODE_ID {
            return Err(ResolveError::BadNode(
                n.display_name(),
                "id 0 is reserved for the controller's own host".into(),
            ));
        }
        if !seen.insert(n.id) {
            return Err(ResolveError::BadNode(
                n.display_name(),
                format!("id {} appears twice", n.id),
            ));
        }
    }
    Ok(())
}

/// Fails when two plugins define the same task and some node carries roles of both (seed 003).
pub fn check_plugin_overlaps(
    graph: &MergedGraph,
    catalog: &Catalog,
    nodes: &[Node],
) -> Result<(), ResolveError> {
    let carries = |node: &Node, plugin: &str| {
        node.roles.iter().chain(&node.pending_roles).any(|r| {
            catalog
                .role(r)
                .is_some_and(|c| c.owner == Owner::Plugin(plugin.to_string()))
        })
    };
    for o in &graph.plugin_overlaps {
        let shared: Vec<String> = nodes
            .iter()
            .filter(|n| carries(n, &o.first) && carries(n, &o.second))
            .map(Node::display_name)
            .collect();
        if !shared.is_empty() {
            return Err(ResolveError::PluginOverlap {
                task: o.task.clone(),
                first: o.first.clone(),
                second: o.second.clone(),
                nodes: shared,
            });
        }
    }
    Ok(())
}

fn select<'a>(request: &ResolveRequest<'a>) -> Result<Vec<&'a Node>, ResolveError> {
    match request.selection {
        Some(ids) => {
            let by_id: HashMap<u64, &Node> = request.nodes.iter().map(|n| (n.id, n)).collect();
            let wanted: BTreeSet<u64> = ids.iter().copied().collect();
            wanted
                .into_iter()
                .map(|id| {
                    by_id.get(&id).copied().ok_or_else(|| {
                        ResolveError::BadNode(id.to_string(), "is not in the cluster".into())
                    })
                })
                .collect()
        }
        None => {
            let mut out = Vec::new();
            for node in request.nodes {
                let keep = match &request.graph.node_filter {
                    None => default_node_filter(node),
                    Some(expr) => request
                        .evaluator
                        .node_filter(node, expr)
                        .map_err(|message| ResolveError::NodeFilter {
                            node: node.display_name(),
                            message,
                        })?,
                };
                if keep {
                    out.push(node);
                }
            }
            out.sort_by_key(|n| n.id);
            Ok(out)
        }
    }
}

/// What every node shares for a task whose parameters hold nothing computed.
struct Shared {
    id: Arc<str>,
    parameters: Arc<Map<String, serde_json::Value>>,
    computed: bool,
    strategy: Result<Option<Concurrency>, String>,
    /// The other fields as written, and whether any is computed.
    extra: Arc<Map<String, serde_json::Value>>,
    extra_computed: bool,
}

/// Resolves a merged graph on a cluster: selects the nodes, computes their tags, places and orders
/// tasks per class of alike nodes, computes fields per node, and builds the shared cross-node waits.
pub fn resolve(request: &ResolveRequest<'_>) -> Result<Plan, ResolveError> {
    check_nodes(request.nodes)?;
    let compiled = compile(request.graph)?;
    check_plugin_overlaps(request.graph, request.catalog, request.nodes)?;
    let mut tags = cluster_tags(request.nodes, request.catalog);
    let node_instances = instances(&tags);
    let selected = select(request)?;
    let mut members: Vec<(NodeTags, bool, Member)> = Vec::with_capacity(selected.len() + 1);
    if compiled.uses_master {
        let (t, m) = master_member();
        members.push((t, true, m));
    }
    for n in &selected {
        // Taken, not cloned: each node's tags are its member's from here on (two sets a node).
        let t = tags.nodes.remove(&n.id).unwrap_or_default();
        let member = Member {
            node: Some(*n),
            id: n.id,
            name: n.display_name(),
        };
        members.push((t, false, member));
    }
    // Computed structure (`requires`, placement, `type`, ...) per node, before placing and ordering.
    let variants = if has_computed_structure(request.graph) {
        let subjects: Vec<Subject> = members
            .iter()
            .map(|(_, is_master, m)| Subject::new(m, *is_master))
            .collect();
        Some(compute_variants(
            request.graph,
            &compiled,
            &subjects,
            request.evaluator,
        )?)
    } else {
        None
    };
    let variant_compiled = match &variants {
        Some(v) => compile_variants(request.graph, &compiled, v)?,
        None => Vec::new(),
    };
    let graphs = Graphs {
        base: compiled,
        variants: variant_compiled,
    };
    let placed = members
        .into_iter()
        .enumerate()
        .map(|(k, (tags, is_master, member))| Placed {
            tags,
            is_master,
            member,
            variant: variants.as_ref().map(|v| v.of_subject[k]),
        })
        .collect();
    let mut classes = build_classes(&graphs, placed, request.evaluator)?;
    let waits = build_waits(&graphs, &classes);
    schedule(&graphs, &mut classes, &waits)?;
    let compiled = &graphs.base;

    let shared: Vec<Shared> = request
        .graph
        .tasks
        .iter()
        .map(|t| {
            let computed = t.task.parameters.values().any(contains_expression);
            Shared {
                id: Arc::from(t.task.id.as_str()),
                parameters: Arc::new(if computed {
                    Map::new()
                } else {
                    t.task.parameters.clone()
                }),
                computed,
                strategy: if computed {
                    Ok(None)
                } else {
                    Concurrency::from_parameters(&t.task.parameters)
                },
                extra: Arc::new(
                    t.task
                        .extra
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                ),
                extra_computed: t.task.extra.values().any(contains_expression),
            }
        })
        .collect();
    let empty = Arc::new(Map::new());

    let mut nodes: Vec<NodePlan> = Vec::with_capacity(selected.len() + 1);
    for (c, class) in classes.iter().enumerate() {
        let own = graphs.of(class);
        let groups: Vec<Option<usize>> = class
            .order
            .iter()
            .map(|&i| group_of(own, class, i))
            .collect();
        let mut node_tags: Vec<String> = class.tags.tags.iter().cloned().collect();
        node_tags.extend(class.tags.roles.difference(&class.tags.tags).cloned());
        // Nothing per node in this class: its first member's tasks are every member's.
        let alike = class.order.iter().all(|&i| {
            !shared[i].computed && !shared[i].extra_computed && compiled.task(i).condition.is_none()
        });
        let mut class_tasks: Option<Arc<Vec<ResolvedTask>>> = None;
        for member in &class.members {
            if let Some(tasks) = class_tasks.as_ref().filter(|_| alike) {
                nodes.push(NodePlan {
                    node_id: member.id,
                    name: member.name.clone(),
                    tags: node_tags.clone(),
                    instances: node_instances.get(&member.id).cloned().unwrap_or_default(),
                    tasks: tasks.clone(),
                });
                continue;
            }
            let mut tasks = Vec::with_capacity(class.order.len());
            for (pos, &i) in class.order.iter().enumerate() {
                let task = compiled.task(i);
                let s = &shared[i];
                let target = Target {
                    node: member.node,
                    node_id: member.id,
                    node_name: &member.name,
                    task_id: &task.id,
                };
                let skip =
                    condition_skip_reason(task.condition.as_ref(), target, request.evaluator)?;
                let (task_type, parameters, strategy) = if skip.is_some() {
                    (TaskType::Skipped, empty.clone(), None)
                } else if s.computed {
                    let p = compute_map(&task.parameters, "parameters", target, request.evaluator)?;
                    let strategy = Concurrency::from_parameters(&p).map_err(|message| {
                        ResolveError::Computed {
                            task: task.id.clone(),
                            field: "parameters.strategy".into(),
                            node: member.name.clone(),
                            message,
                        }
                    })?;
                    (own.task(i).task_type.clone(), Arc::new(p), strategy)
                } else {
                    let strategy =
                        s.strategy
                            .clone()
                            .map_err(|message| ResolveError::BadField {
                                task: task.id.clone(),
                                field: "parameters.strategy".into(),
                                message,
                            })?;
                    (
                        own.task(i).task_type.clone(),
                        s.parameters.clone(),
                        strategy,
                    )
                };
                let extra = if skip.is_some() {
                    empty.clone()
                } else if s.extra_computed {
                    Arc::new(compute_map(&s.extra, "", target, request.evaluator)?)
                } else {
                    s.extra.clone()
                };
                let group = groups[pos];
                tasks.push(ResolvedTask {
                    id: s.id.clone(),
                    task_type,
                    parameters,
                    skip_reason: skip,
                    waits: waits.by_class[c].get(&i).cloned().unwrap_or_default(),
                    strategy,
                    fault_tolerance: group.and_then(|g| own.task(g).fault_tolerance),
                    group: group.map(|g| shared[g].id.clone()),
                    extra,
                });
            }
            let tasks = Arc::new(tasks);
            if alike {
                class_tasks = Some(tasks.clone());
            }
            nodes.push(NodePlan {
                node_id: member.id,
                name: member.name.clone(),
                tags: node_tags.clone(),
                instances: node_instances.get(&member.id).cloned().unwrap_or_default(),
                tasks,
            });
        }
    }
    nodes.sort_by_key(|n| n.node_id);
    let mut plan = Plan {
        graph_type: request.graph_type.to_string(),
        nodes,
        wait_sets: waits.sets,
        fault_tolerance_groups: fault_tolerance_groups(&graphs, &classes)?,
        primaries: tags.primaries,
    };
    place_master_shells(&mut plan);
    Ok(plan)
}

/// The group a task runs in on a class: a group task is its own; otherwise its first group placed there.
fn group_of(compiled: &Compiled<'_>, class: &Class<'_>, task: usize) -> Option<usize> {
    if compiled.task(task).task_type == TaskType::Group {
        return Some(task);
    }
    compiled.tasks[task]
        .member_of
        .iter()
        .copied()
        .find(|&g| class.scheduled[g])
}

/// Each group task with the plan's nodes it covers and its fault tolerance, which must be one value
/// for all of them (a computed `fault_tolerance` that differs between the group's nodes is an error
/// naming them).
fn fault_tolerance_groups(
    graphs: &Graphs<'_>,
    classes: &[Class<'_>],
) -> Result<Vec<FaultToleranceGroup>, ResolveError> {
    let mut out = Vec::new();
    for g in 0..graphs.base.tasks.len() {
        let mut node_ids: Vec<u64> = Vec::new();
        // Each distinct value with the first node (by id) that computed it.
        let mut values: Vec<(Option<FaultTolerance>, u64, &str)> = Vec::new();
        for class in classes {
            let own = graphs.of(class);
            if !class.scheduled[g] || own.task(g).task_type != TaskType::Group {
                continue;
            }
            let ft = own.task(g).fault_tolerance;
            for m in &class.members {
                match values.iter_mut().find(|(v, _, _)| *v == ft) {
                    Some(seen) if seen.1 <= m.id => {}
                    Some(seen) => (seen.1, seen.2) = (m.id, m.name.as_str()),
                    None => values.push((ft, m.id, m.name.as_str())),
                }
            }
            node_ids.extend(class.members.iter().map(|m| m.id));
        }
        if node_ids.is_empty() {
            continue;
        }
        values.sort_by_key(|(_, id, _)| *id);
        if values.len() > 1 {
            let shown: Vec<String> = values
                .iter()
                .map(|(v, _, node)| {
                    let v = v.map_or_else(|| "nothing".to_string(), |f| f.to_string());
                    format!("{v} on {node}")
                })
                .collect();
            return Err(ResolveError::Computed {
                task: graphs.base.task(g).id.clone(),
                field: "fault_tolerance".into(),
                node: values
                    .iter()
                    .map(|(_, _, n)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
                message: format!(
                    "computes to {}; a group's fault tolerance is one value for all its nodes",
                    shown.join(", ")
                ),
            });
        }
        node_ids.sort_unstable();
        out.push(FaultToleranceGroup {
            name: graphs.base.task(g).id.clone(),
            node_ids,
            fault_tolerance: values.first().and_then(|(v, _, _)| *v),
        });
    }
    Ok(out)
}
