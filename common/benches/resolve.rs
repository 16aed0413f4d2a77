//! Resolution at scale: merge + resolve + order + sign every node's task list, for Fuel's release graph
//! (from the corpus, with `openstack.yaml`'s roles and tags) and for a generated graph of 500 tasks over
//! 12 roles and 30 tags, on 1,000 and 10,000 nodes.
//!
//! The evaluator stands in for the expression engine: `yaql_exp` conditions are true and every other
//! computed value is null. Before measuring, each case is run once and its wall time and the total size
//! of the signed lists are printed.
//!
//! Run: `cargo bench -p plinth-common --bench resolve`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use ed25519_dalek::SigningKey;
use plinth_common::graph::{
    merge_for_cluster, resolve, EvalContext, FieldEvaluator, ResolveRequest, MASTER_NODE_ID,
};
use plinth_common::model::{
    parse_release_fixture, parse_tasks, Cluster, CrossDep, Graph, Node, Policy, Release, RoleMeta,
    StringList, TagMeta, Task, TaskType,
};
use plinth_common::signing::{sign_task_list, signing_key_from_seed};
use plinth_common::tags::Catalog;
use plinth_common::wire::{TaskList, TASK_LIST_FORMAT};
use serde_json::{json, Value};

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

fn corpus() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus")).to_path_buf()
}

fn fuel_release() -> Release {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("corpus")
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.file_name().is_some_and(|n| n == "tasks.yaml") {
                out.push(p);
            }
        }
    }
    let text = std::fs::read_to_string(corpus().join("fuel-web/openstack.yaml")).expect("fixture");
    let mut release = parse_release_fixture(&text, "openstack.yaml").expect("release");
    let mut files = Vec::new();
    walk(&corpus().join("fuel-library/deployment"), &mut files);
    let tasks = files
        .iter()
        .flat_map(|f| {
            parse_tasks(&std::fs::read_to_string(f).expect("readable"), "tasks.yaml")
                .expect("loads")
        })
        .collect();
    release
        .graphs
        .insert("default".into(), Graph::with_tasks(tasks));
    release
}

/// 3 controllers, 3 mongo, a tenth cinder, the rest computes.
fn fuel_nodes(count: u64) -> Vec<Node> {
    (1..=count)
        .map(|id| {
            let role = match id {
                1..=3 => "controller",
                4..=6 => "mongo",
                _ if id % 10 == 0 => "cinder",
                _ => "compute",
            };
            let mut n = Node::new(id, format!("node-{id}"), &[]);
            n.pending_roles = vec![role.to_string()];
            n.pending_addition = true;
            n
        })
        .collect()
}

/// A small deterministic generator.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below.max(1)
    }
}

/// 12 roles over 30 tags (the first three with a primary); 500 tasks with tags, requires on earlier
/// tasks, conditions, computed parameters, cross dependencies on the control roles (policy all) and,
/// for a tenth of them, on the same task of other worker nodes (policy any).
fn generated_release() -> Release {
    let mut rng = Lcg(42);
    let mut release = Release {
        name: "generated".into(),
        ..Release::default()
    };
    for t in 0..30 {
        release.tags_metadata.insert(
            format!("tag{t}"),
            TagMeta {
                has_primary: t < 3,
                ..TagMeta::default()
            },
        );
    }
    for r in 0..12u64 {
        let tags: Vec<String> = (0..3)
            .map(|k| format!("tag{}", (r * 2 + k * 5) % 30))
            .collect();
        release.roles_metadata.insert(
            format!("role{r}"),
            RoleMeta {
                tags,
                ..RoleMeta::default()
            },
        );
    }
    let mut tasks = vec![Task::new("start", TaskType::Stage), {
        let mut t = Task::new("end", TaskType::Stage);
        t.requires = StringList(vec!["start".into()]);
        t
    }];
    for i in 0..498u64 {
        let mut t = Task::new(format!("task{i}"), TaskType::Puppet);
        let tags: Vec<String> = (0..1 + rng.next(3))
            .map(|_| format!("tag{}", rng.next(30)))
            .collect();
        t.tags = Some(StringList(tags));
        let mut requires = vec!["start".to_string()];
        for _ in 0..rng.next(3) {
            if i > 0 {
                requires.push(format!("task{}", rng.next(i)));
            }
        }
        t.requires = StringList(requires);
        t.required_for = StringList(vec!["end".into()]);
        t.parameters.insert(
            "puppet_manifest".into(),
            json!(format!("/etc/puppet/modules/m{i}/site.pp")),
        );
        t.parameters.insert("timeout".into(), json!(600));
        if i % 3 == 0 {
            t.condition = Some(plinth_common::model::Condition::Yaql("changed($)".into()));
        }
        if i % 7 == 0 {
            t.parameters
                .insert("data".into(), json!({"yaql_exp": "$.node"}));
        }
        if i % 10 == 5 && i > 10 {
            // Wait for an earlier task on the control roles.
            let mut d = CrossDep::new(format!("task{}", rng.next(i)));
            d.role = Some(StringList(vec!["/^role[0-2]$/".into()]));
            t.cross_depends = Some(plinth_common::model::Dependencies::Static(vec![d]));
        }
        if i % 10 == 7 && i > 10 {
            // Wait for an earlier task on any node that runs it (many to many, shared).
            let mut d = CrossDep::new(format!("task{}", rng.next(i)));
            d.policy = Policy::Any;
            t.cross_depends = Some(plinth_common::model::Dependencies::Static(vec![d]));
        }
        tasks.push(t);
    }
    release
        .graphs
        .insert("default".into(), Graph::with_tasks(tasks));
    release
}

/// Three nodes of each of roles 0..=2 (the control roles), the rest spread over roles 3..=11, some with
/// two roles.
fn generated_nodes(count: u64) -> Vec<Node> {
    let mut rng = Lcg(7);
    (1..=count)
        .map(|id| {
            let mut roles = vec![if id <= 9 {
                format!("role{}", (id - 1) / 3)
            } else {
                format!("role{}", 3 + rng.next(9))
            }];
            if id > 9 && rng.next(5) == 0 {
                roles.push(format!("role{}", 3 + rng.next(9)));
            }
            let mut n = Node::new(id, format!("node-{id}"), &[]);
            n.pending_roles = roles;
            n
        })
        .collect()
}

/// Merge, resolve, order and sign every node's list; returns the signed bytes in total.
fn pipeline(release: &Release, nodes: &[Node], key: &SigningKey) -> usize {
    let cluster = Cluster {
        release: release.name.clone(),
        ..Cluster::default()
    };
    let merged = merge_for_cluster(release, &[], &cluster, "default").expect("merges");
    let catalog = Catalog::new(release, &[], Some(&cluster));
    let ids: Vec<u64> = nodes.iter().map(|n| n.id).collect();
    let plan = resolve(&ResolveRequest {
        graph_type: "default",
        graph: &merged,
        catalog: &catalog,
        nodes,
        selection: Some(&ids),
        evaluator: &Stub,
    })
    .expect("resolves");
    let mut bytes = 0;
    for node in plan.nodes.iter().filter(|n| n.node_id != MASTER_NODE_ID) {
        let list = TaskList {
            format: TASK_LIST_FORMAT,
            node_key: format!("{:032x}", node.node_id),
            node_id: node.node_id,
            deployment_id: 1,
            phase: "deploy".into(),
            revision: 1,
            issued_at: 1_700_000_000,
            expires_at: 1_700_003_600,
            nonce: "nonce".into(),
            noop: false,
            cancel: false,
            tasks: plan.task_specs(node).expect("agent task kinds").into(),
        };
        let signed = sign_task_list(key, &list);
        bytes += signed.payload.len() + signed.signature.len();
    }
    bytes
}

fn report(name: &str, release: &Release, nodes: &[Node], key: &SigningKey) {
    let start = Instant::now();
    let bytes = pipeline(release, nodes, key);
    eprintln!(
        "{name}: {} nodes in {:.3} s, signed lists {:.1} MB in total ({} bytes per node)",
        nodes.len(),
        start.elapsed().as_secs_f64(),
        bytes as f64 / 1e6,
        bytes / nodes.len().max(1)
    );
}

fn bench(c: &mut Criterion) {
    let key = signing_key_from_seed([7; 32]);
    let fuel = fuel_release();
    let generated = generated_release();
    let mut group = c.benchmark_group("resolve");
    group.sample_size(10);
    for count in [1_000u64, 10_000] {
        let cases = [
            ("fuel", &fuel, fuel_nodes(count)),
            ("generated", &generated, generated_nodes(count)),
        ];
        for (name, release, nodes) in &cases {
            report(name, release, nodes, &key);
            group.measurement_time(Duration::from_secs(if count > 1_000 { 25 } else { 5 }));
            group.bench_function(format!("{name}/{count}"), |b| {
                b.iter(|| black_box(pipeline(release, nodes, &key)))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
