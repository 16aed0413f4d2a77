//! A running deployment, as pure logic: the strategy's phases (through [`Sequencer`]), each node's list
//! for the phase it is in, task outcomes, concurrency slots, fault tolerance, cross-node waits (the gate's
//! answers) and phase timeouts.
//!
//! [`Run`] takes events — [`Run::start`], [`Run::results`], [`Run::tick`], [`Run::gate`],
//! [`Run::cancel`] — and answers each with [`Effects`]: lists to publish, nodes whose list comes off the
//! board, whether its state must be saved, typed events to record and stream, and the deployment's end.
//! It does no I/O and reads no clock: the time comes in as an argument (milliseconds), revisions come back
//! from whoever stores the lists ([`Run::published`]). The controller's engine applies each call's effects
//! in one store transaction, then publishes them.
//!
//! Invariants (each guarded by `common/tests/integration/run_properties.rs`): once finished, a deployment has exactly
//! one final outcome per node and per task of its nodes' lists, whatever order results arrive in,
//! duplicates included; nothing is published after it finished; a node's revisions only grow.
//! Data-driven cases in `common/tests/run_cases/` show each behaviour step by step.

mod gate;
mod plan;
mod state;
mod words;

pub use gate::GateStatus;
pub use plan::{GraphPlan, RunNode, RunPlan};
pub use state::RunState;
use words::{TaskNames, Words};

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use crate::strategy::{
    self, Action, InventoryNode, NodeOutcome, SequenceError, Sequencer, Strategy,
};
use crate::wire::{
    CrossDependency, DeploymentEvent, DeploymentStatus, NodeStatus, ResultStatus, TaskList,
    TaskResult, Tasks,
};

/// What the caller must do after a call, in order: store (one transaction: `publish`, `stop_orders`,
/// `save_state`, `events`, `finish`), then take `withdraw` off the board *before* putting `publish`,
/// `repost` and `stop_orders` on it (a node can leave one phase's list and get the next one's in the same
/// call), stream `events` then `live`, and wake gated tasks if `waits_changed`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effects {
    /// Lists to store (the store assigns their revisions; pass them back to [`Run::published`]) and put
    /// on the board.
    pub publish: Vec<TaskList>,
    /// Lists already stored that go back on the board (after [`Run::restore`]).
    pub repost: Vec<Arc<TaskList>>,
    /// Orders to stop (a cancel): lists with no tasks and `cancel` set, to store and put on the board.
    pub stop_orders: Vec<TaskList>,
    /// Nodes whose list of this deployment comes off the board, in order, without repeats.
    pub withdraw: Vec<u64>,
    /// Whether the run's state ([`Run::state`]) must be saved with this call's events.
    pub save_state: bool,
    /// Events to record with the deployment and stream to its watchers.
    pub events: Vec<DeploymentEvent>,
    /// Events only streamed (task results, which are stored as results).
    pub live: Vec<DeploymentEvent>,
    /// The deployment ended: record its end.
    pub finish: Option<Finish>,
    /// Whether a gated task's answer may have changed (a task finished, a node settled, a phase began).
    pub waits_changed: bool,
    /// The nodes in `withdraw`, to keep it without repeats in constant time per node (a step can
    /// withdraw every node of a deployment).
    withdrawn: HashSet<u64>,
}

impl Effects {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        *self == Effects::default()
    }

    fn withdraw(&mut self, node: u64) {
        if self.withdrawn.insert(node) {
            self.withdraw.push(node);
        }
    }

    fn withdraw_all(&mut self, nodes: impl IntoIterator<Item = u64>) {
        for node in nodes {
            self.withdraw(node);
        }
    }
}

/// How a deployment ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finish {
    /// Its final status.
    pub status: DeploymentStatus,
    /// Nodes that finished every phase.
    pub succeeded: Vec<u64>,
    /// Nodes that failed a phase.
    pub failed: Vec<u64>,
    /// Why each failed node failed ([`strategy::NodeReport::failure_reason`]), by node.
    pub reasons: BTreeMap<u64, String>,
    /// Nodes not started, not finished, or selected by no group.
    pub untouched: Vec<u64>,
    /// Every task that succeeded on a node that succeeded, as (node, task): what the task's state is
    /// recorded for (`old()` and `changed()` compare with it next time).
    pub succeeded_tasks: Vec<(u64, Arc<str>)>,
}

/// Why a call was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The deployment has ended: its record is final.
    #[error("the deployment has ended ({0})")]
    Finished(DeploymentStatus),
    /// A stored list's revision does not grow beyond what the node had.
    #[error("node {node}: revision {revision} does not grow beyond {previous}")]
    RevisionNotGrowing {
        /// The node.
        node: u64,
        /// The revision given.
        revision: u64,
        /// The node's last revision in this deployment.
        previous: u64,
    },
    /// The strategy does not run over these nodes.
    #[error(transparent)]
    Sequence(#[from] SequenceError),
}

/// Where a list runs: its group, its phase and the phase's graph type. One per phase started, shared
/// by its nodes' [`Current`] (a 40,000-node phase would otherwise copy three names per node as it
/// starts, and free them as the next one does).
#[derive(Debug)]
struct Place {
    group: String,
    phase: String,
    graph_type: String,
}

/// A node's list for the phase it is in.
#[derive(Debug, Clone)]
struct Current {
    at: Arc<Place>,
    /// The list as stored, shared with the board ([`Run::published`]). Until it is stored (revision 0)
    /// only its header, without tasks; once every task has its last word, only its header again (the
    /// tasks' last words are in `finals`), so a finished node holds no copy of its list.
    list: Arc<TaskList>,
    /// Each task's last word, the first one only (task ids named through [`Finals::names`]).
    finals: Words,
    settled: bool,
}

/// What starting a phase does with one of its nodes ([`Run::start_node`]).
enum Start {
    /// The node runs this list.
    List(TaskList),
    /// The node's outcome in the phase is recorded already.
    Settled,
    /// No such node in the plan.
    Unknown,
}

impl Current {
    /// The node's outcome once every task has its last word.
    fn outcome(&self, names: &TaskNames) -> Option<NodeOutcome> {
        if self.list.revision == 0 {
            // Not stored yet: its tasks are not here.
            return None;
        }
        if self
            .list
            .tasks
            .iter()
            .any(|t| names.find(&t.id).is_none_or(|i| !self.finals.contains(i)))
        {
            return None;
        }
        let failed = self.finals.iter().any(|(_, s)| s.is_failure());
        Some(if failed {
            NodeOutcome::Failed
        } else {
            NodeOutcome::Succeeded
        })
    }
}

/// The last word of every task of a deployment, by graph type, node and task. Task ids are kept once
/// each ([`TaskNames`]) and named by their index in every node's words.
#[derive(Debug, Clone, Default)]
struct Finals {
    by_graph: HashMap<String, HashMap<u64, Words>>,
    names: TaskNames,
}

impl Finals {
    fn insert(&mut self, graph_type: &str, node: u64, task: &str, status: ResultStatus) {
        let task = self.names.intern(task);
        let by_node = match self.by_graph.get_mut(graph_type) {
            Some(by_node) => by_node,
            None => self.by_graph.entry(graph_type.to_string()).or_default(),
        };
        by_node.entry(node).or_default().insert_first(task, status);
    }

    fn get(&self, graph_type: &str, node: u64, task: &str) -> Option<ResultStatus> {
        let task = self.names.find(task)?;
        self.by_graph.get(graph_type)?.get(&node)?.get(task)
    }

    /// A node's words are complete: the room kept for more goes.
    fn complete(&mut self, graph_type: &str, node: u64) {
        if let Some(words) = self
            .by_graph
            .get_mut(graph_type)
            .and_then(|by_node| by_node.get_mut(&node))
        {
            words.complete();
        }
    }
}

/// One running deployment. See the module's documentation.
#[derive(Debug, Clone)]
pub struct Run {
    plan: Arc<RunPlan>,
    state: RunState,
    ids: HashMap<String, u64>,
    current: BTreeMap<u64, Current>,
    done: Finals,
    /// Nodes holding a slot of a concurrency-limited task, by (graph type, task).
    slots: BTreeMap<(String, String), BTreeSet<u64>>,
    /// Each node's last revision in this deployment.
    revisions: BTreeMap<u64, u64>,
    /// Set when a fault tolerance was exceeded or an operator cancelled: no further list is published.
    stopped: Option<String>,
    finished: Option<DeploymentStatus>,
    /// Set when the sequencer learned something no stored result shows (a timeout, a node with nothing
    /// to do or whose list could not be made): the state must be saved.
    dirty: bool,
}

/// Without a named strategy, the one `default` group needs every node, unless the graphs' groups tolerate
/// failures (`fault_tolerance`): then it tolerates as many failed nodes as they allow in all, and each
/// group's own limit is enforced as its nodes fail.
pub fn tolerate_failures(strategy: &mut Strategy, plan: &RunPlan) {
    let allowed: usize = plan
        .graphs
        .values()
        .flat_map(|p| &p.fault_tolerance)
        .filter_map(|g| {
            g.fault_tolerance
                .map(|t| t.allowed_failures(g.node_ids.len()))
        })
        .sum();
    if allowed == 0 {
        return;
    }
    if let Some(group) = strategy.groups.first_mut() {
        group.success_criteria = Some(strategy::SuccessCriteria {
            maximum_failed_nodes: Some(allowed as u64),
            ..strategy::SuccessCriteria::default()
        });
    }
}

fn phase_key(group: &str, phase: &str) -> String {
    format!("{group}/{phase}")
}

impl Run {
    /// A deployment about to start: the strategy over the inventory (the deployment's nodes as its
    /// selectors see them). Without a named strategy, the graphs' fault tolerance applies
    /// ([`tolerate_failures`]).
    pub fn new(
        plan: RunPlan,
        mut strategy: Strategy,
        inventory: &[InventoryNode],
    ) -> Result<Run, RunError> {
        if !plan.named_strategy {
            tolerate_failures(&mut strategy, &plan);
        }
        let sequencer = Sequencer::new(&strategy, inventory)?;
        let state = RunState {
            phase_graph: strategy
                .phases
                .iter()
                .map(|p| (p.name.clone(), p.graph_type.clone()))
                .collect(),
            sequencer,
            deadlines: BTreeMap::new(),
        };
        Ok(Run::with_state(Arc::new(plan), state))
    }

    fn with_state(plan: Arc<RunPlan>, state: RunState) -> Run {
        Run {
            ids: plan
                .nodes
                .iter()
                .map(|(id, n)| (n.name.clone(), *id))
                .collect(),
            plan,
            state,
            current: BTreeMap::new(),
            done: Finals::default(),
            slots: BTreeMap::new(),
            revisions: BTreeMap::new(),
            stopped: None,
            finished: None,
            dirty: false,
        }
    }

    /// A deployment that was running when the controller stopped, rebuilt from its stored state, its
    /// published lists (oldest first) and its stored results: the lists of the phases still awaiting
    /// results go back on the board, the results are folded in again, and it moves on from there.
    pub fn restore(
        plan: Arc<RunPlan>,
        state: RunState,
        lists: &[TaskList],
        results: &[(u64, TaskResult)],
        now: i64,
    ) -> (Run, Effects) {
        let mut run = Run::with_state(plan, state);
        let mut fx = Effects::default();
        let mut latest: HashMap<u64, &TaskList> = HashMap::new();
        let mut phase_of: HashMap<(u64, u64), &str> = HashMap::new();
        for l in lists {
            latest.insert(l.node_id, l);
            phase_of.insert((l.node_id, l.revision), &l.phase);
            let last = run.revisions.entry(l.node_id).or_default();
            *last = (*last).max(l.revision);
        }
        for phase in run.state.sequencer.in_flight() {
            let at = Arc::new(Place {
                group: phase.group.clone(),
                phase: phase.phase.clone(),
                graph_type: run
                    .state
                    .phase_graph
                    .get(&phase.phase)
                    .cloned()
                    .unwrap_or_default(),
            });
            for name in &phase.awaiting {
                let Some(node_id) = run.ids.get(name).copied() else {
                    continue;
                };
                if let Some(list) = latest.get(&node_id).filter(|l| l.phase == phase.phase) {
                    let list = Arc::new((*list).clone());
                    fx.repost.push(list.clone());
                    run.current.insert(
                        node_id,
                        Current {
                            at: at.clone(),
                            list,
                            finals: Words::default(),
                            settled: false,
                        },
                    );
                }
            }
        }
        let mut touched = BTreeSet::new();
        for (node, r) in results {
            touched.insert(*node);
            if r.last {
                let graph_type = phase_of
                    .get(&(*node, r.revision))
                    .and_then(|p| run.state.phase_graph.get(*p))
                    .cloned()
                    .unwrap_or_default();
                run.done.insert(&graph_type, *node, &r.task_id, r.status);
            }
            run.fold(*node, r);
        }
        for node in touched {
            run.settle(node, &mut fx);
        }
        // Their events were stored when the results came in.
        run.state.sequencer.take_events();
        fx.events.clear();
        // Lists are only put back for nodes still running them (nothing of this deployment is on the
        // board after a restart, so nothing needs taking off).
        fx.repost
            .retain(|l| run.current.get(&l.node_id).is_some_and(|c| !c.settled));
        fx.withdraw.clear();
        fx.withdrawn.clear();
        run.publish_unstored(&mut fx);
        run.advance(now, &mut fx);
        (run, fx)
    }

    /// After a restore: gives each node still awaited in a running phase, but with no list of that
    /// phase stored, its list. A phase's lists may be stored in several transactions (a large phase goes
    /// out in slices), so a controller that stopped between two left such nodes.
    fn publish_unstored(&mut self, fx: &mut Effects) {
        let mut lists = Vec::new();
        let mut placed = Vec::new();
        for phase in self.state.sequencer.in_flight() {
            let starting: HashSet<u64> = phase
                .nodes
                .iter()
                .filter_map(|n| self.ids.get(n).copied())
                .collect();
            let at = Arc::new(Place {
                group: phase.group,
                phase: phase.phase,
                graph_type: phase.graph_type,
            });
            for name in &phase.awaiting {
                if self
                    .ids
                    .get(name)
                    .is_some_and(|id| self.current.contains_key(id))
                {
                    continue;
                }
                if let Start::List(list) = self.start_node(&at, name, &starting, fx) {
                    lists.push(list);
                    placed.push(at.clone());
                }
            }
        }
        fx.events.extend(self.state.sequencer.take_events());
        self.hold(lists.into_iter().zip(placed), fx);
    }

    /// The same run for the deployment with this id (the store gives the id once the deployment's
    /// record, with the run's first state, is written). Before [`Run::start`].
    pub fn with_deployment_id(mut self, id: u64) -> Run {
        Arc::make_mut(&mut self.plan).deployment_id = id;
        self
    }

    /// The state to store (and to [`Run::restore`] from).
    pub fn state(&self) -> &RunState {
        &self.state
    }

    /// What the run was made from.
    pub fn plan(&self) -> &Arc<RunPlan> {
        &self.plan
    }

    /// How it ended, once it has.
    pub fn finished(&self) -> Option<DeploymentStatus> {
        self.finished
    }

    /// Why no further list is published, if so.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// The list a node holds now, while its phase runs.
    pub fn current_list(&self, node: u64) -> Option<&Arc<TaskList>> {
        self.current
            .get(&node)
            .filter(|c| !c.settled && self.finished.is_none())
            .map(|c| &c.list)
    }

    /// The graph type of the phase whose list `node` holds at `revision`, while the run holds it.
    pub fn graph_type_of(&self, node: u64, revision: u64) -> Option<&str> {
        self.current
            .get(&node)
            .filter(|c| c.list.revision == revision)
            .map(|c| c.at.graph_type.as_str())
    }

    /// Whether a result is for the list `node` holds now (same revision, a task of it).
    pub fn owns(&self, node: u64, r: &TaskResult) -> bool {
        self.finished.is_none()
            && self.current.get(&node).is_some_and(|c| {
                c.list.revision == r.revision
                    && (c.list.tasks.iter().any(|t| t.id == r.task_id)
                        // A finished node's list keeps only its header; its tasks are those with a
                        // last word.
                        || (c.settled
                            && self
                                .done
                                .names
                                .find(&r.task_id)
                                .is_some_and(|i| c.finals.contains(i))))
            })
    }

    /// Every task's last word so far, as (node, graph type, task, status), in that order.
    pub fn task_outcomes(&self) -> Vec<(u64, String, String, ResultStatus)> {
        let mut out: Vec<_> = self
            .done
            .by_graph
            .iter()
            .flat_map(|(g, nodes)| {
                nodes.iter().flat_map(move |(n, words)| {
                    words
                        .iter()
                        .map(move |(t, s)| (*n, g.clone(), self.done.names.name(t).to_string(), s))
                })
            })
            .collect();
        out.sort();
        out
    }

    /// A node's status in the deployment now.
    pub fn node_status(&self, node: u64) -> Option<NodeStatus> {
        let name = &self.plan.nodes.get(&node)?.name;
        if self
            .current
            .get(&node)
            .is_some_and(|c| !c.settled && self.finished.is_none())
        {
            return Some(NodeStatus::Running);
        }
        Some(
            self.state
                .sequencer
                .node_status(name)
                .unwrap_or(NodeStatus::NotStarted),
        )
    }

    /// Starts the deployment: publishes the lists of the phases that can start.
    pub fn start(&mut self, now: i64) -> Effects {
        let mut fx = Effects::default();
        if self.finished.is_none() {
            self.advance(now, &mut fx);
        }
        fx
    }

    /// The store assigned these lists (of [`Effects::publish`] or [`Effects::stop_orders`]) their
    /// revisions: results name them from now on. A revision that does not grow is refused. The run keeps
    /// each node's list as given (the same `Arc` the board holds: one copy of it in memory).
    pub fn published(&mut self, lists: &[Arc<TaskList>]) -> Result<(), RunError> {
        for list in lists {
            let previous = self.revisions.get(&list.node_id).copied().unwrap_or(0);
            if list.revision <= previous {
                return Err(RunError::RevisionNotGrowing {
                    node: list.node_id,
                    revision: list.revision,
                    previous,
                });
            }
            self.revisions.insert(list.node_id, list.revision);
            if let Some(cur) = self.current.get_mut(&list.node_id) {
                if cur.list.phase == list.phase && !list.cancel {
                    cur.list = list.clone();
                }
            }
        }
        Ok(())
    }

    /// Folds a node's stored results in: a task's first last word counts, later ones and results for
    /// lists the node no longer holds are ignored. Records the node's outcome once its list is complete
    /// and moves the deployment on.
    pub fn results(&mut self, now: i64, node: u64, results: &[TaskResult]) -> Effects {
        let mut fx = Effects::default();
        if self.finished.is_some() {
            return fx;
        }
        let mut mine = false;
        let id = self.plan.deployment_id;
        for r in results.iter().filter(|r| r.deployment_id == id) {
            mine = true;
            if self.fold(node, r) {
                fx.waits_changed = true;
            }
            fx.live.push(DeploymentEvent::TaskResult {
                node: self
                    .plan
                    .nodes
                    .get(&node)
                    .map(|n| n.name.clone())
                    .unwrap_or_default(),
                task: r.task_id.clone(),
                attempt: r.attempt,
                status: r.status,
                last: r.last,
            });
        }
        if mine {
            self.settle(node, &mut fx);
            self.advance(now, &mut fx);
        }
        fx
    }

    /// Folds the stored results of several nodes in at once (the reports stored together in one
    /// transaction), then settles each node and moves the deployment on once: one step for the group,
    /// whose lists each node gets at most once. Ends as [`Run::results`] called for each would
    /// (`run_properties` `folding_results_in_groups_ends_as_one_by_one`).
    pub fn results_of(&mut self, now: i64, batches: &[(u64, Vec<TaskResult>)]) -> Effects {
        let mut fx = Effects::default();
        if self.finished.is_some() {
            return fx;
        }
        let id = self.plan.deployment_id;
        let mut touched = Vec::new();
        // A notice's batch can name thousands of nodes: seen in a set, not by searching `touched`.
        let mut seen = HashSet::new();
        for (node, results) in batches {
            let mut mine = false;
            for r in results.iter().filter(|r| r.deployment_id == id) {
                mine = true;
                if self.fold(*node, r) {
                    fx.waits_changed = true;
                }
                fx.live.push(DeploymentEvent::TaskResult {
                    node: self
                        .plan
                        .nodes
                        .get(node)
                        .map(|n| n.name.clone())
                        .unwrap_or_default(),
                    task: r.task_id.clone(),
                    attempt: r.attempt,
                    status: r.status,
                    last: r.last,
                });
            }
            if mine && seen.insert(*node) {
                touched.push(*node);
            }
        }
        for node in &touched {
            self.settle(*node, &mut fx);
        }
        if !touched.is_empty() {
            self.advance(now, &mut fx);
        }
        fx
    }

    /// Times out the phases whose deadline is `now` or earlier: their unfinished nodes fail them.
    pub fn tick(&mut self, now: i64) -> Effects {
        let mut fx = Effects::default();
        if self.finished.is_some() {
            return fx;
        }
        let expired: Vec<(String, String)> = self
            .state
            .sequencer
            .in_flight()
            .into_iter()
            .filter(|p| {
                self.state
                    .deadlines
                    .get(&phase_key(&p.group, &p.phase))
                    .is_some_and(|d| now >= *d)
            })
            .map(|p| (p.group, p.phase))
            .collect();
        if expired.is_empty() {
            return fx;
        }
        for (group, phase) in &expired {
            self.dirty = true;
            // The phase is in flight (just asked), so the sequencer accepts its timeout.
            let _ = self.state.sequencer.phase_timed_out(group, phase);
            self.state.deadlines.remove(&phase_key(group, phase));
            let mut out = Vec::new();
            for (node_id, cur) in self.current.iter_mut() {
                if &cur.at.group == group && &cur.at.phase == phase && !cur.settled {
                    cur.settled = true;
                    out.push(*node_id);
                    for holders in self.slots.values_mut() {
                        holders.remove(node_id);
                    }
                }
            }
            fx.withdraw_all(out);
        }
        fx.waits_changed = true;
        self.advance(now, &mut fx);
        fx
    }

    /// Stops the deployment for the operator `by`: nothing new starts, every node still running its list
    /// gets an order to stop, and it ends `cancelled`. Nodes that had finished every phase keep their
    /// success.
    pub fn cancel(&mut self, by: &str) -> Result<Effects, RunError> {
        if let Some(status) = self.finished {
            return Err(RunError::Finished(status));
        }
        let stop_orders = self
            .current
            .values()
            .filter(|c| !c.settled)
            .map(|c| TaskList {
                cancel: true,
                revision: 0,
                ..header(&c.list)
            })
            .collect();
        let mut fx = Effects {
            stop_orders,
            ..Effects::default()
        };
        let message = format!("cancelled by {by}");
        fx.events.push(DeploymentEvent::Cancelled {
            message: message.clone(),
            by: by.to_string(),
        });
        // Every stream ends with the deployment's end, a cancelled one's too.
        fx.events.push(DeploymentEvent::DeploymentFinished {
            status: DeploymentStatus::Cancelled,
        });
        self.stopped = Some(message);
        self.end(DeploymentStatus::Cancelled, &mut fx);
        Ok(fx)
    }

    /// Folds one result in; returns whether it was a task's last word.
    fn fold(&mut self, node_id: u64, r: &TaskResult) -> bool {
        let Some(cur) = self.current.get_mut(&node_id) else {
            return false;
        };
        if !r.last
            || cur.settled
            || cur.list.revision != r.revision
            || self
                .done
                .names
                .find(&r.task_id)
                .is_some_and(|i| cur.finals.contains(i))
            || !cur.list.tasks.iter().any(|t| t.id == r.task_id)
        {
            return false;
        }
        cur.finals
            .insert_first(self.done.names.intern(&r.task_id), r.status);
        // Gated tasks only hold slots: most deployments have none, and a key costs two copies.
        if !self.slots.is_empty() {
            let key = (cur.at.graph_type.clone(), r.task_id.clone());
            if let Some(holders) = self.slots.get_mut(&key) {
                holders.remove(&node_id);
            }
        }
        self.done
            .insert(&cur.at.graph_type, node_id, &r.task_id, r.status);
        true
    }

    /// Records a node's outcome once its list is complete.
    fn settle(&mut self, node_id: u64, fx: &mut Effects) {
        let Some(cur) = self.current.get_mut(&node_id) else {
            return;
        };
        if cur.settled {
            return;
        }
        let Some(outcome) = cur.outcome(&self.done.names) else {
            return;
        };
        cur.settled = true;
        cur.finals.complete();
        self.done.complete(&cur.at.graph_type, node_id);
        // Every task has its last word: the tasks need not be kept (the board lets go of the list too).
        cur.list = Arc::new(header(&cur.list));
        let at = cur.at.clone();
        fx.withdraw(node_id);
        fx.waits_changed = true;
        for holders in self.slots.values_mut() {
            holders.remove(&node_id);
        }
        if outcome == NodeOutcome::Failed && self.stopped.is_none() {
            self.stopped = self.fault_tolerance_exceeded(&at.graph_type);
            if let Some(why) = &self.stopped {
                fx.events.push(DeploymentEvent::Stopped {
                    message: why.clone(),
                });
            }
        }
        if let Some(name) = self.plan.nodes.get(&node_id).map(|n| n.name.clone()) {
            record(
                &mut self.state.sequencer,
                &at.group,
                &at.phase,
                &name,
                outcome,
            );
        }
    }

    /// Runs the sequencer until it waits for results: publishes the lists of phases that start, records
    /// nodes with nothing to do, finishes the deployment when it ends.
    fn advance(&mut self, now: i64, fx: &mut Effects) {
        loop {
            let mut progressed = false;
            let mut finished = None;
            let mut lists = Vec::new();
            let mut placed: Vec<Arc<Place>> = Vec::new();
            for action in self.state.sequencer.next_actions() {
                match action {
                    Action::StartPhase {
                        group,
                        phase,
                        graph_type,
                        timeout_secs,
                        nodes,
                    } => {
                        let timeout_ms = i64::try_from(timeout_secs.saturating_mul(1000))
                            .unwrap_or(i64::MAX / 4);
                        self.state
                            .deadlines
                            .insert(phase_key(&group, &phase), now.saturating_add(timeout_ms));
                        let starting: HashSet<u64> = nodes
                            .iter()
                            .filter_map(|n| self.ids.get(n).copied())
                            .collect();
                        let at = Arc::new(Place {
                            group,
                            phase,
                            graph_type,
                        });
                        lists.reserve(nodes.len());
                        placed.reserve(nodes.len());
                        for name in nodes {
                            match self.start_node(&at, &name, &starting, fx) {
                                Start::List(list) => {
                                    lists.push(list);
                                    placed.push(at.clone());
                                }
                                Start::Settled => progressed = true,
                                Start::Unknown => {}
                            }
                        }
                    }
                    Action::Finished { status } => finished = Some(status),
                }
            }
            fx.events.extend(self.state.sequencer.take_events());
            self.hold(lists.into_iter().zip(placed), fx);
            if let Some(status) = finished {
                // A stopped deployment fails whatever its groups' criteria say; its last event says so too.
                let status = if self.stopped.is_some() {
                    DeploymentStatus::Failed
                } else {
                    status
                };
                for e in &mut fx.events {
                    if let DeploymentEvent::DeploymentFinished { status: said } = e {
                        *said = status;
                    }
                }
                self.end(status, fx);
                return;
            }
            if !progressed {
                break;
            }
        }
        if self.dirty {
            fx.save_state = true;
            self.dirty = false;
        }
    }

    /// A node of a phase that starts: its list for the phase, or its outcome recorded at once
    /// (succeeded with nothing to run, failed with an event once the run stopped).
    fn start_node(
        &mut self,
        at: &Place,
        name: &str,
        starting: &HashSet<u64>,
        fx: &mut Effects,
    ) -> Start {
        let Place {
            group,
            phase,
            graph_type,
        } = at;
        let Some((id, node)) = self
            .ids
            .get(name)
            .and_then(|id| self.plan.nodes.get(id).map(|n| (*id, n)))
        else {
            return Start::Unknown;
        };
        let tasks = match &self.stopped {
            Some(why) => Err(why.clone()),
            None => Ok(self.phase_tasks(graph_type, id, starting)),
        };
        let outcome = match tasks {
            Ok(tasks) if !tasks.is_empty() => {
                // Its revision is given by the store when it is published.
                return Start::List(TaskList {
                    noop: self.plan.noop,
                    ..TaskList::unpublished(
                        node.node_key.clone(),
                        id,
                        self.plan.deployment_id,
                        phase.to_string(),
                        tasks,
                    )
                });
            }
            Ok(_) => NodeOutcome::Succeeded,
            Err(message) => {
                fx.events.push(DeploymentEvent::NodeError {
                    node: name.to_string(),
                    phase: phase.to_string(),
                    message,
                });
                NodeOutcome::Failed
            }
        };
        record(&mut self.state.sequencer, group, phase, name, outcome);
        self.dirty = true;
        Start::Settled
    }

    /// Makes lists of starting phases the nodes' current ones and publishes them.
    fn hold(
        &mut self,
        lists: impl ExactSizeIterator<Item = (TaskList, Arc<Place>)>,
        fx: &mut Effects,
    ) {
        if lists.len() == 0 {
            return;
        }
        fx.save_state = true;
        fx.waits_changed = true;
        fx.publish.reserve(lists.len());
        for (list, at) in lists {
            self.current.insert(
                list.node_id,
                Current {
                    at,
                    // Its tasks come back with the stored list ([`Run::published`]).
                    list: Arc::new(header(&list)),
                    finals: Words::default(),
                    settled: false,
                },
            );
            fx.publish.push(list);
        }
    }

    /// Ends the deployment with this status.
    fn end(&mut self, status: DeploymentStatus, fx: &mut Effects) {
        // One report of the sequencer for both: at a large fleet it is built node by node.
        let report = self.state.sequencer.report();
        let (succeeded, failed, untouched) = self.node_outcomes(&report);
        let reasons = self.failure_reasons(&report);
        let mut succeeded_tasks = Vec::new();
        for node in &succeeded {
            for by_node in self.done.by_graph.values() {
                if let Some(words) = by_node.get(node) {
                    let mut mine: Vec<&Arc<str>> = words
                        .iter()
                        .filter(|(_, s)| *s == ResultStatus::Succeeded)
                        .map(|(t, _)| self.done.names.name(t))
                        .collect();
                    mine.sort();
                    // The run's own names, shared: a row per node and task, millions at 100,000 nodes.
                    succeeded_tasks.extend(mine.into_iter().map(|t| (*node, t.clone())));
                }
            }
        }
        succeeded_tasks.sort();
        succeeded_tasks.dedup();
        fx.withdraw_all(self.plan.nodes.keys().copied());
        fx.save_state = true;
        fx.waits_changed = true;
        fx.finish = Some(Finish {
            status,
            succeeded,
            failed,
            reasons,
            untouched,
            succeeded_tasks,
        });
        self.finished = Some(status);
        self.dirty = false;
    }

    /// The deployment's nodes by how they ended: (succeeded, failed, untouched: not started, not
    /// finished, or selected by no group).
    fn node_outcomes(&self, report: &strategy::Report) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
        let (mut succeeded, mut failed, mut untouched) = (Vec::new(), Vec::new(), Vec::new());
        for n in &report.nodes {
            let Some(id) = self.ids.get(&n.name).copied() else {
                continue;
            };
            match n.status {
                NodeStatus::Success => succeeded.push(id),
                NodeStatus::Failure => failed.push(id),
                _ => untouched.push(id),
            }
        }
        untouched.extend(
            report
                .unselected_nodes
                .iter()
                .filter_map(|n| self.ids.get(n).copied()),
        );
        (succeeded, failed, untouched)
    }

    /// Why each failed node failed, in the words every view uses
    /// ([`strategy::NodeReport::failure_reason`]).
    fn failure_reasons(&self, report: &strategy::Report) -> BTreeMap<u64, String> {
        report
            .nodes
            .iter()
            .filter(|n| n.failed_phase.is_some())
            .filter_map(|n| {
                let id = self.ids.get(&n.name).copied()?;
                Some((id, self.reason_of(id, n)?))
            })
            .collect()
    }

    /// The node with this name, if it is one of the deployment's.
    pub fn id_of(&self, name: &str) -> Option<u64> {
        self.ids.get(name).copied()
    }

    /// Why a node failed, if it did: the first task of its list, in the list's order, whose last word
    /// failed it, in the words every view uses ([`strategy::NodeReport::failure_reason`]).
    pub fn failure_reason(&self, node: u64) -> Option<String> {
        let name = &self.plan.nodes.get(&node)?.name;
        let report = self.state.sequencer.node_report(name)?;
        self.reason_of(node, &report)
    }

    fn reason_of(&self, id: u64, n: &strategy::NodeReport) -> Option<String> {
        let task = self.plan.graphs.iter().find_map(|(graph_type, graph)| {
            graph.specs.get(&id)?.iter().find_map(|t| {
                let status = self.done.get(graph_type, id, &t.id)?;
                status.is_failure().then_some((t.id.as_str(), status))
            })
        });
        n.failure_reason(task)
    }

    /// Whether the failed nodes of a fault tolerance group of `graph_type` are more than it allows; the
    /// message says which group, how many failed and how many it allows.
    fn fault_tolerance_exceeded(&self, graph_type: &str) -> Option<String> {
        let phase = self.plan.graphs.get(graph_type)?;
        let failed_here = |n: &u64| {
            self.current.get(n).is_some_and(|c| {
                c.settled && c.outcome(&self.done.names) == Some(NodeOutcome::Failed)
            })
        };
        if !self.plan.named_strategy
            && phase
                .fault_tolerance
                .iter()
                .any(|g| g.fault_tolerance.is_some())
        {
            let tolerant = |node: &u64| {
                phase
                    .fault_tolerance
                    .iter()
                    .any(|g| g.fault_tolerance.is_some() && g.node_ids.contains(node))
            };
            let untolerated = self
                .current
                .iter()
                .find(|(n, c)| c.at.graph_type == graph_type && failed_here(n) && !tolerant(n));
            if let Some((n, _)) = untolerated {
                return Some(format!(
                    "node {n} failed and no group's fault_tolerance covers it; no further list is published"
                ));
            }
        }
        for group in &phase.fault_tolerance {
            let Some(tolerance) = group.fault_tolerance else {
                continue;
            };
            let failed = group.node_ids.iter().filter(|n| failed_here(n)).count();
            let allowed = tolerance.allowed_failures(group.node_ids.len());
            if failed > allowed {
                return Some(format!(
                    "group {:?}: {failed} of {} nodes failed, its fault_tolerance allows {allowed}; no further list is published",
                    group.name,
                    group.node_ids.len()
                ));
            }
        }
        None
    }

    /// A node's list for a phase: its resolved tasks, with waits only on nodes that run the graph type
    /// in this phase or already ran it (a wait on a node of a later group could never be met, so it is
    /// left out).
    fn phase_tasks(&self, graph_type: &str, node_id: u64, starting: &HashSet<u64>) -> Tasks {
        let Some(specs) = self
            .plan
            .graphs
            .get(graph_type)
            .and_then(|p| p.specs.get(&node_id))
        else {
            return Tasks::default();
        };
        let waits = |w: &CrossDependency| {
            starting.contains(&w.node_id) || self.done.get(graph_type, w.node_id, &w.task).is_some()
        };
        // Most lists wait for nothing they would drop: those keep the shared copy (no per-node copy of
        // a phase's tasks).
        if specs.iter().all(|s| s.waits_for.iter().all(waits)) {
            return specs.clone();
        }
        let mut specs = specs.to_vec();
        for spec in &mut specs {
            spec.waits_for.retain(waits);
        }
        specs.into()
    }
}

/// A list without its tasks.
fn header(list: &TaskList) -> TaskList {
    TaskList {
        format: list.format,
        node_key: list.node_key.clone(),
        node_id: list.node_id,
        deployment_id: list.deployment_id,
        phase: list.phase.clone(),
        revision: list.revision,
        issued_at: list.issued_at,
        expires_at: list.expires_at,
        nonce: list.nonce.clone(),
        noop: list.noop,
        cancel: list.cancel,
        tasks: Tasks::default(),
    }
}

/// Records a node's outcome in the sequencer. The run only reports nodes of a phase it started and has
/// not recorded yet, so the sequencer has no reason to refuse; a refusal would leave the node awaited
/// until the phase times out, which is the safe side.
fn record(seq: &mut Sequencer, group: &str, phase: &str, node: &str, outcome: NodeOutcome) {
    let _ = seq.record_result(group, phase, node, outcome);
}

#[cfg(test)]
mod tests {
    use super::Effects;

    #[test]
    fn withdrawals_keep_their_first_order_without_repeats() {
        let mut fx = Effects::default();
        fx.withdraw(3);
        fx.withdraw_all([1, 3, 2, 1]);
        fx.withdraw(2);
        assert_eq!(fx.withdraw, [3, 1, 2]);
        assert!(!fx.is_empty());
        let mut again = Effects::default();
        again.withdraw_all([3, 1, 2]);
        assert_eq!(fx, again, "the same withdrawals are the same effects");
    }
}
