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
use plinth_common::model::{parse_release_fixture, Cluster, Graph, Node};
use plinth_common::tags::{cluster_tags, Catalog};
use serde_json::{json, Value};
use std::sync::Arc;

mod support;
use support::{corpus, tasks_under};

/// `attributes_metadata.editable` of the fixture's first release.
fn editable(fixture: &Value) -> Value {
    fn find(v: &Value) -> Option<Value> {
        match v {
            Value::Object(m) => m
                .get("attributes_metadata")
                .and_then(|a| a.get("editable"))
                .cloned()
                .or_else(|| m.values().find_map(find)),
            Value::Array(a) => a.iter().find_map(find),
            _ => None,
        }
    }
    find(fixture).expect("the fixture has editable attributes")
}

#[test]
fn fuels_graph_resolves_with_every_expression_evaluated() {
    let text = std::fs::read_to_string(corpus().join("fuel-web/openstack.yaml")).expect("fixture");
    let mut release = parse_release_fixture(&text, "openstack.yaml").expect("release");
    let tasks = tasks_under(&corpus().join("fuel-library/deployment"));
    release
        .graphs
        .insert("default".into(), Graph::with_tasks(tasks));

    let fixture: Value = serde_yaml_ng::from_str(&text).expect("YAML");
    let mut settings = editable(&fixture);
    settings["additional_components"]["ironic"]["value"] = json!(false);
    settings["additional_components"]["ceilometer"]["value"] = json!(true);
    for section in [
        "base_syslog",
        "cinder",
        "repo_setup",
        "quantum",
        "horizon",
        "keystone",
        "glance",
        "mysql",
        "configuration",
        "rabbit",
        "swift",
        "test_vm_image",
        "nova",
    ] {
        settings[section] = json!({});
    }
    settings["network_scheme"] =
        json!({"transformations": [], "roles": {}, "endpoints": {}, "interfaces": {}});
    for service in [
        "ceilometer",
        "murano",
        "heat",
        "sahara",
        "ironic",
        "murano-cfapi",
    ] {
        settings[service] = json!({"enabled": false});
    }
    let cluster = Cluster {
        name: "fuel".into(),
        release: release.name.clone(),
        settings,
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
    assert!(skipped.contains(&"ceilometer-compute"), "{skipped:?}");
    assert!(!skipped.contains(&"openstack-controller"));
}
