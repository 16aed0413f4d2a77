//! Reading Fuel's files: `tasks.yaml` graphs and Nailgun's release fixture. Text in, data out (no I/O).

use serde_json::Value;
use thiserror::Error;

use super::graph::Graph;
use super::release::Release;
use super::task::Task;

/// Why a file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{source_name}{}: {message}", location(*.line, *.column))]
pub struct LoadError {
    /// The file (or other source) being read, as the caller named it.
    pub source_name: String,
    /// The line of the problem (1-based), when known.
    pub line: Option<usize>,
    /// The column of the problem (1-based), when known.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

fn location(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

impl LoadError {
    fn from_yaml(source_name: &str, err: &serde_yaml_ng::Error) -> LoadError {
        let loc = err.location();
        LoadError {
            source_name: source_name.to_string(),
            line: loc.as_ref().map(|l| l.line()),
            column: loc.as_ref().map(|l| l.column()),
            message: err.to_string(),
        }
    }

    fn plain(source_name: &str, message: impl Into<String>) -> LoadError {
        LoadError {
            source_name: source_name.to_string(),
            line: None,
            column: None,
            message: message.into(),
        }
    }
}

/// Reads a Fuel `tasks.yaml` (a YAML or JSON list of tasks; an empty file is an empty list).
/// `source_name` names the file in errors.
///
/// A key repeated within one mapping keeps its last value, as Fuel's own YAML loader does (Fuel's heat
/// tasks repeat `cross-depends`).
pub fn parse_tasks(text: &str, source_name: &str) -> Result<Vec<Task>, LoadError> {
    let value: Value =
        serde_yaml_ng::from_str(text).map_err(|e| LoadError::from_yaml(source_name, &e))?;
    tasks_from_value(value, text, source_name)
}

fn tasks_from_value(value: Value, text: &str, source_name: &str) -> Result<Vec<Task>, LoadError> {
    let items = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(LoadError::plain(
                source_name,
                format!("a tasks file must be a list of tasks, not {}", kind(&other)),
            ))
        }
    };
    let mut tasks = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let id = item.get("id").and_then(Value::as_str).map(str::to_string);
        let line = id.as_deref().and_then(|id| line_of_id(text, id));
        let named = match &id {
            Some(id) => format!("task {index} ({id})"),
            None => format!("task {index}"),
        };
        let task: Task = serde_json::from_value(item).map_err(|e| LoadError {
            source_name: source_name.to_string(),
            line,
            column: None,
            message: format!("{named}: {e}"),
        })?;
        if task.id.trim().is_empty() {
            return Err(LoadError {
                source_name: source_name.to_string(),
                line,
                column: None,
                message: format!("{named} has an empty id"),
            });
        }
        tasks.push(task);
    }
    Ok(tasks)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// The first line declaring `id: <id>` (1-based), to point errors at the task.
fn line_of_id(text: &str, id: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let l = line.trim_start().trim_start_matches('-').trim_start();
            l.strip_prefix("id:")
                .is_some_and(|rest| rest.trim().trim_matches(|c| c == '\'' || c == '"') == id)
        })
        .map(|p| p + 1)
}

/// Reads a graph: either a list of tasks, or a mapping with `tasks` (and optionally `name`, `node_filter`).
pub fn parse_graph(text: &str, source_name: &str) -> Result<Graph, LoadError> {
    let value: Value =
        serde_yaml_ng::from_str(text).map_err(|e| LoadError::from_yaml(source_name, &e))?;
    match value {
        Value::Array(_) | Value::Null => {
            tasks_from_value(value, text, source_name).map(Graph::with_tasks)
        }
        Value::Object(mut map) => {
            let tasks = map.remove("tasks").unwrap_or(Value::Null);
            let tasks = tasks_from_value(tasks, text, source_name)?;
            let mut graph: Graph = serde_json::from_value(Value::Object(map))
                .map_err(|e| LoadError::plain(source_name, e.to_string()))?;
            graph.tasks = tasks;
            Ok(graph)
        }
        other => Err(LoadError::plain(
            source_name,
            format!("a graph must be a list of tasks or a mapping with `tasks`, not {other}"),
        )),
    }
}

/// Reads a release from Nailgun's fixture form (`openstack.yaml`: a list of `{pk, model, fields}` or
/// `{pk, extend, fields}` entries). As Nailgun's fixture loader does, an entry's fields are the fields of
/// the entry it `extend`s with its own merged over them (mappings key by key). The release is the first
/// named entry whose `state` is not `unavailable` (else the first named one): its name, version, roles,
/// tags, volumes and `attributes_metadata` (`editable` and `generated`, a new cluster's settings).
pub fn parse_release_fixture(text: &str, source_name: &str) -> Result<Release, LoadError> {
    parse_release_fixture_named(text, source_name, None)
}

/// One release a Nailgun fixture holds: its name, version and state (`available`, `unavailable`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureRelease {
    /// The release's name.
    pub name: String,
    /// Its version, if it has one.
    pub version: Option<String>,
    /// Its state, if it has one.
    pub state: Option<String>,
}

/// The entries of a fixture, each with the fields of the entries it extends merged under its own.
fn fixture_entries(text: &str, source_name: &str) -> Result<Vec<Value>, LoadError> {
    let value: Value =
        serde_yaml_ng::from_str(text).map_err(|e| LoadError::from_yaml(source_name, &e))?;
    let entries = value
        .as_array()
        .ok_or_else(|| LoadError::plain(source_name, "a release fixture is a list of entries"))?;
    Ok(entries.iter().map(|e| entry_fields(e, 0)).collect())
}

/// The named releases of a Nailgun fixture (`openstack.yaml` holds several), in the file's order.
pub fn release_fixture_names(
    text: &str,
    source_name: &str,
) -> Result<Vec<FixtureRelease>, LoadError> {
    let word = |f: &Value, key: &str| f.get(key).and_then(Value::as_str).map(str::to_string);
    Ok(fixture_entries(text, source_name)?
        .iter()
        .filter_map(|f| {
            Some(FixtureRelease {
                name: word(f, "name")?,
                version: word(f, "version"),
                state: word(f, "state"),
            })
        })
        .collect())
}

/// [`parse_release_fixture`], or with `name` the named entry of that name.
pub fn parse_release_fixture_named(
    text: &str,
    source_name: &str,
    name: Option<&str>,
) -> Result<Release, LoadError> {
    let all = fixture_entries(text, source_name)?;
    let named = |f: &&Value| f.get("name").and_then(Value::as_str).is_some();
    let chosen = match name {
        Some(wanted) => all
            .iter()
            .find(|f| f.get("name").and_then(Value::as_str) == Some(wanted))
            .ok_or_else(|| {
                LoadError::plain(source_name, format!("no release is named {wanted:?}"))
            })?,
        None => all
            .iter()
            .filter(named)
            .find(|f| f.get("state").and_then(Value::as_str) != Some("unavailable"))
            .or_else(|| all.iter().find(named))
            .or_else(|| all.iter().find(|f| f.get("roles_metadata").is_some()))
            .ok_or_else(|| LoadError::plain(source_name, "no entry holds roles_metadata"))?,
    };
    if chosen.get("roles_metadata").is_none() {
        return Err(LoadError::plain(
            source_name,
            "no entry holds roles_metadata",
        ));
    }
    Ok(Release {
        name: chosen
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        version: chosen
            .get("version")
            .and_then(Value::as_str)
            .map(str::to_string),
        roles_metadata: from_field(chosen, "roles_metadata", source_name)?,
        tags_metadata: from_field(chosen, "tags_metadata", source_name)?,
        volumes_metadata: chosen
            .get("volumes_metadata")
            .cloned()
            .unwrap_or(Value::Null),
        attributes_metadata: chosen
            .get("attributes_metadata")
            .cloned()
            .unwrap_or(Value::Null),
        graphs: Default::default(),
    })
}

/// An entry's fields with the fields of the entry it extends under them (bounded depth: YAML aliases
/// cannot loop, but a hand-written chain could be long).
fn entry_fields(entry: &Value, depth: usize) -> Value {
    let mut fields = match entry.get("extend") {
        Some(base) if depth < 16 => entry_fields(base, depth + 1),
        _ => Value::Object(Default::default()),
    };
    if let Some(own) = entry.get("fields") {
        super::attributes::dict_merge(&mut fields, own);
    }
    fields
}

fn from_field<T: serde::de::DeserializeOwned + Default>(
    fields: &Value,
    key: &str,
    source_name: &str,
) -> Result<T, LoadError> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(T::default()),
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| LoadError::plain(source_name, format!("{key}: {e}"))),
    }
}
