//! Computed fields as a deployment evaluates them.
//!
//! - `deploy_condition_every_node`: one condition per node over the whole cluster, with each node's
//!   old state, on 100 and 1,000 nodes.
//! - `fuel_every_yaql_exp`: Fuel's release and cluster settings (the corpus tests' cluster, scaled
//!   up: 3 controllers, 3 mongo, a tenth cinder, the rest computes), every one of Fuel's 206
//!   `yaql_exp` evaluated for every node through `YaqlFields`, with old states from a deployment
//!   of the first nine tenths of the nodes (their cluster part shared, as the controller loads
//!   them). Before measuring, 1,000, 2,000, 5,000 and 10,000 nodes (or the sizes in `FUEL_NODES`,
//!   `FUEL_NODES=1000,10000`) are run once each and timed, on the clock and on the CPU (the
//!   machine may be shared: the CPU time is what one core spends).
//!
//! Run: `cargo bench -p plinth-common --bench deploy`

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use plinth_common::deploy::{DeployData, OldStates, YaqlFields};
use plinth_common::expr::{Engine, ExprCache};
use plinth_common::graph::{EvalContext, FieldEvaluator};
use plinth_common::model::{Cluster, Node, NodeStatus, Release};
use plinth_common::tags::{cluster_tags, Catalog};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

#[path = "../tests/integration/support/mod.rs"]
mod support;

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
                json!({"cpus": 64, "memory_mb": 262144, "disks": [{"name": "sda", "size": 960}]})
                    .into();
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

/// Fuel's expressions measured: all but the two whose value is the whole cluster part as YAML
/// (`$common.toYaml()`): each node's copy of it grows with the cluster (see docs/BENCHMARKS.md).
fn fuel_expressions() -> Vec<String> {
    support::fuel_yaql_exps()
        .into_iter()
        .filter(|e| e.trim() != "$common.toYaml()")
        .collect()
}

/// The evaluator of a deployment of `count` nodes after one of the first nine tenths.
fn fuel_fields(count: u64) -> (YaqlFields, Vec<Node>) {
    let nodes = support::fuel_cluster_nodes(count);
    let deployed = &nodes[..nodes.len() * 9 / 10];
    let old_data = support::fuel_deploy_data(deployed);
    let mut old = OldStates::new();
    for node in deployed {
        old.insert(node.id, "t", old_data.state(node.id).expect("deployed"));
    }
    let data = support::fuel_deploy_data(&nodes);
    let fields = YaqlFields::new(
        Arc::new(Engine::new()),
        Arc::new(ExprCache::new()),
        data,
        old,
        false,
    );
    (fields, nodes)
}

/// Every expression for every node; returns how many evaluations failed (Fuel's expressions read
/// sections the cluster does not have: those are errors, as in Nailgun).
fn evaluate_all(fields: &YaqlFields, nodes: &[Node], exprs: &[String]) -> usize {
    let mut errors = 0;
    for node in nodes {
        let at = EvalContext {
            node: Some(node),
            node_id: node.id,
            task_id: "t",
            field_path: "condition",
        };
        for e in exprs {
            if std::hint::black_box(fields.evaluate(&at, e)).is_err() {
                errors += 1;
            }
        }
    }
    errors
}

/// The CPU time this thread has run so far (Linux' scheduler statistics), which a machine shared
/// with other work inflates less than the time on the clock.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

/// With `FUEL_SLOWEST=n` set, the slowest expressions on `n` nodes, printed.
fn slowest(exprs: &[String]) {
    let Some(n) = std::env::var("FUEL_SLOWEST")
        .ok()
        .and_then(|v| v.parse().ok())
    else {
        return;
    };
    let (fields, nodes) = fuel_fields(n);
    let mut times: Vec<(std::time::Duration, &String)> = exprs
        .iter()
        .map(|e| {
            let start = Instant::now();
            evaluate_all(&fields, &nodes, std::slice::from_ref(e));
            (start.elapsed(), e)
        })
        .collect();
    times.sort_by_key(|t| std::cmp::Reverse(t.0));
    for (t, e) in times.iter().take(15) {
        println!(
            "{t:>10.2?}  {}",
            e.replace('\n', " ").chars().take(150).collect::<String>()
        );
    }
}

fn bench_fuel(c: &mut Criterion) {
    let exprs = fuel_expressions();
    slowest(&exprs);
    // `FUEL_NODES=1000,10000` measures those sizes only.
    let sizes: Vec<u64> = std::env::var("FUEL_NODES")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1000, 2000, 5000, 10_000]);
    for n in sizes {
        let (fields, nodes) = fuel_fields(n);
        let (start, cpu) = (Instant::now(), cpu_seconds());
        let errors = evaluate_all(&fields, &nodes, &exprs);
        let took = start.elapsed();
        let cpu = cpu_seconds()
            .zip(cpu)
            .map_or("-".to_string(), |(b, a)| format!("{:.2} s", b - a));
        println!(
            "fuel_every_yaql_exp/{n}: {} expressions x {n} nodes in {took:.2?}, {cpu} on the CPU ({:.0} ns per evaluation, {errors} errors)",
            exprs.len(),
            took.as_nanos() as f64 / (exprs.len() as f64 * n as f64),
        );
    }
    let mut group = c.benchmark_group("fuel_every_yaql_exp");
    group.sample_size(10);
    // A fresh evaluator each time: the node-independent parts are computed in every run.
    group.bench_function("1000", |b| {
        b.iter_batched(
            || fuel_fields(1000),
            |(fields, nodes)| evaluate_all(&fields, &nodes, &exprs),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench, bench_fuel);
criterion_main!(benches);
