//! The rules a strategy must keep across its fields: group names present and unique, dependencies naming
//! groups, no dependency cycle, criteria in range, phases and settings usable.

use std::collections::{HashMap, VecDeque};

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};

use super::finding::Finding;
use super::model::Strategy;

/// Where the document keeps things, so that findings name fields as the author wrote them.
#[derive(Debug, Default)]
pub(crate) struct Paths {
    /// Prefix of the strategy's settings: `""` (plain form) or `"data"` (Shipyard's form).
    pub(crate) top: String,
    /// Groups whose name was missing or mistyped (already reported; their name is their position).
    pub(crate) placeholder_names: Vec<usize>,
}

impl Paths {
    fn field(&self, key: &str) -> String {
        if self.top.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.top)
        }
    }
}

impl Strategy {
    /// Checks the rules that span fields (the parser has checked types): group names non-empty and unique,
    /// `depends_on` naming groups of this strategy, no dependency cycle, `percent_successful_nodes` at most
    /// 100, at least one phase with unique non-empty names and graph types, timeouts and
    /// `max_concurrent_groups` at least 1. Returns every problem found.
    pub fn validate(&self) -> Result<(), Vec<Finding>> {
        let findings = semantic_findings(self, &Paths::default());
        if findings.is_empty() {
            Ok(())
        } else {
            Err(findings)
        }
    }
}

/// Every cross-field problem of the strategy.
pub(crate) fn semantic_findings(strategy: &Strategy, paths: &Paths) -> Vec<Finding> {
    let mut findings = Vec::new();
    let groups_path = paths.field("groups");
    let placeholder = |index: usize| paths.placeholder_names.contains(&index);
    // How each group is named in findings: its name, or its position when it has none.
    let labels: Vec<String> = strategy
        .groups
        .iter()
        .enumerate()
        .map(|(index, group)| {
            if group.name.is_empty() || placeholder(index) {
                format!("{groups_path}[{index}]")
            } else {
                group.name.clone()
            }
        })
        .collect();

    let mut first_index: HashMap<&str, usize> = HashMap::new();
    for (index, group) in strategy.groups.iter().enumerate() {
        let label = Some(labels[index].as_str());
        if placeholder(index) {
            continue;
        }
        if group.name.trim().is_empty() {
            findings.push(Finding::new(label, "name", "must not be empty"));
        } else if let Some(first) = first_index.get(group.name.as_str()) {
            findings.push(Finding::new(
                label,
                "name",
                format!("duplicate group name; {groups_path}[{first}] has the same name"),
            ));
        } else {
            first_index.insert(&group.name, index);
        }
    }

    for (index, group) in strategy.groups.iter().enumerate() {
        let label = Some(labels[index].as_str());
        for (position, dependency) in group.depends_on.iter().enumerate() {
            if !first_index.contains_key(dependency.as_str()) {
                findings.push(Finding::new(
                    label,
                    format!("depends_on[{position}]"),
                    format!("depends on {dependency:?}, which is not a group of this strategy"),
                ));
            }
        }
        if let Some(percent) = group
            .success_criteria
            .as_ref()
            .and_then(|criteria| criteria.percent_successful_nodes)
        {
            if percent > 100 {
                findings.push(Finding::new(
                    label,
                    "success_criteria.percent_successful_nodes",
                    format!("must be between 0 and 100, found {percent}"),
                ));
            }
        }
    }

    for cycle in dependency_cycles(strategy, &first_index) {
        let names: Vec<&str> = cycle
            .iter()
            .map(|&index| strategy.groups[index].name.as_str())
            .collect();
        let first = cycle[0];
        findings.push(Finding::new(
            Some(labels[first].as_str()),
            "depends_on",
            format!(
                "circular dependency: {} -> {} (each group depends on the next)",
                names.join(" -> "),
                names[0]
            ),
        ));
    }

    phase_findings(strategy, paths, &mut findings);
    findings
}

fn phase_findings(strategy: &Strategy, paths: &Paths, findings: &mut Vec<Finding>) {
    let phases_path = paths.field("phases");
    if strategy.phases.is_empty() {
        findings.push(Finding::new(
            None,
            phases_path.clone(),
            "must list at least one phase",
        ));
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (index, phase) in strategy.phases.iter().enumerate() {
        let path = format!("{phases_path}[{index}]");
        if phase.name.trim().is_empty() {
            findings.push(Finding::new(
                None,
                format!("{path}.name"),
                "must not be empty",
            ));
        } else if let Some(first) = seen.get(phase.name.as_str()) {
            findings.push(Finding::new(
                None,
                format!("{path}.name"),
                format!(
                    "duplicate phase name {:?}; {phases_path}[{first}] has the same name",
                    phase.name
                ),
            ));
        } else {
            seen.insert(&phase.name, index);
        }
        if phase.graph_type.trim().is_empty() {
            findings.push(Finding::new(
                None,
                format!("{path}.graph_type"),
                "must not be empty",
            ));
        }
        if phase.timeout == Some(0) {
            findings.push(Finding::new(
                None,
                format!("{path}.timeout"),
                "must be at least 1 second",
            ));
        }
    }
    if strategy.phase_timeout == 0 {
        findings.push(Finding::new(
            None,
            paths.field("phase_timeout"),
            "must be at least 1 second",
        ));
    }
    if strategy.max_concurrent_groups == 0 {
        findings.push(Finding::new(
            None,
            paths.field("max_concurrent_groups"),
            "must be at least 1",
        ));
    }
}

/// One cycle per strongly connected set of groups, each listed from its first group in document order,
/// following `depends_on`; sorted by that first group.
pub(crate) fn dependency_cycles(
    strategy: &Strategy,
    index_of: &HashMap<&str, usize>,
) -> Vec<Vec<usize>> {
    let mut graph: DiGraph<usize, ()> = DiGraph::with_capacity(strategy.groups.len(), 0);
    let nodes: Vec<NodeIndex> = (0..strategy.groups.len())
        .map(|index| graph.add_node(index))
        .collect();
    for (index, group) in strategy.groups.iter().enumerate() {
        for dependency in &group.depends_on {
            if let Some(&target) = index_of.get(dependency.as_str()) {
                graph.update_edge(nodes[index], nodes[target], ());
            }
        }
    }
    let mut cycles = Vec::new();
    for component in tarjan_scc(&graph) {
        let self_loop = component.len() == 1 && graph.contains_edge(component[0], component[0]);
        if component.len() < 2 && !self_loop {
            continue;
        }
        let members: Vec<usize> = component.iter().map(|node| graph[*node]).collect();
        if let Some(cycle) = shortest_cycle(&graph, &nodes, &members) {
            cycles.push(cycle);
        }
    }
    cycles.sort_by_key(|cycle| cycle[0]);
    cycles
}

/// The shortest cycle through the first (in document order) of `members`, staying inside `members`.
fn shortest_cycle(
    graph: &DiGraph<usize, ()>,
    nodes: &[NodeIndex],
    members: &[usize],
) -> Option<Vec<usize>> {
    let start = *members.iter().min()?;
    let mut parent: HashMap<usize, usize> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(current) = queue.pop_front() {
        let mut next: Vec<usize> = graph
            .neighbors(nodes[current])
            .map(|node| graph[node])
            .collect();
        next.sort_unstable();
        for neighbour in next {
            if !members.contains(&neighbour) {
                continue;
            }
            if neighbour == start {
                let mut cycle = vec![current];
                let mut cursor = current;
                while cursor != start {
                    cursor = *parent.get(&cursor)?;
                    cycle.push(cursor);
                }
                cycle.reverse();
                return Some(cycle);
            }
            if neighbour != start && !parent.contains_key(&neighbour) {
                parent.insert(neighbour, current);
                queue.push_back(neighbour);
            }
        }
    }
    None
}
