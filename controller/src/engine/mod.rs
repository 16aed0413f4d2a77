//! The orchestrator: drives each deployment through its strategy (`common::strategy::Sequencer`),
//! publishes each node's task list for the phase it is in, folds results into node outcomes, enforces phase
//! timeouts, and resumes running deployments after a restart.
//!
//! Invariants: what is published is stored first, in one transaction with the sequencer state that
//! published it, so a restart resumes exactly where the database says; a node's revision only grows; a
//! deployment finishes exactly once; the in-memory state is a cache of the database that can be rebuilt
//! from it at any time (see [`Engine::resume`]).

pub mod events;
pub mod plan;
pub mod report;
pub mod summary;

use crate::board::Board;
use crate::clock::now_ms;
use crate::store::{DeploymentEnd, DeploymentRecord, NewDeployment, NodeRecord, Store, StoreError};
use events::EventHub;
use plinth_common::model::Policy;
use plinth_common::snapshot::{ResolutionError, Resolved, Snapshot};
use plinth_common::strategy::{self, Action, NodeOutcome, Sequencer};
use plinth_common::wire::{ResultStatus, TaskList, TaskResult, TASK_LIST_FORMAT};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Why a deployment cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Storage failed or refused (not found, conflict).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The request is wrong (names the node, graph or strategy).
    #[error("{0}")]
    Invalid(String),
    /// The graphs do not merge (outside a resolution).
    #[error(transparent)]
    Resolve(#[from] plinth_common::graph::ResolveError),
    /// The deployment's snapshot does not resolve (its checks failed, its graph has a cycle, ...).
    #[error(transparent)]
    Resolution(#[from] ResolutionError),
    /// The cluster's stored model does not load.
    #[error(transparent)]
    Model(#[from] crate::cluster_model::ModelError),
}

/// A deployment's options.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeployOptions {
    /// Run puppet in no-op mode.
    #[serde(default)]
    pub noop: bool,
    /// Treat the last deployed state as empty.
    #[serde(default)]
    pub force: bool,
}

/// What to deploy.
#[derive(Debug, Clone, Default)]
pub struct DeployRequest {
    /// The cluster.
    pub cluster_id: u64,
    /// The graph type, when no strategy is named (default `default`).
    pub graph_type: Option<String>,
    /// Some of the cluster's nodes; all of them when absent.
    pub node_ids: Option<Vec<u64>>,
    /// A strategy stored for the cluster.
    pub strategy: Option<String>,
    /// Shipyard's action (`deploy_site`, `update_site`, `redeploy_server` of one node), if asked for.
    pub action: Option<plan::SiteAction>,
    /// Options.
    pub options: DeployOptions,
    /// Resolve from the inputs stored with this earlier deployment instead of the cluster now (a retry).
    pub inputs_from: Option<u64>,
}

/// The orchestration state stored with a deployment.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineState {
    /// The strategy's state machine.
    pub sequencer: Sequencer,
    /// The strategy's name, if one was named or configured.
    #[serde(default)]
    pub strategy: Option<String>,
    /// How the strategy and its timeouts were chosen, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen_by: Option<String>,
    /// Shipyard's action this deployment runs, if one was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// When each running phase times out (ms), by `group/phase`.
    #[serde(default)]
    pub deadlines: BTreeMap<String, i64>,
    /// The graph type each phase runs, by phase name.
    #[serde(default)]
    pub phase_graph: BTreeMap<String, String>,
}

impl EngineState {
    /// What the deployment runs: strategy, how it was chosen, phases with their timeouts.
    pub fn summary(&self) -> Value {
        plan::summary(
            self.sequencer.strategy(),
            self.strategy.as_deref(),
            self.chosen_by.as_deref(),
        )
    }

    /// Whether this deployment deploys (a strategy's phases, or the `default` graph) rather than
    /// running a custom graph (seed 002): only then do statuses and roles change.
    pub fn deploys(&self) -> bool {
        self.strategy.is_some()
            || self
                .phase_graph
                .values()
                .any(|t| t == plinth_common::model::DEFAULT_GRAPH_TYPE)
    }
}

fn phase_key(group: &str, phase: &str) -> String {
    format!("{group}/{phase}")
}

/// A node's list for the phase it is in.
struct Current {
    group: String,
    phase: String,
    graph_type: String,
    list: Arc<TaskList>,
    finals: HashMap<String, ResultStatus>,
    settled: bool,
}

impl Current {
    /// The node's outcome once every task has its last word.
    fn outcome(&self) -> Option<NodeOutcome> {
        if self
            .list
            .tasks
            .iter()
            .any(|t| !self.finals.contains_key(&t.id))
        {
            return None;
        }
        let failed = self.finals.values().any(|s| {
            matches!(
                s,
                ResultStatus::Failed | ResultStatus::TimedOut | ResultStatus::Interrupted
            )
        });
        Some(if failed {
            NodeOutcome::Failed
        } else {
            NodeOutcome::Succeeded
        })
    }
}

struct Running {
    /// Set when the sequencer learned something no stored result shows (a timeout, a node with nothing
    /// to do or whose list could not be made): the state must be saved even if nothing is published.
    state_dirty: bool,
    record: DeploymentRecord,
    state: EngineState,
    nodes: HashMap<u64, NodeRecord>,
    ids: HashMap<String, u64>,
    current: HashMap<u64, Current>,
    noop: bool,
    /// Every node's lists, resolved at the start (and identically at a resume).
    resolved: Arc<Resolved>,
    /// The last word of every task of the deployment, by (node, graph type, task).
    done: Finals,
    /// Nodes holding a slot of a concurrency-limited task, by (graph type, task).
    slots: HashMap<(String, String), HashSet<u64>>,
    /// Set when a fault tolerance was exceeded: no further list is published.
    stopped: Option<String>,
}

/// Drives deployments.
pub struct Engine {
    store: Arc<dyn Store>,
    board: Arc<Board>,
    /// Live events.
    pub events: EventHub,
    list_ttl_secs: std::sync::atomic::AtomicI64,
    phase_timeout_secs: AtomicU64,
    running: Mutex<HashMap<u64, Running>>,
    exprs: plinth_common::snapshot::Expressions,
    needs_resume: AtomicBool,
    published: AtomicU64,
    /// The files root: file tasks' sources are sealed into their lists when published.
    pub files: Arc<crate::catalog::Catalog>,
}

impl Engine {
    /// An engine over a store and a board.
    pub fn new(
        exprs: plinth_common::snapshot::Expressions,
        store: Arc<dyn Store>,
        board: Arc<Board>,
        list_ttl: std::time::Duration,
        phase_timeout: std::time::Duration,
        files: Arc<crate::catalog::Catalog>,
    ) -> Self {
        Engine {
            store,
            board,
            events: EventHub::default(),
            list_ttl_secs: std::sync::atomic::AtomicI64::new(
                i64::try_from(list_ttl.as_secs()).unwrap_or(600),
            ),
            phase_timeout_secs: AtomicU64::new(phase_timeout.as_secs()),
            running: Mutex::new(HashMap::new()),
            exprs,
            needs_resume: AtomicBool::new(false),
            published: AtomicU64::new(0),
            files,
        }
    }

    /// How many task lists this engine has published since it started.
    pub fn published_count(&self) -> u64 {
        self.published.load(Ordering::Relaxed)
    }

    /// How long a list is valid after it is fetched, in seconds.
    pub fn list_ttl_secs(&self) -> i64 {
        self.list_ttl_secs.load(Ordering::Relaxed)
    }

    /// Changes the list validity and the default phase timeout (for deployments that start from now on).
    pub fn set_timing(&self, list_ttl: std::time::Duration, phase_timeout: std::time::Duration) {
        self.list_ttl_secs.store(
            i64::try_from(list_ttl.as_secs()).unwrap_or(600),
            Ordering::Relaxed,
        );
        self.phase_timeout_secs
            .store(phase_timeout.as_secs(), Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Running>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The orchestration state of a deployment running here, as it is in memory now (the stored one
    /// catches up only when lists are published or the deployment finishes); `None` when not running.
    pub fn live_state(&self, id: u64) -> Option<EngineState> {
        self.lock().get(&id).map(|run| run.state.clone())
    }

    /// The strategy and the nodes of a request, checked: nodes of the cluster, accepted.
    fn request_nodes(
        &self,
        req: &DeployRequest,
    ) -> Result<(plan::Chosen, Vec<NodeRecord>), StartError> {
        self.store.get_cluster(req.cluster_id)?;
        let all: Vec<NodeRecord> = self
            .store
            .list_nodes()?
            .into_iter()
            .filter(|n| n.cluster_id == Some(req.cluster_id))
            .collect();
        if req.action.is_some() && req.graph_type.is_some() {
            return Err(StartError::Invalid(
                "an action runs the strategy's phases: leave out graph_type".into(),
            ));
        }
        let redeploy = match &req.action {
            Some(plan::SiteAction::RedeployServer { node }) => {
                if req.node_ids.is_some() {
                    return Err(StartError::Invalid(
                        "redeploy_server names its node: leave out nodes".into(),
                    ));
                }
                let found = all.iter().find(|n| &n.name == node).ok_or_else(|| {
                    StartError::Invalid(format!(
                        "redeploy_server: cluster {} has no node named {node:?}",
                        req.cluster_id
                    ))
                })?;
                Some(found.id)
            }
            _ => None,
        };
        let node_ids = redeploy.map(|id| vec![id]).or_else(|| req.node_ids.clone());
        let nodes: Vec<NodeRecord> = match &node_ids {
            None => all
                .into_iter()
                .filter(|n| !n.model.pending_deletion)
                .collect(),
            Some(ids) => {
                let mut picked = Vec::new();
                for id in ids {
                    match all.iter().find(|n| n.id == *id) {
                        Some(n) => picked.push(n.clone()),
                        None => {
                            return Err(StartError::Invalid(format!(
                                "node {id} is not in cluster {}",
                                req.cluster_id
                            )))
                        }
                    }
                }
                picked
            }
        };
        if nodes.is_empty() {
            return Err(StartError::Invalid(format!(
                "cluster {} has no nodes to deploy",
                req.cluster_id
            )));
        }
        if let Some(n) = nodes
            .iter()
            .find(|n| n.admission != crate::store::NodeAdmission::Accepted)
        {
            return Err(StartError::Invalid(format!(
                "node {} ({}) is not accepted yet",
                n.id, n.name
            )));
        }
        let chosen = plan::strategy_for(
            self.store.as_ref(),
            req.cluster_id,
            req.strategy.as_deref(),
            req.graph_type.as_deref(),
            req.action.as_ref(),
            self.phase_timeout_secs.load(Ordering::Relaxed),
        )?;
        Ok((chosen, nodes))
    }

    /// Checks a deployment request whole, records the deployment and publishes its first lists (blocking).
    pub fn start(&self, req: &DeployRequest) -> Result<DeploymentRecord, StartError> {
        let (chosen, nodes) = self.request_nodes(req)?;
        let mut strategy = chosen.strategy;
        // Every node resolves for every phase, or nothing starts.
        let (inputs, resolved) = self.resolve_request(req, &strategy, &nodes)?;
        let inventory: Vec<_> = nodes
            .iter()
            .map(|n| plan::inventory_node(n, &resolved.tags))
            .collect();
        if chosen.name.is_none() {
            tolerate_failures(&mut strategy, &resolved);
        }
        let sequencer = Sequencer::new(&strategy, &inventory)
            .map_err(|e| StartError::Invalid(e.to_string()))?;
        let state = EngineState {
            sequencer,
            strategy: chosen.name.clone(),
            chosen_by: Some(chosen.chosen_by),
            action: req.action.as_ref().map(|a| a.name().to_string()),
            deadlines: BTreeMap::new(),
            phase_graph: strategy
                .phases
                .iter()
                .map(|p| (p.name.clone(), p.graph_type.clone()))
                .collect(),
        };
        let primaries: Vec<(u64, Vec<String>)> = nodes
            .iter()
            .map(|n| {
                let mine = resolved
                    .primaries
                    .iter()
                    .filter(|(_, id)| **id == n.id)
                    .map(|(tag, _)| tag.clone())
                    .collect();
                (n.id, mine)
            })
            .filter(|(id, mine): &(u64, Vec<String>)| {
                nodes
                    .iter()
                    .find(|n| n.id == *id)
                    .is_some_and(|n| &n.model.primary_tags != mine)
            })
            .collect();
        self.store.save_primaries(&primaries)?;
        let graph_type = match &chosen.name {
            Some(name) => format!("strategy:{name}"),
            None => req.graph_type.clone().unwrap_or_else(|| "default".into()),
        };
        let record = self.store.create_deployment(&NewDeployment {
            cluster_id: req.cluster_id,
            graph_type,
            node_ids: nodes.iter().map(|n| n.id).collect(),
            options: serde_json::to_value(&req.options).unwrap_or_default(),
            state: serde_json::to_value(&state).unwrap_or_default(),
            inputs: serde_json::to_value(&inputs).unwrap_or_default(),
            now_ms: now_ms(),
            deploys: state.deploys(),
        })?;
        if !resolved.findings.is_empty() {
            let warnings: Vec<Value> = resolved
                .findings
                .iter()
                .map(|f| json!({"event": "warning", "code": f.code, "message": f.message}))
                .collect();
            self.store.append_events(record.id, &warnings)?;
        }
        let mut run = Running {
            state_dirty: false,
            ids: nodes.iter().map(|n| (n.name.clone(), n.id)).collect(),
            nodes: nodes.into_iter().map(|n| (n.id, n)).collect(),
            record: record.clone(),
            state,
            current: HashMap::new(),
            noop: req.options.noop,
            resolved: Arc::new(resolved),
            done: Finals::default(),
            slots: HashMap::new(),
            stopped: None,
        };
        let id = record.id;
        self.events.open(id);
        // Results for the first lists can arrive as soon as they are on the board: hold the lock until the
        // deployment is in the map, so none is folded before it is there.
        let mut map = self.lock();
        let done = self.advance(&mut run, Vec::new());
        self.keep(&mut map, id, run, done);
        Ok(record)
    }

    /// Resolves a deployment request: the cluster's model now, the old states of its nodes' tasks, and
    /// every graph type the strategy's phases run.
    fn resolve_request(
        &self,
        req: &DeployRequest,
        strategy: &strategy::Strategy,
        nodes: &[NodeRecord],
    ) -> Result<(Snapshot, Resolved), StartError> {
        let graph_types: Vec<String> = strategy
            .phases
            .iter()
            .map(|p| p.graph_type.clone())
            .collect();
        let type_refs: Vec<&str> = graph_types.iter().map(String::as_str).collect();
        let named = req
            .node_ids
            .as_ref()
            .map(|_| nodes.iter().map(|n| n.id).collect());
        let snapshot = match req.inputs_from {
            Some(earlier) => {
                let mut snapshot = self.stored_snapshot(earlier)?;
                snapshot.named = named;
                snapshot
            }
            None => {
                let mut snapshot = crate::cluster_model::ClusterModel::read(
                    self.store.as_ref(),
                    req.cluster_id,
                    &type_refs,
                    true,
                )?
                .snapshot;
                snapshot.named = named;
                snapshot.forced = req.options.force;
                snapshot
            }
        };
        let resolved = plinth_common::snapshot::resolve(&snapshot, &graph_types, &self.exprs)?;
        Ok((snapshot, resolved))
    }

    /// The snapshot stored with a deployment, with its nodes' old states as they stand now.
    fn stored_snapshot(&self, id: u64) -> Result<Snapshot, StartError> {
        let mut snapshot: Snapshot = serde_json::from_value(self.store.deployment_inputs(id)?)
            .map_err(|e| {
                StartError::Invalid(format!(
                    "the inputs stored with deployment {id} cannot be read: {e}"
                ))
            })?;
        let ids: Vec<u64> = snapshot.nodes.iter().map(|n| n.id).collect();
        snapshot.old = self.store.old_states(&ids)?;
        Ok(snapshot)
    }

    /// Stops a running deployment for the operator `by`: nothing new starts, every node still running
    /// its list is sent a signed order to stop (its running task terminated, the rest not started), and
    /// the deployment ends `cancelled`, with who cancelled it in its events and report. Nodes that had
    /// finished every phase keep their success (their pending roles become deployed roles).
    pub fn cancel(&self, deployment_id: u64, by: &str) -> Result<DeploymentRecord, StoreError> {
        let mut map = self.lock();
        let Some(mut run) = map.remove(&deployment_id) else {
            let dep = self.store.get_deployment(deployment_id)?;
            return Err(StoreError::Conflict(format!(
                "deployment {deployment_id} is not running (it is {})",
                dep.status.as_str()
            )));
        };
        let mut orders: Vec<TaskList> = run
            .current
            .values()
            .filter(|c| !c.settled)
            .map(|c| TaskList {
                tasks: Vec::new(),
                cancel: true,
                revision: 0,
                ..(*c.list).clone()
            })
            .collect();
        let (succeeded, failed, untouched) = node_outcomes(&run);
        let message = format!("cancelled by {by}");
        let events = vec![json!({"event": "cancelled", "message": message, "by": by})];
        let saved = self.save_task_states(&run, &succeeded).and_then(|()| {
            let state = serde_json::to_value(&run.state).unwrap_or_default();
            self.store.cancel_deployment(
                deployment_id,
                &DeploymentEnd {
                    deploys: run.state.deploys(),
                    state: &state,
                    status: crate::store::DeploymentStatus::Cancelled,
                    events: &events,
                    succeeded: &succeeded,
                    failed: &failed,
                    untouched: &untouched,
                },
                &mut orders,
            )
        });
        if let Err(e) = saved {
            map.insert(deployment_id, run);
            return Err(e);
        }
        run.stopped = Some(message);
        for node in run.nodes.keys() {
            self.board.withdraw(*node, deployment_id);
        }
        for order in orders {
            self.board.publish(Arc::new(order));
        }
        self.events.send(deployment_id, &events);
        self.events.close(deployment_id);
        drop(map);
        tracing::info!(deployment = deployment_id, by, "deployment cancelled");
        self.store.get_deployment(deployment_id)
    }

    /// Starts a new deployment of an ended one's failed and not-started nodes, with the same graph type
    /// or strategy, options and inputs (the cluster as it was resolved then).
    pub fn retry(&self, deployment_id: u64) -> Result<DeploymentRecord, StartError> {
        let dep = self.store.get_deployment(deployment_id)?;
        if dep.status == crate::store::DeploymentStatus::Running {
            return Err(StartError::Invalid(format!(
                "deployment {deployment_id} is still running: cancel it first, or wait"
            )));
        }
        let report = report::build(self.store.as_ref(), &dep)?;
        let nodes: Vec<u64> = report
            .nodes
            .iter()
            .filter(|n| n.status != "success")
            .map(|n| n.id)
            .collect();
        if nodes.is_empty() {
            return Err(StartError::Invalid(format!(
                "every node of deployment {deployment_id} succeeded: there is nothing to retry"
            )));
        }
        let (graph_type, strategy) = match dep.graph_type.strip_prefix("strategy:") {
            Some(name) => (None, Some(name.to_string())),
            None => (Some(dep.graph_type.clone()), None),
        };
        let options: DeployOptions =
            serde_json::from_value(dep.options.clone()).unwrap_or_default();
        self.start(&DeployRequest {
            cluster_id: dep.cluster_id,
            graph_type,
            node_ids: Some(nodes),
            strategy,
            options,
            action: None,
            inputs_from: Some(deployment_id),
        })
    }

    /// Resolves a running deployment again from its stored inputs (after a restart).
    fn resolve_stored(&self, id: u64, state: &EngineState) -> Result<Resolved, StartError> {
        let snapshot = self.stored_snapshot(id)?;
        let graph_types: Vec<String> = state.phase_graph.values().cloned().collect();
        Ok(plinth_common::snapshot::resolve(
            &snapshot,
            &graph_types,
            &self.exprs,
        )?)
    }

    /// Resolves a request without starting anything (for `serialized_tasks` and the checks).
    pub fn resolve_only(&self, req: &DeployRequest) -> Result<Resolved, StartError> {
        let (chosen, nodes) = self.request_nodes(req)?;
        Ok(self.resolve_request(req, &chosen.strategy, &nodes)?.1)
    }

    /// Resolves a request without starting anything: the lists every node would get, and the findings.
    pub fn dry_run(&self, req: &DeployRequest) -> Result<Value, StartError> {
        let (chosen, nodes) = self.request_nodes(req)?;
        let strategy = chosen.strategy;
        let (_, resolved) = self.resolve_request(req, &strategy, &nodes)?;
        let mut graphs = serde_json::Map::new();
        for (graph_type, phase) in &resolved.phases {
            let mut by_node = serde_json::Map::new();
            for node in &nodes {
                if let Some(specs) = phase.specs.get(&node.id) {
                    by_node.insert(
                        node.name.clone(),
                        serde_json::to_value(specs).unwrap_or_default(),
                    );
                }
            }
            graphs.insert(graph_type.clone(), Value::Object(by_node));
        }
        Ok(json!({
            "dry_run": true,
            "strategy": strategy.phases.iter().map(|p| json!({"phase": p.name, "graph_type": p.graph_type})).collect::<Vec<_>>(),
            "nodes": graphs,
            "findings": resolved.findings,
        }))
    }

    /// Puts a deployment back in memory unless it finished; schedules a rebuild after a storage failure.
    fn keep(
        &self,
        map: &mut HashMap<u64, Running>,
        id: u64,
        run: Running,
        done: Result<bool, StoreError>,
    ) {
        match done {
            Ok(true) => {}
            Ok(false) => {
                map.insert(id, run);
            }
            Err(e) => {
                tracing::error!(deployment = id, error = %e, "cannot record deployment progress; rebuilding it from the database");
                self.needs_resume.store(true, Ordering::Release);
            }
        }
    }

    /// Runs the sequencer until it waits for results: publishes the lists of phases that start, records
    /// nodes with nothing to do, finishes the deployment when it ends. Returns whether it finished.
    fn advance(&self, run: &mut Running, mut events: Vec<Value>) -> Result<bool, StoreError> {
        let mut finished = None;
        loop {
            let mut progressed = false;
            let mut lists = Vec::new();
            let mut placed: Vec<(String, String, String)> = Vec::new();
            for action in run.state.sequencer.next_actions() {
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
                        run.state.deadlines.insert(
                            phase_key(&group, &phase),
                            now_ms().saturating_add(timeout_ms),
                        );
                        let starting: HashSet<u64> = nodes
                            .iter()
                            .filter_map(|n| run.ids.get(n).copied())
                            .collect();
                        for name in nodes {
                            let Some(node) = run.ids.get(&name).and_then(|id| run.nodes.get(id))
                            else {
                                continue;
                            };
                            let tasks = match &run.stopped {
                                Some(why) => Err(why.clone()),
                                None => Ok(phase_tasks(run, &graph_type, node.id, &starting)),
                            };
                            match tasks {
                                Ok(tasks) if tasks.is_empty() => {
                                    record(
                                        &mut run.state.sequencer,
                                        &group,
                                        &phase,
                                        &name,
                                        NodeOutcome::Succeeded,
                                    );
                                    run.state_dirty = true;
                                    progressed = true;
                                }
                                Ok(tasks) => {
                                    lists.push(TaskList {
                                        format: TASK_LIST_FORMAT,
                                        node_key: node.node_key.clone(),
                                        node_id: node.id,
                                        deployment_id: run.record.id,
                                        phase: phase.clone(),
                                        // Assigned by the store when the list is published.
                                        revision: 0,
                                        issued_at: 0,
                                        expires_at: 0,
                                        nonce: String::new(),
                                        noop: run.noop,
                                        cancel: false,
                                        tasks,
                                    });
                                    placed.push((group.clone(), phase.clone(), graph_type.clone()));
                                }
                                Err(e) => {
                                    events.push(json!({"event": "node_error", "node": name, "phase": phase, "message": e}));
                                    record(
                                        &mut run.state.sequencer,
                                        &group,
                                        &phase,
                                        &name,
                                        NodeOutcome::Failed,
                                    );
                                    run.state_dirty = true;
                                    progressed = true;
                                }
                            }
                        }
                    }
                    Action::Finished { status } => finished = Some(status),
                }
            }
            events.extend(
                run.state
                    .sequencer
                    .take_events()
                    .iter()
                    .map(|e| serde_json::to_value(e).unwrap_or_default()),
            );
            if !lists.is_empty() {
                for list in &mut lists {
                    self.files.seal(&mut list.tasks);
                }
                let state = serde_json::to_value(&run.state).unwrap_or_default();
                self.store
                    .publish_lists(run.record.id, &mut lists, &state, &events)?;
                self.published
                    .fetch_add(lists.len() as u64, Ordering::Relaxed);
                run.state_dirty = false;
                self.events.send(run.record.id, &events);
                events.clear();
                for (list, (group, phase, graph_type)) in lists.into_iter().zip(placed) {
                    let list = Arc::new(list);
                    self.board.publish(list.clone());
                    run.current.insert(
                        list.node_id,
                        Current {
                            group,
                            phase,
                            graph_type,
                            list,
                            finals: HashMap::new(),
                            settled: false,
                        },
                    );
                }
            }
            if let Some(status) = finished {
                self.finish(run, status, events)?;
                return Ok(true);
            }
            if !progressed {
                break;
            }
        }
        // Node outcomes that come from stored results need no saved state: a restart folds the results in
        // again. Only what results cannot show is saved here; publishing and finishing save the whole state.
        if run.state_dirty {
            let state = serde_json::to_value(&run.state).unwrap_or_default();
            self.store.save_progress(run.record.id, &state, &events)?;
            run.state_dirty = false;
        } else if !events.is_empty() {
            self.store.append_events(run.record.id, &events)?;
        }
        self.events.send(run.record.id, &events);
        Ok(false)
    }

    /// Records, for every task that succeeded on a node that succeeded, the state it ran against: what
    /// `old()` and `changed()` compare with next time (the cluster part is stored once).
    fn save_task_states(&self, run: &Running, succeeded: &[u64]) -> Result<(), StoreError> {
        let mut blobs: Vec<(String, Value)> = Vec::new();
        let mut rows = Vec::new();
        let mut hashed: HashMap<usize, String> = HashMap::new();
        let mut hash_of = |v: &Arc<Value>, blobs: &mut Vec<(String, Value)>| {
            hashed
                .entry(Arc::as_ptr(v) as usize)
                .or_insert_with(|| {
                    let h = crate::store::blob_hash(v);
                    blobs.push((h.clone(), (**v).clone()));
                    h
                })
                .clone()
        };
        // Each node's succeeded tasks, in one pass over the deployment's results.
        let mut by_node: HashMap<u64, Vec<&String>> = HashMap::new();
        for (n, task, status) in run.done.iter() {
            if status == ResultStatus::Succeeded {
                by_node.entry(n).or_default().push(task);
            }
        }
        for node_id in succeeded {
            let Some(state) = run.resolved.states.get(node_id) else {
                continue;
            };
            let Some(tasks) = by_node.remove(node_id) else {
                continue;
            };
            let reference = json!({
                "common": hash_of(&state.common, &mut blobs),
                "node": hash_of(&state.node, &mut blobs),
            });
            for task in tasks {
                rows.push((*node_id, task.clone(), reference.clone()));
            }
        }
        if rows.is_empty() {
            return Ok(());
        }
        self.store.save_task_states(&blobs, &rows)
    }

    /// Records the end of a deployment.
    fn finish(
        &self,
        run: &mut Running,
        status: strategy::DeploymentStatus,
        events: Vec<Value>,
    ) -> Result<(), StoreError> {
        let (succeeded, failed, untouched) = node_outcomes(run);
        let status = match (&run.stopped, status) {
            (Some(_), _) => strategy::DeploymentStatus::Failed,
            (None, s) => s,
        };
        let status = report::store_status(status);
        self.save_task_states(run, &succeeded)?;
        let state = serde_json::to_value(&run.state).unwrap_or_default();
        self.store.finish_deployment(
            run.record.id,
            &DeploymentEnd {
                state: &state,
                status,
                events: &events,
                succeeded: &succeeded,
                failed: &failed,
                untouched: &untouched,
                deploys: run.state.deploys(),
            },
        )?;
        for id in run.nodes.keys() {
            self.board.withdraw(*id, run.record.id);
        }
        self.events.send(run.record.id, &events);
        self.events.close(run.record.id);
        tracing::info!(
            deployment = run.record.id,
            status = status.as_str(),
            succeeded = succeeded.len(),
            failed = failed.len(),
            "deployment finished"
        );
        Ok(())
    }

    /// Loads running deployments that are not in memory from the store (after a start, or to rebuild one
    /// after a storage failure). Blocking.
    pub fn resume(&self) -> Result<usize, StoreError> {
        self.needs_resume.store(false, Ordering::Release);
        let running = self.store.running_deployments()?;
        let mut count = 0;
        for record in running {
            let mut map = self.lock();
            if map.contains_key(&record.id) {
                continue;
            }
            count += 1;
            let id = record.id;
            self.events.open(id);
            let state: EngineState = match serde_json::from_value(record.state.clone()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(deployment = id, error = %e, "cannot read a running deployment's state; leaving it");
                    continue;
                }
            };
            let mut nodes = HashMap::new();
            for node_id in &record.node_ids {
                if let Ok(n) = self.store.get_node(*node_id) {
                    nodes.insert(*node_id, n);
                }
            }
            let noop = record
                .options
                .get("noop")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let resolved = match self.resolve_stored(id, &state) {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(deployment = id, error = %e, "cannot resolve a running deployment again; leaving it");
                    continue;
                }
            };
            let mut run = Running {
                state_dirty: false,
                ids: nodes.values().map(|n| (n.name.clone(), n.id)).collect(),
                nodes,
                record,
                state,
                current: HashMap::new(),
                noop,
                resolved: Arc::new(resolved),
                done: Finals::default(),
                slots: HashMap::new(),
                stopped: None,
            };
            // The lists of the phases still awaiting results, and the results they already have.
            let latest: HashMap<u64, TaskList> = self
                .store
                .published_lists(id)?
                .into_iter()
                .map(|l| (l.node_id, l))
                .collect();
            for phase in run.state.sequencer.in_flight() {
                for name in &phase.awaiting {
                    let Some(node_id) = run.ids.get(name).copied() else {
                        continue;
                    };
                    if let Some(list) = latest.get(&node_id).filter(|l| l.phase == phase.phase) {
                        let list = Arc::new(list.clone());
                        self.board.publish(list.clone());
                        run.current.insert(
                            node_id,
                            Current {
                                group: phase.group.clone(),
                                phase: phase.phase.clone(),
                                graph_type: run
                                    .state
                                    .phase_graph
                                    .get(&phase.phase)
                                    .cloned()
                                    .unwrap_or_default(),
                                list,
                                finals: HashMap::new(),
                                settled: false,
                            },
                        );
                    }
                }
            }
            let results = self.store.deployment_results(id)?;
            let touched: HashSet<u64> = results.iter().map(|(n, _)| *n).collect();
            let phase_of: HashMap<(u64, u64), String> = self
                .store
                .published_lists(id)?
                .into_iter()
                .map(|l| ((l.node_id, l.revision), l.phase))
                .collect();
            for (node, r) in &results {
                if r.last {
                    let graph_type = phase_of
                        .get(&(*node, r.revision))
                        .and_then(|p| run.state.phase_graph.get(p))
                        .cloned()
                        .unwrap_or_default();
                    run.done.insert(&graph_type, *node, &r.task_id, r.status);
                }
                fold(&mut run, *node, r);
            }
            for node in touched {
                self.settle(&mut run, node);
            }
            // Their events were stored when the results came in.
            run.state.sequencer.take_events();
            tracing::info!(
                deployment = id,
                awaiting = run.current.len(),
                "resumed deployment"
            );
            let done = self.advance(&mut run, Vec::new());
            self.keep(&mut map, id, run, done);
        }
        Ok(count)
    }

    /// Whether `node_id` holds this result's list now, in a deployment running here (the fast path of
    /// the ownership check: false only means "not known here", and the store is asked).
    pub fn owns(&self, node_id: u64, r: &TaskResult) -> bool {
        let map = self.lock();
        map.get(&r.deployment_id)
            .and_then(|run| run.current.get(&node_id))
            .is_some_and(|cur| {
                cur.list.revision == r.revision && cur.list.tasks.iter().any(|t| t.id == r.task_id)
            })
    }

    /// Whether a deployment is running here.
    pub fn is_running(&self, deployment_id: u64) -> bool {
        self.lock().contains_key(&deployment_id)
    }

    /// Records events of a running deployment (refusals a node caused) and sends them to its watchers;
    /// a deployment that is not running is left as it is (its record is final).
    pub fn note_events(&self, deployment_id: u64, events: &[Value]) -> Result<(), StoreError> {
        let map = self.lock();
        if !map.contains_key(&deployment_id) {
            return Ok(());
        }
        self.store.append_events(deployment_id, events)?;
        self.events.send(deployment_id, events);
        Ok(())
    }

    /// Records a node's outcome once its list is complete.
    fn settle(&self, run: &mut Running, node_id: u64) {
        let Some(cur) = run.current.get_mut(&node_id) else {
            return;
        };
        if cur.settled {
            return;
        }
        let Some(outcome) = cur.outcome() else { return };
        cur.settled = true;
        let (group, phase, graph_type) =
            (cur.group.clone(), cur.phase.clone(), cur.graph_type.clone());
        self.board.withdraw(node_id, run.record.id);
        for holders in run.slots.values_mut() {
            holders.remove(&node_id);
        }
        if outcome == NodeOutcome::Failed && run.stopped.is_none() {
            run.stopped = fault_tolerance_exceeded(run, &graph_type);
            if let Some(why) = &run.stopped {
                tracing::warn!(deployment = run.record.id, reason = %why, "deployment stopped");
                let event = [json!({"event": "stopped", "message": why})];
                if let Err(e) = self.store.append_events(run.record.id, &event) {
                    tracing::error!(deployment = run.record.id, error = %e, "cannot record why the deployment stopped");
                }
                self.events.send(run.record.id, &event);
            }
        }
        if let Some(name) = run.nodes.get(&node_id).map(|n| n.name.clone()) {
            record(&mut run.state.sequencer, &group, &phase, &name, outcome);
        }
    }

    /// Folds stored results in, records finished nodes and moves the deployments on (blocking). Returns
    /// how many task lists this published.
    pub fn on_results(&self, node_id: u64, results: &[TaskResult]) -> u64 {
        let mut map = self.lock();
        let before = self.published_count();
        let mut touched: Vec<u64> = Vec::new();
        for r in results {
            let Some(run) = map.get_mut(&r.deployment_id) else {
                continue;
            };
            fold(run, node_id, r);
            let name = run
                .nodes
                .get(&node_id)
                .map(|n| n.name.clone())
                .unwrap_or_default();
            self.events.send(
                r.deployment_id,
                &[json!({"event": "task_result", "node": name, "task": r.task_id, "attempt": r.attempt, "status": r.status, "last": r.last})],
            );
            if !touched.contains(&r.deployment_id) {
                touched.push(r.deployment_id);
            }
        }
        for id in touched {
            let Some(mut run) = map.remove(&id) else {
                continue;
            };
            self.settle(&mut run, node_id);
            let done = self.advance(&mut run, Vec::new());
            self.keep(&mut map, id, run, done);
        }
        self.published_count() - before
    }

    /// Times out phases past their deadline, and rebuilds deployments after a storage failure (blocking;
    /// called every second).
    pub fn tick(&self) {
        if self.needs_resume.load(Ordering::Acquire) {
            if let Err(e) = self.resume() {
                tracing::error!(error = %e, "cannot resume deployments");
                self.needs_resume.store(true, Ordering::Release);
            }
        }
        let now = now_ms();
        let mut map = self.lock();
        let ids: Vec<u64> = map.keys().copied().collect();
        for id in ids {
            let Some(mut run) = map.remove(&id) else {
                continue;
            };
            let expired: Vec<(String, String)> = run
                .state
                .sequencer
                .in_flight()
                .into_iter()
                .filter(|p| {
                    run.state
                        .deadlines
                        .get(&phase_key(&p.group, &p.phase))
                        .is_some_and(|d| now >= *d)
                })
                .map(|p| (p.group, p.phase))
                .collect();
            if expired.is_empty() {
                map.insert(id, run);
                continue;
            }
            for (group, phase) in &expired {
                tracing::warn!(deployment = id, group = %group, phase = %phase, "phase timed out");
                run.state_dirty = true;
                if let Err(e) = run.state.sequencer.phase_timed_out(group, phase) {
                    tracing::error!(deployment = id, error = %e, "cannot time a phase out");
                }
                run.state.deadlines.remove(&phase_key(group, phase));
                for (node_id, cur) in run.current.iter_mut() {
                    if &cur.group == group && &cur.phase == phase && !cur.settled {
                        cur.settled = true;
                        self.board.withdraw(*node_id, id);
                        for holders in run.slots.values_mut() {
                            holders.remove(node_id);
                        }
                    }
                }
            }
            let done = self.advance(&mut run, Vec::new());
            self.keep(&mut map, id, run, done);
        }
    }

    /// The status of a gated task: (ready, blocked, waiting_for); `None` when the task is not in a running
    /// deployment on this node. Ready when every `all`-policy dependency has finished well, one of its
    /// `any`-policy dependencies has, and its concurrency limit (`one_by_one`, `parallel` with an amount)
    /// leaves a slot, which the node then holds until the task's last result.
    pub fn gate(
        &self,
        node_id: u64,
        deployment_id: u64,
        task: &str,
    ) -> Option<(bool, bool, Vec<String>)> {
        let mut map = self.lock();
        let run = map.get_mut(&deployment_id)?;
        let cur = run.current.get(&node_id)?;
        let spec = cur.list.tasks.iter().find(|t| t.id == task)?;
        let graph_type = cur.graph_type.clone();
        let status = |run: &Running, node: u64, task: &str| run.done.get(&graph_type, node, task);
        let settled = |run: &Running, node: u64| run.current.get(&node).is_none_or(|c| c.settled);
        let mut waiting = Vec::new();
        let mut blocked = false;
        for dep in &spec.waits_for {
            match status(run, dep.node_id, &dep.task) {
                Some(ResultStatus::Succeeded | ResultStatus::Skipped) => {}
                Some(_) => blocked = true,
                None if settled(run, dep.node_id) => blocked = true,
                None => waiting.push(format!("{} on node {}", dep.task, dep.node_id)),
            }
        }
        let phase = run.resolved.phases.get(&graph_type).cloned();
        let sets = phase.as_ref().and_then(|p| {
            p.gated_waits
                .get(&(node_id, task.to_string()))
                .map(|w| (p, w))
        });
        if let Some((phase, sets)) = sets {
            for set in sets.iter().filter_map(|w| phase.wait_sets.get(*w as usize)) {
                let mut met = false;
                let mut open = Vec::new();
                let mut failed = false;
                for (n, t) in set.entries_for(node_id) {
                    match status(run, n, t) {
                        Some(ResultStatus::Succeeded | ResultStatus::Skipped) => met = true,
                        Some(_) => failed = true,
                        // A node that runs this graph type now and has not finished the task.
                        None if run
                            .current
                            .get(&n)
                            .is_some_and(|c| c.graph_type == graph_type && !c.settled) =>
                        {
                            open.push(format!("{t} on node {n}"))
                        }
                        // Settled without it, or not running this graph type (a later group).
                        None if run
                            .current
                            .get(&n)
                            .is_some_and(|c| c.graph_type == graph_type) =>
                        {
                            failed = true
                        }
                        None => {}
                    }
                }
                match set.policy {
                    Policy::All if failed => blocked = true,
                    Policy::All => {
                        if let Some(first) = open.first() {
                            waiting.push(format!("{first} and {} more", open.len() - 1));
                        }
                    }
                    Policy::Any if met => {}
                    Policy::Any if open.is_empty() => blocked = failed,
                    Policy::Any => waiting.push(format!("any of: {}", open.join(", "))),
                }
            }
        }
        if waiting.is_empty() && !blocked {
            if let Some(limit) = phase.as_ref().and_then(|p| p.limits.get(task)).copied() {
                let holders = run
                    .slots
                    .entry((graph_type.clone(), task.to_string()))
                    .or_default();
                if !holders.contains(&node_id) {
                    if holders.len() >= limit {
                        let mut others: Vec<u64> = holders.iter().copied().collect();
                        others.sort_unstable();
                        waiting.push(format!(
                            "{task} runs on at most {limit} node(s) at once (now on {others:?})"
                        ));
                    } else {
                        holders.insert(node_id);
                    }
                }
            }
        }
        Some((waiting.is_empty() && !blocked, blocked, waiting))
    }
}

/// The last word of every task of a deployment, by graph type, node and task; looked up without
/// allocating (the gate asks on every poll of every waiting agent).
#[derive(Debug, Default)]
struct Finals(HashMap<String, HashMap<u64, HashMap<String, ResultStatus>>>);

impl Finals {
    fn insert(&mut self, graph_type: &str, node: u64, task: &str, status: ResultStatus) {
        self.0
            .entry(graph_type.to_string())
            .or_default()
            .entry(node)
            .or_default()
            .insert(task.to_string(), status);
    }

    fn get(&self, graph_type: &str, node: u64, task: &str) -> Option<ResultStatus> {
        self.0.get(graph_type)?.get(&node)?.get(task).copied()
    }

    /// Every (node, task, status), across graph types.
    fn iter(&self) -> impl Iterator<Item = (u64, &String, ResultStatus)> {
        self.0.values().flat_map(|nodes| {
            nodes
                .iter()
                .flat_map(|(n, tasks)| tasks.iter().map(move |(t, s)| (*n, t, *s)))
        })
    }
}

/// The deployment's nodes by how they ended: (succeeded, failed, untouched: not started, not finished, or
/// selected by no group).
fn node_outcomes(run: &Running) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let report = run.state.sequencer.report();
    let (mut succeeded, mut failed, mut untouched) = (Vec::new(), Vec::new(), Vec::new());
    for n in &report.nodes {
        let Some(id) = run.ids.get(&n.name).copied() else {
            continue;
        };
        match n.status {
            strategy::NodeStatus::Success => succeeded.push(id),
            strategy::NodeStatus::Failure => failed.push(id),
            _ => untouched.push(id),
        }
    }
    untouched.extend(
        report
            .unselected_nodes
            .iter()
            .filter_map(|n| run.ids.get(n).copied()),
    );
    (succeeded, failed, untouched)
}

/// Records a node's outcome in the sequencer; a refusal there is a bug worth a log line, not a crash.
fn record(seq: &mut Sequencer, group: &str, phase: &str, node: &str, outcome: NodeOutcome) {
    if let Err(e) = seq.record_result(group, phase, node, outcome) {
        tracing::error!(group, phase, node, error = %e, "the sequencer refused a node's outcome");
    }
}

fn fold(run: &mut Running, node_id: u64, r: &TaskResult) {
    if let Some(cur) = run.current.get_mut(&node_id) {
        if r.last && cur.list.revision == r.revision {
            cur.finals.insert(r.task_id.clone(), r.status);
            let key = (cur.graph_type.clone(), r.task_id.clone());
            if let Some(holders) = run.slots.get_mut(&key) {
                holders.remove(&node_id);
            }
            run.done.insert(&key.0, node_id, &key.1, r.status);
        }
    }
}

/// Without a strategy, the one `default` group needs every node, unless the graph's groups tolerate
/// failures (`fault_tolerance`): then it tolerates as many failed nodes as they allow in all, and each
/// group's own limit is enforced as its nodes fail (see [`fault_tolerance_exceeded`]).
fn tolerate_failures(strategy: &mut strategy::Strategy, resolved: &Resolved) {
    let allowed: usize = resolved
        .phases
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

/// Whether the failed nodes of a fault tolerance group of `graph_type` are more than it allows; the
/// message says which group, how many failed and how many it allows.
fn fault_tolerance_exceeded(run: &Running, graph_type: &str) -> Option<String> {
    let phase = run.resolved.phases.get(graph_type)?;
    let tolerant = |node: &u64| {
        phase
            .fault_tolerance
            .iter()
            .any(|g| g.fault_tolerance.is_some() && g.node_ids.contains(node))
    };
    if run.state.strategy.is_none()
        && phase
            .fault_tolerance
            .iter()
            .any(|g| g.fault_tolerance.is_some())
    {
        let untolerated = run.current.iter().find(|(n, c)| {
            c.graph_type == graph_type
                && c.settled
                && c.outcome() == Some(NodeOutcome::Failed)
                && !tolerant(n)
        });
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
        let failed = group
            .node_ids
            .iter()
            .filter(|n| {
                run.current
                    .get(n)
                    .is_some_and(|c| c.settled && c.outcome() == Some(NodeOutcome::Failed))
            })
            .count();
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

/// A node's list for a phase: its resolved tasks, with waits only on nodes that run the graph type in
/// this phase or already ran it (a wait on a node of a later group could never be met, so it is left out).
fn phase_tasks(
    run: &Running,
    graph_type: &str,
    node_id: u64,
    starting: &HashSet<u64>,
) -> Vec<plinth_common::wire::TaskSpec> {
    let Some(specs) = run
        .resolved
        .phases
        .get(graph_type)
        .and_then(|p| p.specs.get(&node_id))
    else {
        return Vec::new();
    };
    let mut specs = specs.clone();
    for spec in &mut specs {
        spec.waits_for.retain(|w| {
            starting.contains(&w.node_id) || run.done.get(graph_type, w.node_id, &w.task).is_some()
        });
    }
    specs
}
