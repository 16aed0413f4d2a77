//! Fuel's whole release graph resolved with the real expression engine: every `yaql_exp` (conditions,
//! computed `cross_depends`, parameters) evaluated per node by `deploy::YaqlFields`, as the controller does,
//! for 3 controllers, 3 computes, 2 cinder nodes and 1 mongo node.
//!
//! The cluster starts as a new cluster of the release does (its `attributes_metadata`, editable and
//! generated, made by the product's own function), with only ceilometer turned on (the mongo role needs
//! it); the deployment data supplies what Nailgun's serializers compute, as the product does.

use plinth_common::deploy::{DeployData, OldStates, YaqlFields};
use plinth_common::expr::{Engine, ExprCache};
use plinth_common::graph::{merge_for_cluster, resolve, ResolveRequest, MASTER_NODE_ID};
use plinth_common::model::{
    new_cluster_attributes, parse_release_fixture, AttributeSite, Cluster, Graph, Node,
};
use plinth_common::tags::{cluster_tags, Catalog};
use serde_json::json;
use std::sync::Arc;

use crate::support;
use support::{corpus, tasks_under};

#[test]
fn fuels_graph_resolves_with_every_expression_evaluated() {
    let text = std::fs::read_to_string(corpus().join("fuel-web/openstack.yaml")).expect("fixture");
    let mut release = parse_release_fixture(&text, "openstack.yaml").expect("release");
    let tasks = tasks_under(&corpus().join("fuel-library/deployment"));
    release
        .graphs
        .insert("default".into(), Graph::with_tasks(tasks));

    // As a new cluster of the release: its attributes_metadata, with only ceilometer turned on.
    let mut random = |buf: &mut [u8]| buf.iter_mut().for_each(|b| *b = 7);
    let attrs = new_cluster_attributes(
        &release.attributes_metadata,
        &json!({"additional_components": {"ceilometer": {"value": true}}}),
        &mut AttributeSite {
            master_ip: "10.20.0.2".into(),
            dns_upstream: vec![],
            ntp_upstream: vec![],
            cluster_id: Some(1),
            release_version: "newton-10.0".into(),
            random: &mut random,
        },
    )
    .expect("the release's attributes generate");
    let cluster = Cluster {
        name: "fuel".into(),
        release: release.name.clone(),
        settings: attrs.editable,
        generated: attrs.generated,
        ..Cluster::default()
    };

    let mut nodes = Vec::new();
    for (role, count) in [
        ("controller", 3),
        ("compute", 3),
        ("cinder", 2),
        ("mongo", 1),
    ] {
        for _ in 0..count {
            let id = nodes.len() as u64 + 1;
            let mut n = Node::new(id, format!("node-{id}"), &[]);
            n.pending_roles = vec![role.to_string()];
            n.pending_addition = true;
            nodes.push(n);
        }
    }
    let catalog = Catalog::new(&release, &[], Some(&cluster));
    let tags = cluster_tags(&nodes, &catalog);
    let data = DeployData::build(1, &cluster, &release, &nodes, &tags);
    let evaluator = YaqlFields::new(
        Arc::new(Engine::new()),
        Arc::new(ExprCache::new()),
        data,
        OldStates::new(),
        false,
    );
    let merged = merge_for_cluster(&release, &[], &cluster, "default").expect("merges");
    let ids: Vec<u64> = nodes.iter().map(|n| n.id).collect();
    let plan = resolve(&ResolveRequest {
        graph_type: "default",
        graph: &merged,
        catalog: &catalog,
        nodes: &nodes,
        selection: Some(&ids),
        evaluator: &evaluator,
    })
    .unwrap_or_else(|e| panic!("Fuel's graph resolves with YAQL: {e}"));

    let tasks_of = |id: u64| -> Vec<&str> {
        plan.node(id)
            .map(|n| n.tasks.iter().map(|t| &*t.id).collect())
            .unwrap_or_default()
    };
    let primary = plan.primaries["controller"];
    assert_eq!(primary, 1, "the lowest id of the new controllers");
    assert!(
        tasks_of(primary).contains(&"primary-openstack-controller"),
        "{:?}",
        tasks_of(primary)
    );
    for controller in 2..=3 {
        assert!(tasks_of(controller).contains(&"openstack-controller"));
    }
    for other in 4..=9 {
        assert!(
            !tasks_of(other).contains(&"openstack-controller"),
            "node {other}"
        );
    }
    assert!(
        tasks_of(primary).len() > tasks_of(2).len(),
        "the primary controller runs the primary-only tasks too"
    );
    assert!(
        plan.node(MASTER_NODE_ID).is_some(),
        "master tasks run on the controller's host"
    );
    // A new cluster: every condition asking `changed(...)` is true, so the tasks run; the ones whose
    // condition reads a disabled service are kept skipped, with the reason.
    let skipped: Vec<&str> = plan
        .nodes
        .iter()
        .flat_map(|n| n.tasks.iter())
        .filter(|t| t.skip_reason.is_some())
        .map(|t| &*t.id)
        .collect();
    // Sahara and murano are off by the release's defaults; ceilometer was turned on.
    assert!(skipped.contains(&"sahara"), "{skipped:?}");
    assert!(skipped.contains(&"murano"), "{skipped:?}");
    assert!(!skipped.contains(&"ceilometer-compute"), "{skipped:?}");
    assert!(!skipped.contains(&"openstack-controller"));
}
