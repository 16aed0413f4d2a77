//! The node inventory a strategy selects from: each node's name, tags, labels and rack.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::text::from_yaml_or_json;

/// A node as strategies see it. An inventory file is a YAML or JSON list of these.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InventoryNode {
    /// The node's unique name.
    pub name: String,
    /// The node's tags (role names and operator tags).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The node's labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The rack the node is in, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
}

impl InventoryNode {
    /// A node with this name and no tags, labels or rack.
    pub fn new(name: impl Into<String>) -> InventoryNode {
        InventoryNode {
            name: name.into(),
            ..InventoryNode::default()
        }
    }

    /// This node with one more tag.
    pub fn with_tag(mut self, tag: impl Into<String>) -> InventoryNode {
        self.tags.push(tag.into());
        self
    }

    /// This node with one more label.
    pub fn with_label(mut self, key: impl Into<String>, value: impl Into<String>) -> InventoryNode {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// This node in the given rack.
    pub fn in_rack(mut self, rack: impl Into<String>) -> InventoryNode {
        self.rack = Some(rack.into());
        self
    }
}

/// Why an inventory was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum InventoryError {
    /// The text is not a YAML or JSON list of nodes; the message says where.
    #[error("cannot read the node inventory: {0}")]
    Syntax(String),
    /// A node has an empty name.
    #[error("node inventory entry {index} has an empty name")]
    EmptyName {
        /// Position of the node in the inventory (from 0).
        index: usize,
    },
    /// Two nodes have the same name.
    #[error("node inventory entries {first} and {second} are both named {name:?}")]
    DuplicateName {
        /// The repeated name.
        name: String,
        /// Position of the first node with it.
        first: usize,
        /// Position of the second.
        second: usize,
    },
}

/// Reads an inventory (a YAML or JSON list of nodes) and checks its names.
pub fn parse_inventory(text: &str) -> Result<Vec<InventoryNode>, InventoryError> {
    let nodes: Vec<InventoryNode> = from_yaml_or_json(text).map_err(InventoryError::Syntax)?;
    check_inventory(&nodes)?;
    Ok(nodes)
}

/// Checks that every node has a non-empty name and no two share one.
pub fn check_inventory(nodes: &[InventoryNode]) -> Result<(), InventoryError> {
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(nodes.len());
    for (index, node) in nodes.iter().enumerate() {
        if node.name.trim().is_empty() {
            return Err(InventoryError::EmptyName { index });
        }
        if let Some(&first) = seen.get(node.name.as_str()) {
            return Err(InventoryError::DuplicateName {
                name: node.name.clone(),
                first,
                second: index,
            });
        }
        seen.insert(&node.name, index);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_yaml_and_json_lists() {
        let yaml = "- name: n1\n  tags: [control]\n  labels: {zone: a}\n  rack: r1\n- name: n2\n";
        let nodes = parse_inventory(yaml).unwrap();
        assert_eq!(
            nodes[0],
            InventoryNode::new("n1")
                .with_tag("control")
                .with_label("zone", "a")
                .in_rack("r1")
        );
        assert_eq!(nodes[1], InventoryNode::new("n2"));
        let json = r#"[{"name": "n1", "rack": "r1"}]"#;
        assert_eq!(
            parse_inventory(json).unwrap(),
            vec![InventoryNode::new("n1").in_rack("r1")]
        );
    }

    #[test]
    fn rejects_bad_inventories() {
        let error = parse_inventory("- name: n1\n  tag: [x]\n").unwrap_err();
        assert!(error.to_string().contains("unknown field `tag`"), "{error}");
        let error = parse_inventory("- name: n1\n- name: n1\n").unwrap_err();
        assert_eq!(
            error,
            InventoryError::DuplicateName {
                name: "n1".into(),
                first: 0,
                second: 1
            }
        );
        assert_eq!(
            parse_inventory("- name: ''\n").unwrap_err(),
            InventoryError::EmptyName { index: 0 }
        );
        assert!(matches!(
            parse_inventory("name: n1\n"),
            Err(InventoryError::Syntax(_))
        ));
    }
}
