//! Reading a strategy document: Shipyard's `shipyard/DeploymentStrategy/v1` (`schema`, `metadata`,
//! `data.groups`) or Plinth's plain form (`groups` at the top), from YAML or JSON text.
//!
//! This module checks presence, types and known field names, recording every problem rather than stopping at
//! the first; [`crate::strategy::validate`] then checks the rules that span fields (names, dependencies,
//! cycles, ranges) on what was read.

use serde_json::{Map, Value};

use super::finding::{Finding, StrategyError};
use super::model::{
    Group, Label, Phase, Selector, Strategy, SuccessCriteria, DEFAULT_MAX_CONCURRENT_GROUPS,
    DEFAULT_PHASE_TIMEOUT_SECS, SHIPYARD_SCHEMA,
};
use super::validate::{semantic_findings, Paths};

const ENVELOPE_FIELDS: &[&str] = &["schema", "metadata", "data"];
const DATA_FIELDS: &[&str] = &["groups", "phases", "phase_timeout", "max_concurrent_groups"];
const PLAIN_FIELDS: &[&str] = &[
    "name",
    "groups",
    "phases",
    "phase_timeout",
    "max_concurrent_groups",
];
const GROUP_FIELDS: &[&str] = &[
    "name",
    "critical",
    "depends_on",
    "selectors",
    "success_criteria",
];
const SELECTOR_FIELDS: &[&str] = &["node_names", "node_tags", "node_labels", "rack_names"];
const CRITERIA_FIELDS: &[&str] = &[
    "percent_successful_nodes",
    "minimum_successful_nodes",
    "maximum_failed_nodes",
];
const PHASE_FIELDS: &[&str] = &["name", "graph_type", "timeout"];

/// Reads a strategy from YAML or JSON text and validates it, returning every problem found.
///
/// A YAML stream with several documents (a Shipyard site design) is accepted when, rendered as Deckhand
/// renders it, exactly one concrete document has `schema: shipyard/DeploymentStrategy/v1`.
/// Warnings (fields Plinth does not know, kept) are dropped here; [`crate::strategy::load_strategy`] returns
/// them.
pub fn parse_strategy(text: &str) -> Result<Strategy, StrategyError> {
    super::load::load_strategy(&[super::load::Source::new("", text)]).map(|loaded| loaded.strategy)
}

/// Reads a strategy from an already parsed JSON value (either form) and validates it.
pub fn strategy_from_value(value: &Value) -> Result<Strategy, StrategyError> {
    read_document(value).map(|(strategy, _)| strategy)
}

/// Reads and validates one document; also returns the warnings (unknown fields, which are kept).
pub(crate) fn read_document(value: &Value) -> Result<(Strategy, Vec<Finding>), StrategyError> {
    let mut reader = Reader::default();
    let strategy = reader.document(value);
    let mut findings = reader.findings;
    if let Some(strategy) = strategy {
        let paths = Paths {
            top: reader.prefix,
            placeholder_names: reader.placeholder_names,
        };
        findings.extend(semantic_findings(&strategy, &paths));
        if findings.is_empty() {
            return Ok((strategy, reader.warnings));
        }
    }
    Err(StrategyError::Invalid(findings))
}

/// Walks a document, building the strategy and recording problems.
#[derive(Default)]
struct Reader {
    findings: Vec<Finding>,
    /// Fields Shipyard's schema leaves open and Plinth does not know: kept, and named in a warning.
    warnings: Vec<Finding>,
    /// Where the strategy's settings live: `""` for the plain form, `"data"` for Shipyard's.
    prefix: String,
    /// Indices of groups whose name was missing or not a string (they carry their position as a name).
    placeholder_names: Vec<usize>,
}

impl Reader {
    fn add(&mut self, group: Option<&str>, field: &str, message: impl Into<String>) {
        self.findings.push(Finding::new(group, field, message));
    }

    /// Records every key of `map` that is not in `allowed`: as a problem where Shipyard's schema is strict
    /// (selectors, success criteria) or the form is Plinth's own, else as a warning (the field is kept).
    fn check_keys(
        &mut self,
        map: &Map<String, Value>,
        allowed: &[&str],
        group: Option<&str>,
        prefix: &str,
        strict: bool,
    ) {
        for key in map.keys() {
            if !allowed.contains(&key.as_str()) {
                let mut message = "unknown field".to_string();
                if let Some(near) = closest(key, allowed) {
                    message.push_str(&format!(" (did you mean {near:?}?)"));
                }
                message.push_str(&format!("; expected one of: {}", allowed.join(", ")));
                if strict {
                    self.add(group, &join(prefix, key), message);
                } else {
                    message.push_str("; kept, and not used by Plinth");
                    self.warnings
                        .push(Finding::new(group, join(prefix, key), message));
                }
            }
        }
    }

    fn document(&mut self, value: &Value) -> Option<Strategy> {
        let Some(map) = value.as_object() else {
            self.add(
                None,
                "",
                format!(
                    "expected a mapping holding a strategy (`groups`, or Shipyard's `schema`, `metadata` \
                     and `data`), found {}",
                    describe(value)
                ),
            );
            return None;
        };
        let shipyard = ENVELOPE_FIELDS.iter().any(|key| map.contains_key(*key));
        if !shipyard {
            self.check_keys(map, PLAIN_FIELDS, None, "", true);
            let name = self.optional_string(map.get("name"), None, "name");
            return Some(self.settings(map, name));
        }
        self.check_keys(map, ENVELOPE_FIELDS, None, "", false);
        match map.get("schema") {
            Some(Value::String(schema)) if schema == SHIPYARD_SCHEMA => {}
            Some(other) => self.add(
                None,
                "schema",
                format!("expected {SHIPYARD_SCHEMA:?}, found {}", describe(other)),
            ),
            None => self.add(
                None,
                "schema",
                format!("missing required field; expected {SHIPYARD_SCHEMA:?}"),
            ),
        }
        let name = match map.get("metadata") {
            None | Some(Value::Null) => None,
            Some(Value::Object(metadata)) => {
                self.optional_string(metadata.get("name"), None, "metadata.name")
            }
            Some(other) => {
                self.add(
                    None,
                    "metadata",
                    format!("expected a mapping, found {}", describe(other)),
                );
                None
            }
        };
        self.prefix = "data".to_string();
        match map.get("data") {
            Some(Value::Object(data)) => Some(self.settings(data, name)),
            Some(other) => {
                self.add(
                    None,
                    "data",
                    format!(
                        "expected a mapping holding `groups`, found {}",
                        describe(other)
                    ),
                );
                None
            }
            None => {
                self.add(None, "data", "missing required field");
                None
            }
        }
    }

    /// The strategy held by `map` (the plain document, or Shipyard's `data`).
    fn settings(&mut self, map: &Map<String, Value>, name: Option<String>) -> Strategy {
        let prefix = self.prefix.clone();
        if !prefix.is_empty() {
            self.check_keys(map, DATA_FIELDS, None, &prefix, false);
        }
        let groups_path = join(&prefix, "groups");
        let groups = match map.get("groups") {
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .filter_map(|(index, item)| self.group(item, index, &groups_path))
                .collect(),
            Some(other) => {
                self.add(
                    None,
                    &groups_path,
                    format!("expected a list of groups, found {}", describe(other)),
                );
                Vec::new()
            }
            None => {
                self.add(None, &groups_path, "missing required field");
                Vec::new()
            }
        };
        let phases_path = join(&prefix, "phases");
        let phases = match map.get("phases") {
            None | Some(Value::Null) => Phase::defaults(),
            Some(Value::Array(items)) => {
                let phases: Vec<Phase> = items
                    .iter()
                    .enumerate()
                    .filter_map(|(index, item)| {
                        self.phase(item, &format!("{phases_path}[{index}]"))
                    })
                    .collect();
                if phases.is_empty() && !items.is_empty() {
                    // Every entry was already reported; do not add "no phases" on top.
                    Phase::defaults()
                } else {
                    phases
                }
            }
            Some(other) => {
                self.add(
                    None,
                    &phases_path,
                    format!("expected a list of phases, found {}", describe(other)),
                );
                Phase::defaults()
            }
        };
        let phase_timeout = self
            .optional_uint(
                map.get("phase_timeout"),
                None,
                &join(&prefix, "phase_timeout"),
            )
            .unwrap_or(DEFAULT_PHASE_TIMEOUT_SECS);
        let concurrency_path = join(&prefix, "max_concurrent_groups");
        let max_concurrent_groups =
            match self.optional_uint(map.get("max_concurrent_groups"), None, &concurrency_path) {
                None => DEFAULT_MAX_CONCURRENT_GROUPS,
                Some(value) => u32::try_from(value).unwrap_or_else(|_| {
                    self.add(
                        None,
                        &concurrency_path,
                        format!("must be at most {}, found {value}", u32::MAX),
                    );
                    DEFAULT_MAX_CONCURRENT_GROUPS
                }),
            };
        Strategy {
            name,
            groups,
            phases,
            phase_timeout,
            max_concurrent_groups,
        }
    }

    fn group(&mut self, value: &Value, index: usize, groups_path: &str) -> Option<Group> {
        let location = format!("{groups_path}[{index}]");
        let Some(map) = value.as_object() else {
            self.add(
                Some(&location),
                "",
                format!("expected a mapping (a group), found {}", describe(value)),
            );
            return None;
        };
        let name = match map.get("name") {
            Some(Value::String(name)) => Some(name.clone()),
            Some(other) => {
                self.add(
                    Some(&location),
                    "name",
                    format!("expected a string, found {}", describe(other)),
                );
                None
            }
            None => {
                self.add(Some(&location), "name", "missing required field");
                None
            }
        };
        let label = match &name {
            Some(name) if !name.is_empty() => name.clone(),
            _ => location.clone(),
        };
        let name = name.unwrap_or_else(|| {
            self.placeholder_names.push(index);
            location.clone()
        });
        let group = Some(label.as_str());
        self.check_keys(map, GROUP_FIELDS, group, "", false);
        let critical = match map.get("critical") {
            Some(Value::Bool(critical)) => *critical,
            Some(other) => {
                self.add(
                    group,
                    "critical",
                    format!("expected true or false, found {}", describe(other)),
                );
                false
            }
            None => {
                self.add(group, "critical", "missing required field (true or false)");
                false
            }
        };
        let depends_on = match map.get("depends_on") {
            Some(value) => self.string_list(value, group, "depends_on"),
            None => {
                self.add(
                    group,
                    "depends_on",
                    "missing required field (a list of group names, may be empty)",
                );
                Vec::new()
            }
        };
        let selectors = match map.get("selectors") {
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .filter_map(|(index, item)| {
                    self.selector(item, group, &format!("selectors[{index}]"))
                })
                .collect(),
            Some(other) => {
                self.add(
                    group,
                    "selectors",
                    format!("expected a list of selectors, found {}", describe(other)),
                );
                Vec::new()
            }
            None => {
                self.add(
                    group,
                    "selectors",
                    "missing required field (a list of selectors, may be empty)",
                );
                Vec::new()
            }
        };
        let success_criteria = match map.get("success_criteria") {
            None | Some(Value::Null) => None,
            Some(Value::Object(criteria)) => Some(self.criteria(criteria, group)),
            Some(other) => {
                self.add(
                    group,
                    "success_criteria",
                    format!("expected a mapping, found {}", describe(other)),
                );
                None
            }
        };
        Some(Group {
            name,
            critical,
            depends_on,
            selectors,
            success_criteria,
        })
    }

    fn selector(&mut self, value: &Value, group: Option<&str>, path: &str) -> Option<Selector> {
        let Some(map) = value.as_object() else {
            self.add(
                group,
                path,
                format!("expected a mapping (a selector), found {}", describe(value)),
            );
            return None;
        };
        self.check_keys(map, SELECTOR_FIELDS, group, path, true);
        let mut list = |key: &str| match map.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(value) => self.string_list(value, group, &join(path, key)),
        };
        let node_names = list("node_names");
        let node_tags = list("node_tags");
        let rack_names = list("rack_names");
        let node_labels = match map.get("node_labels") {
            None | Some(Value::Null) => Vec::new(),
            Some(value) => self.labels(value, group, &join(path, "node_labels")),
        };
        Some(Selector {
            node_names,
            node_tags,
            node_labels,
            rack_names,
        })
    }

    /// `node_labels`: a mapping `{key: value}`, or a list of `"key:value"` strings or `{key: value}` mappings.
    fn labels(&mut self, value: &Value, group: Option<&str>, path: &str) -> Vec<Label> {
        let mut labels = Vec::new();
        match value {
            Value::Object(map) => self.label_map(map, group, path, &mut labels),
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    let item_path = format!("{path}[{index}]");
                    match item {
                        Value::String(text) => match split_label(text) {
                            Some(label) => labels.push(label),
                            None => self.add(
                                group,
                                &item_path,
                                format!(
                                    "expected \"key:value\" (one colon, text on both sides), found {text:?}"
                                ),
                            ),
                        },
                        Value::Object(map) => self.label_map(map, group, &item_path, &mut labels),
                        other => self.add(
                            group,
                            &item_path,
                            format!(
                                "expected a \"key:value\" string or a key: value mapping, found {}",
                                describe(other)
                            ),
                        ),
                    }
                }
            }
            other => self.add(
                group,
                path,
                format!(
                    "expected a list of labels (\"key:value\" strings or key: value mappings) or a mapping, \
                     found {}",
                    describe(other)
                ),
            ),
        }
        labels
    }

    fn label_map(
        &mut self,
        map: &Map<String, Value>,
        group: Option<&str>,
        path: &str,
        labels: &mut Vec<Label>,
    ) {
        for (key, value) in map {
            if key.trim().is_empty() {
                self.add(group, path, "a label's key must not be empty");
                continue;
            }
            match value {
                Value::String(value) => labels.push(Label::new(key.clone(), value.clone())),
                other => self.add(
                    group,
                    &join(path, key),
                    format!(
                        "expected the label's value as a string, found {} (quote it)",
                        describe(other)
                    ),
                ),
            }
        }
    }

    fn criteria(&mut self, map: &Map<String, Value>, group: Option<&str>) -> SuccessCriteria {
        self.check_keys(map, CRITERIA_FIELDS, group, "success_criteria", true);
        let mut read =
            |key: &str| self.optional_uint(map.get(key), group, &format!("success_criteria.{key}"));
        SuccessCriteria {
            percent_successful_nodes: read("percent_successful_nodes"),
            minimum_successful_nodes: read("minimum_successful_nodes"),
            maximum_failed_nodes: read("maximum_failed_nodes"),
        }
    }

    fn phase(&mut self, value: &Value, path: &str) -> Option<Phase> {
        let Some(map) = value.as_object() else {
            self.add(
                None,
                path,
                format!(
                    "expected a mapping with `name` and `graph_type`, found {}",
                    describe(value)
                ),
            );
            return None;
        };
        self.check_keys(map, PHASE_FIELDS, None, path, true);
        let name = self.required_string(map.get("name"), &join(path, "name"));
        let graph_type = self.required_string(map.get("graph_type"), &join(path, "graph_type"));
        let timeout = self.optional_uint(map.get("timeout"), None, &join(path, "timeout"));
        Some(Phase {
            name: name?,
            graph_type: graph_type?,
            timeout,
        })
    }

    fn required_string(&mut self, value: Option<&Value>, path: &str) -> Option<String> {
        match value {
            Some(Value::String(text)) => Some(text.clone()),
            Some(other) => {
                self.add(
                    None,
                    path,
                    format!("expected a string, found {}", describe(other)),
                );
                None
            }
            None => {
                self.add(None, path, "missing required field");
                None
            }
        }
    }

    fn optional_string(
        &mut self,
        value: Option<&Value>,
        group: Option<&str>,
        path: &str,
    ) -> Option<String> {
        match value {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(other) => {
                self.add(
                    group,
                    path,
                    format!("expected a string, found {}", describe(other)),
                );
                None
            }
        }
    }

    fn optional_uint(
        &mut self,
        value: Option<&Value>,
        group: Option<&str>,
        path: &str,
    ) -> Option<u64> {
        match value {
            None | Some(Value::Null) => None,
            Some(Value::Number(number)) => {
                if let Some(value) = number.as_u64() {
                    Some(value)
                } else if number.as_i64().is_some() {
                    self.add(group, path, format!("must be 0 or more, found {number}"));
                    None
                } else {
                    self.add(
                        group,
                        path,
                        format!("expected a whole number, found {number}"),
                    );
                    None
                }
            }
            Some(other) => {
                self.add(
                    group,
                    path,
                    format!("expected a whole number, found {}", describe(other)),
                );
                None
            }
        }
    }

    fn string_list(&mut self, value: &Value, group: Option<&str>, path: &str) -> Vec<String> {
        let Value::Array(items) = value else {
            self.add(
                group,
                path,
                format!("expected a list of strings, found {}", describe(value)),
            );
            return Vec::new();
        };
        let mut strings = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            match item {
                Value::String(text) => strings.push(text.clone()),
                other => self.add(
                    group,
                    &format!("{path}[{index}]"),
                    format!("expected a string, found {}", describe(other)),
                ),
            }
        }
        strings
    }
}

/// Shipyard's label string: exactly one colon, and non-blank text on both sides (trimmed).
fn split_label(text: &str) -> Option<Label> {
    let (key, value) = text.split_once(':')?;
    let (key, value) = (key.trim(), value.trim());
    if key.is_empty() || value.is_empty() || value.contains(':') {
        return None;
    }
    Some(Label::new(key, value))
}

/// `prefix.key`, or `key` when there is no prefix.
fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// A value described for a message: its kind, and itself when short.
pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "an empty value (null)".to_string(),
        Value::Bool(flag) => format!("the boolean {flag}"),
        Value::Number(number) => format!("the number {number}"),
        Value::String(text) => format!("the string {text:?}"),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "a mapping".to_string(),
    }
}

/// The allowed name closest to a misspelt one, if it is close enough to be a likely typo.
pub(crate) fn closest<'a>(key: &str, allowed: &[&'a str]) -> Option<&'a str> {
    allowed
        .iter()
        .map(|candidate| (edit_distance(key, candidate), *candidate))
        .filter(|(distance, candidate)| *distance <= 2.max(candidate.len() / 4))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance between two strings, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = Vec::with_capacity(b.len() + 1);
        current.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            let deletion = previous[j + 1] + 1;
            let insertion = current[j] + 1;
            current.push(substitution.min(deletion).min(insertion));
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_strings_follow_shipyard() {
        assert_eq!(split_label("zone:a"), Some(Label::new("zone", "a")));
        assert_eq!(split_label(" zone : a "), Some(Label::new("zone", "a")));
        assert_eq!(split_label("zone"), None);
        assert_eq!(split_label("zone:"), None);
        assert_eq!(split_label(":a"), None);
        assert_eq!(split_label("a:b:c"), None);
    }

    #[test]
    fn suggestions_for_typos() {
        assert_eq!(closest("depend_on", GROUP_FIELDS), Some("depends_on"));
        assert_eq!(closest("criticl", GROUP_FIELDS), Some("critical"));
        assert_eq!(closest("zzzzzzzz", GROUP_FIELDS), None);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
