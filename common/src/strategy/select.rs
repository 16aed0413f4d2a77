//! Which nodes a group selects: a selector is the intersection of its criteria, a group's selectors are a
//! union, an empty criterion is ignored, and no selectors (or an empty selector) means every node.

use std::collections::HashMap;

use super::inventory::InventoryNode;
use super::model::{Group, Selector};

impl Selector {
    /// Whether the node matches every criterion this selector gives. Within a criterion any listed value
    /// matches: a name in `node_names`, one of `node_tags`, one of `node_labels`, a rack in `rack_names`.
    pub fn matches(&self, node: &InventoryNode) -> bool {
        (self.node_names.is_empty() || self.node_names.contains(&node.name))
            && self.matches_besides_names(node)
    }

    /// Whether the node matches the tag, label and rack criteria (names left aside).
    fn matches_besides_names(&self, node: &InventoryNode) -> bool {
        (self.node_tags.is_empty() || node.tags.iter().any(|tag| self.node_tags.contains(tag)))
            && (self.node_labels.is_empty()
                || self
                    .node_labels
                    .iter()
                    .any(|label| node.labels.get(&label.key) == Some(&label.value)))
            && (self.rack_names.is_empty()
                || node
                    .rack
                    .as_ref()
                    .is_some_and(|rack| self.rack_names.contains(rack)))
    }
}

impl Group {
    /// Whether the group selects the node (any selector matches; no selectors selects every node).
    pub fn selects(&self, node: &InventoryNode) -> bool {
        self.selectors.is_empty() || self.selectors.iter().any(|selector| selector.matches(node))
    }
}

/// For each group (in strategy order), the positions of the inventory nodes it selects, in inventory order.
pub(crate) fn resolve_members(groups: &[Group], inventory: &[InventoryNode]) -> Vec<Vec<usize>> {
    let by_name: HashMap<&str, usize> = inventory
        .iter()
        .enumerate()
        .map(|(index, node)| (node.name.as_str(), index))
        .collect();
    let mut chosen = vec![false; inventory.len()];
    groups
        .iter()
        .map(|group| {
            if group.selectors.is_empty() || group.selectors.iter().any(Selector::is_all) {
                return (0..inventory.len()).collect();
            }
            let mut members = Vec::new();
            for selector in &group.selectors {
                if selector.node_names.is_empty() {
                    for (index, node) in inventory.iter().enumerate() {
                        if !chosen[index] && selector.matches(node) {
                            chosen[index] = true;
                            members.push(index);
                        }
                    }
                } else {
                    // Start from the named nodes: a long name list must not cost names x inventory.
                    for name in &selector.node_names {
                        if let Some(&index) = by_name.get(name.as_str()) {
                            if !chosen[index] && selector.matches_besides_names(&inventory[index]) {
                                chosen[index] = true;
                                members.push(index);
                            }
                        }
                    }
                }
            }
            for &index in &members {
                chosen[index] = false;
            }
            members.sort_unstable();
            members
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::Label;

    fn inventory() -> Vec<InventoryNode> {
        vec![
            InventoryNode::new("n1").with_tag("control").in_rack("r1"),
            InventoryNode::new("n2")
                .with_tag("compute")
                .in_rack("r1")
                .with_label("zone", "a"),
            InventoryNode::new("n3")
                .with_tag("compute")
                .in_rack("r2")
                .with_label("zone", "b"),
            InventoryNode::new("n4"),
        ]
    }

    fn group(selectors: Vec<Selector>) -> Group {
        Group {
            name: "g".into(),
            critical: false,
            depends_on: vec![],
            selectors,
            success_criteria: None,
        }
    }

    fn names(members: &[usize], inventory: &[InventoryNode]) -> Vec<String> {
        members.iter().map(|&i| inventory[i].name.clone()).collect()
    }

    #[test]
    fn intersection_inside_union_across() {
        let inv = inventory();
        let compute_r1 = Selector {
            node_tags: vec!["compute".into()],
            rack_names: vec!["r1".into()],
            ..Selector::default()
        };
        let zone_b = Selector {
            node_labels: vec![Label::new("zone", "b")],
            ..Selector::default()
        };
        let named = Selector {
            node_names: vec!["n4".into(), "missing".into()],
            ..Selector::default()
        };
        let members = resolve_members(&[group(vec![compute_r1, zone_b, named])], &inv);
        assert_eq!(names(&members[0], &inv), ["n2", "n3", "n4"]);
    }

    #[test]
    fn empty_means_all() {
        let inv = inventory();
        let all = resolve_members(&[group(vec![]), group(vec![Selector::default()])], &inv);
        assert_eq!(all[0].len(), 4);
        assert_eq!(all[1].len(), 4);
        let with_all = group(vec![
            Selector {
                node_names: vec!["n1".into()],
                ..Selector::default()
            },
            Selector::default(),
        ]);
        assert_eq!(resolve_members(&[with_all], &inv)[0].len(), 4);
    }

    #[test]
    fn rackless_node_never_matches_a_rack() {
        let inv = inventory();
        let racks = Selector {
            rack_names: vec!["r1".into(), "r2".into()],
            ..Selector::default()
        };
        assert_eq!(
            names(&resolve_members(&[group(vec![racks])], &inv)[0], &inv),
            ["n1", "n2", "n3"]
        );
    }
}
