//! `plinthctl graph resolve` and `graph check`: offline, on files read into a
//! [`Snapshot`](plinth_common::snapshot::Snapshot), resolved by the function the controller's engine
//! calls (`plinth_common::snapshot::resolve`), so what prints here is what the controller would do.

use crate::inputs;
use crate::output::{self, Format};
use anyhow::{bail, Context, Result};
use plinth_common::deploy::{NodeState, OldStates};
use plinth_common::graph::{
    merge_for_cluster, to_dot, DotOptions, Finding, Plan, ResolvedTask, Severity,
};
use plinth_common::json::Json;
use plinth_common::model::Plugin;
use plinth_common::snapshot::{resolve, Expressions, ResolutionError, Snapshot};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;

/// The inputs of an offline resolution.
pub struct Files {
    /// The release file.
    pub release: PathBuf,
    /// Fuel `tasks.yaml` files (or directories) forming the release's graph.
    pub tasks: Vec<PathBuf>,
    /// Plugin files.
    pub plugins: Vec<PathBuf>,
    /// The cluster file.
    pub cluster: PathBuf,
    /// The graph type.
    pub graph_type: String,
    /// Node ids to run on (else the graph's node filter and pending changes choose).
    pub nodes: Option<Vec<u64>>,
    /// Old states: node id → state.
    pub old: Option<PathBuf>,
    /// Treat the old state as empty.
    pub force: bool,
}

/// DOT output and its filters.
#[derive(Default)]
pub struct Dot {
    /// Print the merged graph in Graphviz DOT.
    pub enabled: bool,
    /// The filters.
    pub options: DotOptions,
}

/// What a resolution produced: the plan (JSON, as the API serves it), the findings and the drawing.
pub struct Outcome {
    plan: Option<Plan>,
    findings: Vec<Finding>,
    dot: Option<String>,
    graph_type: String,
}

impl Outcome {
    fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }
}

/// Parses `1,2,3`.
pub fn node_list(text: &str) -> Result<Vec<u64>> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<u64>()
                .map_err(|_| anyhow::anyhow!("--nodes: {s:?} is not a node id"))
        })
        .collect()
}

/// Reads the files into a snapshot (old states not yet read: they need the merged graph's tasks); the
/// files' unknown keys join `findings`.
fn load(files: &Files, findings: &mut Vec<Finding>) -> Result<Snapshot> {
    let release = inputs::load_release(&files.release, &files.tasks, &files.graph_type, findings)?;
    let mut plugins: Vec<Plugin> = files
        .plugins
        .iter()
        .map(|p| inputs::load_plugin(p, findings))
        .collect::<Result<_>>()?;
    let cf = inputs::load_cluster(&files.cluster, &release.name, findings)?;
    let mut cluster = cf.cluster;
    inputs::starting_attributes(&mut cluster, &release, cf.id)
        .with_context(|| format!("{}", files.cluster.display()))?;
    if cluster.plugins.is_empty() {
        cluster.plugins = plugins.iter().map(|p| p.name.clone()).collect();
    } else {
        let mut enabled = Vec::new();
        for name in &cluster.plugins {
            match plugins.iter().position(|p| &p.name == name) {
                Some(i) => enabled.push(plugins.remove(i)),
                None => bail!(
                    "{}: `plugins` names {name:?}, but no --plugin file defines it",
                    files.cluster.display()
                ),
            }
        }
        for p in &plugins {
            eprintln!(
                "plinthctl: plugin {:?} is not enabled in {}; its graphs are left out",
                p.name,
                files.cluster.display()
            );
        }
        plugins = enabled;
    }
    // The rules the controller applies when an operator gives nodes roles and tags.
    let plugin_refs: Vec<&Plugin> = plugins.iter().collect();
    let catalog = plinth_common::tags::Catalog::new(&release, &plugin_refs, Some(&cluster));
    let refused = plinth_common::tags::check_declared_nodes(&catalog, &cf.nodes);
    if !refused.is_empty() {
        let lines: Vec<String> = refused.iter().map(|e| format!("  {e}")).collect();
        bail!(
            "{}: the nodes break rules the controller enforces:\n{}",
            files.cluster.display(),
            lines.join("\n")
        );
    }
    if let Some(named) = &files.nodes {
        for id in named {
            if !cf.nodes.iter().any(|n| n.id == *id) {
                bail!("--nodes: node {id} is not in {}", files.cluster.display());
            }
        }
    }
    Ok(Snapshot {
        cluster_id: cf.id,
        release,
        plugins,
        cluster,
        nodes: cf.nodes,
        named: files.nodes.clone(),
        forced: files.force,
        old: OldStates::new(),
    })
}

/// Resolves the files' graph type; errors are bad input, findings are in the outcome (the files'
/// unknown keys first).
pub fn run(files: &Files, dot: &Dot) -> Result<Outcome> {
    let mut keys = Vec::new();
    let mut snapshot = load(files, &mut keys)?;
    let graph_type = files.graph_type.as_str();
    if !snapshot.defines(graph_type) {
        bail!("{}", ResolutionError::UndefinedGraphType(graph_type.into()));
    }
    let mut outcome = Outcome {
        plan: None,
        findings: keys,
        dot: None,
        graph_type: graph_type.to_string(),
    };
    // The merged graph names the tasks an old-state file's states stand for, and is what DOT draws.
    let plugins: Vec<&Plugin> = snapshot.plugins.iter().collect();
    let merged = match merge_for_cluster(&snapshot.release, &plugins, &snapshot.cluster, graph_type)
    {
        Ok(m) => m,
        Err(e) => {
            outcome
                .findings
                .push(Finding::error("graph_error", e.to_string()));
            return Ok(outcome);
        }
    };
    if let Some(path) = &files.old {
        let empty = Arc::new(Json::from(json!({})));
        for (node, state) in inputs::load_old(path)? {
            let state = Arc::new(Json::from(state));
            for t in &merged.tasks {
                snapshot.old.insert(
                    node,
                    t.task.id.clone(),
                    NodeState::new(empty.clone(), state.clone()),
                );
            }
        }
    }
    if dot.enabled {
        match to_dot(&merged, graph_type, &dot.options) {
            Ok(text) => outcome.dot = Some(text),
            Err(e) => outcome
                .findings
                .push(Finding::error("graph_error", e.to_string())),
        }
    }
    let exprs = Expressions::standard();
    let mut unresolved = None;
    match resolve(&snapshot, &[graph_type.to_string()], &exprs) {
        Ok(mut resolved) => {
            outcome.findings.extend(resolved.findings);
            outcome.plan = resolved.plans.remove(graph_type);
        }
        Err(ResolutionError::UndefinedGraphType(t)) => {
            bail!("{}", ResolutionError::UndefinedGraphType(t))
        }
        Err(ResolutionError::NodeFilter(e)) => {
            outcome.findings.push(Finding::error("node_filter", e));
        }
        Err(ResolutionError::Checks {
            findings,
            plan,
            unresolved: error,
        }) => {
            outcome.findings.extend(findings);
            outcome.plan = plan.map(|p| *p);
            unresolved = error.map(|e| e.to_string());
        }
        Err(ResolutionError::Unresolved { error, findings }) => {
            outcome.findings.extend(findings);
            unresolved = Some(error.to_string());
        }
        Err(e @ (ResolutionError::Merge(_) | ResolutionError::TaskSpec(_))) => {
            unresolved = Some(e.to_string());
        }
    }
    if let Some(message) = unresolved {
        if !outcome.findings.iter().any(|x| x.message == message) {
            outcome
                .findings
                .push(Finding::error("graph_error", message));
        }
    }
    Ok(outcome)
}

/// `plinthctl graph resolve`: prints every node's tasks, then the findings (or the DOT drawing with
/// `--dot`). Ok(false) when a finding is an error.
pub fn resolve_cmd(files: &Files, dot: &Dot, format: Format) -> Result<bool> {
    let outcome = run(files, dot)?;
    match format {
        Format::Json => {
            let plan = outcome.plan.as_ref();
            let mut v = json!({
                "graph_type": outcome.graph_type,
                "nodes": plan.map_or(&[][..], |p| &p.nodes),
                "wait_sets": plan.map_or(&[][..], |p| &p.wait_sets),
                "primaries": plan.map(|p| &p.primaries),
                "fault_tolerance_groups": plan.map_or(&[][..], |p| &p.fault_tolerance_groups),
                "findings": outcome.findings,
            });
            if plan.is_none() {
                v["primaries"] = json!({});
            }
            if let Some(d) = &outcome.dot {
                v["dot"] = Value::String(d.clone());
            }
            output::json(&v);
        }
        Format::Table => {
            if let Some(d) = &outcome.dot {
                print!("{d}");
                for f in &outcome.findings {
                    eprintln!("{f}");
                }
            } else {
                if let Some(plan) = &outcome.plan {
                    print_plan(Some(plan));
                }
                print_findings(&outcome.findings);
            }
        }
    }
    Ok(!outcome.has_errors())
}

/// `plinthctl graph check`: only the findings; with `strict`, a warning fails the check too.
pub fn check_cmd(files: &Files, format: Format, strict: bool) -> Result<bool> {
    let outcome = run(files, &Dot::default())?;
    let warnings = outcome
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Warning)
        .count();
    let failing_warnings = strict && warnings > 0;
    let ok = !(outcome.has_errors() || failing_warnings);
    if failing_warnings && !outcome.has_errors() {
        eprintln!("{warnings} warning(s) fail the check: --strict is given");
    }
    match format {
        Format::Json => output::json(&json!({"ok": ok, "findings": outcome.findings})),
        Format::Table => print_findings(&outcome.findings),
    }
    Ok(ok)
}

/// Prints findings as a table, or a line saying there are none.
pub fn print_findings(findings: &[Finding]) {
    if findings.is_empty() {
        println!("No findings.");
        return;
    }
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    println!(
        "{} finding(s): {errors} error(s), {} warning(s)",
        findings.len(),
        findings.len() - errors
    );
    let rows: Vec<Vec<String>> = findings
        .iter()
        .map(|f| vec![f.severity.to_string(), f.code.clone(), f.message.clone()])
        .collect();
    output::table(&["severity", "code", "message"], &rows);
}

/// A value's serde spelling (a policy, a task type).
fn word<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "-".into(),
    }
}

/// How a task waits, from the plan's wait sets: `all: task@1,2; any: other@3`.
fn waits_text(plan: &Plan, task: &ResolvedTask) -> String {
    let parts: Vec<String> = task
        .waits
        .iter()
        .filter_map(|w| plan.wait_sets.get(*w as usize))
        .map(|set| {
            let targets: Vec<String> = set
                .targets
                .iter()
                .map(|t| {
                    let nodes: Vec<String> = t.nodes.iter().map(u64::to_string).collect();
                    format!("{}@{}", t.task, nodes.join(","))
                })
                .collect();
            format!("{}: {}", word(&set.policy), targets.join(" "))
        })
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join("; ")
    }
}

/// Prints a plan (as `serialized_tasks` serves it, or as resolved offline): each node, then its tasks
/// in order.
pub fn print_plan(plan: Option<&Plan>) {
    let Some(plan) = plan.filter(|p| !p.nodes.is_empty()) else {
        let graph_type = plan.map_or("-", |p| p.graph_type.as_str());
        println!("No node runs graph {graph_type}.");
        println!();
        return;
    };
    for n in &plan.nodes {
        println!(
            "Node {} (id {}), tags {}: {} task(s)",
            n.name,
            n.node_id,
            n.tags.join(","),
            n.tasks.len()
        );
        let rows: Vec<Vec<String>> = n
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| {
                vec![
                    (i + 1).to_string(),
                    t.id.to_string(),
                    word(&t.task_type),
                    t.skip_reason
                        .as_ref()
                        .map(|s| format!("skipped: {s}"))
                        .unwrap_or_else(|| "-".into()),
                    waits_text(plan, t),
                ]
            })
            .collect();
        output::table(&["#", "task", "type", "skip", "waits"], &rows);
        println!();
    }
}
