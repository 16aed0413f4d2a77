//! `has_primary` election.

use plinth_common::model::{Node, NodeStatus, Release, RoleMeta, TagMeta};
use plinth_common::tags::{cluster_tags, Catalog, Placement, PlacementField};

fn catalog() -> Catalog {
    let mut r = Release::default();
    r.roles_metadata.insert(
        "controller".into(),
        RoleMeta {
            tags: vec!["controller".into(), "rabbitmq".into()],
            ..RoleMeta::default()
        },
    );
    r.roles_metadata
        .insert("compute".into(), RoleMeta::default());
    for (t, p) in [("controller", true), ("rabbitmq", true), ("compute", false)] {
        r.tags_metadata.insert(
            t.into(),
            TagMeta {
                has_primary: p,
                ..TagMeta::default()
            },
        );
    }
    Catalog::new(&r, &[], None)
}

fn node(id: u64, roles: &[&str], status: NodeStatus) -> Node {
    let mut n = Node::new(id, format!("node-{id}"), roles);
    n.status = status;
    n
}

#[test]
fn lowest_id_when_none_is_ready() {
    let nodes = [
        node(3, &["controller"], NodeStatus::Discover),
        node(2, &["controller"], NodeStatus::Discover),
        node(1, &["compute"], NodeStatus::Discover),
    ];
    let t = cluster_tags(&nodes, &catalog());
    assert_eq!(t.primaries["controller"], 2);
    assert_eq!(t.primaries["rabbitmq"], 2);
    assert!(!t.primaries.contains_key("compute"));
    let primary = &t.nodes[&2];
    assert!(primary.tags.contains("primary-controller"));
    assert!(!primary.tags.contains("controller"));
    assert!(primary.roles.contains("primary-controller"));
    assert!(t.nodes[&3].tags.contains("controller"));
    assert!(!t.nodes[&3].tags.contains("primary-controller"));
    // Tasks for `primary-controller` go to the primary only; `/.*controller/` to both.
    let p = Placement::new(PlacementField::Roles, &["primary-controller"]).unwrap();
    assert!(p.matches(&t.nodes[&2]) && !p.matches(&t.nodes[&3]));
}

#[test]
fn a_ready_node_is_preferred() {
    let nodes = [
        node(1, &["controller"], NodeStatus::Discover),
        node(5, &["controller"], NodeStatus::Ready),
        node(4, &["controller"], NodeStatus::Ready),
    ];
    assert_eq!(cluster_tags(&nodes, &catalog()).primaries["controller"], 4);
}

#[test]
fn the_current_primary_stays_while_it_keeps_the_tag() {
    let mut current = node(7, &["controller"], NodeStatus::Ready);
    current.primary_tags = vec!["controller".into()];
    let nodes = [node(1, &["controller"], NodeStatus::Ready), current.clone()];
    let t = cluster_tags(&nodes, &catalog());
    assert_eq!(t.primaries["controller"], 7);
    // rabbitmq had no primary yet: the lowest ready id gets it.
    assert_eq!(t.primaries["rabbitmq"], 1);

    // When it loses the tag, another node is elected.
    let mut lost = current.clone();
    lost.tags_removed = vec!["controller".into()];
    lost.roles = vec!["compute".into()];
    let t = cluster_tags(
        &[node(1, &["controller"], NodeStatus::Ready), lost],
        &catalog(),
    );
    assert_eq!(t.primaries["controller"], 1);
}

#[test]
fn never_a_node_pending_deletion() {
    let mut leaving = node(1, &["controller"], NodeStatus::Ready);
    leaving.pending_deletion = true;
    leaving.primary_tags = vec!["controller".into()];
    let nodes = [leaving, node(2, &["controller"], NodeStatus::Discover)];
    let t = cluster_tags(&nodes, &catalog());
    assert_eq!(t.primaries["controller"], 2);
    assert!(t.nodes[&1].tags.contains("controller"));

    let mut only = node(1, &["controller"], NodeStatus::Ready);
    only.pending_deletion = true;
    assert!(cluster_tags(&[only], &catalog()).primaries.is_empty());
}

#[test]
fn an_added_tag_takes_part_in_the_election() {
    let mut extra = node(1, &["compute"], NodeStatus::Ready);
    extra.tags_added = vec!["rabbitmq".into()];
    let nodes = [node(2, &["controller"], NodeStatus::Ready), extra];
    let t = cluster_tags(&nodes, &catalog());
    assert_eq!(t.primaries["rabbitmq"], 1);
    assert_eq!(t.primaries["controller"], 2);
    assert!(t.nodes[&1].tags.contains("primary-rabbitmq"));
    assert!(t.nodes[&2].tags.contains("rabbitmq"));
}
