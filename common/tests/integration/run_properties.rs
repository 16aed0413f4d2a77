//! Properties of a running deployment (`plinth_common::run`) over generated deployments and generated
//! orders of results: a finished deployment has exactly one final outcome per node and per task whatever
//! order results arrive in, duplicates and stale results included; nothing is published after it
//! finished; a node's revisions only grow.

use crate::run_support;

use std::collections::{BTreeMap, BTreeSet};

use plinth_common::run::{Effects, Finish, Run};
use plinth_common::wire::{ResultStatus, TaskList, TaskResult};
use proptest::prelude::*;
use run_support::{result, Case, Driver, GraphDef, NodeDef, ToleranceDef};

/// A generated deployment.
#[derive(Debug, Clone)]
struct Shape {
    nodes: usize,
    /// 0: every node at once, one phase; 1: two groups one after the other, two phases (named).
    strategy: u8,
    /// Tasks per (graph, node), 0 to 3.
    tasks: Vec<u8>,
    /// Whether a node's second task waits for the first task of the next node.
    waits: Vec<bool>,
    /// A limit of one node at once on the first task.
    limited: bool,
    /// A fault tolerance group over every node, tolerating this many (none when absent).
    tolerance: Option<u8>,
    /// What each task reports, by (graph, node, task) index: failed when true.
    fails: Vec<bool>,
}

fn shape() -> impl Strategy<Value = Shape> {
    (
        1usize..=5,
        0u8..=1,
        proptest::collection::vec(0u8..=3, 10),
        proptest::collection::vec(any::<bool>(), 5),
        any::<bool>(),
        proptest::option::of(0u8..=2),
        proptest::collection::vec(proptest::bool::weighted(0.2), 40),
    )
        .prop_map(
            |(nodes, strategy, tasks, waits, limited, tolerance, fails)| Shape {
                nodes,
                strategy,
                tasks,
                waits,
                limited,
                tolerance,
                fails,
            },
        )
}

const GRAPHS: [&str; 2] = ["prepare", "deploy"];

impl Shape {
    fn name(n: usize) -> String {
        format!("n{}", n + 1)
    }

    fn graphs(&self) -> &'static [&'static str] {
        if self.strategy == 0 {
            &GRAPHS[1..]
        } else {
            &GRAPHS
        }
    }

    fn case(&self) -> Case {
        let mut graphs = BTreeMap::new();
        for (g, graph) in self.graphs().iter().enumerate() {
            let mut def = GraphDef::default();
            for n in 0..self.nodes {
                let count = self.tasks[(g * 5 + n) % self.tasks.len()];
                let mut tasks = Vec::new();
                for t in 0..count {
                    let mut text = format!("t{t}");
                    if t == 0 && self.limited {
                        text.push_str(" gated");
                    }
                    if t == 1 && self.waits[n] && self.nodes > 1 {
                        text.push_str(&format!(" waits:{}.t0", Shape::name((n + 1) % self.nodes)));
                    }
                    tasks.push(text);
                }
                if !tasks.is_empty() {
                    def.tasks.insert(Shape::name(n), tasks);
                }
            }
            if self.limited {
                def.limits.insert("t0".into(), 1);
            }
            if let Some(t) = self.tolerance {
                def.fault_tolerance.push(ToleranceDef {
                    name: "all".into(),
                    nodes: (0..self.nodes).map(Shape::name).collect(),
                    tolerance: Some(t.to_string()),
                });
            }
            graphs.insert(graph.to_string(), def);
        }
        let strategy = (self.strategy == 1).then(|| {
            let first: Vec<String> = (0..self.nodes.div_ceil(2)).map(Shape::name).collect();
            let second: Vec<String> = (self.nodes.div_ceil(2)..self.nodes)
                .map(Shape::name)
                .collect();
            let mut groups = vec![serde_json::json!({"name": "first", "critical": false, "depends_on": [],
                "selectors": [{"node_names": first}]})];
            if !second.is_empty() {
                groups.push(serde_json::json!({"name": "second", "critical": true, "depends_on": ["first"],
                    "selectors": [{"node_names": second}],
                    "success_criteria": {"minimum_successful_nodes": 1}}));
            }
            serde_yaml_ng::to_value(serde_json::json!({
                "phases": [{"name": "prepare", "graph_type": "prepare"}, {"name": "deploy", "graph_type": "deploy"}],
                "phase_timeout": 60,
                "groups": groups,
            }))
            .expect("a strategy as YAML")
        });
        Case {
            about: String::new(),
            strategy,
            named: None,
            timeout: 60,
            nodes: (0..self.nodes)
                .map(|n| NodeDef::Name(Shape::name(n)))
                .collect(),
            graphs,
            steps: Vec::new(),
        }
    }

    /// What a task reports, always the same for the same task.
    fn status(&self, list: &TaskList, task: &str) -> ResultStatus {
        let g = usize::from(list.phase == "deploy");
        let t: usize = task[1..].parse().unwrap_or(0);
        let index = (g * 20 + list.node_id as usize * 4 + t) % self.fails.len();
        if self.fails[index] {
            ResultStatus::Failed
        } else {
            ResultStatus::Succeeded
        }
    }
}

/// A result waiting to be sent, with whether it is noise (a repeat, a progress report, a stale revision).
#[derive(Debug, Clone)]
struct Pending {
    node: u64,
    result: TaskResult,
}

/// Drives a run to its end, taking results in the order `order` picks; with `drop_some`, some last words
/// are never sent and the run ends by its timeouts. Returns the finish, every effect, and every result
/// sent.
struct Played {
    finish: Finish,
    outcomes: Vec<(u64, String, String, ResultStatus)>,
    effects: Vec<Effects>,
    sent: Vec<Pending>,
    run: Run,
    driver: Driver,
}

/// Plays a deployment: results sent in `order`, `group` at a time folded into one step (the controller
/// stores the reports that arrive together in one transaction and records what they do as one step).
fn play(shape: &Shape, order: &[usize], noise: &[u8], drop_some: bool, group: usize) -> Played {
    let mut run = shape.case().run().expect("a generated deployment starts");
    let mut driver = Driver::default();
    let mut pending: Vec<Pending> = Vec::new();
    let mut effects = Vec::new();
    let mut sent = Vec::new();
    let mut now = 0i64;
    let mut step = 0usize;
    let mut fx = run.start(now);
    loop {
        driver.apply(&mut run, &mut fx);
        for list in &fx.publish {
            for (i, task) in list.tasks.iter().enumerate() {
                let status = shape.status(list, &task.id);
                let kind = noise[(list.revision as usize * 3 + i) % noise.len()];
                if drop_some && kind == 4 {
                    continue;
                }
                pending.push(Pending {
                    node: list.node_id,
                    result: result(list.revision, &task.id, status, 1),
                });
                match kind {
                    1 => pending.push(Pending {
                        node: list.node_id,
                        result: result(list.revision, &task.id, status, 1),
                    }),
                    2 => pending.push(Pending {
                        node: list.node_id,
                        result: result(list.revision, &task.id, ResultStatus::Running, 1),
                    }),
                    3 => pending.push(Pending {
                        node: list.node_id,
                        result: result(list.revision - 1, &task.id, ResultStatus::Failed, 1),
                    }),
                    _ => {}
                }
            }
        }
        effects.push(std::mem::take(&mut fx));
        if let Some(finish) = effects.last().and_then(|f| f.finish.clone()) {
            return Played {
                finish,
                outcomes: run.task_outcomes(),
                effects,
                sent,
                run,
                driver,
            };
        }
        if pending.is_empty() {
            assert!(
                drop_some,
                "every result was sent and the deployment did not finish"
            );
            now += 61_000;
            fx = run.tick(now);
            continue;
        }
        let mut batch: Vec<(u64, Vec<TaskResult>)> = Vec::new();
        for _ in 0..group.max(1) {
            if pending.is_empty() {
                break;
            }
            let pick = order[step % order.len()] % pending.len();
            step += 1;
            let p = pending.remove(pick);
            now += 10;
            // Gated tasks ask as they would (taking slots changes no outcome).
            let _ = run.gate(p.node, &p.result.task_id);
            batch.push((p.node, vec![p.result.clone()]));
            sent.push(p);
        }
        fx = if group <= 1 {
            let (node, results) = &batch[0];
            run.results(now, *node, results)
        } else {
            run.results_of(now, &batch)
        };
    }
}

fn check_finish(shape: &Shape, played: &Played) {
    let f = &played.finish;
    let all: BTreeSet<u64> = (1..=shape.nodes as u64).collect();
    let mut seen = BTreeSet::new();
    for n in f.succeeded.iter().chain(&f.failed).chain(&f.untouched) {
        assert!(seen.insert(*n), "node {n} has two final outcomes: {f:?}");
    }
    assert_eq!(seen, all, "every node has one final outcome: {f:?}");
    // Each task's outcome is the first last word sent for its list, never a later or stale one.
    for (node, graph, task, status) in &played.outcomes {
        let first = played
            .sent
            .iter()
            .find(|p| {
                p.node == *node
                    && p.result.task_id == *task
                    && p.result.last
                    && played
                        .driver
                        .lists
                        .get(node)
                        .and_then(|ls| ls.iter().find(|l| l.revision == p.result.revision))
                        .is_some_and(|l| l.phase == *graph && !l.cancel)
            })
            .map(|p| p.result.status);
        assert_eq!(first, Some(*status), "node {node} task {task} of {graph}");
    }
}

fn check_nothing_after_finish(played: &mut Played) {
    let run = &mut played.run;
    let mut after = Vec::new();
    for p in &played.sent {
        after.push(run.results(i64::MAX / 4, p.node, std::slice::from_ref(&p.result)));
        assert!(run.gate(p.node, &p.result.task_id).is_none());
    }
    after.push(run.tick(i64::MAX / 2));
    after.push(run.start(i64::MAX / 2));
    for fx in after {
        assert!(fx.is_empty(), "a finished deployment answered {fx:?}");
    }
    assert!(run.cancel("late").is_err());
}

fn check_revisions(played: &Played) {
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    for fx in &played.effects {
        for l in fx.publish.iter().chain(&fx.stop_orders) {
            let before = last.insert(l.node_id, l.revision).unwrap_or(0);
            assert!(
                l.revision > before,
                "node {} went from {before} to {}",
                l.node_id,
                l.revision
            );
        }
    }
    // A list that does not move its node's revision on is refused.
    let mut run = played.run.clone();
    if let Some((node, rev)) = last.iter().next() {
        let mut stale = played.driver.lists[node].last().cloned().expect("a list");
        stale.revision = *rev;
        assert!(run.published(&[std::sync::Arc::new(stale)]).is_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    /// Whatever order results arrive in (repeats, progress reports and stale revisions among them),
    /// the deployment ends the same: the same status, the same nodes succeeded and failed, the same
    /// task outcomes.
    #[test]
    fn the_end_does_not_depend_on_the_order_of_results(
        shape in shape(),
        first in proptest::collection::vec(any::<usize>(), 1..40),
        second in proptest::collection::vec(any::<usize>(), 1..40),
        noise in proptest::collection::vec(0u8..=3, 1..20),
    ) {
        let mut a = play(&shape, &first, &noise, false, 1);
        let b = play(&shape, &second, &noise, false, 1);
        check_finish(&shape, &a);
        check_finish(&shape, &b);
        prop_assert_eq!(&a.finish, &b.finish);
        prop_assert_eq!(&a.outcomes, &b.outcomes);
        check_revisions(&a);
        check_nothing_after_finish(&mut a);
    }

    /// Results folded in groups (each group's effects recorded as one step, as the controller records
    /// the reports it stores together) end the deployment as results folded one by one.
    #[test]
    fn folding_results_in_groups_ends_as_one_by_one(
        shape in shape(),
        order in proptest::collection::vec(any::<usize>(), 1..40),
        noise in proptest::collection::vec(0u8..=3, 1..20),
        group in 2usize..8,
    ) {
        let one_by_one = play(&shape, &order, &noise, false, 1);
        let mut grouped = play(&shape, &order, &noise, false, group);
        check_finish(&shape, &grouped);
        prop_assert_eq!(&one_by_one.finish, &grouped.finish);
        prop_assert_eq!(&one_by_one.outcomes, &grouped.outcomes);
        let finishes = grouped.effects.iter().filter(|f| f.finish.is_some()).count();
        prop_assert_eq!(finishes, 1);
        check_revisions(&grouped);
        check_nothing_after_finish(&mut grouped);
    }

    /// With some last words never sent, the deployment still ends (by its timeouts) with exactly one
    /// final outcome per node, publishes nothing after, and revisions only grow.
    #[test]
    fn a_deployment_ends_once_even_when_nodes_fall_silent(
        shape in shape(),
        order in proptest::collection::vec(any::<usize>(), 1..40),
        noise in proptest::collection::vec(0u8..=4, 1..20),
    ) {
        let mut played = play(&shape, &order, &noise, true, 1);
        check_finish(&shape, &played);
        let finishes = played.effects.iter().filter(|f| f.finish.is_some()).count();
        prop_assert_eq!(finishes, 1);
        check_revisions(&played);
        check_nothing_after_finish(&mut played);
    }
}
