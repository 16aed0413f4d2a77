//! Memory of a running deployment, in process: a cluster of `N` nodes (1 ntp, 10% control, 40% + 40%
//! compute in two racks, the rest monitoring, as `plinth-loadgen fleet` makes it), a `prepare` graph of
//! one task and a `deploy` graph of `T` chained tasks, the five-group strategy; resolved with
//! [`plinth_common::snapshot::resolve`], run through [`plinth_common::run::Run`] as the controller's engine
//! drives it (revisions assigned, each published list put on a board of `Arc<TaskList>`, every task of a
//! list answered succeeded), with the heap counted by a global allocator.
//!
//! Prints the run's time, start to finish, each step that starts a phase of 1,000 nodes or more (how
//! long the run took to compute it, and the size and writing time of the state the engine then
//! stores, as text and compressed), and per node: the heap the resolution holds for the whole
//! deployment (and its parts), the most the run and the board held at once, and the peak during the
//! whole run.
//!
//! Run: `cargo bench -p plinth-common --bench run_memory` (`-- 5000 20` for nodes and tasks; add `owned`
//! to resolve as the controller does, with [`plinth_common::snapshot::resolve_owned`], which moves each
//! node's facts out of the snapshot instead of copying them; add `facts=FILE` to give every node the
//! facts a real machine reported, `plinth-agent facts > FILE`, made its own: its host name, MACs,
//! serials, UUID and WWNs).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use plinth_common::run::{Effects, Run, RunNode, RunPlan};
use plinth_common::snapshot::{resolve, resolve_owned, Expressions, Snapshot};
use plinth_common::strategy::{InventoryNode, Strategy};
use plinth_common::wire::{ResultStatus, TaskList, TaskResult};
use serde_json::{json, Value};

/// Counts the bytes allocated now and the most at once since the last [`Counting::reset_peak`].
struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = NOW.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        System.dealloc(p, layout);
        NOW.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = System.realloc(p, layout, new_size);
        if !q.is_null() {
            if new_size >= layout.size() {
                let now = NOW.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size
                    - layout.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                NOW.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn heap() -> usize {
    NOW.load(Ordering::Relaxed)
}

/// The five-group strategy of `plinth-loadgen` (`bench/src/phases.rs`).
const STRATEGY: &str = r#"{"name": "five-groups", "groups": [
  {"name": "ntp-node", "critical": true, "depends_on": [], "selectors": [{"node_tags": ["ntp"]}],
   "success_criteria": {"minimum_successful_nodes": 1}},
  {"name": "control-nodes", "critical": true, "depends_on": ["ntp-node"],
   "selectors": [{"node_tags": ["control"], "rack_names": ["rack03"]}], "success_criteria": {"percent_successful_nodes": 90}},
  {"name": "compute-nodes-1", "critical": false, "depends_on": ["control-nodes"],
   "selectors": [{"node_tags": ["compute"], "rack_names": ["rack01"]}], "success_criteria": {"percent_successful_nodes": 50}},
  {"name": "compute-nodes-2", "critical": false, "depends_on": ["control-nodes"],
   "selectors": [{"node_tags": ["compute"], "rack_names": ["rack02"]}], "success_criteria": {"percent_successful_nodes": 50}},
  {"name": "monitoring-nodes", "critical": false, "depends_on": [],
   "selectors": [{"node_tags": ["monitoring"], "rack_names": ["rack01", "rack02", "rack03"]}]}
]}"#;

/// Node `i` of `n`: its tag and rack (as `plinth-loadgen`'s `place`).
fn place(i: usize, n: usize) -> (&'static str, &'static str) {
    let control = (n / 10).max(1);
    let compute = (n * 4 / 10).max(1);
    if i == 0 {
        ("ntp", "rack01")
    } else if i <= control {
        ("control", "rack03")
    } else if i <= control + compute {
        ("compute", "rack01")
    } else if i <= control + 2 * compute {
        ("compute", "rack02")
    } else {
        ("monitoring", "rack01")
    }
}

/// Makes a machine's facts node `i`'s own, as `plinth-loadgen fleet --facts-file` does: every MAC,
/// serial, UUID and WWN below `value` marked with the node's number.
fn own_identities(value: &mut Value, i: usize) {
    const IDENTITIES: &[&str] = &[
        "mac",
        "serial",
        "product_serial",
        "board_serial",
        "product_uuid",
        "wwn",
        "wwn_with_extension",
    ];
    match value {
        Value::Object(map) => map.iter_mut().for_each(|(k, v)| match v {
            Value::String(s) if IDENTITIES.contains(&k.as_str()) => s.push_str(&format!("-{i}")),
            other => own_identities(other, i),
        }),
        Value::Array(items) => items.iter_mut().for_each(|v| own_identities(v, i)),
        _ => {}
    }
}

/// The snapshot the controller stores with such a deployment (the shape of a registered simulated node).
fn snapshot(n: usize, tasks: usize, real_facts: Option<&Value>) -> Snapshot {
    let task = |id: String, requires: Option<String>| {
        json!({"id": id, "type": "shell", "tags": ["*"], "parameters": {"cmd": "true"},
               "requires": requires.into_iter().collect::<Vec<_>>()})
    };
    let deploy: Vec<Value> = (0..tasks)
        .map(|i| {
            task(
                format!("deploy-{i:02}"),
                (i > 0).then(|| format!("deploy-{:02}", i - 1)),
            )
        })
        .collect();
    let nodes: Vec<Value> = (0..n)
        .map(|i| {
            let (tag, rack) = place(i, n);
            let dmi: serde_json::Map<String, Value> = [
                "system_vendor",
                "product_name",
                "product_serial",
                "product_uuid",
                "board_vendor",
                "board_name",
                "board_serial",
                "bios_vendor",
                "bios_version",
                "bios_date",
            ]
            .iter()
            .map(|k| (k.to_string(), Value::Null))
            .collect();
            let facts = match real_facts {
                Some(real) => {
                    let mut facts = real.clone();
                    own_identities(&mut facts, i);
                    facts["hostname"] = json!(format!("sim-{i}"));
                    facts
                }
                None => json!({"hostname": format!("sim-{i}"), "kernel": null, "os": null,
                    "dmi": dmi, "cpu": null, "memory": null, "disks": [], "nics": [],
                    "collected_in_us": null}),
            };
            json!({"id": i + 1, "name": format!("sim-{i}"), "roles": [], "pending_roles": [],
                "deployed_roles": [], "tags_added": [tag], "tags_removed": [], "primary_tags": [],
                "labels": {}, "rack": rack, "status": "discover", "pending_addition": true,
                "pending_deletion": false, "facts": facts})
        })
        .collect();
    serde_json::from_value(json!({
        "cluster_id": 1,
        "release": {"name": "bench", "version": "1", "roles_metadata": {}, "tags_metadata": {},
            "volumes_metadata": {}, "attributes_metadata": {},
            "graphs": {"prepare": {"tasks": [task("prepare-node".into(), None)]},
                       "deploy": {"tasks": deploy}}},
        "plugins": [],
        "cluster": {"name": "bench", "release": "bench", "plugins": [], "settings": {}, "generated": {},
            "tags_metadata": {}, "graphs": {}, "status": "new"},
        "nodes": nodes,
        "named": null,
        "forced": false,
    }))
    .expect("a snapshot")
}

/// The engine's part: revisions from one counter, each published list on the board.
struct Engine {
    revision: u64,
    /// Lists published.
    published: usize,
    board: HashMap<u64, Arc<TaskList>>,
    /// The most the run, the board and the resolution held at once (bytes above the start).
    most: usize,
}

impl Engine {
    fn apply(&mut self, run: &mut Run, fx: &mut Effects) {
        let mut lists: Vec<TaskList> = fx.publish.drain(..).collect();
        self.published += lists.len();
        for l in &mut lists {
            self.revision += 1;
            l.revision = self.revision;
        }
        let lists: Vec<Arc<TaskList>> = lists.into_iter().map(Arc::new).collect();
        run.published(&lists).expect("revisions grow");
        for node in &fx.withdraw {
            self.board.remove(node);
        }
        for l in lists {
            self.board.insert(l.node_id, l);
        }
    }
}

/// Steps that publish at least this many lists are timed (as the controller logs them).
const LARGE_PUBLICATION: usize = 1000;

/// A step that started a large phase: how long the run took to compute it, and the run's state the
/// engine then stores: as text, and compressed as the controller writes it (serialized through a
/// buffer into gzip's fastest level).
struct Publication {
    lists: usize,
    computed: std::time::Duration,
    state_bytes: usize,
    state_written: std::time::Duration,
    packed_bytes: usize,
    packed_written: std::time::Duration,
}

impl Publication {
    fn of(run: &Run, step: &Effects, computing: std::time::Instant) -> Publication {
        use std::io::Write;
        let computed = computing.elapsed();
        let writing = std::time::Instant::now();
        let state = serde_json::to_vec(run.state()).expect("the state serializes");
        let state_written = writing.elapsed();
        let packing = std::time::Instant::now();
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut buffered = std::io::BufWriter::with_capacity(64 * 1024, &mut encoder);
        serde_json::to_writer(&mut buffered, run.state()).expect("the state serializes");
        buffered.flush().expect("compresses");
        drop(buffered);
        let packed = encoder.finish().expect("compresses");
        Publication {
            lists: step.publish.len(),
            computed,
            state_bytes: state.len(),
            state_written,
            packed_bytes: packed.len(),
            packed_written: packing.elapsed(),
        }
    }
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

fn per_node(bytes: usize, n: usize) -> String {
    format!(
        "{:>8.1} KiB/node  ({})",
        bytes as f64 / 1024.0 / n as f64,
        mib(bytes)
    )
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(5000);
    let tasks = args.get(1).copied().unwrap_or(20);
    let owned = std::env::args().any(|a| a == "owned");
    let real_facts: Option<Value> = std::env::args()
        .find_map(|a| a.strip_prefix("facts=").map(str::to_string))
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("the facts file reads");
            serde_json::from_str(&text).expect("the facts file is JSON")
        });
    let mut snapshot = snapshot(n, tasks, real_facts.as_ref());
    // The facts as the controller reads them: keys shared across the cluster.
    let reported: Vec<Value> = snapshot
        .nodes
        .iter_mut()
        .map(|node| std::mem::take(&mut node.facts).to_value())
        .collect();
    let before = heap();
    let reading = std::time::Instant::now();
    let mut keys = plinth_common::json::Keys::default();
    let facts: Vec<plinth_common::json::Json> = reported
        .iter()
        .map(|f| plinth_common::json::Json::from_ref_with(f, &mut keys))
        .collect();
    drop(keys);
    let read_in = reading.elapsed();
    let facts_bytes = heap() - before;
    drop(reported);
    for (node, facts) in snapshot.nodes.iter_mut().zip(facts) {
        node.facts = facts;
    }
    // What the run and the strategy need of each node, kept apart: resolving owned takes the snapshot.
    let nodes: Vec<(u64, String, Option<String>)> = snapshot
        .nodes
        .iter()
        .map(|n| (n.id, n.name.clone(), n.rack.clone()))
        .collect();
    let exprs = Expressions::standard();
    let strategy: Strategy = serde_json::from_str(STRATEGY).expect("the strategy parses");
    let graph_types: Vec<String> = strategy
        .phases
        .iter()
        .map(|p| p.graph_type.clone())
        .collect();

    let base = heap();
    PEAK.store(base, Ordering::Relaxed);
    let resolving = std::time::Instant::now();
    let resolved = if owned {
        resolve_owned(snapshot, &graph_types, &exprs)
    } else {
        resolve(&snapshot, &graph_types, &exprs)
    }
    .expect("resolves");
    let resolved_in = resolving.elapsed();
    let resolve_peak = PEAK.load(Ordering::Relaxed) - base;
    let held_by_resolution = heap() - base;

    let plan = RunPlan {
        deployment_id: 1,
        nodes: nodes
            .iter()
            .map(|(id, name, _)| {
                (
                    *id,
                    RunNode {
                        name: name.clone(),
                        node_key: format!("{id:064x}"),
                    },
                )
            })
            .collect(),
        graphs: resolved.phases.clone(),
        noop: false,
        named_strategy: true,
    };
    let inventory: Vec<InventoryNode> = nodes
        .iter()
        .map(|(id, name, rack)| {
            let mut inv = InventoryNode::new(name.clone());
            for tag in resolved.tags.get(id).into_iter().flatten() {
                inv = inv.with_tag(tag.clone());
            }
            if let Some(rack) = rack {
                inv = inv.in_rack(rack.clone());
            }
            inv
        })
        .collect();
    let mut run = Run::new(plan, strategy, &inventory).expect("the strategy runs");
    drop(inventory);

    let start = heap();
    PEAK.store(start, Ordering::Relaxed);
    let mut engine = Engine {
        revision: 0,
        published: 0,
        board: HashMap::new(),
        most: 0,
    };
    let began = std::time::Instant::now();
    let mut fx = run.start(0);
    let mut results = 0usize;
    let mut large = Vec::new();
    loop {
        engine.apply(&mut run, &mut fx);
        engine.most = engine.most.max(heap().saturating_sub(start));
        if fx.finish.is_some() {
            break;
        }
        // Every node holding a list answers it, one node at a time (as their results are stored).
        let holding: Vec<Arc<TaskList>> = engine.board.values().cloned().collect();
        if holding.is_empty() {
            panic!("nothing on the board and the deployment has not finished");
        }
        let mut next = Effects::default();
        for list in holding {
            let answers: Vec<TaskResult> = list
                .tasks
                .iter()
                .map(|t| TaskResult {
                    deployment_id: list.deployment_id,
                    revision: list.revision,
                    task_id: t.id.clone(),
                    attempt: 1,
                    status: ResultStatus::Succeeded,
                    last: true,
                    exit_code: Some(0),
                    started_at_ms: 0,
                    duration_ms: 1,
                    stdout_tail: String::new(),
                    stderr_tail: String::new(),
                    message: String::new(),
                    details: Value::Null,
                })
                .collect();
            results += answers.len();
            let computing = std::time::Instant::now();
            let mut step = run.results(0, list.node_id, &answers);
            if step.publish.len() >= LARGE_PUBLICATION {
                large.push(Publication::of(&run, &step, computing));
            }
            engine.apply(&mut run, &mut step);
            engine.most = engine.most.max(heap().saturating_sub(start));
            if step.finish.is_some() {
                next.finish = step.finish;
                break;
            }
        }
        fx = next;
        if fx.finish.is_some() {
            break;
        }
    }
    let run_peak = PEAK.load(Ordering::Relaxed) - start;
    let run_time = began.elapsed();

    println!(
        "{n} nodes, a {tasks}-task deploy graph, five groups: {} lists, {results} results",
        engine.published
    );
    println!(
        "the run, start to finish: {:.0} ms, {:.2} µs a result (the results made, the board and the \
         counting allocator included)",
        run_time.as_secs_f64() * 1000.0,
        run_time.as_secs_f64() * 1e6 / results.max(1) as f64
    );
    for p in &large {
        println!(
            "  a step publishing {} lists: computed in {:.0} ms; its state {:.1} MB of text in {:.0} ms, \
             compressed {:.2} MB in {:.0} ms",
            p.lists,
            p.computed.as_secs_f64() * 1000.0,
            p.state_bytes as f64 / 1e6,
            p.state_written.as_secs_f64() * 1000.0,
            p.packed_bytes as f64 / 1e6,
            p.packed_written.as_secs_f64() * 1000.0
        );
    }
    println!(
        "the nodes' facts, read as the controller reads them {}",
        per_node(facts_bytes, n)
    );
    println!(
        "reading them: {:.0} ms; resolving: {:.0} ms",
        read_in.as_secs_f64() * 1000.0,
        resolved_in.as_secs_f64() * 1000.0
    );
    println!("held by the resolution for the whole deployment:");
    println!(
        "  all                      {}",
        per_node(held_by_resolution, n)
    );
    let before = heap();
    let Resolved {
        phases,
        states,
        plans,
        ..
    } = resolved;
    drop(plans);
    let plans_bytes = before - heap();
    let before = heap();
    drop(states);
    let states_bytes = before - heap();
    println!("  plans (graph::Plan)      {}", per_node(plans_bytes, n));
    println!("  states (task states)     {}", per_node(states_bytes, n));
    println!(
        "  per-node specs and rest  {}",
        // With `owned`, the heap is counted net of the facts the snapshot gave up (they are the
        // states' now), so this can be below nothing: read it as nothing.
        per_node(
            held_by_resolution.saturating_sub(plans_bytes + states_bytes),
            n
        )
    );
    println!(
        "resolving, peak above the snapshot {}",
        per_node(resolve_peak, n)
    );
    println!(
        "the run and the board at their most {}",
        per_node(engine.most, n)
    );
    let before = heap();
    drop(engine);
    let board_bytes = before - heap();
    let before = heap();
    drop(run);
    let run_bytes = before - heap();
    println!("  at the end: the board    {}", per_node(board_bytes, n));
    println!("  at the end: the run      {}", per_node(run_bytes, n));
    println!(
        "peak while running, above the resolution {}",
        per_node(run_peak, n)
    );
    println!(
        "held at the peak in all (resolution + run)  {}",
        per_node(held_by_resolution + run_peak, n)
    );
    println!(
        "  and with the facts                        {}",
        per_node(facts_bytes + held_by_resolution + run_peak, n)
    );
    drop(phases);
}

use plinth_common::snapshot::Resolved;
