//! The merged graph prepared once for resolution: placements, dependency patterns and static edges.

use regex::Regex;
use serde_json::Value;
use std::collections::HashMap;

use super::error::ResolveError;
use super::merge::MergedGraph;
use crate::model::{CrossDep, Dependencies, Policy, StringList, Task, TaskType};
use crate::tags::{regex_source, NodeTags, Placement, PlacementField};

/// A dependency's `name`: a task id, or `/regex/` matched at the start of task ids.
#[derive(Debug, Clone)]
pub(crate) enum NamePattern {
    Exact(String),
    Regex(Regex),
}

impl NamePattern {
    pub(crate) fn parse(name: &str) -> Result<NamePattern, String> {
        match regex_source(name) {
            Some(source) => Regex::new(source)
                .and_then(|_| Regex::new(&format!("^(?:{source})")))
                .map(NamePattern::Regex)
                .map_err(|e| format!("invalid regular expression {name}: {e}")),
            None => Ok(NamePattern::Exact(name.to_string())),
        }
    }

    pub(crate) fn matches(&self, id: &str) -> bool {
        match self {
            NamePattern::Exact(e) => e == id,
            NamePattern::Regex(r) => r.is_match(id),
        }
    }
}

/// The nodes a dependency concerns.
#[derive(Debug, Clone)]
pub(crate) enum Selector {
    /// `self`: the same node.
    SelfNode,
    /// No `role`/`tags`: every node but the controller's host.
    AllNodes,
    /// By role or tags.
    Placement(Placement),
}

impl Selector {
    fn from_dep(dep: &CrossDep) -> Result<Selector, String> {
        if dep.is_self() {
            return Ok(Selector::SelfNode);
        }
        let (field, list) = match (&dep.tags, &dep.role) {
            (Some(t), _) if !t.is_empty() => (PlacementField::Tags, t),
            (_, Some(r)) if !r.is_empty() => (PlacementField::Roles, r),
            _ => return Ok(Selector::AllNodes),
        };
        Placement::new(field, list.as_slice()).map(Selector::Placement)
    }

    /// True when the selector takes in a node of this class.
    pub(crate) fn matches(&self, tags: &NodeTags, is_master: bool) -> bool {
        match self {
            Selector::SelfNode => false,
            Selector::AllNodes => !is_master,
            Selector::Placement(p) if is_master => p.matches_master(),
            Selector::Placement(p) => p.matches(tags),
        }
    }
}

/// One compiled `cross_depends` / `cross_depended_by` entry.
#[derive(Debug, Clone)]
pub(crate) struct CompiledDep {
    pub(crate) selector: Selector,
    pub(crate) policy: Policy,
    /// The entry as written, which keys shared wait sets.
    pub(crate) raw: CrossDep,
    /// The tasks of the graph the name matches, by position.
    pub(crate) targets: Vec<usize>,
}

/// A task's dependency field, compiled.
#[derive(Debug, Clone)]
pub(crate) enum CompiledDeps {
    None,
    Static(Vec<CompiledDep>),
    Computed(Value),
}

/// A task prepared for resolution.
#[derive(Debug)]
pub(crate) struct CTask {
    /// Where the task goes (any placement matching places it); empty: nowhere but through a group.
    pub(crate) placements: Vec<Placement>,
    /// The group tasks it belongs to (its `groups`, or a group's `tasks` listing it).
    pub(crate) member_of: Vec<usize>,
    pub(crate) forward: CompiledDeps,
    pub(crate) backward: CompiledDeps,
}

/// The merged graph, compiled.
#[derive(Debug)]
pub(crate) struct Compiled<'g> {
    pub(crate) graph: &'g MergedGraph,
    pub(crate) tasks: Vec<CTask>,
    pub(crate) index: HashMap<&'g str, usize>,
    /// Static edges: `successors[a]` must come after `a` (requires / required_for).
    pub(crate) successors: Vec<Vec<usize>>,
    /// True when some task goes to the controller's own host.
    pub(crate) uses_master: bool,
}

impl<'g> Compiled<'g> {
    pub(crate) fn task(&self, i: usize) -> &'g Task {
        &self.graph.tasks[i].task
    }

    /// Which tasks go to a node of this class.
    pub(crate) fn scheduled(&self, tags: &NodeTags, is_master: bool) -> Vec<bool> {
        let direct: Vec<bool> = self
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| {
                self.task(i).task_type == TaskType::Stage
                    || t.placements.iter().any(|p| {
                        if is_master {
                            p.matches_master()
                        } else {
                            p.matches(tags)
                        }
                    })
            })
            .collect();
        direct
    }

    /// Compiles a dependency list (static, or computed for one node).
    pub(crate) fn compile_deps(
        &self,
        task: &str,
        field: &str,
        deps: &[CrossDep],
    ) -> Result<Vec<CompiledDep>, ResolveError> {
        deps.iter()
            .map(|d| {
                let bad = |message: String| ResolveError::BadField {
                    task: task.to_string(),
                    field: field.to_string(),
                    message,
                };
                let name = NamePattern::parse(&d.name).map_err(bad)?;
                let targets: Vec<usize> = match &name {
                    NamePattern::Exact(e) => {
                        self.index.get(e.as_str()).copied().into_iter().collect()
                    }
                    NamePattern::Regex(_) => (0..self.graph.tasks.len())
                        .filter(|&i| name.matches(&self.graph.tasks[i].task.id))
                        .collect(),
                };
                if targets.is_empty() {
                    return Err(ResolveError::UnknownTask {
                        task: task.to_string(),
                        field: field.to_string(),
                        name: d.name.clone(),
                    });
                }
                let selector = Selector::from_dep(d).map_err(bad)?;
                Ok(CompiledDep {
                    selector,
                    policy: d.policy,
                    raw: d.clone(),
                    targets,
                })
            })
            .collect()
    }
}

/// Placements compiled so far, by field and entries (tag patterns hold regular expressions, and Fuel's
/// graphs repeat the same few placements; variants of a graph repeat all of them).
pub(crate) type PlacementCache = HashMap<(PlacementField, Vec<String>), Placement>;

fn cached_placement(
    cache: &mut PlacementCache,
    field: PlacementField,
    entries: &[String],
) -> Result<Placement, String> {
    let key = (field, entries.to_vec());
    if let Some(p) = cache.get(&key) {
        return Ok(p.clone());
    }
    let p = Placement::new(field, entries)?;
    cache.insert(key, p.clone());
    Ok(p)
}

fn placement_of(
    task: &Task,
    groups: &HashMap<&str, &Task>,
    cache: &mut PlacementCache,
) -> Result<Option<Placement>, ResolveError> {
    let Some((field, list)) = task.placement() else {
        return Ok(None);
    };
    let bad = |message: String| ResolveError::BadField {
        task: task.id.clone(),
        field: field.to_string(),
        message,
    };
    if field == "groups" {
        // A group's roles stand for it; a name that is no group is taken as a role.
        let mut entries: Vec<String> = Vec::new();
        for g in list {
            match groups.get(g.as_str()).and_then(|gt| gt.placement()) {
                Some((_, roles)) => entries.extend(roles.iter().cloned()),
                None => entries.push(g.clone()),
            }
        }
        return cached_placement(cache, PlacementField::Roles, &entries)
            .map(Some)
            .map_err(bad);
    }
    let f = if field == "tags" {
        PlacementField::Tags
    } else {
        PlacementField::Roles
    };
    cached_placement(cache, f, list.as_slice())
        .map(Some)
        .map_err(bad)
}

fn names_exist(
    index: &HashMap<&str, usize>,
    task: &str,
    field: &str,
    names: &StringList,
) -> Result<Vec<usize>, ResolveError> {
    names
        .iter()
        .map(|n| {
            index
                .get(n.as_str())
                .copied()
                .ok_or_else(|| ResolveError::UnknownTask {
                    task: task.to_string(),
                    field: field.to_string(),
                    name: n.clone(),
                })
        })
        .collect()
}

/// Compiles the merged graph; fails on a dependency naming no task and on patterns that do not compile.
pub(crate) fn compile(graph: &MergedGraph) -> Result<Compiled<'_>, ResolveError> {
    compile_reusing(graph, None, &mut PlacementCache::new())
}

/// Compiles `graph`; with `base` (the same tasks, compiled before, differing at most in fields other
/// than `cross_depends` / `cross_depended_by`), each task's cross dependencies are taken from it rather
/// than compiled again.
pub(crate) fn compile_reusing<'g>(
    graph: &'g MergedGraph,
    base: Option<&Compiled<'_>>,
    cache: &mut PlacementCache,
) -> Result<Compiled<'g>, ResolveError> {
    let index: HashMap<&str, usize> = graph
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.task.id.as_str(), i))
        .collect();
    let groups: HashMap<&str, &Task> = graph
        .tasks
        .iter()
        .filter(|t| t.task.task_type == TaskType::Group)
        .map(|t| (t.task.id.as_str(), &t.task))
        .collect();
    let n = graph.tasks.len();
    let mut successors = vec![Vec::new(); n];
    let mut compiled = Compiled {
        graph,
        tasks: Vec::with_capacity(n),
        index,
        successors: Vec::new(),
        uses_master: false,
    };
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, merged) in graph.tasks.iter().enumerate() {
        let task = &merged.task;
        for r in names_exist(&compiled.index, &task.id, "requires", &task.requires)? {
            successors[r].push(i);
        }
        // A `required_for` naming no task orders nothing: Fuel drops it, and so does Plinth (the graph's
        // check reports it as a warning, see `shape`).
        for r in task
            .required_for
            .iter()
            .filter_map(|n| compiled.index.get(n.as_str()).copied())
        {
            successors[i].push(r);
        }
        if let Some(list) = &task.tasks {
            for m in names_exist(&compiled.index, &task.id, "tasks", list)? {
                members[m].push(i);
            }
        }
    }
    for (i, merged) in graph.tasks.iter().enumerate() {
        let task = &merged.task;
        let mut placements: Vec<Placement> =
            placement_of(task, &groups, cache)?.into_iter().collect();
        let mut member_of = members[i].clone();
        for g in task.groups.iter().flatten() {
            if let Some(&gi) = compiled.index.get(g.as_str()) {
                if groups.contains_key(g.as_str()) && !member_of.contains(&gi) {
                    member_of.push(gi);
                }
            }
        }
        for &g in &members[i] {
            if let Some(p) = placement_of(&graph.tasks[g].task, &groups, cache)? {
                placements.push(p);
            }
        }
        compiled.uses_master |= placements.iter().any(Placement::matches_master);
        if let Some(base) = base {
            compiled.tasks.push(CTask {
                placements,
                member_of,
                forward: base.tasks[i].forward.clone(),
                backward: base.tasks[i].backward.clone(),
            });
            continue;
        }
        let forward = match &task.cross_depends {
            None => CompiledDeps::None,
            Some(Dependencies::Static(d)) => {
                CompiledDeps::Static(compiled.compile_deps(&task.id, "cross_depends", d)?)
            }
            Some(Dependencies::Computed(v)) => CompiledDeps::Computed(v.clone()),
        };
        let backward = match &task.cross_depended_by {
            None => CompiledDeps::None,
            Some(Dependencies::Static(d)) => {
                CompiledDeps::Static(compiled.compile_deps(&task.id, "cross_depended_by", d)?)
            }
            Some(Dependencies::Computed(v)) => CompiledDeps::Computed(v.clone()),
        };
        compiled.tasks.push(CTask {
            placements,
            member_of,
            forward,
            backward,
        });
    }
    for s in &mut successors {
        s.sort_unstable();
        s.dedup();
    }
    compiled.successors = successors;
    Ok(compiled)
}
