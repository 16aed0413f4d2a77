//! Store write throughput for results, on both backends: `store_results` of one result per call (what an
//! agent's report of one task becomes), from 1 thread and from 8 at once (many agents reporting), each
//! result new. SQLite: a file with WAL and `synchronous=FULL`. PostgreSQL: a scratch server on this machine
//! with `fsync` on (every commit on disk, as SQLite's), over TLS.
//!
//! `cargo bench -p plinth-controller --bench store_results`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use plinth_common::wire::{ResultStatus, TaskResult};
use plinth_controller::store::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

mod support;

fn result(deployment_id: u64, n: u64) -> TaskResult {
    TaskResult {
        deployment_id,
        revision: 1,
        task_id: format!("task-{n}"),
        attempt: 1,
        status: ResultStatus::Succeeded,
        last: true,
        exit_code: Some(0),
        started_at_ms: 0,
        duration_ms: 12,
        stdout_tail: "installed 3 packages\n".into(),
        stderr_tail: String::new(),
        message: String::new(),
        details: serde_json::Value::Null,
    }
}

/// Stores `iters` new results from `threads` threads at once; the time it took.
fn store_many(
    s: &dyn Store,
    node: u64,
    dep: u64,
    next: &AtomicU64,
    iters: u64,
    threads: u64,
) -> Duration {
    let start = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            let share = iters / threads + u64::from(t < iters % threads);
            scope.spawn(move || {
                for _ in 0..share {
                    let r = result(dep, next.fetch_add(1, Ordering::Relaxed));
                    let out = s.store_results(node, &[r]).expect("stored");
                    assert_eq!(out, [Stored::New]);
                }
            });
        }
    });
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let stores = support::Backends::start();
    let backends = stores.both();
    let mut group = c.benchmark_group("store_results");
    group.throughput(Throughput::Elements(1));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));
    for (name, store) in backends {
        let (nodes, dep) = support::running(store, 1);
        let node = nodes[0];
        let next = AtomicU64::new(0);
        for threads in [1u64, 8] {
            group.bench_function(format!("{name}/{threads}-threads"), |b| {
                b.iter_custom(|iters| store_many(store, node, dep, &next, iters, threads))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
