//! Instance tags (`mysql:1`): which nodes share each instance.

use std::collections::BTreeMap;

use super::primary::ClusterTags;

/// True for an instance tag (`name:instance`).
pub fn is_instance_tag(tag: &str) -> bool {
    tag.contains(':')
}

/// The tag an instance tag belongs to (`mysql` for `mysql:1`).
pub fn instance_base(tag: &str) -> Option<&str> {
    tag.split_once(':').map(|(base, _)| base)
}

/// For each node, each of its instance tags with the ids of every node carrying the same instance tag
/// (itself included), ascending.
pub fn instances(tags: &ClusterTags) -> BTreeMap<u64, BTreeMap<String, Vec<u64>>> {
    let mut members: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for (id, node) in &tags.nodes {
        for tag in node.tags.iter().filter(|t| is_instance_tag(t)) {
            members.entry(tag).or_default().push(*id);
        }
    }
    let mut out: BTreeMap<u64, BTreeMap<String, Vec<u64>>> = BTreeMap::new();
    for (tag, ids) in &members {
        for id in ids {
            out.entry(*id)
                .or_default()
                .insert(tag.to_string(), ids.clone());
        }
    }
    out
}
