//! Node tags and task matching: the seed's cases and the matching table.

use plinth_common::model::{parse_tasks, Node, Release, RoleMeta, TagMeta};
use plinth_common::tags::{
    cluster_tags, instances, node_tags, Catalog, NodeTags, Placement, PlacementField, TagPattern,
};

fn role(tags: &[&str]) -> RoleMeta {
    RoleMeta {
        tags: tags.iter().map(|t| t.to_string()).collect(),
        ..RoleMeta::default()
    }
}

fn tag(has_primary: bool) -> TagMeta {
    TagMeta {
        has_primary,
        ..TagMeta::default()
    }
}

/// The release of seed 000's examples: controller gives five tags.
fn release() -> Release {
    let mut r = Release {
        name: "seed".into(),
        ..Release::default()
    };
    r.roles_metadata.insert(
        "controller".into(),
        role(&[
            "controller",
            "rabbitmq",
            "database",
            "keystone",
            "neutron",
            "mysql",
        ]),
    );
    r.roles_metadata
        .insert("compute".into(), role(&["compute"]));
    r.roles_metadata.insert("cinder".into(), role(&[]));
    for t in [
        "controller",
        "rabbitmq",
        "database",
        "keystone",
        "neutron",
        "mysql",
    ] {
        r.tags_metadata.insert(t.into(), tag(false));
    }
    r.tags_metadata.insert("compute".into(), tag(false));
    r
}

fn placement(field: PlacementField, entries: &[&str]) -> Placement {
    Placement::new(field, entries).expect("patterns compile")
}

#[test]
fn the_matching_table() {
    let nodes = [
        NodeTags::from_tags(&["primary-controller"]),
        NodeTags::from_tags(&["cinder"]),
        NodeTags::from_tags(&["controller", "compute"]),
        NodeTags::from_tags(&["controller", "cinder"]),
        NodeTags::from_tags(&["compute"]),
    ];
    // pattern, expected per node, expected for the controller's own host
    let table: [(&[&str], [bool; 5], bool); 5] = [
        (&["/.*controller/"], [true, false, true, true, false], false),
        (&["controller"], [false, false, true, true, false], false),
        // re.match anchors at the start: `c.+` does not match `primary-controller`.
        (&["/c.+/"], [false, true, true, true, true], false),
        (&["*"], [true, true, true, true, true], false),
        (
            &["master", "controller"],
            [false, false, true, true, false],
            true,
        ),
    ];
    for (patterns, expected, master) in table {
        let p = placement(PlacementField::Tags, patterns);
        let got: Vec<bool> = nodes.iter().map(|n| p.matches(n)).collect();
        assert_eq!(got, expected, "{patterns:?}");
        assert_eq!(p.matches_master(), master, "{patterns:?} on master");
    }
}

#[test]
fn bad_regex_is_an_error_naming_it() {
    let err = TagPattern::parse("/(unclosed/").unwrap_err();
    assert!(
        err.starts_with("invalid regular expression /(unclosed/"),
        "{err}"
    );
    assert!(matches!(
        TagPattern::parse("/").unwrap(),
        TagPattern::Exact(_)
    ));
}

#[test]
fn roles_expand_to_their_tags_and_their_name() {
    let catalog = Catalog::new(&release(), &[], None);
    let node = Node::new(1, "node-1", &["controller"]);
    let t = node_tags(&node, &catalog);
    let expected = [
        "controller",
        "database",
        "keystone",
        "mysql",
        "neutron",
        "rabbitmq",
    ];
    assert_eq!(
        t.tags.iter().map(String::as_str).collect::<Vec<_>>(),
        expected
    );
    assert_eq!(t.roles.iter().collect::<Vec<_>>(), ["controller"]);
    // A role listing no tags gives its name; pending roles count too.
    let mut node = Node::new(2, "node-2", &[]);
    node.pending_roles = vec!["cinder".into()];
    let t = node_tags(&node, &catalog);
    assert_eq!(t.tags.iter().collect::<Vec<_>>(), ["cinder"]);
}

/// Seed 000's resolver example: `mysql` by tags, `haproxy` by role, `globals` by `/.*/`, on a controller
/// node with an extra `mysql` tag.
#[test]
fn the_seed_resolver_example() {
    let tasks = parse_tasks(
        "- id: mysql\n  type: puppet\n  tags: [controller, mysql]\n\
         - id: haproxy\n  type: puppet\n  role: [controller]\n\
         - id: globals\n  type: puppet\n  role: ['/.*/']\n",
        "seed",
    )
    .expect("tasks");
    let mut r = release();
    r.roles_metadata
        .insert("controller".into(), role(&["controller"]));
    let catalog = Catalog::new(&r, &[], None);
    let mut node = Node::new(1, "node-1", &["controller"]);
    node.tags_added = vec!["mysql".into()];
    let t = node_tags(&node, &catalog);
    for task in &tasks {
        let (field, entries) = task.placement().expect("placed");
        let field = if field == "tags" {
            PlacementField::Tags
        } else {
            PlacementField::Roles
        };
        assert!(
            placement(
                field,
                &entries.0.iter().map(String::as_str).collect::<Vec<_>>()
            )
            .matches(&t),
            "{} goes to node-1",
            task.id
        );
    }
}

/// Seed 000: removing tags from a controller. Tasks by `tags` see only the tags left; tasks by the
/// deprecated `role` still see the implicit role-name tag.
#[test]
fn tag_removal_cases() {
    let catalog = Catalog::new(&release(), &[], None);
    let by_tag = |t: &str| placement(PlacementField::Tags, &[t]);
    let by_role = |t: &str| placement(PlacementField::Roles, &[t]);
    let all = [
        "controller",
        "rabbitmq",
        "database",
        "keystone",
        "neutron",
        "mysql",
    ];

    // Unchanged: every tag of the role applies.
    let node = Node::new(1, "n", &["controller"]);
    let t = node_tags(&node, &catalog);
    for tag in all {
        assert!(by_tag(tag).matches(&t), "{tag}");
    }

    // Everything removed but rabbitmq: only rabbitmq tasks by tag (plus role-name tasks).
    let mut node = Node::new(1, "n", &["controller"]);
    node.tags_removed = all
        .iter()
        .filter(|t| **t != "rabbitmq")
        .map(|t| t.to_string())
        .collect();
    let t = node_tags(&node, &catalog);
    assert_eq!(t.tags.iter().collect::<Vec<_>>(), ["rabbitmq"]);
    assert!(by_tag("rabbitmq").matches(&t));
    for tag in all.iter().filter(|t| **t != "rabbitmq") {
        assert!(!by_tag(tag).matches(&t), "{tag} removed");
    }
    assert!(by_role("controller").matches(&t), "implicit role-name tag");

    // Everything removed: nothing by tag, only what the implicit role-name tag resolves.
    let mut node = Node::new(1, "n", &["controller"]);
    node.tags_removed = all.iter().map(|t| t.to_string()).collect();
    let t = node_tags(&node, &catalog);
    assert!(t.tags.is_empty());
    for tag in all {
        assert!(!by_tag(tag).matches(&t), "{tag}");
    }
    assert!(by_role("controller").matches(&t));
    assert!(by_role("/.*/").matches(&t));
    assert!(!by_role("rabbitmq").matches(&t));

    // Tags may be added regardless of roles.
    let mut node = Node::new(1, "n", &["compute"]);
    node.tags_added = vec!["rabbitmq".into()];
    let t = node_tags(&node, &catalog);
    assert!(by_tag("rabbitmq").matches(&t));
    assert!(by_tag("compute").matches(&t));
}

/// Seed 000's instance tags: matched only exactly, and each node learns who shares its instances.
#[test]
fn mysql_instances() {
    let catalog = Catalog::new(&release(), &[], None);
    let mk = |id: u64, tags: &[&str]| {
        let mut n = Node::new(id, format!("node-{id}"), &[]);
        n.tags_added = tags.iter().map(|t| t.to_string()).collect();
        n
    };
    let nodes = [
        mk(1, &["corosync:1", "mysql:2"]),
        mk(2, &["corosync:2", "mysql:1"]),
        mk(3, &["corosync:2", "mysql:2"]),
    ];
    let tags = cluster_tags(&nodes, &catalog);
    let inst = instances(&tags);
    assert_eq!(inst[&1]["mysql:2"], [1, 3]);
    assert_eq!(inst[&1]["corosync:1"], [1]);
    assert_eq!(inst[&2]["corosync:2"], [2, 3]);
    assert_eq!(inst[&3]["mysql:2"], [1, 3]);
    // Instance tags are not used for resolution except by an exact match.
    let n1 = &tags.nodes[&1];
    assert!(!placement(PlacementField::Tags, &["mysql"]).matches(n1));
    assert!(!placement(PlacementField::Tags, &["/mysql.*/"]).matches(n1));
    assert!(!placement(PlacementField::Tags, &["/.*/"]).matches(n1));
    assert!(placement(PlacementField::Tags, &["mysql:2"]).matches(n1));
    assert!(!placement(PlacementField::Tags, &["mysql:1"]).matches(n1));
}
