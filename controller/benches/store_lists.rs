//! Publishing a phase: `Store::publish_lists` of one list per node for thousands of nodes at once (what a
//! large phase's hand-over writes), on both backends. Two shapes of list: the load generator's (20
//! chained `shell` tasks, about 1.5 KB) and one of Fuel's size (80 `puppet` tasks with their manifest,
//! modules and timeouts, about 19 KB). SQLite: a file with WAL and `synchronous=FULL`. PostgreSQL: a scratch server on this
//! machine with `fsync` on, over TLS. Also the lists' JSON text alone, the part of the write that is not
//! the database's.
//!
//! `cargo bench -p plinth-controller --bench store_lists`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use plinth_common::wire::{TaskKind, TaskList, TaskSpec};
use plinth_controller::store::*;
use std::collections::BTreeMap;

mod support;
use std::time::{Duration, Instant};

/// Lists published at once: a phase of a large deployment.
const NODES: u64 = 4_000;

/// The shapes of list published.
#[derive(Clone, Copy)]
enum Shape {
    /// The load generator's `deploy` graph: 20 chained shell tasks.
    Fleet,
    /// A Fuel-sized role: 80 puppet tasks.
    Fuel,
}

/// A node's list of a shape.
fn list(node_id: u64, deployment_id: u64, shape: Shape) -> TaskList {
    let task = |i: usize| {
        let (id, kind, parameters) = match shape {
            Shape::Fleet => (
                format!("deploy-{i:02}"),
                TaskKind::Shell,
                serde_json::json!({"cmd": "true", "timeout": 600}),
            ),
            Shape::Fuel => (
                format!("task-{i:02}"),
                TaskKind::Puppet,
                serde_json::json!({
                    "puppet_manifest": format!("/etc/puppet/modules/osnailyfacter/modular/task-{i:02}/task-{i:02}.pp"),
                    "puppet_modules": "/etc/puppet/modules",
                    "timeout": 3600,
                    "cwd": "/",
                    "retries": 3,
                }),
            ),
        };
        TaskSpec {
            id,
            kind,
            parameters: parameters.as_object().cloned().unwrap_or_default(),
            skip_reason: None,
            waits_for: Vec::new(),
            gated: false,
            manifests: BTreeMap::new(),
        }
    };
    let count = match shape {
        Shape::Fleet => 20,
        Shape::Fuel => 80,
    };
    // One copy per list here; `publish` shares one copy between lists, as a deployment's run does.
    let tasks = (0..count).map(task).collect();
    TaskList::unpublished(
        format!("k{node_id}"),
        node_id,
        deployment_id,
        "deploy",
        tasks,
    )
}

/// Publishes one list per node `iters` times; the time the store took.
fn publish(s: &dyn Store, nodes: &[u64], dep: u64, shape: Shape, iters: u64) -> Duration {
    let mut took = Duration::ZERO;
    for _ in 0..iters {
        let tasks = list(0, dep, shape).tasks;
        let mut lists: Vec<TaskList> = nodes
            .iter()
            .map(|n| TaskList {
                tasks: tasks.clone(),
                ..list(*n, dep, Shape::Fleet)
            })
            .collect();
        let start = Instant::now();
        s.publish_lists(dep, &mut lists, &serde_json::json!({}), &[])
            .expect("published");
        took += start.elapsed();
    }
    took
}

fn bench(c: &mut Criterion) {
    let stores = support::Backends::start();
    let backends = stores.both();
    let mut group = c.benchmark_group("publish_lists");
    group.throughput(Throughput::Elements(NODES));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    let lists: Vec<TaskList> = (0..NODES).map(|n| list(n, 1, Shape::Fleet)).collect();
    group.bench_function(format!("json-text-only/{NODES}"), |b| {
        b.iter(|| {
            lists
                .iter()
                .map(|l| serde_json::to_string(l).map(|t| t.len()).unwrap_or(0))
                .sum::<usize>()
        })
    });
    for (name, store) in backends {
        let (nodes, dep) = support::running(store, NODES);
        for (shape, shape_name) in [(Shape::Fleet, "fleet"), (Shape::Fuel, "fuel")] {
            group.bench_function(format!("{name}/{shape_name}/{NODES}"), |b| {
                b.iter_custom(|iters| publish(store, &nodes, dep, shape, iters))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
