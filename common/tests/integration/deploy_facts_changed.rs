//! Fuel's own `changed($)` guard (`upload_node_configuration` in fuel-library's `astute/tasks.yaml`,
//! as written) on a cluster of Fuel's own release whose nodes carry an agent's facts: one agent
//! restarting (its facts read again, the same but for how long collecting them took) changes nothing
//! the guard sees on any node; a real change of one node's facts is a change on every node, as a new
//! node or a changed role is.

use plinth_common::deploy::{OldStates, YaqlFields};
use plinth_common::expr::{Engine, ExprCache};
use plinth_common::graph::{EvalContext, FieldEvaluator};
use plinth_common::model::{Condition, Node};
use serde_json::{json, Value};
use std::sync::Arc;

use crate::support;
use support::{corpus, fuel_cluster_nodes, fuel_deploy_data, tasks_under};

/// Fuel's guard on uploading a node's configuration, as its library writes it.
fn fuels_guard() -> String {
    let tasks =
        tasks_under(&corpus().join("fuel-library/deployment/puppet/osnailyfacter/modular/astute"));
    let task = tasks
        .iter()
        .find(|t| t.id == "upload_node_configuration")
        .expect("fuel-library's astute tasks have upload_node_configuration");
    match &task.condition {
        Some(Condition::Yaql(text)) => text.clone(),
        other => panic!("upload_node_configuration's condition is {other:?}"),
    }
}

/// An agent's facts, as `plinth-agent facts` reports them (shape and all), with how long collecting
/// them took.
fn facts(host: &str, took_us: u64) -> Value {
    json!({
        "hostname": host, "kernel": "6.1.0-18-amd64",
        "os": {"id": "debian", "version_id": "12", "pretty_name": "Debian GNU/Linux 12 (bookworm)"},
        "cpu": {"model": "Intel(R) Xeon(R) Gold 6230", "sockets": 2, "cores": 40, "threads": 80},
        "memory": {"total_bytes": 412_316_860_416_u64, "swap_bytes": 0},
        "disks": [{"name": "sda", "size_bytes": 960_197_124_096_u64, "rotational": false}],
        "nics": [{"name": "eno1", "mac": "3c:ec:ef:00:00:01", "link_up": true, "mtu": 1500}],
        "collected_in_us": took_us
    })
}

fn nodes(host_2: &str, took_2: u64) -> Vec<Node> {
    let mut nodes = fuel_cluster_nodes(8);
    for n in &mut nodes {
        n.facts = facts(&n.name, 6_780).into();
    }
    nodes[1].facts = facts(host_2, took_2).into();
    nodes
}

/// Whether Fuel's guard runs the task on every node, its old state being the first deployment's.
fn guard_on_each(first: &[Node], now: &[Node]) -> Vec<Value> {
    let guard = fuels_guard();
    let before = fuel_deploy_data(first);
    let mut old = OldStates::new();
    for n in first {
        old.insert(
            n.id,
            "upload_node_configuration",
            before.state(n.id).expect("a node of the deployment"),
        );
    }
    let fields = YaqlFields::new(
        Arc::new(Engine::new()),
        Arc::new(ExprCache::new()),
        fuel_deploy_data(now),
        old,
        false,
    );
    now.iter()
        .map(|n| {
            let at = EvalContext {
                node: Some(n),
                node_id: n.id,
                task_id: "upload_node_configuration",
                field_path: "condition",
            };
            fields
                .evaluate(&at, &guard)
                .expect("Fuel's guard evaluates")
        })
        .collect()
}

#[test]
fn an_agent_restarting_changes_nothing_fuels_guard_sees_and_a_real_change_counts_everywhere() {
    let first = nodes("node-2", 7_125);
    assert_eq!(guard_on_each(&first, &first), vec![json!(false); 8]);
    // Node 2's agent restarts: the same facts, collected in another time.
    let restarted = nodes("node-2", 9_012);
    assert_eq!(guard_on_each(&first, &restarted), vec![json!(false); 8]);
    // Node 2 is renamed on its own host: the cluster's data changed, on every node.
    let renamed = nodes("node-2-renamed", 9_012);
    assert_eq!(guard_on_each(&first, &renamed), vec![json!(true); 8]);
}
