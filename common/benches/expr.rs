//! Expression engine benchmark on a 1,000-node deployment context shaped as Nailgun builds it
//! (cluster data merged with the node's own). `bench/yaql_bench.py` builds the same data and
//! runs the same expressions on Python YAQL.
//!
//! Run: `cargo bench -p plinth-common --bench expr`
//!
//! With `FUEL_YAQL_TIMES=<file>` it instead times each of Fuel's 206 `yaql_exp` on node 1 of a
//! 1,000-node Fuel cluster (the data of `tests/expr_fuel_results.rs`), one evaluation at a time
//! with nothing shared, and writes the mean seconds per evaluation as a JSON list for
//! `bench/fuel_yaql.py --bench --rust-times <file>`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use plinth_common::expr::{Context, Engine, ExprCache, Expression};
use plinth_common::json::Json;
use serde_json::{json, Map, Value as J};

#[path = "../tests/integration/support/mod.rs"]
mod support;

/// The expressions measured, by name (the last five are Fuel library conditions as written).
pub const EXPRESSIONS: [(&str, &str); 7] = [
    ("where_len", "$.nodes.where($.status = 'ready' and 'controller' in $.roles).len()"),
    ("changed_where", "changed($.nodes.where($.status = 'ready' and 'controller' in $.roles))"),
    ("uid_in_added", "$.uid in added($.network_metadata.nodes.values()).uid"),
    ("switch_deployed_before", "switch($.get('deployed_before', {}).get('value') => 1, true => 6)"),
    (
        "ceph_changed_any",
        "($.storage.objects_ceph or $.storage.images_ceph or\n $.storage.volumes_ceph or $.storage.ephemeral_ceph) and\nchangedAny($.storage, $.get('use_syslog'), $.network_scheme, $.network_metadata.nodes.values().where(\n $.node_roles.any($.matches('(primary-)?controller'))))",
    ),
    ("changed_nodes", "changed($.network_metadata.nodes)"),
    ("name_of_new_uid", "$.network_metadata.nodes.values().where($.uid = new($.uid)).name.first()"),
];

fn node(i: usize) -> J {
    let roles: Vec<&str> = if i % 50 == 0 {
        vec!["controller"]
    } else if i % 3 == 0 {
        vec!["compute", "ceph-osd"]
    } else if i % 3 == 1 {
        vec!["compute"]
    } else {
        vec!["cinder"]
    };
    let status = if i % 7 == 3 { "discover" } else { "ready" };
    let pending = status == "discover";
    let mut tags = roles.clone();
    if i == 0 {
        tags.push("primary-controller");
    }
    json!({
        "id": i + 1,
        "uid": (i + 1).to_string(),
        "name": format!("node-{}", i + 1),
        "roles": roles,
        "tags": tags,
        "labels": {"rack": format!("r{}", i % 20), "env": "prod"},
        "rack": format!("r{}", i % 20),
        "status": status,
        "pending_addition": pending,
        "pending_deletion": i % 97 == 5,
        "pending_roles": if pending { roles.clone() } else { vec![] },
        "deployed_roles": if pending { vec![] } else { roles.clone() },
        "facts": {"cpus": 8 * (1 + i % 4), "memory_gb": 64 + 32 * (i % 3), "disks": 2 + i % 5, "os": "ubuntu-16.04"},
    })
}

/// The cluster part of a deployment of `n` nodes (without any node's own keys).
fn cluster(n: usize) -> J {
    let mut data = context_of(n);
    if let J::Object(m) = &mut data {
        if let J::Object(own) = node(0) {
            for k in own.keys() {
                m.shift_remove(k);
            }
        }
        m.shift_remove("fqdn");
    }
    data
}

/// Node `i`'s own part.
fn node_part(i: usize) -> J {
    let mut own = node(i);
    own["fqdn"] = json!(format!("node-{}.example.org", i + 1));
    own
}

/// The deployment context for node 1 of a cluster of `n` nodes.
pub fn context(n: usize) -> J {
    context_of(n)
}

fn context_of(n: usize) -> J {
    let nodes: Vec<J> = (0..n).map(node).collect();
    let mut meta = Map::new();
    for (i, nd) in nodes.iter().enumerate() {
        let ip = format!("10.0.{}.{}", i / 250, i % 250 + 1);
        meta.insert(
            nd["name"].as_str().unwrap_or_default().to_string(),
            json!({
                "uid": nd["uid"], "name": nd["name"],
                "fqdn": format!("{}.example.org", nd["name"].as_str().unwrap_or_default()),
                "node_roles": nd["tags"],
                "network_roles": {"mgmt/database": ip, "mgmt/messaging": ip, "cinder/iscsi": format!("10.1.{}.{}", i / 250, i % 250 + 1)},
            }),
        );
    }
    let mut data = json!({
        "cluster": {"id": 1, "name": "env-1", "status": "operational", "mode": "ha_compact", "fuel_version": "9.0"},
        "settings": {
            "storage": {"objects_ceph": true, "images_ceph": true, "volumes_ceph": true, "ephemeral_ceph": false},
            "additional_components": {"murano": false, "sahara": false, "ceilometer": true},
            "public_ssl": {"horizon": true, "services": true},
        },
        "storage": {"objects_ceph": true, "images_ceph": true, "volumes_ceph": true, "ephemeral_ceph": false,
                    "per_pool_pg_nums": {"volumes": 2048, "images": 256}},
        "deployed_before": {"value": true},
        "use_syslog": true,
        "network_scheme": {"version": "1.1",
            "endpoints": {"br-mgmt": {"IP": ["10.0.0.2/24"], "gateway": "10.0.0.1"}, "br-ex": {"IP": ["172.16.0.3/24"]}},
            "roles": {"mgmt/database": "br-mgmt", "ex": "br-ex"}},
        "network_metadata": {"nodes": J::Object(meta), "vips": {"management": {"ipaddr": "10.0.9.1"}, "public": {"ipaddr": "172.16.0.2"}}},
        "nodes": nodes,
    });
    // The node's own data, merged over the cluster's.
    if let (Some(d), J::Object(own)) = (data.as_object_mut(), node(0)) {
        for (k, v) in own {
            d.insert(k, v);
        }
        d.insert("fqdn".into(), json!("node-1.example.org"));
    }
    data
}

/// Mean seconds per evaluation of each of Fuel's expressions (about 50 ms of runs each).
fn fuel_times(path: &str) {
    let (new, old) = support::fuel_node_one_of_1000();
    let engine = Engine::new();
    let (new, old) = (Json::from(new), Json::from(old));
    let ctx = Context::new(&new).old(Some(&old));
    let mut out = Vec::new();
    for text in support::fuel_yaql_exps() {
        let Ok(e) = Expression::parse(&text) else {
            out.push(J::Null);
            continue;
        };
        let _ = engine.evaluate_in(&e, &ctx);
        let (mut runs, start) = (0u32, std::time::Instant::now());
        while runs < 3 || start.elapsed().as_secs_f64() < 0.05 {
            let _ = std::hint::black_box(engine.evaluate_in(&e, &ctx));
            runs += 1;
        }
        out.push(json!(start.elapsed().as_secs_f64() / f64::from(runs)));
    }
    if let Err(e) = std::fs::write(path, J::Array(out).to_string()) {
        panic!("{path}: {e}");
    }
}

fn bench(c: &mut Criterion) {
    if let Ok(path) = std::env::var("FUEL_YAQL_TIMES") {
        fuel_times(&path);
        return;
    }
    let engine = Engine::new();
    let cache = ExprCache::new();
    let new = Json::from(context(1000));
    let old = Json::from(context(999));
    let ctx = Context::new(&new).old(Some(&old));
    let mut group = c.benchmark_group("expr");
    group
        .sample_size(30)
        .measurement_time(std::time::Duration::from_secs(2))
        .warm_up_time(std::time::Duration::from_millis(500));
    for (name, text) in EXPRESSIONS {
        let e = match cache.get_or_parse(text) {
            Ok(e) => e,
            Err(err) => panic!("{err}"),
        };
        if let Err(err) = engine.evaluate_in(&e, &ctx) {
            panic!("{name}: {err}");
        }
        group.bench_function(name, |b| b.iter(|| engine.evaluate_in(&e, &ctx)));
    }
    let texts: Vec<String> = (0..1000)
        .map(|i| {
            format!(
                "{} and {i} > 0",
                EXPRESSIONS[i % EXPRESSIONS.len()].1.replace('\n', " ")
            )
        })
        .collect();
    group.bench_function("parse_1000_distinct", |b| {
        b.iter_batched(
            ExprCache::new,
            |cache| {
                for t in &texts {
                    let _ = cache.get_or_parse(t);
                }
                cache
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("parse_1000_distinct_uncached", |b| {
        b.iter(|| {
            texts
                .iter()
                .filter(|t| Expression::parse(t).is_ok())
                .count()
        })
    });
    group.finish();
    per_node(c, &engine, &cache);
}

/// Each expression for every node of a 1,000-node deployment, as `deploy::YaqlFields` evaluates
/// it: `$` the cluster part with the node's keys over it, old states of 999 nodes, the parts that
/// do not depend on the node evaluated once per run (whether the cluster parts agree outside the
/// nodes' keys is found once for all expressions). Criterion's time is for all 1,000 nodes.
fn per_node(c: &mut Criterion, engine: &Engine, cache: &ExprCache) {
    let (now, before) = (Json::from(cluster(1000)), Json::from(cluster(999)));
    let parts: Vec<Json> = (0..1000).map(|i| Json::from(node_part(i))).collect();
    let node_keys: Vec<String> = parts[0]
        .as_object()
        .map(|m| m.keys().map(str::to_string).collect())
        .unwrap_or_default();
    let per_node = |k: &str| node_keys.iter().any(|n| n == k);
    let mut group = c.benchmark_group("per_node_1000");
    group
        .sample_size(10)
        .measurement_time(std::time::Duration::from_secs(2))
        .warm_up_time(std::time::Duration::from_millis(500));
    // Whether the old cluster part agrees with the current one outside the nodes' keys: once per
    // deployment for all its expressions, as `YaqlFields` finds it.
    let same = now
        .as_object()
        .zip(before.as_object())
        .is_some_and(|(a, b)| {
            a.iter()
                .filter(|(k, _)| !per_node(k))
                .all(|(k, v)| b.get(k) == Some(v))
                && a.len() == b.len()
        });
    for (name, text) in EXPRESSIONS {
        let e = match cache.get_or_parse(text) {
            Ok(e) => e,
            Err(err) => panic!("{err}"),
        };
        group.bench_function(name, |b| {
            b.iter(|| {
                let deployed = engine.share(&e, &Context::new(&now).old(Some(&before)), &per_node);
                let fresh = engine.share(&e, &Context::new(&now), &per_node);
                for (i, own) in parts.iter().enumerate() {
                    let ctx = Context::layered(&now, own);
                    let r = if i < 999 {
                        let ctx = ctx
                            .old_layered(Some((&before, own)))
                            .shared(&deployed)
                            .same_cluster_part(same, &node_keys);
                        engine.evaluate_in(&e, &ctx)
                    } else {
                        engine.evaluate_in(&e, &ctx.shared(&fresh))
                    };
                    let _ = std::hint::black_box(r);
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
