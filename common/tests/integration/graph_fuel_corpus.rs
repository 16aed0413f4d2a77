//! Fuel's whole release graph from the corpus: every `tasks.yaml` under `deployment/` merged as the
//! release's `default` graph with `openstack.yaml`'s roles and tags, resolved and ordered for 3
//! controllers, 3 computes, 2 cinder nodes and 1 mongo node. The `graphs/` folders are the release's
//! `provision`, `deletion` and `net-verification` graphs and resolve on their own.
//!
//! The evaluator stands in for the expression engine: every `yaql_exp` condition is true and every other
//! computed value is null (so computed `cross_depends` add nothing and a computed `strategy.amount` sets
//! no limit). Cluster expressions (restrictions, limits) answer false.

use plinth_common::graph::{
    merge, resolve, EvalContext, FieldEvaluator, GraphSource, MergedGraph, Origin, Plan,
    ResolveRequest, MASTER_NODE_ID,
};
use plinth_common::model::{parse_release_fixture, Graph, Node, Release};
use plinth_common::tags::Catalog;
use serde_json::Value;

use crate::support;
use support::{corpus, tasks_under};

/// Conditions true, other computed values null, cluster expressions false.
struct Stub;

impl FieldEvaluator for Stub {
    fn evaluate(&self, context: &EvalContext<'_>, _: &str) -> Result<Value, String> {
        Ok(if context.field_path == "condition" {
            Value::Bool(true)
        } else {
            Value::Null
        })
    }
    fn node_filter(&self, _: &Node, _: &str) -> Result<bool, String> {
        Ok(true)
    }
    fn cluster_expression(&self, _: &str) -> Result<Value, String> {
        Ok(Value::Bool(false))
    }
}

fn release() -> Release {
    let text = std::fs::read_to_string(corpus().join("fuel-web/openstack.yaml")).expect("fixture");
    let mut release = parse_release_fixture(&text, "openstack.yaml").expect("release");
    let lib = corpus().join("fuel-library");
    release.graphs.insert(
        "default".into(),
        Graph::with_tasks(tasks_under(&lib.join("deployment"))),
    );
    for t in ["provision", "deletion", "net-verification"] {
        release.graphs.insert(
            t.into(),
            Graph::with_tasks(tasks_under(&lib.join("graphs").join(t))),
        );
    }
    release
}

fn cluster_nodes() -> Vec<Node> {
    let mut nodes = Vec::new();
    let mut add = |role: &str, count: usize| {
        for _ in 0..count {
            let id = nodes.len() as u64 + 1;
            let mut n = Node::new(id, format!("node-{id}"), &[]);
            n.pending_roles = vec![role.to_string()];
            n.pending_addition = true;
            nodes.push(n);
        }
    };
    add("controller", 3);
    add("compute", 3);
    add("cinder", 2);
    add("mongo", 1);
    nodes
}

fn plan_for(release: &Release, graph_type: &str) -> Plan {
    let origin = Origin::Release;
    let merged: MergedGraph = merge(&[GraphSource {
        origin: &origin,
        graph: &release.graphs[graph_type],
    }])
    .expect("merges");
    let catalog = Catalog::new(release, &[], None);
    let nodes = cluster_nodes();
    let ids: Vec<u64> = nodes.iter().map(|n| n.id).collect();
    resolve(&ResolveRequest {
        graph_type,
        graph: &merged,
        catalog: &catalog,
        nodes: &nodes,
        selection: Some(&ids),
        evaluator: &Stub,
    })
    .unwrap_or_else(|e| panic!("{graph_type}: {e}"))
}

fn ids(plan: &Plan, node: u64) -> Vec<String> {
    plan.node(node)
        .unwrap_or_else(|| panic!("node {node} in plan"))
        .tasks
        .iter()
        .map(|t| t.id.to_string())
        .collect()
}

fn before(list: &[String], a: &str, b: &str) -> bool {
    let pa = list.iter().position(|t| t == a);
    let pb = list.iter().position(|t| t == b);
    matches!((pa, pb), (Some(x), Some(y)) if x < y)
}

#[test]
fn fuel_release_graph_resolves_for_a_realistic_cluster() {
    let release = release();
    let plan = plan_for(&release, "default");
    // The controller's own host runs the `master` tasks; the nine nodes follow.
    assert_eq!(plan.nodes.len(), 10);
    assert_eq!(plan.nodes[0].node_id, MASTER_NODE_ID);
    assert_eq!(plan.primaries["controller"], 1);
    assert_eq!(plan.primaries["mongo"], 9);

    let primary = ids(&plan, 1);
    let controller = ids(&plan, 2);
    let compute = ids(&plan, 4);
    let cinder = ids(&plan, 7);
    let mongo = ids(&plan, 9);

    // Placement: the primary controller runs the primary tasks, the others the secondary ones.
    assert!(primary.contains(&"primary-database".to_string()));
    assert!(!primary.contains(&"database".to_string()));
    assert!(controller.contains(&"database".to_string()));
    assert!(!controller.contains(&"primary-database".to_string()));
    for other in [&compute, &cinder, &mongo] {
        assert!(!other
            .iter()
            .any(|t| t == "database" || t == "primary-database"));
        assert!(!other.contains(&"openstack-controller".to_string()));
    }
    assert!(controller.contains(&"openstack-controller".to_string()));
    assert!(primary.contains(&"primary-openstack-controller".to_string()));
    assert!(compute.contains(&"ntp-client".to_string()));
    assert!(!compute.contains(&"ntp-server".to_string()));
    assert!(controller.contains(&"ntp-server".to_string()));
    // Everyone gets hiera and globals; stages anchor every list.
    for list in [&primary, &controller, &compute, &cinder, &mongo] {
        assert!(before(list, "hiera", "globals"));
        assert!(before(list, "deploy_start", "globals"));
        assert!(before(list, "globals", "deploy_end"));
        assert!(before(list, "pre_deployment_start", "pre_deployment_end"));
        assert!(before(list, "deploy_end", "post_deployment_start"));
    }
    // Known requires: database requires openstack-haproxy; netconfig requires tools.
    assert!(before(&controller, "openstack-haproxy", "database"));
    assert!(before(&controller, "database", "openstack-controller"));
    assert!(before(&compute, "tools", "netconfig"));
    // A same-node cross dependency (`/^(primary-)?cluster$/`, role self) orders locally.
    assert!(before(&primary, "primary-cluster", "primary-database"));

    // Cross-node waits: database on a secondary controller waits for primary-database on node 1.
    let db = plan
        .node(2)
        .and_then(|n| n.tasks.iter().find(|t| &*t.id == "database"))
        .expect("database");
    let waits: Vec<_> = db
        .waits
        .iter()
        .map(|&w| &plan.wait_sets[w as usize])
        .collect();
    assert!(
        waits.iter().any(|w| w
            .targets
            .iter()
            .any(|t| t.task == "primary-database" && t.nodes == [1])),
        "{waits:#?}"
    );
    // ntp-client waits for any ntp-server of the controllers.
    let ntp = plan
        .node(4)
        .and_then(|n| n.tasks.iter().find(|t| &*t.id == "ntp-client"))
        .expect("ntp-client");
    let set = &plan.wait_sets[ntp.waits[0] as usize];
    assert_eq!(set.policy, plinth_common::model::Policy::Any);
    assert_eq!(set.targets[0].task, "ntp-server");
    assert_eq!(set.targets[0].nodes, [1, 2, 3]);

    // Groups carry their fault tolerance.
    let ft = |name: &str| {
        plan.fault_tolerance_groups
            .iter()
            .find(|g| g.name == name)
            .unwrap_or_else(|| panic!("group {name}"))
    };
    assert_eq!(ft("primary-controller").node_ids, [1]);
    assert_eq!(ft("controller").node_ids, [2, 3]);
    assert_eq!(ft("compute").node_ids, [4, 5, 6]);
    assert_eq!(
        ft("compute").fault_tolerance,
        Some(plinth_common::model::FaultTolerance::Percent(2))
    );
    // Every node's list maps onto the agent's task specs, except the master's own task types.
    for node in plan.nodes.iter().filter(|n| n.node_id != MASTER_NODE_ID) {
        plan.task_specs(node).unwrap_or_else(|e| panic!("{e}"));
    }
    // Serialisable as the `serialized_tasks` output.
    let json = serde_json::to_string(&plan).expect("plan serializes");
    let back: Plan = serde_json::from_str(&json).expect("reads back");
    assert_eq!(back, plan);
}

#[test]
fn fuel_task_graphs_resolve() {
    let release = release();
    // The deletion graph runs on the nodes only (its cobbler step is the node's own boot_device).
    assert_eq!(plan_for(&release, "deletion").nodes.len(), 9);
    // Fuel's provision and net-verification graphs each name, in a `required_for`, a task that is in
    // none of the graphs: Fuel drops such a dependency silently, Plinth drops it and warns.
    for (graph_type, task, missing) in [
        ("provision", "node_reboot", "set_status_provisioned"),
        (
            "net-verification",
            "v_upload_cluster_configuration",
            "copy_cluster_configuration",
        ),
    ] {
        let origin = Origin::Release;
        let merged = merge(&[GraphSource {
            origin: &origin,
            graph: &release.graphs[graph_type],
        }])
        .expect("merges");
        let findings: Vec<String> = plinth_common::graph::check_shape(&merged)
            .iter()
            .map(|f| format!("{:?}: {}", f.severity, f.message))
            .collect();
        assert_eq!(
            findings,
            [format!(
                "Warning: task {task:?}: required_for names {missing:?}, which is not a task of the \
                 merged graph; the dependency orders nothing and is dropped"
            )],
            "{graph_type}"
        );
    }
    assert_eq!(plan_for(&release, "net-verification").nodes.len(), 10);
    let plan = plan_for(&release, "provision");
    let node = ids(&plan, 4);
    assert!(before(&node, "move_to_bootstrap", "system_provision"));
    assert!(before(&node, "system_provision", "node_reboot"));
    let master = ids(&plan, MASTER_NODE_ID);
    assert!(before(
        &master,
        "upload_provision_info_master",
        "build_deploy_image"
    ));
    // Every node's move_to_bootstrap waits for the image built on the controller's own host.
    let task = plan
        .node(4)
        .and_then(|n| n.tasks.iter().find(|t| &*t.id == "move_to_bootstrap"))
        .expect("move_to_bootstrap");
    let set = &plan.wait_sets[task.waits[0] as usize];
    assert_eq!(set.targets[0].task, "build_deploy_image");
    assert_eq!(set.targets[0].nodes, [MASTER_NODE_ID]);
    // Plinth's steps stand where Fuel called cobbler and fuel-agent: the image is written by a
    // provision task, netboot is switched by boot_device tasks on the node itself, and fuel-agent's
    // image build and input files are skipped.
    let task = |plan: &Plan, node: u64, id: &str| {
        plan.node(node)
            .and_then(|n| n.tasks.iter().find(|t| &*t.id == id).cloned())
            .unwrap_or_else(|| panic!("{id} on node {node}"))
    };
    let provision = task(&plan, 4, "system_provision");
    assert_eq!(provision.task_type.as_str(), "provision");
    let netboot = task(&plan, 4, "cobbler_disable_netboot");
    assert_eq!(netboot.task_type.as_str(), "boot_device");
    assert_eq!(netboot.parameters["device"], "disk");
    assert_eq!(netboot.parameters["without_enrollment"], "skip");
    assert_eq!(
        task(&plan, MASTER_NODE_ID, "build_deploy_image")
            .task_type
            .as_str(),
        "skipped"
    );
    assert_eq!(
        task(&plan, 4, "upload_provision_info").task_type.as_str(),
        "skipped"
    );
    assert!(before(&node, "system_provision", "cobbler_disable_netboot"));
    assert!(before(&node, "cobbler_disable_netboot", "node_reboot"));
    let specs = plan
        .task_specs(plan.node(4).expect("node 4"))
        .expect("every task has a kind");
    assert_eq!(
        specs
            .iter()
            .find(|s| s.id == "system_provision")
            .map(|s| s.kind),
        Some(plinth_common::wire::TaskKind::Provision)
    );
    let deletion = plan_for(&release, "deletion");
    let erase = task(&deletion, 4, "node_erase");
    assert_eq!(erase.parameters["allow_running_system"], true);
    assert_eq!(
        task(&deletion, 4, "cobbler_enable_netboot").parameters["device"],
        "pxe"
    );
}

#[test]
fn fuel_release_graph_draws() {
    use plinth_common::graph::{to_dot, DotOptions};
    let release = release();
    let origin = Origin::Release;
    let merged = merge(&[GraphSource {
        origin: &origin,
        graph: &release.graphs["default"],
    }])
    .expect("merges");
    let all = to_dot(&merged, "default", &DotOptions::default()).expect("draws");
    assert_eq!(all.matches(" [label=").count(), merged.tasks.len());
    let parents = to_dot(
        &merged,
        "default",
        &DotOptions {
            parents_for: Some("netconfig".into()),
            remove: vec!["stage".into()],
            ..DotOptions::default()
        },
    )
    .expect("draws");
    for t in ["\"netconfig\" [", "\"tools\" [", "\"hiera\" ["] {
        assert!(parents.contains(t), "{t}");
    }
    assert!(!parents.contains("\"openstack-controller\" ["));
    assert!(!parents.contains("\"deploy_start\" ["));
}
