//! Unknown keys: a key no part of Plinth (nor Fuel, whose files load as they are) reads, in a task, its
//! parameters, a graph, a release, a plugin, a role, a tag, a cluster or a node, is a warning naming the
//! file, the line, the key's path in the document and the nearest known key (`did you mean
//! `requires`?`). A misspelled `requries:` would otherwise order nothing, silently.
//!
//! The model keeps what it does not interpret (`Task::extra`, `RoleMeta::extra`, ...), so serde cannot
//! tell an unknown key from a kept one: each kind of document has its list of known keys here, walked
//! over the document as loaded. Known keys are those Plinth reads and those Fuel's and Nailgun's
//! documents carry that Plinth keeps or ignores on purpose (`test_pre`, `refresh_on`, a role's `weight`,
//! a release's `networks_metadata`, ...). A task's `parameters` are checked against its type's: the
//! parameters the agent (or the controller) reads for that type, with `timeout`, `retries`, `interval`
//! and `strategy` for every type. Types whose parameters are open-ended (`skipped`, which keeps a
//! disabled task's parameters, and types Plinth does not run) are not checked, nor is a computed
//! value (`{yaql_exp: ...}`) or what an author names freely (settings, labels, facts, `env`).

use super::finding::Finding;
use super::key_lines::{Marked, PathStep};
use crate::model::yaql_expression;
use serde_json::Value;

/// The finding code of an unknown key.
pub const UNKNOWN_KEY: &str = "unknown_key";

/// What a document holds, which decides its known keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentKind {
    /// A list of tasks (Fuel's `tasks.yaml`).
    Tasks,
    /// A graph: a list of tasks, or a mapping with `tasks`, `name`, `node_filter`, ...
    Graph,
    /// A release: Plinth's form (a mapping) or Nailgun's fixture (a list of entries).
    Release,
    /// A plugin file (`name`, `version`, `node_roles`, `graphs`, `deployment_tasks`, ...).
    Plugin,
    /// A cluster file (`name`, `settings`, `graphs`, `nodes`, ...).
    Cluster,
    /// One role's metadata.
    Role,
}

/// One unknown key: where it is and what it may have meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// The path to the key, the key last.
    pub path: Vec<PathStep>,
    /// The key as written.
    pub key: String,
    /// What holds it, in words (`a node`, `task "db"`, `the parameters of shell task "db"`).
    pub within: String,
    /// The nearest known key, when one is close.
    pub nearest: Option<&'static str>,
    /// Every key known there.
    pub known: Vec<&'static str>,
}

/// The shape of a value: which keys a mapping knows, and the shapes of their values.
#[derive(Clone, Copy)]
enum Shape {
    /// Anything: the author's own keys, or a value kept as written.
    Open,
    /// A mapping of these keys (in words: the first), each value of its shape.
    Keys(&'static str, &'static [(&'static str, Shape)]),
    /// A mapping of the keys of both lists.
    KeysAnd(
        &'static str,
        &'static [(&'static str, Shape)],
        &'static [(&'static str, Shape)],
    ),
    /// A mapping of names the author chooses (roles, graph types), each value of this shape.
    Named(&'static Shape),
    /// A list of this shape (one value alone too, as `cross-depends: {name: x}`).
    List(&'static Shape),
    /// A task: its keys, and its parameters by its type.
    Task,
    /// A mapping of these keys when it has `condition` (a restriction: a string, `{condition:
    /// message}`, or `{condition, message, action}`).
    WithCondition(&'static [(&'static str, Shape)]),
}

use Shape::{Keys, KeysAnd, List, Named, Open, Task as TaskShape, WithCondition};

const CROSS_DEP: Shape = Keys(
    "a cross-node dependency",
    &[
        ("name", Open),
        ("role", Open),
        ("tags", Open),
        ("policy", Open),
    ],
);

/// A task's keys: Plinth's, with Fuel's hyphenated spellings and the fields Fuel's tasks carry that
/// Plinth keeps (`test_pre`, `test_post`, `refresh_on`, `reexecute_on`), and `stage` of a plugin's
/// old-format tasks.
const TASK_KEYS: &[(&str, Shape)] = &[
    ("id", Open),
    ("type", Open),
    ("version", Open),
    ("tags", Open),
    ("roles", Open),
    ("role", Open),
    ("groups", Open),
    ("tasks", Open),
    ("requires", Open),
    ("required_for", Open),
    ("cross_depends", List(&CROSS_DEP)),
    ("cross-depends", List(&CROSS_DEP)),
    ("cross_depended_by", List(&CROSS_DEP)),
    ("cross-depended-by", List(&CROSS_DEP)),
    ("condition", Open),
    ("parameters", Open),
    ("fault_tolerance", Open),
    ("test_pre", Open),
    ("test_post", Open),
    ("refresh_on", Open),
    ("reexecute_on", Open),
    ("stage", Open),
];

const STRATEGY: Shape = Keys("a strategy", &[("type", Open), ("amount", Open)]);

/// Parameters every type takes: the agent's retry policy and the controller's concurrency.
const COMMON_PARAMETERS: &[(&str, Shape)] = &[
    ("timeout", Open),
    ("retries", Open),
    ("interval", Open),
    ("strategy", STRATEGY),
];

const COPY_ENTRY: Shape = Keys(
    "a file to copy",
    &[
        ("src", Open),
        ("dst", Open),
        ("permissions", Open),
        ("dir_permissions", Open),
    ],
);

const DISK_WANT: Shape = Keys(
    "an expected disk",
    &[("size_gb", Open), ("rotational", Open)],
);

const NIC_WANT: Shape = Keys(
    "an expected NIC",
    &[("speed_mbps", Open), ("link_up", Open)],
);

/// The parameters of each type Plinth runs, besides [`COMMON_PARAMETERS`]; `None`: not checked.
fn type_parameters(task_type: &str) -> Option<&'static [(&'static str, Shape)]> {
    let own: &'static [(&'static str, Shape)] = match task_type {
        "shell" | "master_shell" => &[("cmd", Open), ("cwd", Open), ("env", Open)],
        "puppet" => &[
            ("puppet_manifest", Open),
            ("puppet_modules", Open),
            ("cwd", Open),
            ("puppet_debug", Open),
        ],
        "upload_file" => &[
            ("path", Open),
            ("data", Open),
            ("content", Open),
            ("encoding", Open),
            ("permissions", Open),
            ("dir_permissions", Open),
            ("overwrite", Open),
            ("owner", Open),
            ("user_owner", Open),
            ("group_owner", Open),
        ],
        "copy_files" => &[
            ("files", List(&COPY_ENTRY)),
            ("permissions", Open),
            ("dir_permissions", Open),
        ],
        "sync" => &[
            ("src", Open),
            ("dst", Open),
            ("delete", Open),
            ("dir_permissions", Open),
        ],
        "reboot" => &[],
        "provision" => &[
            ("image", Open),
            ("checksum", Open),
            ("root_device", Open),
            ("root_partition", Open),
            ("grow_last_partition", Open),
            ("hostname", Open),
            ("network", Open),
            ("ssh_authorized_keys", Open),
        ],
        "erase_node" => &[
            ("disks", Open),
            ("whole", Open),
            ("allow_running_system", Open),
        ],
        "check_hardware" => &[
            ("cpus", Open),
            ("memory_mb", Open),
            ("disks", List(&DISK_WANT)),
            ("nics", List(&NIC_WANT)),
            ("arch", Open),
        ],
        // Fuel's own parameters, which Plinth's step does not use.
        "move_to_bootstrap" => &[("slave_name", Open), ("provisioning_info", Open)],
        "boot_device" => &[
            ("device", Open),
            ("once", Open),
            ("without_enrollment", Open),
        ],
        "group" | "stage" => &[("reason", Open)],
        _ => return None,
    };
    Some(own)
}

const LIMIT_OVERRIDE: Shape = Keys(
    "a limit override",
    &[
        ("condition", Open),
        ("min", Open),
        ("max", Open),
        ("recommended", Open),
        ("message", Open),
    ],
);

const LIMITS: Shape = Keys(
    "a role's limits",
    &[
        ("min", Open),
        ("max", Open),
        ("recommended", Open),
        ("overrides", List(&LIMIT_OVERRIDE)),
    ],
);

const RESTRICTION: Shape =
    WithCondition(&[("condition", Open), ("message", Open), ("action", Open)]);

/// A role's keys besides `metadata`: Plinth's, and the rest of Nailgun's role schema and seed 003's
/// plugin roles (`volumes_mapping`).
const ROLE_FLAT_KEYS: &[(&str, Shape)] = &[
    ("name", Open),
    ("description", Open),
    ("tags", Open),
    ("conflicts", Open),
    ("limits", LIMITS),
    ("restrictions", List(&RESTRICTION)),
    ("weight", Open),
    ("group", Open),
    ("has_primary", Open),
    ("public_ip_required", Open),
    ("public_for_dvr_required", Open),
    ("update_required", Open),
    ("update_once", Open),
    ("fault_tolerance", Open),
    ("volumes_mapping", Open),
];

const ROLE_FLAT: Shape = Keys("a role", ROLE_FLAT_KEYS);

const ROLE: Shape = KeysAnd("a role", ROLE_FLAT_KEYS, &[("metadata", ROLE_FLAT)]);

const TAG: Shape = Keys("a tag", &[("name", Open), ("has_primary", Open)]);

const GRAPH: Shape = Keys(
    "a graph",
    &[
        ("name", Open),
        ("tasks", List(&TaskShape)),
        ("node_filter", Open),
        ("on_success", Open),
        ("on_error", Open),
        ("on_stop", Open),
    ],
);

/// A release's keys: Plinth's, and the rest of Nailgun's release (which Plinth keeps or ignores).
const RELEASE_KEYS: &[(&str, Shape)] = &[
    ("name", Open),
    ("version", Open),
    ("roles_metadata", Named(&ROLE)),
    ("tags_metadata", Named(&TAG)),
    ("volumes_metadata", Open),
    ("attributes_metadata", Open),
    ("graphs", Named(&GRAPH)),
    ("description", Open),
    ("state", Open),
    ("operating_system", Open),
    ("networks_metadata", Open),
    ("network_roles_metadata", Open),
    ("modes_metadata", Open),
    ("modes", Open),
    ("roles", Open),
    ("components_metadata", Open),
    ("required_component_types", Open),
    ("node_attributes", Open),
    ("nic_attributes", Open),
    ("bond_attributes", Open),
    ("vmware_attributes_metadata", Open),
    ("wizard_metadata", Open),
    ("extensions", Open),
    ("is_deployable", Open),
    ("can_update_from_versions", Open),
    ("deployment_tasks", List(&TaskShape)),
];

const RELEASE: Shape = Keys("a release", RELEASE_KEYS);

const FIXTURE_ENTRY: Shape = Keys(
    "a fixture entry",
    &[
        ("pk", Open),
        ("model", Open),
        // An alias of another entry, checked where it is written.
        ("extend", Open),
        ("fields", RELEASE),
    ],
);

const PLUGIN: Shape = Keys(
    "a plugin",
    &[
        ("name", Open),
        ("version", Open),
        ("metadata", Open),
        ("node_roles", Named(&ROLE)),
        ("roles_metadata", Named(&ROLE)),
        ("tags_metadata", Named(&TAG)),
        ("volumes", Open),
        ("volumes_metadata", Open),
        ("graphs", Named(&GRAPH)),
        ("deployment_tasks", List(&TaskShape)),
        ("tasks", List(&TaskShape)),
        // The rest of a Fuel plugin's `metadata.yaml`, given at the top as that file has it.
        ("title", Open),
        ("description", Open),
        ("releases", Open),
        ("package_version", Open),
        ("fuel_version", Open),
        ("licenses", Open),
        ("authors", Open),
        ("homepage", Open),
        ("groups", Open),
        ("is_hotpluggable", Open),
    ],
);

const NODE: Shape = Keys(
    "a node",
    &[
        ("id", Open),
        ("name", Open),
        ("roles", Open),
        ("pending_roles", Open),
        ("deployed_roles", Open),
        ("tags_added", Open),
        ("tags", Open),
        ("tags_removed", Open),
        ("primary_tags", Open),
        ("labels", Open),
        ("rack", Open),
        ("status", Open),
        ("error_type", Open),
        ("pending_addition", Open),
        ("pending_deletion", Open),
        ("facts", Open),
    ],
);

const CLUSTER: Shape = Keys(
    "a cluster",
    &[
        ("id", Open),
        ("name", Open),
        ("release", Open),
        ("plugins", Open),
        ("settings", Open),
        ("generated", Open),
        ("roles_metadata", Named(&ROLE)),
        ("tags_metadata", Named(&TAG)),
        ("graphs", Named(&GRAPH)),
        ("status", Open),
        ("nodes", List(&NODE)),
    ],
);

/// Every unknown key of `document`, read as a document of `kind`, in the document's order.
pub fn unknown_keys(kind: DocumentKind, document: &Value) -> Vec<UnknownKey> {
    let shape = match (kind, document) {
        (DocumentKind::Tasks, _) | (DocumentKind::Graph, Value::Array(_)) => List(&TaskShape),
        (DocumentKind::Graph, _) => GRAPH,
        (DocumentKind::Release, Value::Array(_)) => List(&FIXTURE_ENTRY),
        (DocumentKind::Release, _) => RELEASE,
        (DocumentKind::Plugin, _) => PLUGIN,
        (DocumentKind::Cluster, _) => CLUSTER,
        (DocumentKind::Role, _) => ROLE,
    };
    let mut out = Vec::new();
    walk(shape, document, &mut Vec::new(), &mut out);
    out
}

fn walk(shape: Shape, value: &Value, path: &mut Vec<PathStep>, out: &mut Vec<UnknownKey>) {
    if yaql_expression(value).is_some() {
        return;
    }
    match shape {
        Open => {}
        Keys(within, keys) => check_map(within, keys, &[], value, path, out),
        KeysAnd(within, keys, more) => check_map(within, keys, more, value, path, out),
        WithCondition(keys) => {
            if value.get("condition").is_some() {
                check_map("a restriction", keys, &[], value, path, out);
            }
        }
        Named(inner) => {
            if let Value::Object(map) = value {
                for (name, v) in map {
                    path.push(PathStep::Key(name.clone()));
                    walk(*inner, v, path, out);
                    path.pop();
                }
            }
        }
        List(inner) => match value {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(PathStep::Index(i));
                    walk(*inner, item, path, out);
                    path.pop();
                }
            }
            Value::Object(_) => walk(*inner, value, path, out),
            _ => {}
        },
        TaskShape => check_task(value, path, out),
    }
}

/// Checks a mapping's keys against `keys` and `more`, then walks the known keys' values.
fn check_map(
    within: &str,
    keys: &'static [(&'static str, Shape)],
    more: &'static [(&'static str, Shape)],
    value: &Value,
    path: &mut Vec<PathStep>,
    out: &mut Vec<UnknownKey>,
) {
    let Value::Object(map) = value else {
        return;
    };
    for (key, v) in map {
        path.push(PathStep::Key(key.clone()));
        match keys.iter().chain(more).find(|(k, _)| k == key) {
            Some((_, shape)) => walk(*shape, v, path, out),
            None => {
                let known: Vec<&'static str> = keys.iter().chain(more).map(|(k, _)| *k).collect();
                out.push(UnknownKey {
                    path: path.clone(),
                    key: key.clone(),
                    within: within.to_string(),
                    nearest: nearest(key, &known),
                    known,
                });
            }
        }
        path.pop();
    }
}

fn check_task(value: &Value, path: &mut Vec<PathStep>, out: &mut Vec<UnknownKey>) {
    let Value::Object(map) = value else {
        return;
    };
    let named = match map.get("id").and_then(Value::as_str) {
        Some(id) => format!("task {id:?}"),
        None => "a task".to_string(),
    };
    check_map(&named, TASK_KEYS, &[], value, path, out);
    let Some(parameters) = map.get("parameters") else {
        return;
    };
    // No type written: a task kept for ordering, as `skipped`.
    let Some(task_type) = map.get("type").map_or(Some("skipped"), Value::as_str) else {
        return;
    };
    let Some(own) = type_parameters(task_type) else {
        return;
    };
    let within = match map.get("id").and_then(Value::as_str) {
        Some(id) => format!("the parameters of {task_type} task {id:?}"),
        None => format!("the parameters of a {task_type} task"),
    };
    path.push(PathStep::Key("parameters".into()));
    if yaql_expression(parameters).is_none() {
        check_map(&within, own, COMMON_PARAMETERS, parameters, path, out);
    }
    path.pop();
}

/// The known key nearest to `key`, when one is close: the same once case and `-`/`_` are set aside,
/// else the fewest edits (a swap of two letters is one), at most 1 for keys of up to 4 letters, 2 up to
/// 8, and 3 beyond.
fn nearest(key: &str, known: &[&'static str]) -> Option<&'static str> {
    let norm = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    let wanted = norm(key);
    let limit = match wanted.chars().count() {
        0..=4 => 1,
        5..=8 => 2,
        _ => 3,
    };
    known
        .iter()
        .map(|k| (strsim::osa_distance(&wanted, &norm(k)), *k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// A path as the findings write it: `tasks[3].parameters.timout` (`root` names a list at the top).
pub fn path_text(root: &str, path: &[PathStep]) -> String {
    let mut out = String::new();
    for (i, step) in path.iter().enumerate() {
        match step {
            PathStep::Index(n) => {
                if i == 0 {
                    out.push_str(root);
                }
                out.push_str(&format!("[{n}]"));
            }
            PathStep::Key(k) => {
                let plain = !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if plain {
                    if i > 0 {
                        out.push('.');
                    }
                    out.push_str(k);
                } else {
                    out.push_str(&format!("[{k:?}]"));
                }
            }
        }
    }
    out
}

/// The findings of [`unknown_keys`]: warnings naming `source` (the file or upload), the line when `text`
/// (the document as written) is given and parses, the path, and the nearest known key.
pub fn key_findings(
    kind: DocumentKind,
    document: &Value,
    text: Option<&str>,
    source: &str,
) -> Vec<Finding> {
    let unknown = unknown_keys(kind, document);
    if unknown.is_empty() {
        return Vec::new();
    }
    let marked = text.and_then(Marked::parse);
    let root = match kind {
        DocumentKind::Tasks | DocumentKind::Graph => "tasks",
        _ => "",
    };
    unknown
        .into_iter()
        .map(|u| {
            let line = marked.as_ref().and_then(|m| m.line_of(&u.path));
            let path = path_text(root, &u.path);
            let hint = match u.nearest {
                Some(k) => format!("did you mean `{k}`?"),
                None => format!("known keys: {}", u.known.join(", ")),
            };
            let place = match line {
                Some(l) => format!("{source}:{l}"),
                None => source.to_string(),
            };
            Finding::warning(
                UNKNOWN_KEY,
                format!(
                    "{place}: {path}: unknown key `{}` in {} ({hint})",
                    u.key, u.within
                ),
            )
            .at(source, line, &path)
        })
        .collect()
}

/// [`key_findings`] of a document's text (YAML or JSON); none when the text does not parse (reading it
/// says why).
pub fn text_key_findings(kind: DocumentKind, text: &str, source: &str) -> Vec<Finding> {
    match serde_yaml_ng::from_str::<Value>(text) {
        Ok(document) => key_findings(kind, &document, Some(text), source),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(kind: DocumentKind, text: &str) -> Vec<String> {
        text_key_findings(kind, text, "f.yaml")
            .into_iter()
            .map(|f| f.message)
            .collect()
    }

    #[test]
    fn a_misspelled_task_key_names_the_file_line_path_and_nearest_key() {
        let text = "\
- id: a
  type: shell
  parameters: {cmd: x}
- id: b
  type: shell
  requries: [a]
  parameters: {cmd: y}
";
        let findings = text_key_findings(DocumentKind::Tasks, text, "tasks.yaml");
        assert_eq!(findings.len(), 1, "{findings:?}");
        let f = &findings[0];
        assert_eq!(f.severity, crate::graph::Severity::Warning);
        assert_eq!(f.code, UNKNOWN_KEY);
        assert_eq!(f.file.as_deref(), Some("tasks.yaml"));
        assert_eq!(f.line, Some(6));
        assert_eq!(f.path.as_deref(), Some("tasks[1].requries"));
        assert_eq!(
            f.message,
            "tasks.yaml:6: tasks[1].requries: unknown key `requries` in task \"b\" (did you mean `requires`?)"
        );
    }

    #[test]
    fn parameters_are_checked_by_the_tasks_type() {
        let text = "\
- id: a
  type: shell
  parameters:
    cmd: x
    timout: 10
- {id: b, type: puppet, parameters: {puppet_manifest: m.pp, puppet_module: /etc/puppet}}
- {id: c, type: skipped, parameters: {anything: 1}}
- {id: d, type: cobbler_sync, parameters: {provisioning_info: {}}}
- {id: e, type: copy_files, parameters: {files: [{src: a, dts: /b}]}}
- {id: f, type: shell, parameters: {cmd: x, strategy: {type: parallel, amout: 2}}}
- {id: g, type: shell, parameters: {yaql_exp: '$.x'}}
- {id: h, type: {yaql_exp: '$.t'}, parameters: {whatever: 1}}
";
        let found = messages(DocumentKind::Tasks, text);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert_eq!(
            found[0],
            "f.yaml:5: tasks[0].parameters.timout: unknown key `timout` in the parameters of shell \
             task \"a\" (did you mean `timeout`?)"
        );
        assert!(found[1].starts_with("f.yaml:6: tasks[1].parameters.puppet_module:"));
        assert!(found[1].ends_with("(did you mean `puppet_modules`?)"));
        assert!(
            found[2].contains("tasks[4].parameters.files[0].dts"),
            "{}",
            found[2]
        );
        assert!(found[2].ends_with("(did you mean `dst`?)"));
        assert!(found[3].contains("tasks[5].parameters.strategy.amout"));
        assert!(found[3].ends_with("(did you mean `amount`?)"));
    }

    #[test]
    fn cluster_release_and_plugin_keys() {
        let cluster = "\
name: c1
settings: {anything: {value: 1}}
nodes:
  - id: 1
    pending_roels: [controller]
    labels: {free: form}
";
        let found = messages(DocumentKind::Cluster, cluster);
        assert_eq!(
            found,
            ["f.yaml:5: nodes[0].pending_roels: unknown key `pending_roels` in a node (did you mean \
              `pending_roles`?)"]
        );
        let release = "\
name: r
roles_metadata:
  controller:
    name: C
    limts: {min: 1}
    restrictions:
      - {condition: x, mesage: y}
      - 'settings:a.b == true': a message
tags_metadata: {controller: {has_primary: true}}
graphs:
  default:
    node_fliter: x
    tasks: [{id: a, type: shell, rquires: [], parameters: {cmd: x}}]
";
        let found = messages(DocumentKind::Release, release);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(
            found[0].contains("roles_metadata.controller.limts") && found[0].contains("`limits`")
        );
        assert!(found[1].contains("restrictions[0].mesage") && found[1].contains("`message`"));
        assert!(
            found[2].contains("graphs.default.node_fliter") && found[2].contains("`node_filter`")
        );
        assert!(
            found[3].contains("graphs.default.tasks[0].rquires") && found[3].contains("`requires`")
        );
        let plugin = "\
name: p
version: 1.0.0
title: P
node_roles:
  p-role:
    metadata: {name: P, limts: {min: 1}}
    volumes_mapping: []
deployment_task: []
";
        let found = messages(DocumentKind::Plugin, plugin);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].contains("node_roles.p-role.metadata.limts"));
        assert!(
            found[1].contains("f.yaml:8: deployment_task:")
                && found[1].contains("`deployment_tasks`")
        );
    }

    #[test]
    fn a_key_far_from_any_lists_the_known_keys_and_json_has_paths_without_text() {
        let found = key_findings(
            DocumentKind::Graph,
            &json!({"tasks": [{"id": "a", "type": "reboot", "parameters": {"zzzzzz": 1}}]}),
            None,
            "the upload",
        );
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].line, None);
        assert_eq!(
            found[0].message,
            "the upload: tasks[0].parameters.zzzzzz: unknown key `zzzzzz` in the parameters of reboot \
             task \"a\" (known keys: timeout, retries, interval, strategy)"
        );
    }

    #[test]
    fn nearest_keys() {
        let known = ["requires", "required_for", "roles", "role", "tags"];
        assert_eq!(nearest("requries", &known), Some("requires"));
        assert_eq!(nearest("required-for", &known), Some("required_for"));
        assert_eq!(nearest("Tags", &known), Some("tags"));
        assert_eq!(nearest("rol", &known), Some("role"));
        assert_eq!(nearest("description", &known), None);
    }
}
