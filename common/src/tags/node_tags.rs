//! A node's tags: what its roles give, plus the operator's additions, minus the operator's removals.

use serde::Serialize;
use std::collections::BTreeSet;

use super::catalog::Catalog;
use crate::model::Node;

/// The tags a node carries, in two sets.
///
/// `tags` is what the task `tags` field matches: each role's name and tags (the role's name when it lists
/// none), then the operator's additions, minus the operator's removals. `roles` holds the node's role
/// names (roles and pending roles): the implicit role-name tags, which the operator cannot remove. The
/// deprecated `roles` / `role` / `groups` task fields match either set, so a node stripped of every tag
/// still gets the tasks its role names select, and nothing else (seed 000).
///
/// After primary election the primary of tag `t` carries `primary-t` in place of `t` in both sets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct NodeTags {
    /// The explicit tags.
    pub tags: BTreeSet<String>,
    /// The implicit role-name tags.
    pub roles: BTreeSet<String>,
}

impl NodeTags {
    /// Tags given directly (roles empty); handy for tests and offline tools.
    pub fn from_tags<S: AsRef<str>>(tags: &[S]) -> NodeTags {
        NodeTags {
            tags: tags.iter().map(|t| t.as_ref().to_string()).collect(),
            roles: BTreeSet::new(),
        }
    }

    /// True when either set holds `tag`.
    pub fn carries(&self, tag: &str) -> bool {
        self.tags.contains(tag) || self.roles.contains(tag)
    }

    /// Replaces `tag` by `replacement` in both sets, where present.
    pub(crate) fn rename(&mut self, tag: &str, replacement: &str) {
        if self.tags.remove(tag) {
            self.tags.insert(replacement.to_string());
        }
        if self.roles.remove(tag) {
            self.roles.insert(replacement.to_string());
        }
    }
}

/// A node's tags before primary election.
pub fn node_tags(node: &Node, catalog: &Catalog) -> NodeTags {
    let mut out = NodeTags::default();
    for role in node.roles.iter().chain(&node.pending_roles) {
        out.roles.insert(role.clone());
        out.tags.insert(role.clone());
        for tag in catalog.role_tags(role) {
            out.tags.insert(tag.to_string());
        }
    }
    for tag in &node.tags_added {
        out.tags.insert(tag.clone());
    }
    for tag in &node.tags_removed {
        out.tags.remove(tag);
    }
    out
}
