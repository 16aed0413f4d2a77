//! The strategy as data: groups, selectors, success criteria, phases and Plinth's strategy-level settings.
//!
//! These types are what a parsed document turns into ([`crate::strategy::parse_strategy`]) and what the
//! sequencer runs. They serialize to the plain form, which parses back to the same value; deserializing goes
//! through the same validating parser as text does, so a stored strategy is never accepted unchecked.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

/// The `schema` of Shipyard's deployment strategy document.
pub const SHIPYARD_SCHEMA: &str = "shipyard/DeploymentStrategy/v1";

/// Seconds a phase may run before the nodes that have not finished it count as failed, when the strategy
/// does not say. One hour: Shipyard's longest node step (`deploy_timeout`) is 3600 s.
pub const DEFAULT_PHASE_TIMEOUT_SECS: u64 = 3600;

/// How many groups may run at once when the strategy does not say: one, groups are serialized (the seed).
pub const DEFAULT_MAX_CONCURRENT_GROUPS: u32 = 1;

/// Name of the single group used when a deployment has no strategy.
pub const DEFAULT_GROUP_NAME: &str = "default";

/// A deployment strategy: named groups of nodes, deployed in dependency order, each through the phases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "serde_json::Value")]
pub struct Strategy {
    /// The document's name (`metadata.name` in Shipyard's form, `name` in the plain form), if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The groups, in the order the document lists them (which is also the tie-break order among ready groups).
    pub groups: Vec<Group>,
    /// The phases every group goes through, in order; each runs one graph type.
    pub phases: Vec<Phase>,
    /// Seconds each phase may take, unless the phase sets its own `timeout`.
    pub phase_timeout: u64,
    /// How many independent, ready groups may run at the same time (1 = one group at a time).
    pub max_concurrent_groups: u32,
}

/// A named set of nodes deployed together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Group {
    /// The group's unique name.
    pub name: String,
    /// Whether the deployment fails when this group fails.
    pub critical: bool,
    /// Groups that must succeed before this one starts.
    pub depends_on: Vec<String>,
    /// The selectors; a node is in the group when any selector matches it. No selectors selects every node.
    pub selectors: Vec<Selector>,
    /// What the group needs after each phase to count as successful; `None` means it always succeeds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success_criteria: Option<SuccessCriteria>,
}

/// One selector: a node matches when it matches every criterion given (an empty criterion is ignored).
///
/// Within one criterion, a node matches when it matches any of the listed values (as Drydock filters).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Selector {
    /// The node's name is one of these.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub node_names: Vec<String>,
    /// The node carries at least one of these tags.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub node_tags: Vec<String>,
    /// The node carries at least one of these labels (same key, same value).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub node_labels: Vec<Label>,
    /// The node is in one of these racks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rack_names: Vec<String>,
}

/// A node label a selector asks for: `key: value` (or Shipyard's `"key:value"` string).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Label {
    /// The label's key.
    pub key: String,
    /// The value the node's label must have.
    pub value: String,
}

/// A group's success criteria. Every criterion given is checked; any failing one fails the group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuccessCriteria {
    /// At least this percentage (0 to 100) of the group's nodes must have succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percent_successful_nodes: Option<u64>,
    /// At least this many of the group's nodes must have succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum_successful_nodes: Option<u64>,
    /// At most this many of the group's nodes may have not succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum_failed_nodes: Option<u64>,
}

/// One phase of a group's deployment: a name and the graph type it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Phase {
    /// The phase's unique name (`prepare`, `deploy`, ...).
    pub name: String,
    /// The graph type whose tasks the nodes run in this phase.
    pub graph_type: String,
    /// Seconds this phase may take; the strategy's `phase_timeout` when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

impl Strategy {
    /// A strategy with these groups and Plinth's defaults for everything else.
    pub fn from_groups(groups: Vec<Group>) -> Strategy {
        Strategy {
            name: None,
            groups,
            phases: Phase::defaults(),
            phase_timeout: DEFAULT_PHASE_TIMEOUT_SECS,
            max_concurrent_groups: DEFAULT_MAX_CONCURRENT_GROUPS,
        }
    }

    /// The strategy used when a deployment has none: every selected node in one critical group named
    /// `default` that needs 100% of its nodes to succeed (Shipyard's default).
    pub fn all_nodes() -> Strategy {
        Strategy::from_groups(vec![Group {
            name: DEFAULT_GROUP_NAME.to_string(),
            critical: true,
            depends_on: Vec::new(),
            selectors: Vec::new(),
            success_criteria: Some(SuccessCriteria {
                percent_successful_nodes: Some(100),
                ..SuccessCriteria::default()
            }),
        }])
    }

    /// The group with this name.
    pub fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// The phase with this name.
    pub fn phase(&self, name: &str) -> Option<&Phase> {
        self.phases.iter().find(|p| p.name == name)
    }

    /// Seconds the given phase may take: its own `timeout`, else the strategy's `phase_timeout`.
    pub fn timeout_of(&self, phase: &Phase) -> u64 {
        phase.timeout.unwrap_or(self.phase_timeout)
    }
}

impl Phase {
    /// Plinth's default phases: `prepare` (graph type `prepare`), then `deploy` (graph type `deploy`).
    pub fn defaults() -> Vec<Phase> {
        ["prepare", "deploy"]
            .into_iter()
            .map(|name| Phase {
                name: name.to_string(),
                graph_type: name.to_string(),
                timeout: None,
            })
            .collect()
    }
}

impl Selector {
    /// Whether this selector has no criterion at all, so that it selects every node.
    pub fn is_all(&self) -> bool {
        self.node_names.is_empty()
            && self.node_tags.is_empty()
            && self.node_labels.is_empty()
            && self.rack_names.is_empty()
    }
}

impl SuccessCriteria {
    /// Whether no criterion is given (the group then always succeeds).
    pub fn is_empty(&self) -> bool {
        self.percent_successful_nodes.is_none()
            && self.minimum_successful_nodes.is_none()
            && self.maximum_failed_nodes.is_none()
    }
}

impl Label {
    /// A label with this key and value.
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Label {
        Label {
            key: key.into(),
            value: value.into(),
        }
    }
}

/// A label serializes as a one-entry mapping `{key: value}`, which keeps any character in the value.
impl Serialize for Label {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(&self.key, &self.value)?;
        map.end()
    }
}

impl TryFrom<serde_json::Value> for Strategy {
    type Error = crate::strategy::StrategyError;

    fn try_from(value: serde_json::Value) -> Result<Self, Self::Error> {
        crate::strategy::strategy_from_value(&value)
    }
}
