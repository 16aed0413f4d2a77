//! `has_primary` election: one node of the cluster carries `primary-<tag>` in place of `<tag>`.

use serde::Serialize;
use std::collections::BTreeMap;

use super::catalog::Catalog;
use super::node_tags::{node_tags, NodeTags};
use crate::model::{Node, NodeStatus};

/// The prefix of a primary tag.
pub const PRIMARY_PREFIX: &str = "primary-";

/// Elects the primary of every `has_primary` tag among `nodes` (the whole cluster), given their tags
/// before election (`tags[i]` belongs to `nodes[i]`). Nailgun's rule: a node pending deletion is never
/// primary; the current primary (its `primary_tags` lists the tag) stays while it keeps the tag; otherwise
/// the lowest-id ready node, otherwise the lowest-id node. Returns tag → node id.
pub fn elect_primaries(
    nodes: &[Node],
    tags: &[NodeTags],
    catalog: &Catalog,
) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for tag in catalog.primary_tags() {
        let candidates = || {
            nodes
                .iter()
                .zip(tags)
                .filter(|(n, t)| !n.pending_deletion && t.carries(tag))
                .map(|(n, _)| n)
        };
        let current = candidates().find(|n| n.primary_tags.iter().any(|p| p == tag));
        let chosen = current
            .or_else(|| {
                candidates()
                    .filter(|n| n.status == NodeStatus::Ready)
                    .min_by_key(|n| n.id)
            })
            .or_else(|| candidates().min_by_key(|n| n.id));
        if let Some(node) = chosen {
            out.insert(tag.to_string(), node.id);
        }
    }
    out
}

/// Every node's final tags and the elected primaries.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClusterTags {
    /// Tags by node id, with `primary-<tag>` in place of `<tag>` on each primary.
    pub nodes: BTreeMap<u64, NodeTags>,
    /// The primary of each `has_primary` tag: tag → node id.
    pub primaries: BTreeMap<String, u64>,
}

/// Computes every node's tags (roles, operator changes) and applies the primary election.
pub fn cluster_tags(nodes: &[Node], catalog: &Catalog) -> ClusterTags {
    let base: Vec<NodeTags> = nodes.iter().map(|n| node_tags(n, catalog)).collect();
    let primaries = elect_primaries(nodes, &base, catalog);
    let mut by_node: BTreeMap<u64, NodeTags> = nodes.iter().map(|n| n.id).zip(base).collect();
    for (tag, id) in &primaries {
        if let Some(t) = by_node.get_mut(id) {
            t.rename(tag, &format!("{PRIMARY_PREFIX}{tag}"));
        }
    }
    ClusterTags {
        nodes: by_node,
        primaries,
    }
}
