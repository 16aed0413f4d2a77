//! A release: its roles, its tags and its graphs.

use indexmap::IndexMap;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::graph::Graph;

/// A release as Nailgun loads it from `openstack.yaml`: roles, tags, volumes and typed graphs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Release {
    /// The release's name (empty when a file gives none, as seed 000's example).
    #[serde(default)]
    pub name: String,
    /// The release's version (`newton-10.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The roles a node may take, by role name, in the file's order.
    #[serde(default)]
    pub roles_metadata: IndexMap<String, RoleMeta>,
    /// The release's tags, by tag name.
    #[serde(default)]
    pub tags_metadata: IndexMap<String, TagMeta>,
    /// Disk layouts per role, kept as written.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub volumes_metadata: Value,
    /// A new cluster's attributes (Nailgun's `attributes_metadata`: `editable`, the settings, and
    /// `generated`), before the generators run.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub attributes_metadata: Value,
    /// The release's graphs by type (`default`, `provision`, ...).
    #[serde(default)]
    pub graphs: IndexMap<String, Graph>,
}

/// A role: what it is, the tags it gives a node, and the rules for assigning it. Reads both the
/// release's flat form and the plugin form of seed 003, whose name, conflicts, limits, restrictions and
/// tags sit under a `metadata:` block (keys written beside the block win).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RoleMeta {
    /// Its display name.
    #[serde(default)]
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The tags the role gives a node. When empty, the role's own name is its only tag.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Roles that cannot share a node with this one.
    #[serde(default, skip_serializing_if = "Conflicts::is_none")]
    pub conflicts: Conflicts,
    /// How many nodes should carry the role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    /// Conditions under which the role cannot be assigned, with their messages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restrictions: Vec<Restriction>,
    /// Everything else (`weight`, `group`, `update_required`, ...), kept as written.
    #[serde(flatten)]
    pub extra: IndexMap<String, Value>,
}

/// [`RoleMeta`] as written, once a `metadata:` block is lifted.
#[derive(Deserialize)]
struct RoleMetaFields {
    /// Its display name.
    #[serde(default)]
    name: String,
    /// What it does.
    #[serde(default)]
    description: String,
    /// The tags the role gives a node. When empty, the role's own name is its only tag.
    #[serde(default)]
    tags: Vec<String>,
    /// Roles that cannot share a node with this one.
    #[serde(default, skip_serializing_if = "Conflicts::is_none")]
    conflicts: Conflicts,
    /// How many nodes should carry the role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    limits: Option<Limits>,
    /// Conditions under which the role cannot be assigned, with their messages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    restrictions: Vec<Restriction>,
    /// Everything else (`weight`, `group`, `update_required`, ...), kept as written.
    #[serde(flatten)]
    extra: IndexMap<String, Value>,
}

impl<'de> Deserialize<'de> for RoleMeta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut value = Value::deserialize(deserializer)?;
        if let Value::Object(map) = &mut value {
            if let Some(Value::Object(meta)) = map.get("metadata").cloned() {
                map.remove("metadata");
                for (k, v) in meta {
                    map.entry(k).or_insert(v);
                }
            }
        }
        let f: RoleMetaFields = serde_json::from_value(value).map_err(de::Error::custom)?;
        Ok(RoleMeta {
            name: f.name,
            description: f.description,
            tags: f.tags,
            conflicts: f.conflicts,
            limits: f.limits,
            restrictions: f.restrictions,
            extra: f.extra,
        })
    }
}

impl RoleMeta {
    /// The tags a node gets from this role: its `tags`, or its name (`role_name`) when it lists none.
    pub fn tags_or_name<'a>(&'a self, role_name: &'a str) -> Vec<&'a str> {
        if self.tags.is_empty() {
            vec![role_name]
        } else {
            self.tags.iter().map(String::as_str).collect()
        }
    }
}

/// The roles a role conflicts with: none, some, or every other role (`"*"`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Conflicts {
    /// No conflict.
    #[default]
    None,
    /// Conflicts with every other role.
    All,
    /// Conflicts with these roles.
    Roles(Vec<String>),
}

impl Conflicts {
    /// True when there is no conflict.
    pub fn is_none(&self) -> bool {
        matches!(self, Conflicts::None)
    }

    /// True when a role conflicting like this cannot share a node with `other` (a different role).
    pub fn excludes(&self, other: &str) -> bool {
        match self {
            Conflicts::None => false,
            Conflicts::All => true,
            Conflicts::Roles(roles) => roles.iter().any(|r| r == other),
        }
    }
}

impl Serialize for Conflicts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Conflicts::None => Vec::<String>::new().serialize(serializer),
            Conflicts::All => serializer.serialize_str("*"),
            Conflicts::Roles(r) => r.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Conflicts {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Null => Ok(Conflicts::None),
            Value::String(s) if s == "*" => Ok(Conflicts::All),
            Value::String(s) => Ok(Conflicts::Roles(vec![s])),
            Value::Array(items) => {
                let roles: Result<Vec<String>, _> = items
                    .into_iter()
                    .map(|v| match v {
                        Value::String(s) => Ok(s),
                        other => Err(de::Error::custom(format!(
                            "conflicts must list role names, found {other}"
                        ))),
                    })
                    .collect();
                let roles = roles?;
                Ok(if roles.iter().any(|r| r == "*") {
                    Conflicts::All
                } else if roles.is_empty() {
                    Conflicts::None
                } else {
                    Conflicts::Roles(roles)
                })
            }
            other => Err(de::Error::custom(format!(
                "conflicts must be \"*\" or a list of roles, not {other}"
            ))),
        }
    }
}

/// How many nodes a role wants.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// At least this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<LimitValue>,
    /// At most this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<LimitValue>,
    /// This many are recommended (a warning below it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommended: Option<LimitValue>,
    /// Values that replace these under a condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<LimitOverride>,
}

/// A limit: a number, or an expression that evaluates to one (`settings:storage.osd_pool_size.value`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LimitValue {
    /// A fixed number.
    Number(u64),
    /// An expression, evaluated through the evaluation seam.
    Expression(String),
}

/// Limits that apply when `condition` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitOverride {
    /// When the override applies.
    pub condition: String,
    /// The minimum under the condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<LimitValue>,
    /// The maximum under the condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<LimitValue>,
    /// The recommended count under the condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommended: Option<LimitValue>,
    /// What to tell the operator when the override's limit is broken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A restriction: when `condition` holds, the role cannot be assigned (or, with `action: hide`, is hidden).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Restriction {
    /// The condition.
    pub condition: String,
    /// The message shown when it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `disable` (the default), `hide` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

impl Restriction {
    /// True when the restriction forbids assigning the role (its action is `disable`, the default).
    pub fn blocks_assignment(&self) -> bool {
        matches!(self.action.as_deref(), None | Some("disable"))
    }
}

impl<'de> Deserialize<'de> for Restriction {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Nailgun accepts three forms: "condition", {condition: message}, {condition, message, action}.
        match Value::deserialize(deserializer)? {
            Value::String(condition) => Ok(Restriction {
                condition,
                message: None,
                action: None,
            }),
            Value::Object(map) if map.contains_key("condition") => {
                let text = |key: &str| -> Result<Option<String>, D::Error> {
                    match map.get(key) {
                        None | Some(Value::Null) => Ok(None),
                        Some(Value::String(s)) => Ok(Some(s.clone())),
                        Some(other) => Err(de::Error::custom(format!(
                            "restriction {key} must be a string, not {other}"
                        ))),
                    }
                };
                let condition = text("condition")?.unwrap_or_default();
                Ok(Restriction {
                    condition,
                    message: text("message")?,
                    action: text("action")?,
                })
            }
            Value::Object(map) if map.len() == 1 => {
                let (condition, message) = map.into_iter().next().unwrap_or_default();
                Ok(Restriction {
                    condition,
                    message: message.as_str().map(str::to_string),
                    action: None,
                })
            }
            other => Err(de::Error::custom(format!(
                "a restriction must be a condition string or {{condition, message}}, not {other}"
            ))),
        }
    }
}

/// A tag's metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TagMeta {
    /// Its display name, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// One node of the cluster carries `primary-<tag>` instead of `<tag>`.
    #[serde(default)]
    pub has_primary: bool,
    /// Everything else, kept as written.
    #[serde(flatten)]
    pub extra: IndexMap<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_003s_nested_metadata_reads_as_the_flat_form() {
        let nested: RoleMeta = serde_yaml_ng::from_str(
            r#"
metadata:
  name: "Some plugin role"
  description: "Some description"
  conflicts:
    - some_not_compatible_role
  limits:
    min: 1
  restrictions:
    - condition: "some logic condition"
      message: "Some message for restriction warning"
volumes_mapping:
  - {allocate_size: "min", id: "os"}
"#,
        )
        .unwrap();
        assert_eq!(nested.name, "Some plugin role");
        assert!(nested.conflicts.excludes("some_not_compatible_role"));
        assert_eq!(nested.limits.unwrap().min, Some(LimitValue::Number(1)));
        assert_eq!(nested.restrictions[0].condition, "some logic condition");
        assert!(nested.extra.contains_key("volumes_mapping"));
        assert!(!nested.extra.contains_key("metadata"));
    }
}
