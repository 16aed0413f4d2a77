//! Fuel's whole release graph resolved with the real expression engine: every `yaql_exp` (conditions,
//! computed `cross_depends`, parameters) evaluated per node by `deploy::YaqlFields`, as the controller does,
//! for 3 controllers, 3 computes, 2 cinder nodes and 1 mongo node.
//!
//! The cluster's settings are `openstack.yaml`'s own defaults (its `attributes_metadata.editable`), with
//! ceilometer on (the mongo role needs it) and ironic off. Fuel's expressions also read what Nailgun's
//! network and service serializers computed (`network_scheme`, `rabbit`, `nova`, ...), which Plinth does
//! not compute: the cluster supplies them, here as empty sections, as an operator running Fuel's graph would.

use plinth_common::deploy::{DeployData, OldStates, YaqlFields};
use plinth_common::expr::{Engine, ExprCache};
use plinth_common::graph::{merge_for_cluster, resolve, ResolveRequest, MASTER_NODE_ID};
use plinth_common::tags::{cluster_tags, Catalog};
use std::sync::Arc;

mod support;
use support::{fuel_nodes, fuel_release_and_cluster};

#[test]
fn fuels_graph_resolves_with_every_expression_evaluated() {
    let (release, cluster) = fuel_release_and_cluster();
    let nodes = fuel_nodes(
        1,
        &[
            ("controller", 3),
            ("compute", 3),
            ("cinder", 2),
            ("mongo", 1),
        ],
    );
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
    assert!(skipped.contains(&"ceilometer-compute"), "{skipped:?}");
    assert!(!skipped.contains(&"openstack-controller"));
}
