//! Tag CRUD, assignment, conflicts, restrictions and limits (seed 000, seed 003), with the release fixture.

use plinth_common::graph::{EvalContext, FieldEvaluator, NoExpressions, Severity};
use plinth_common::model::{parse_release_fixture, Cluster, Node, Release, TagMeta};
use plinth_common::tags::{
    check_assignment, check_limits, validate_catalog, validate_tag_assignment, validate_tag_create,
    validate_tag_delete, validate_tag_modify, Catalog, TagError,
};
use serde_json::{json, Value};
use std::collections::HashMap;

fn release() -> Release {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/corpus/fuel-web/openstack.yaml"
    ))
    .expect("fixture");
    parse_release_fixture(&text, "openstack.yaml").expect("release")
}

/// Answers cluster expressions from a table; anything else is false.
struct Table(HashMap<&'static str, Value>);

impl FieldEvaluator for Table {
    fn evaluate(&self, _: &EvalContext<'_>, e: &str) -> Result<Value, String> {
        Err(format!("no field expressions here: {e}"))
    }
    fn node_filter(&self, _: &Node, _: &str) -> Result<bool, String> {
        Ok(true)
    }
    fn cluster_expression(&self, e: &str) -> Result<Value, String> {
        Ok(self.0.get(e).cloned().unwrap_or(json!(false)))
    }
}

fn cluster_with_tag(name: &str) -> Cluster {
    let mut c = Cluster {
        release: "r".into(),
        ..Cluster::default()
    };
    c.tags_metadata.insert(name.into(), TagMeta::default());
    c
}

#[test]
fn tag_crud_on_user_defined_tags_only() {
    let r = release();
    let catalog = Catalog::new(&r, &[], Some(&cluster_with_tag("swift")));
    assert!(validate_catalog(&catalog).is_empty());
    assert_eq!(validate_tag_create(&catalog, "memcache"), Ok(()));
    assert_eq!(
        validate_tag_create(&catalog, "swift"),
        Err(TagError::Exists("swift".into()))
    );
    assert_eq!(
        validate_tag_create(&catalog, "primary-x")
            .unwrap_err()
            .to_string(),
        "tag name \"primary-x\" is invalid: `primary-` tags are elected, not defined"
    );
    assert!(validate_tag_create(&catalog, "a b").is_err());
    assert!(validate_tag_create(&catalog, "").is_err());
    assert_eq!(validate_tag_modify(&catalog, "swift"), Ok(()));
    assert_eq!(validate_tag_delete(&catalog, "swift"), Ok(()));
    assert_eq!(
        validate_tag_delete(&catalog, "rabbitmq")
            .unwrap_err()
            .to_string(),
        "tag \"rabbitmq\" is owned by role \"controller\" and cannot be deleted"
    );
    assert_eq!(
        validate_tag_modify(&catalog, "compute")
            .unwrap_err()
            .to_string(),
        "tag \"compute\" is owned by role \"compute\" and cannot be modified"
    );
    assert_eq!(
        validate_tag_delete(&catalog, "nope"),
        Err(TagError::UnknownTag("nope".into()))
    );
}

#[test]
fn tag_assignment() {
    let catalog = Catalog::new(&release(), &[], None);
    assert_eq!(validate_tag_assignment(&catalog, "rabbitmq"), Ok(()));
    assert_eq!(validate_tag_assignment(&catalog, "database:2"), Ok(()));
    assert_eq!(
        validate_tag_assignment(&catalog, "corosync:1"),
        Err(TagError::UnknownTag("corosync".into()))
    );
    assert!(validate_tag_assignment(&catalog, "primary-controller").is_err());
    assert!(validate_tag_assignment(&catalog, "mysql:").is_err());
}

#[test]
fn unknown_tag_in_a_role_is_rejected() {
    let mut r = release();
    r.roles_metadata["compute"].tags.push("hypervisor".into());
    let errors = validate_catalog(&Catalog::new(&r, &[], None));
    assert_eq!(
        errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["role \"compute\" lists tag \"hypervisor\", which is not defined in tags_metadata"]
    );
}

#[test]
fn conflicts_and_restrictions_reject_an_assignment_with_the_roles_message() {
    let catalog = Catalog::new(&release(), &[], None);
    let node = Node::new(4, "node-4", &["controller"]);
    let none = Table(HashMap::new());
    assert_eq!(
        check_assignment(&catalog, &node, "compute", &none)
            .unwrap_err()
            .to_string(),
        "role \"compute\" conflicts with role \"controller\" on node node-4"
    );
    // The other direction: cinder-block-device lists controller among its conflicts.
    assert!(matches!(
        check_assignment(&catalog, &node, "cinder-block-device", &none),
        Err(TagError::Conflict { .. })
    ));
    assert_eq!(check_assignment(&catalog, &node, "cinder", &none), Ok(()));
    let lvm_off = Table(HashMap::from([(
        "settings:storage.volumes_lvm.value == false",
        json!(true),
    )]));
    assert_eq!(
        check_assignment(&catalog, &node, "cinder", &lvm_off)
            .unwrap_err()
            .to_string(),
        "role \"cinder\" cannot be assigned to node node-4: Cinder LVM should be enabled in the environment settings."
    );
    assert_eq!(
        check_assignment(&catalog, &node, "swift", &none),
        Err(TagError::UnknownRole("swift".into()))
    );
    // Without an engine the restriction cannot be judged, and the error says so.
    let err = check_assignment(&catalog, &node, "cinder", &NoExpressions).unwrap_err();
    assert!(
        err.to_string().starts_with("role \"cinder\": restriction"),
        "{err}"
    );
}

#[test]
fn limits_are_checked_before_deployment() {
    let catalog = Catalog::new(&release(), &[], None);
    let table = Table(HashMap::from([
        ("cluster:mode == 'ha_compact'", json!(true)),
        // Ironic, ceph and the experimental mongo are switched off: no nodes needed.
        ("settings:additional_components.ironic.value == false", json!(true)),
        ("settings:storage.volumes_ceph.value == false and settings:storage.images_ceph.value == false and settings:storage.ephemeral_ceph.value == false and settings:storage.objects_ceph.value == false", json!(true)),
    ]));
    let nodes = vec![
        Node::new(1, "node-1", &["compute"]),
        Node::new(2, "node-2", &["mongo"]),
    ];
    let findings = check_limits(&catalog, &nodes, &table);
    let text: Vec<String> = findings.iter().map(ToString::to_string).collect();
    assert!(
        text.contains(
            &"error: role \"controller\" needs at least 1 node(s), 0 assigned".to_string()
        ),
        "{text:#?}"
    );
    assert!(
        text.contains(&"warning: role \"mongo\": 3 node(s) recommended, 1 assigned: At least 3 MongoDB nodes are recommended for HA deployment.".to_string()),
        "{text:#?}"
    );
    assert!(!text.iter().any(|t| t.contains("ironic")), "{text:#?}");
    let mut three = nodes.clone();
    for id in 3..6 {
        three.push(Node::new(id, format!("node-{id}"), &["controller"]));
    }
    let findings = check_limits(&catalog, &three, &table);
    assert!(
        findings.iter().all(|f| f.severity == Severity::Warning),
        "{findings:#?}"
    );
}

/// A node with roles and what it is declared to carry.
fn declared(id: u64, roles: &[&str], tags_added: &[&str], primary_tags: &[&str]) -> Node {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    Node {
        id,
        name: format!("node-{id}"),
        pending_roles: strings(roles),
        tags_added: strings(tags_added),
        primary_tags: strings(primary_tags),
        ..Node::default()
    }
}

#[test]
fn declared_nodes_meet_the_rules_the_controller_applies_to_assignments() {
    let r = release();
    let catalog = Catalog::new(&r, &[], None);
    let fine = [
        declared(1, &["controller"], &[], &["controller"]),
        declared(2, &["controller"], &[], &[]),
    ];
    assert_eq!(
        plinth_common::tags::check_declared_nodes(&catalog, &fine),
        vec![]
    );
    // A second primary-controller, given as a tag or as a second primary: refused as the API
    // refuses the tag, naming the node.
    let second = [
        declared(1, &["controller"], &[], &["controller"]),
        declared(2, &["controller"], &["primary-controller"], &[]),
        declared(3, &["controller"], &[], &["controller"]),
        declared(4, &["no-such-role"], &[], &[]),
    ];
    let errors: Vec<String> = plinth_common::tags::check_declared_nodes(&catalog, &second)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errors,
        [
            format!(
                "node node-2: {}",
                validate_tag_assignment(&catalog, "primary-controller").unwrap_err()
            ),
            "node node-3 cannot be the primary of tag \"controller\": node node-1 is its primary \
             already: a tag has one primary, which the controller elects"
                .to_string(),
            "node node-4: role \"no-such-role\" does not exist".to_string(),
        ]
    );
}
