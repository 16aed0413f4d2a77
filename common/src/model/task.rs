//! A deployment task in Fuel's on-disk form.

use indexmap::IndexMap;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

use super::computed::{contains_expression, yaql_expression, YAQL_KEY};
use super::list::StringList;

/// The fields that decide where a task runs and in which order, which may be computed per node
/// (`{yaql_exp: ...}`, whole or inside): seed 001 allows an expression "in any task field except for
/// id". Such a field is kept in [`Task::computed`] and resolution computes it per node before placing
/// and ordering (see `common/src/graph/README.md`).
pub const COMPUTABLE_FIELDS: &[&str] = &[
    "type",
    "version",
    "tags",
    "roles",
    "role",
    "groups",
    "tasks",
    "requires",
    "required_for",
    "fault_tolerance",
];

/// One task of a graph, as Fuel writes it in `tasks.yaml` and Nailgun stores it.
///
/// Fields Plinth does not interpret (`test_pre`, `refresh_on`, `reexecute_on`, ...) are kept in
/// [`Task::extra`] in their original order, and written back unchanged. A field of
/// [`COMPUTABLE_FIELDS`] written as (or holding) `{yaql_exp: ...}` is kept in [`Task::computed`] and
/// its typed field stays at its default.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// The task's id, unique within a graph. Never computed.
    pub id: String,
    /// What the task does. A task written without a type (as the seeds' examples are) is kept for
    /// ordering only (`skipped`).
    pub task_type: TaskType,
    /// The task format version (`2.1.0`).
    pub version: Option<String>,
    /// The tags of the nodes the task runs on (seed 000). Wins over `roles`, `role` and `groups`.
    pub tags: Option<StringList>,
    /// Deprecated: roles of the nodes the task runs on, used when `tags` is absent.
    pub roles: Option<StringList>,
    /// Deprecated: the same as `roles` (Fuel writes both spellings).
    pub role: Option<StringList>,
    /// Deprecated: the groups the task belongs to; a task runs on the roles of its groups.
    pub groups: Option<StringList>,
    /// For a task of type `group`: further member tasks, which run on the group's roles too.
    pub tasks: Option<StringList>,
    /// Tasks that run before this one on the same node.
    pub requires: StringList,
    /// Tasks that run after this one on the same node.
    pub required_for: StringList,
    /// Tasks on other nodes (or on this one, `role: self`) that must finish before this one starts.
    pub cross_depends: Option<Dependencies>,
    /// Tasks on other nodes (or on this one) that must wait for this one.
    pub cross_depended_by: Option<Dependencies>,
    /// Whether the task runs; absent means true. A false condition keeps the task in the list as skipped.
    pub condition: Option<Condition>,
    /// The task's parameters; `yaql_exp` values at any depth are computed per node.
    pub parameters: Map<String, Value>,
    /// For a task of type `group`: how many of its nodes may fail before the deployment stops.
    pub fault_tolerance: Option<FaultTolerance>,
    /// Every other field, kept as written (computed like the others when it holds `yaql_exp`).
    pub extra: IndexMap<String, Value>,
    /// The fields of [`COMPUTABLE_FIELDS`] written with `{yaql_exp: ...}`, as written, by name.
    pub computed: IndexMap<String, Value>,
}

/// [`Task`]'s fields as serde reads and writes them (Task's own impls set its computed fields apart
/// first). Keep in step with [`Task`].
#[derive(Serialize, Deserialize)]
#[serde(remote = "Task")]
struct TaskFields {
    id: String,
    #[serde(rename = "type", default)]
    task_type: TaskType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tags: Option<StringList>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    roles: Option<StringList>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    role: Option<StringList>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    groups: Option<StringList>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tasks: Option<StringList>,
    #[serde(default, skip_serializing_if = "StringList::is_empty")]
    requires: StringList,
    #[serde(default, skip_serializing_if = "StringList::is_empty")]
    required_for: StringList,
    #[serde(
        default,
        alias = "cross-depends",
        skip_serializing_if = "Option::is_none"
    )]
    cross_depends: Option<Dependencies>,
    #[serde(
        default,
        alias = "cross-depended-by",
        skip_serializing_if = "Option::is_none"
    )]
    cross_depended_by: Option<Dependencies>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    condition: Option<Condition>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    parameters: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fault_tolerance: Option<FaultTolerance>,
    #[serde(flatten)]
    extra: IndexMap<String, Value>,
    #[serde(skip)]
    computed: IndexMap<String, Value>,
}

impl Task {
    /// A task with only an id and a type; the other fields empty.
    pub fn new(id: impl Into<String>, task_type: TaskType) -> Task {
        Task {
            id: id.into(),
            task_type,
            version: None,
            tags: None,
            roles: None,
            role: None,
            groups: None,
            tasks: None,
            requires: StringList::default(),
            required_for: StringList::default(),
            cross_depends: None,
            cross_depended_by: None,
            condition: None,
            parameters: Map::new(),
            fault_tolerance: None,
            extra: IndexMap::new(),
            computed: IndexMap::new(),
        }
    }

    /// The field matching uses, by precedence: `tags`, else `roles`, else `role`, else `groups`
    /// (a non-empty one wins). Returns the field's name and its values.
    pub fn placement(&self) -> Option<(&'static str, &StringList)> {
        let fields = [
            ("tags", &self.tags),
            ("roles", &self.roles),
            ("role", &self.role),
            ("groups", &self.groups),
        ];
        fields
            .into_iter()
            .find_map(|(name, v)| v.as_ref().filter(|l| !l.is_empty()).map(|l| (name, l)))
    }

    /// True when some field other than `id` holds a computed value.
    pub fn has_computed_fields(&self) -> bool {
        matches!(
            self.condition,
            Some(Condition::Yaql(_)) | Some(Condition::Legacy(_))
        ) || matches!(self.cross_depends, Some(Dependencies::Computed(_)))
            || matches!(self.cross_depended_by, Some(Dependencies::Computed(_)))
            || self.parameters.values().any(contains_expression)
            || self.extra.values().any(contains_expression)
            || !self.computed.is_empty()
    }

    /// True when the task's placement (`tags`, `roles`, `role` or `groups`) is computed per node.
    pub fn has_computed_placement(&self) -> bool {
        ["tags", "roles", "role", "groups"]
            .iter()
            .any(|f| self.computed.contains_key(*f))
    }
}

impl Serialize for Task {
    /// Written as read: a computed field goes back under its own name, in place of its typed default.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.computed.is_empty() {
            return TaskFields::serialize(self, serializer);
        }
        let mut value = TaskFields::serialize(self, serde_json::value::Serializer)
            .map_err(serde::ser::Error::custom)?;
        if let Value::Object(map) = &mut value {
            for (k, v) in &self.computed {
                map.insert(k.clone(), v.clone());
            }
        }
        value.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Task {
    /// Sets the computed fields of [`COMPUTABLE_FIELDS`] apart, then reads the others as written.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut map = Map::<String, Value>::deserialize(deserializer)?;
        if map.get("id").is_some_and(contains_expression) {
            return Err(de::Error::custom(
                "id is never computed (seed 001: an expression may stand in any task field except \
                 for id)",
            ));
        }
        let mut computed = IndexMap::new();
        for field in COMPUTABLE_FIELDS {
            if map.get(*field).is_some_and(contains_expression) {
                if let Some(v) = map.remove(*field) {
                    computed.insert((*field).to_string(), v);
                }
            }
        }
        let mut task = TaskFields::deserialize(Value::Object(map)).map_err(de::Error::custom)?;
        task.computed = computed;
        Ok(task)
    }
}

/// What a task does. The kinds the agent runs, Fuel's anchors, and any other type (kept by name so that
/// Fuel's provisioning and deletion graphs load; such tasks run on the controller or not at all).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TaskType {
    /// `puppet apply` of a manifest.
    Puppet,
    /// A shell command.
    Shell,
    /// Write a file.
    UploadFile,
    /// Copy files served by the controller.
    CopyFiles,
    /// Synchronise a directory served by the controller.
    Sync,
    /// Reboot and wait for the node.
    Reboot,
    /// Write an operating system image to the node's disk and reboot into it.
    Provision,
    /// Wipe the node's disk on the way out (Fuel's name).
    EraseNode,
    /// Compare the node's hardware with an expected profile.
    CheckHardware,
    /// Make the node boot its discovery image next and reboot it (Fuel's name).
    MoveToBootstrap,
    /// Set the node's next boot device through its BMC.
    BootDevice,
    /// A shell command run on the controller's host once for each node the task targets, with that
    /// node's data (Fuel's name).
    MasterShell,
    /// A group of tasks for some roles (an ordering anchor; no-op on the node).
    Group,
    /// A stage anchor (`deploy_start`, ...; no-op on the node).
    Stage,
    /// A task kept only for ordering (no-op).
    Skipped,
    /// Any other type, by name (`cobbler_sync`, ...).
    Other(String),
}

impl Default for TaskType {
    /// No type written: the task orders others and does nothing.
    fn default() -> TaskType {
        TaskType::Skipped
    }
}

impl TaskType {
    /// The type's name as written in YAML.
    pub fn as_str(&self) -> &str {
        match self {
            TaskType::Puppet => "puppet",
            TaskType::Shell => "shell",
            TaskType::UploadFile => "upload_file",
            TaskType::CopyFiles => "copy_files",
            TaskType::Sync => "sync",
            TaskType::Reboot => "reboot",
            TaskType::Provision => "provision",
            TaskType::EraseNode => "erase_node",
            TaskType::CheckHardware => "check_hardware",
            TaskType::MoveToBootstrap => "move_to_bootstrap",
            TaskType::BootDevice => "boot_device",
            TaskType::MasterShell => "master_shell",
            TaskType::Group => "group",
            TaskType::Stage => "stage",
            TaskType::Skipped => "skipped",
            TaskType::Other(name) => name,
        }
    }

    /// The type named `name` (unknown names become [`TaskType::Other`]).
    pub fn from_name(name: &str) -> TaskType {
        match name {
            "puppet" => TaskType::Puppet,
            "shell" => TaskType::Shell,
            "upload_file" => TaskType::UploadFile,
            "copy_files" => TaskType::CopyFiles,
            "sync" => TaskType::Sync,
            "reboot" => TaskType::Reboot,
            "provision" => TaskType::Provision,
            "erase_node" => TaskType::EraseNode,
            "check_hardware" => TaskType::CheckHardware,
            "move_to_bootstrap" => TaskType::MoveToBootstrap,
            "boot_device" => TaskType::BootDevice,
            "master_shell" => TaskType::MasterShell,
            "group" => TaskType::Group,
            "stage" => TaskType::Stage,
            "skipped" => TaskType::Skipped,
            other => TaskType::Other(other.to_string()),
        }
    }

    /// True for anchors and skipped tasks, which do nothing on a node.
    pub fn is_noop(&self) -> bool {
        matches!(self, TaskType::Group | TaskType::Stage | TaskType::Skipped)
    }
}

impl fmt::Display for TaskType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for TaskType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        if name.is_empty() {
            return Err(de::Error::custom("task type is empty"));
        }
        Ok(TaskType::from_name(&name))
    }
}

/// How a cross-node dependency treats the tasks it names.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Wait for every matching task on every matching node.
    #[default]
    All,
    /// Wait for any one of them.
    Any,
}

/// One entry of `cross_depends` / `cross_depended_by`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossDep {
    /// A task name, or `/regex/` matched at the start of task names.
    pub name: String,
    /// The nodes concerned by role/tag (`self` is the same node); absent means every node.
    #[serde(default, alias = "roles", skip_serializing_if = "Option::is_none")]
    pub role: Option<StringList>,
    /// The nodes concerned by tag; wins over `role`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<StringList>,
    /// Wait for all of them (default) or any one.
    #[serde(default)]
    pub policy: Policy,
}

impl CrossDep {
    /// A dependency on `name` on every node, policy all.
    pub fn new(name: impl Into<String>) -> CrossDep {
        CrossDep {
            name: name.into(),
            role: None,
            tags: None,
            policy: Policy::All,
        }
    }

    /// The node selector: `tags` if given, else `role`.
    pub fn selector(&self) -> Option<&StringList> {
        self.tags.as_ref().or(self.role.as_ref())
    }

    /// True when the dependency concerns only the same node (`role: self`).
    pub fn is_self(&self) -> bool {
        self.selector()
            .is_some_and(|s| s.as_slice().len() == 1 && s.as_slice()[0] == "self")
    }
}

/// A `cross_depends` / `cross_depended_by` field: a plain list, or a value computed per node (the whole
/// field or something inside it is `{yaql_exp: ...}`), which must compute to such a list.
#[derive(Debug, Clone, PartialEq)]
pub enum Dependencies {
    /// The entries, as written.
    Static(Vec<CrossDep>),
    /// The field as written, with its `yaql_exp` values.
    Computed(Value),
}

impl Dependencies {
    /// Reads the field from a computed (or plain) JSON value.
    pub fn from_value(value: Value) -> Result<Dependencies, String> {
        if contains_expression(&value) {
            return Ok(Dependencies::Computed(value));
        }
        Self::parse_list(value).map(Dependencies::Static)
    }

    /// Parses a plain value (null, a mapping or a list of mappings) into entries.
    pub fn parse_list(value: Value) -> Result<Vec<CrossDep>, String> {
        let value = match value {
            Value::Null => return Ok(Vec::new()),
            Value::Object(_) => Value::Array(vec![value]),
            other => other,
        };
        serde_json::from_value(value)
            .map_err(|e| format!("expected a list of {{name, role|tags, policy}} entries: {e}"))
    }
}

impl Serialize for Dependencies {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Dependencies::Static(list) => list.serialize(serializer),
            Dependencies::Computed(value) => value.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Dependencies {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Dependencies::from_value(value).map_err(de::Error::custom)
    }
}

/// A task's `condition`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// A fixed value.
    Bool(bool),
    /// `{yaql_exp: EXPR}`: computed per node.
    Yaql(String),
    /// A plain string: Nailgun's older expression form, handed to the evaluator like a YAQL one.
    Legacy(String),
}

impl Serialize for Condition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Condition::Bool(b) => serializer.serialize_bool(*b),
            Condition::Legacy(s) => serializer.serialize_str(s),
            Condition::Yaql(s) => {
                let mut map = Map::new();
                map.insert(YAQL_KEY.to_string(), Value::String(s.clone()));
                map.serialize(serializer)
            }
        }
    }
}

impl<'de> Deserialize<'de> for Condition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if let Some(expr) = yaql_expression(&value) {
            return Ok(Condition::Yaql(expr.to_string()));
        }
        match value {
            Value::Bool(b) => Ok(Condition::Bool(b)),
            Value::String(s) => Ok(Condition::Legacy(s)),
            other => Err(de::Error::custom(format!(
                "condition must be true, false, a string or {{yaql_exp: ...}}, not {other}"
            ))),
        }
    }
}

/// How many nodes of a group may fail: a count, a percentage (`"2%"`), or a negative count meaning
/// "all but that many".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultTolerance {
    /// At most this many nodes; negative: all nodes but `-n`.
    Count(i64),
    /// At most this percentage of the nodes (rounded down); negative: all but that percentage.
    Percent(i64),
}

impl FaultTolerance {
    /// How many of `total` nodes may fail.
    pub fn allowed_failures(self, total: usize) -> usize {
        let total_i = i64::try_from(total).unwrap_or(i64::MAX);
        let n = match self {
            FaultTolerance::Count(n) if n >= 0 => n,
            FaultTolerance::Count(n) => total_i.saturating_add(n),
            FaultTolerance::Percent(p) if p >= 0 => total_i.saturating_mul(p) / 100,
            FaultTolerance::Percent(p) => total_i.saturating_add(total_i.saturating_mul(p) / 100),
        };
        usize::try_from(n.clamp(0, total_i)).unwrap_or(0)
    }

    /// Parses `"N%"`, `"N"` or `"-N"`.
    pub fn parse(text: &str) -> Result<FaultTolerance, String> {
        let t = text.trim();
        let bad =
            || format!("fault_tolerance {text:?} is neither a count nor a percentage like \"2%\"");
        match t.strip_suffix('%') {
            Some(p) => p
                .trim()
                .parse()
                .map(FaultTolerance::Percent)
                .map_err(|_| bad()),
            None => t.parse().map(FaultTolerance::Count).map_err(|_| bad()),
        }
    }
}

impl fmt::Display for FaultTolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultTolerance::Count(n) => write!(f, "{n}"),
            FaultTolerance::Percent(p) => write!(f, "{p}%"),
        }
    }
}

impl Serialize for FaultTolerance {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            FaultTolerance::Count(n) => serializer.serialize_i64(*n),
            FaultTolerance::Percent(_) => serializer.serialize_str(&self.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for FaultTolerance {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Number(n) => n.as_i64().map(FaultTolerance::Count).ok_or_else(|| {
                de::Error::custom(format!("fault_tolerance {n} is not a whole number"))
            }),
            Value::String(s) => FaultTolerance::parse(&s).map_err(de::Error::custom),
            other => Err(de::Error::custom(format!(
                "fault_tolerance must be a count or \"N%\", not {other}"
            ))),
        }
    }
}

/// How the nodes run a task: one node at a time, or in parallel with an optional limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StrategyKind {
    /// One node at a time.
    OneByOne,
    /// Several nodes at once (at most `amount` when given).
    Parallel,
}

/// A task's `parameters.strategy`: the concurrency the controller enforces across nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Concurrency {
    /// One by one or parallel.
    #[serde(rename = "type")]
    pub kind: StrategyKind,
    /// For parallel: at most this many nodes at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<u64>,
}

impl Concurrency {
    /// Reads `strategy` from (computed) parameters; `Ok(None)` when there is none.
    pub fn from_parameters(parameters: &Map<String, Value>) -> Result<Option<Concurrency>, String> {
        let Some(value) = parameters.get("strategy") else {
            return Ok(None);
        };
        if value.is_null() {
            return Ok(None);
        }
        let Some(map) = value.as_object() else {
            return Err(format!(
                "parameters.strategy must be a mapping, not {value}"
            ));
        };
        let kind = match map.get("type").and_then(Value::as_str) {
            Some("one_by_one") => StrategyKind::OneByOne,
            Some("parallel") => StrategyKind::Parallel,
            other => {
                return Err(format!(
                    "parameters.strategy.type must be one_by_one or parallel, not {}",
                    other.map_or_else(|| "absent".to_string(), |s| format!("{s:?}"))
                ))
            }
        };
        let amount = match map.get("amount") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => match n.as_u64() {
                Some(a) if a > 0 => Some(a),
                _ => {
                    return Err(format!(
                        "parameters.strategy.amount must be a positive whole number, not {n}"
                    ))
                }
            },
            Some(Value::String(s)) => match s.trim().parse::<u64>() {
                Ok(a) if a > 0 => Some(a),
                _ => {
                    return Err(format!(
                        "parameters.strategy.amount must be a positive whole number, not {s:?}"
                    ))
                }
            },
            Some(other) => {
                return Err(format!(
                    "parameters.strategy.amount must be a positive whole number, not {other}"
                ))
            }
        };
        Ok(Some(Concurrency { kind, amount }))
    }
}
