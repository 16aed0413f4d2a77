//! Computed structure: the fields that decide where a task runs and in which order, computed per node
//! before placement and ordering.
//!
//! Seed 001 (Fuel's "Computable task fields as YAQL expressions") says what this implements:
//!
//! > User should be able to specify a YAQL expression in any task field except for id (or it
//! > subfields) and get this YAQL expression evaluated correctly with respect to its context.
//!
//! > Also we can use yaql expressions for cross-depends or requires to specify the deployment behavior
//! > based on cluster status or deployment info.
//!
//! > Nevertheless, as Nailgun should retain old functionality, the default value for any field should
//! > be the same as if YAQL did not exist, e.g condition task will be 'True' by default.
//!
//! So `tags`, `roles`, `role`, `groups`, `tasks`, `requires`, `required_for`, `type`, `version` and
//! `fault_tolerance` may be `{yaql_exp: ...}` (whole, or entries of a list). Each is computed for every
//! node of the plan (`$` is that node's deployment data, `changed()` reads that task's old state on that
//! node), and the node gets a copy of the graph with the computed values in place: a **variant**.
//! Nodes whose computed values agree share a variant, which is compiled once, so placement, groups,
//! unknown names and edges are checked and built on the computed result exactly as for a written graph;
//! ordering then runs over every class with its variant's edges, so a cycle that exists only on some
//! nodes is found there and named with them.
//!
//! - A value computed to `null` is the field left out (the default, as if YAQL did not exist).
//! - A list field takes a string or a list of strings; an entry computing to a list adds its names.
//! - `type` must compute to a task type Plinth knows; `fault_tolerance` to a count or `"N%"`;
//!   `version` to a string.
//! - The controller's own host (`master`) is placed by written placement only: computed placement is
//!   evaluated on the cluster's nodes, and on `master` the other computed fields are evaluated only for
//!   the tasks placed there (left at their defaults for the others).

use serde_json::Value;
use std::collections::HashMap;

use super::classes::Member;
use super::compile::{compile_reusing, Compiled, PlacementCache};
use super::compute::{compute_value, Target};
use super::error::ResolveError;
use super::evaluate::FieldEvaluator;
use super::merge::MergedGraph;
use crate::model::{FaultTolerance, StringList, Task, TaskType, COMPUTABLE_FIELDS};

/// The placement fields; never computed on the controller's own host.
const PLACEMENT_FIELDS: &[&str] = &["tags", "roles", "role", "groups"];

/// The task types a computed `type` may name.
const KNOWN_TYPES: &[TaskType] = &[
    TaskType::Puppet,
    TaskType::Shell,
    TaskType::UploadFile,
    TaskType::CopyFiles,
    TaskType::Sync,
    TaskType::Reboot,
    TaskType::Group,
    TaskType::Stage,
    TaskType::Skipped,
];

/// A node the structure is computed for.
#[derive(Clone, Copy)]
pub(crate) struct Subject<'a> {
    pub(crate) target: Target<'a>,
    pub(crate) is_master: bool,
}

impl<'a> Subject<'a> {
    /// The subject for a member of the plan.
    pub(crate) fn new(member: &'a Member<'a>, is_master: bool) -> Subject<'a> {
        Subject {
            target: Target {
                node: member.node,
                node_id: member.id,
                node_name: &member.name,
                task_id: "",
            },
            is_master,
        }
    }
}

/// The computed graphs: one per distinct set of computed values, and each member's.
pub(crate) struct Variants {
    /// The merged graph with each node class's computed values in place.
    pub(crate) graphs: Vec<MergedGraph>,
    /// Per subject (in the order given), its variant.
    pub(crate) of_subject: Vec<usize>,
    /// Per variant, the names of its nodes (for errors).
    pub(crate) names: Vec<Vec<String>>,
}

/// True when some task of the graph has a computed structural field.
pub(crate) fn has_computed_structure(graph: &MergedGraph) -> bool {
    graph.tasks.iter().any(|t| !t.task.computed.is_empty())
}

/// A list field's computed value as names: a string, or a list of strings (an entry that is a list
/// adds its names); `null` is no list at all.
fn string_list(value: Value) -> Result<Option<StringList>, String> {
    let bad = |v: &Value| format!("must compute to a string or a list of strings, not {v}");
    match value {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(StringList(vec![s]))),
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::Null => {}
                    Value::String(s) => out.push(s),
                    Value::Array(inner) => {
                        for v in inner {
                            match v {
                                Value::String(s) => out.push(s),
                                other => return Err(bad(&other)),
                            }
                        }
                    }
                    other => return Err(bad(&other)),
                }
            }
            Ok(Some(StringList(out)))
        }
        other => Err(bad(&other)),
    }
}

/// Puts one computed value in its typed field.
fn apply(task: &mut Task, field: &str, value: Value) -> Result<(), String> {
    match field {
        "type" => {
            task.task_type = match value {
                Value::Null => TaskType::default(),
                Value::String(name) => {
                    let t = TaskType::from_name(&name);
                    if !KNOWN_TYPES.contains(&t) {
                        let known: Vec<&str> = KNOWN_TYPES.iter().map(TaskType::as_str).collect();
                        return Err(format!(
                            "computes to {name:?}, which is not a task type (one of {})",
                            known.join(", ")
                        ));
                    }
                    t
                }
                other => return Err(format!("must compute to a task type's name, not {other}")),
            }
        }
        "version" => {
            task.version = match value {
                Value::Null => None,
                Value::String(s) => Some(s),
                other => return Err(format!("must compute to a string, not {other}")),
            }
        }
        "fault_tolerance" => {
            task.fault_tolerance = match value {
                Value::Null => None,
                v => Some(serde_json::from_value::<FaultTolerance>(v).map_err(|e| e.to_string())?),
            }
        }
        "requires" => task.requires = string_list(value)?.unwrap_or_default(),
        "required_for" => task.required_for = string_list(value)?.unwrap_or_default(),
        "tags" => task.tags = string_list(value)?,
        "roles" => task.roles = string_list(value)?,
        "role" => task.role = string_list(value)?,
        "groups" => task.groups = string_list(value)?,
        "tasks" => task.tasks = string_list(value)?,
        other => return Err(format!("{other} is not a computable field")),
    }
    Ok(())
}

/// Computes every structural field for every subject and groups the subjects by the result.
///
/// `base` is the graph compiled as written (computed fields at their defaults); it tells which tasks
/// the controller's own host runs.
pub(crate) fn compute_variants(
    graph: &MergedGraph,
    base: &Compiled<'_>,
    subjects: &[Subject<'_>],
    evaluator: &dyn FieldEvaluator,
) -> Result<Variants, ResolveError> {
    let mut variants = Variants {
        graphs: Vec::new(),
        of_subject: Vec::with_capacity(subjects.len()),
        names: Vec::new(),
    };
    let mut by_key: HashMap<String, usize> = HashMap::new();
    for subject in subjects {
        let mut values: Vec<(usize, &str, Value)> = Vec::new();
        for (i, merged) in graph.tasks.iter().enumerate() {
            let task = &merged.task;
            if task.computed.is_empty() {
                continue;
            }
            let on_master =
                subject.is_master && base.tasks[i].placements.iter().any(|p| p.matches_master());
            let target = Target {
                task_id: &task.id,
                ..subject.target
            };
            for field in COMPUTABLE_FIELDS {
                let Some(written) = task.computed.get(*field) else {
                    continue;
                };
                let value = if subject.is_master && (!on_master || PLACEMENT_FIELDS.contains(field))
                {
                    Value::Null
                } else {
                    compute_value(written, field, target, evaluator)?
                };
                if *field == "version" {
                    // Checked on every node, but it places and orders nothing: no variant for it.
                    apply(
                        &mut Task::new(task.id.as_str(), TaskType::Skipped),
                        field,
                        value,
                    )
                    .map_err(|message| ResolveError::Computed {
                        task: task.id.clone(),
                        field: field.to_string(),
                        node: subject.target.node_name.to_string(),
                        message,
                    })?;
                    continue;
                }
                values.push((i, field, value));
            }
        }
        // Writing JSON values (string keys only) as text cannot fail; the text keys the variant.
        let key = serde_json::to_string(&values).unwrap_or_default();
        let name = subject.target.node_name.to_string();
        if let Some(&v) = by_key.get(&key) {
            variants.of_subject.push(v);
            variants.names[v].push(name);
            continue;
        }
        let mut variant = graph.clone();
        for (i, field, value) in values {
            let task = &mut variant.tasks[i].task;
            apply(task, field, value).map_err(|message| ResolveError::Computed {
                task: task.id.clone(),
                field: field.to_string(),
                node: name.clone(),
                message,
            })?;
        }
        for t in &mut variant.tasks {
            t.task.computed.clear();
        }
        let v = variants.graphs.len();
        variants.graphs.push(variant);
        variants.names.push(vec![name]);
        variants.of_subject.push(v);
        by_key.insert(key, v);
    }
    Ok(variants)
}

/// Compiles each variant; a name that is no task, or a placement that does not compile, is reported
/// as the computed field's error on the variant's nodes.
pub(crate) fn compile_variants<'g>(
    original: &MergedGraph,
    base: &Compiled<'_>,
    variants: &'g Variants,
) -> Result<Vec<Compiled<'g>>, ResolveError> {
    let computed = |task: &str, field: &str| {
        original
            .tasks
            .iter()
            .find(|t| t.task.id == task)
            .is_some_and(|t| t.task.computed.contains_key(field))
    };
    let mut cache = PlacementCache::new();
    variants
        .graphs
        .iter()
        .zip(&variants.names)
        .map(|(graph, names)| {
            compile_reusing(graph, Some(base), &mut cache).map_err(|e| {
                let node = node_list(names);
                match e {
                    ResolveError::UnknownTask { task, field, name } if computed(&task, &field) => {
                        ResolveError::Computed {
                            task,
                            field,
                            node,
                            message: format!(
                                "names {name:?}, which is not a task of the merged graph"
                            ),
                        }
                    }
                    ResolveError::BadField {
                        task,
                        field,
                        message,
                    } if computed(&task, &field) => ResolveError::Computed {
                        task,
                        field,
                        node,
                        message,
                    },
                    other => other,
                }
            })
        })
        .collect()
}

/// Node names for a message: the first ten, then how many more.
pub(crate) fn node_list(names: &[String]) -> String {
    let mut out: Vec<&str> = names.iter().take(10).map(String::as_str).collect();
    let more;
    if names.len() > 10 {
        more = format!("and {} more", names.len() - 10);
        out.push(&more);
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn list_fields_take_a_string_a_list_or_nested_lists() {
        assert_eq!(string_list(json!(null)).unwrap(), None);
        assert_eq!(
            string_list(json!("a")).unwrap(),
            Some(StringList(vec!["a".into()]))
        );
        assert_eq!(
            string_list(json!(["a", ["b", "c"], null])).unwrap(),
            Some(StringList(vec!["a".into(), "b".into(), "c".into()]))
        );
        let err = string_list(json!([1])).unwrap_err();
        assert_eq!(err, "must compute to a string or a list of strings, not 1");
        assert!(string_list(json!({"a": 1})).is_err());
    }

    #[test]
    fn a_computed_type_must_be_known() {
        let mut t = Task::new("x", TaskType::Skipped);
        apply(&mut t, "type", json!("shell")).unwrap();
        assert_eq!(t.task_type, TaskType::Shell);
        let err = apply(&mut t, "type", json!("shel")).unwrap_err();
        assert!(
            err.starts_with("computes to \"shel\", which is not a task type (one of puppet, shell"),
            "{err}"
        );
        apply(&mut t, "type", json!(null)).unwrap();
        assert_eq!(t.task_type, TaskType::Skipped, "null is the default");
        apply(&mut t, "fault_tolerance", json!("20%")).unwrap();
        assert_eq!(t.fault_tolerance, Some(FaultTolerance::Percent(20)));
        assert!(apply(&mut t, "fault_tolerance", json!(true)).is_err());
        assert!(apply(&mut t, "version", json!(2)).is_err());
    }
}
