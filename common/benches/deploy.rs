//! Computed fields as a deployment evaluates them: a condition per node over the whole cluster, with
//! each node's old state, on 100 and 1,000 nodes (the per-node data is built from the shared cluster part).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use plinth_common::deploy::{DeployData, OldStates, YaqlFields};
use plinth_common::expr::{Engine, ExprCache};
use plinth_common::graph::{EvalContext, FieldEvaluator};
use plinth_common::model::{Cluster, Node, NodeStatus, Release};
use plinth_common::tags::{cluster_tags, Catalog};
use serde_json::json;
use std::sync::Arc;

fn cluster(n: usize) -> (Cluster, Release, Vec<Node>) {
    let release = Release {
        name: "r".into(),
        ..Release::default()
    };
    let cluster = Cluster {
        name: "c".into(),
        release: "r".into(),
        settings: json!({"ntp": {"servers": ["0.pool.ntp.org"]}}),
        ..Cluster::default()
    };
    let nodes = (1..=n as u64)
        .map(|i| {
            let role = if i % 10 == 0 { "controller" } else { "compute" };
            let mut node = Node::new(i, format!("node-{i}"), &[role]);
            node.status = NodeStatus::Ready;
            node.facts =
                json!({"cpus": 64, "memory_mb": 262144, "disks": [{"name": "sda", "size": 960}]});
            node
        })
        .collect();
    (cluster, release, nodes)
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("deploy_condition_every_node");
    group.sample_size(10);
    for n in [100usize, 1000] {
        let (cl, release, nodes) = cluster(n);
        let catalog = Catalog::new(&release, &[], Some(&cl));
        let tags = cluster_tags(&nodes, &catalog);
        let old_data = DeployData::build(1, &cl, &release, &nodes, &tags);
        let mut old = OldStates::new();
        for node in &nodes {
            old.insert(
                node.id,
                "haproxy",
                old_data.state(node.id).expect("a node's state"),
            );
        }
        let engine = Arc::new(Engine::new());
        let cache = Arc::new(ExprCache::new());
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                let data = DeployData::build(1, &cl, &release, &nodes, &tags);
                let fields =
                    YaqlFields::new(engine.clone(), cache.clone(), data, old.clone(), false);
                for node in &nodes {
                    let at = EvalContext {
                        node: Some(node),
                        node_id: node.id,
                        task_id: "haproxy",
                        field_path: "condition",
                    };
                    let v = fields
                        .evaluate(&at, "changed($.nodes.where('controller' in $.roles).len())")
                        .expect("evaluates");
                    assert_eq!(v, json!(false));
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
