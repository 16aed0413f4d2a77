//! The engine: starts deployments and drives each one's [`plinth_common::run::Run`] (the pure logic of a
//! running deployment). Every call to a run (start, results, tick, gate, cancel, restore) answers with
//! effects; the engine applies them in one store transaction ([`crate::store::Store::record_progress`]),
//! then puts lists on the board, sends events to watchers, and wakes gated tasks (`live.rs`).
//!
//! Invariants: what is published is stored first, in one transaction with the state that published it
//! (a phase of more than `lists_per_write` nodes: its first lists with the state, the rest in further
//! transactions, each twice the one before, each stored before it goes on the board; a restore gives the nodes left
//! without one their list), so a restart resumes exactly where the database says; a node's revision only grows; a deployment
//! finishes exactly once; each deployment has its own lock, never held across another deployment's work;
//! the in-memory run is a cache of the database that can be rebuilt from it at any time (see
//! [`Engine::resume`]).

pub mod events;
mod live;
mod master;
pub mod plan;
pub mod report;
mod states;
pub mod summary;

use crate::clock::now_ms;
use crate::intake::board::Board;
use crate::store::{
    CompressedJson, DeploymentRecord, NewDeployment, NodeRecord, Store, StoreError,
};
use events::EventHub;
use plinth_api::deployments::StartedDeployment;
use plinth_common::run::{Run, RunNode, RunPlan, RunState};
use plinth_common::snapshot::{ResolutionError, Resolved, Snapshot};
use plinth_common::strategy::InventoryNode;
use plinth_common::wire::{DeploymentEvent, DeploymentStatus, NodeStatus};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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

/// The orchestration state stored with a deployment: the run's state and how the deployment was chosen.
/// Written through [`EngineStateRef`], its borrowed form.
#[derive(Debug, Clone, Deserialize)]
pub struct EngineState {
    /// The run's state: the strategy's state machine, phase deadlines, each phase's graph type.
    #[serde(flatten)]
    pub run: RunState,
    /// The strategy's name, if one was named or configured.
    #[serde(default)]
    pub strategy: Option<String>,
    /// How the strategy and its timeouts were chosen, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen_by: Option<String>,
    /// Shipyard's action this deployment runs, if one was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The node that takes the tasks placed on `master`, when one does ([`master`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master: Option<u64>,
}

/// [`EngineState`] borrowed from where it lives, serialized as [`EngineState`] is (it is how
/// [`EngineState`] serializes). A running deployment's state is written at every step straight from its
/// run: at 100,000 nodes it is megabytes, and cloning it or building it as a tree first cost as much as
/// writing it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct EngineStateRef<'a> {
    /// See [`EngineState::run`].
    #[serde(flatten)]
    pub run: &'a RunState,
    /// See [`EngineState::strategy`].
    pub strategy: Option<&'a str>,
    /// See [`EngineState::chosen_by`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chosen_by: Option<&'a str>,
    /// See [`EngineState::action`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<&'a str>,
    /// See [`EngineState::master`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master: Option<u64>,
}

impl EngineStateRef<'_> {
    /// As the store keeps it: JSON, compressed as it is written (its text is never held whole).
    pub fn compressed(&self) -> Result<CompressedJson, StoreError> {
        CompressedJson::encode(self)
            .map_err(|e| StoreError::Database(format!("the deployment's state: {e}")))
    }
}

impl Serialize for EngineState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.borrowed().serialize(serializer)
    }
}

impl EngineState {
    /// This state, borrowed.
    pub fn borrowed(&self) -> EngineStateRef<'_> {
        EngineStateRef {
            run: &self.run,
            strategy: self.strategy.as_deref(),
            chosen_by: self.chosen_by.as_deref(),
            action: self.action.as_deref(),
            master: self.master,
        }
    }

    /// What the deployment runs: strategy, how it was chosen, phases with their timeouts.
    pub fn summary(&self) -> plinth_api::deployments::StrategySummary {
        plan::summary(
            self.run.sequencer.strategy(),
            self.strategy.as_deref(),
            self.chosen_by.as_deref(),
        )
    }

    /// Whether this deployment deploys (a strategy's phases, or the `default` graph) rather than
    /// running a custom graph (seed 002): only then do statuses and roles change.
    pub fn deploys(&self) -> bool {
        self.strategy.is_some()
            || self
                .run
                .phase_graph
                .values()
                .any(|t| t == plinth_common::model::DEFAULT_GRAPH_TYPE)
    }
}

pub struct Engine {
    store: Arc<dyn Store>,
    board: Arc<Board>,
    /// Live events.
    pub events: EventHub,
    list_ttl_secs: std::sync::atomic::AtomicI64,
    phase_timeout_secs: AtomicU64,
    /// The deployments running here, each behind its own lock; this map's lock is only held to find one.
    running: Mutex<HashMap<u64, Arc<live::Deployment>>>,
    exprs: plinth_common::snapshot::Expressions,
    needs_resume: AtomicBool,
    /// Whether this controller sequences deployments: always alone; with several controllers, while it
    /// holds the sequencing lease (see [`crate::ha`]).
    sequencing: AtomicBool,
    /// Held while deployments are taken on from the database (see [`Engine::resume`]), and by a start
    /// from committing its deployment until it runs here (so it is never taken on twice).
    resuming: Mutex<()>,
    published: AtomicU64,
    /// How many of a phase's lists are stored in one transaction, then handed out.
    lists_per_write: AtomicUsize,
    /// The files root: file tasks' sources are sealed into their lists when published.
    pub files: Arc<crate::file_catalog::FileCatalog>,
    /// The name of the node whose agent takes the tasks placed on `master` (`master_node`).
    master_node: Mutex<Option<String>>,
}

impl Engine {
    /// An engine over a store and a board.
    pub fn new(
        exprs: plinth_common::snapshot::Expressions,
        store: Arc<dyn Store>,
        board: Arc<Board>,
        list_ttl: std::time::Duration,
        phase_timeout: std::time::Duration,
        files: Arc<crate::file_catalog::FileCatalog>,
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
            sequencing: AtomicBool::new(true),
            resuming: Mutex::new(()),
            published: AtomicU64::new(0),
            lists_per_write: AtomicUsize::new(crate::config::DEFAULT_LISTS_PER_WRITE),
            files,
            master_node: Mutex::new(None),
        }
    }

    /// Whether this controller sequences deployments now.
    pub fn is_sequencing(&self) -> bool {
        self.sequencing.load(Ordering::Acquire)
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

    /// Names the node whose agent takes the tasks placed on `master` in the deployments that start
    /// from now on (`None`: no agent does).
    pub fn set_master_node(&self, name: Option<String>) {
        *self.master_node.lock().unwrap_or_else(|p| p.into_inner()) = name;
    }

    /// Changes how many of a phase's lists are stored in one transaction, then handed out (at least 1).
    pub fn set_lists_per_write(&self, lists: usize) {
        self.lists_per_write.store(lists.max(1), Ordering::Relaxed);
    }

    /// A request read and checked: its strategy, its nodes (of the cluster, accepted; their facts left
    /// out, resolution reads them from the snapshot) and what it resolves from, with the graph types of
    /// the strategy's phases. The cluster's nodes are read once, in the snapshot's read transaction:
    /// the request's nodes are the snapshot's records.
    fn read_request(&self, req: &DeployRequest) -> Result<Request, StartError> {
        self.store.get_cluster(req.cluster_id)?;
        if req.action.is_some() && req.graph_type.is_some() {
            return Err(StartError::Invalid(
                "an action runs the strategy's phases: leave out graph_type".into(),
            ));
        }
        let chosen = plan::strategy_for(
            self.store.as_ref(),
            req.cluster_id,
            req.strategy.as_deref(),
            req.graph_type.as_deref(),
            req.action.as_ref(),
            self.phase_timeout_secs.load(Ordering::Relaxed),
        )?;
        let graph_types: Vec<String> = chosen
            .strategy
            .phases
            .iter()
            .map(|p| p.graph_type.clone())
            .collect();
        let (records, mut snapshot) = match req.inputs_from {
            Some(earlier) => (
                plan::cluster_nodes_without_facts(self.store.as_ref(), req.cluster_id)?,
                self.stored_snapshot(earlier)?,
            ),
            None => {
                let type_refs: Vec<&str> = graph_types.iter().map(String::as_str).collect();
                let model = crate::cluster_model::ClusterModel::read(
                    self.store.as_ref(),
                    req.cluster_id,
                    &type_refs,
                    true,
                )?;
                (model.node_records, model.snapshot)
            }
        };
        // The records come without their facts (the snapshot has them): they are for choosing nodes
        // and placing them in the strategy.
        let nodes: Vec<plan::DeployNode> = Self::chosen_nodes(req, records)?
            .into_iter()
            .map(plan::DeployNode::from)
            .collect();
        snapshot.named = req
            .node_ids
            .as_ref()
            .map(|_| nodes.iter().map(|n| n.id).collect());
        if req.inputs_from.is_none() {
            snapshot.forced = req.options.force;
        }
        Ok(Request {
            chosen,
            nodes,
            snapshot,
            graph_types,
        })
    }

    /// The nodes a request deploys, of the cluster's `all`: those it names (or the server a
    /// `redeploy_server` names), else every node not being deleted; checked: some, all accepted.
    fn chosen_nodes(
        req: &DeployRequest,
        all: Vec<NodeRecord>,
    ) -> Result<Vec<NodeRecord>, StartError> {
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
                // By id: a request naming 100,000 nodes looks each up once, not through the list.
                let by_id: HashMap<u64, &NodeRecord> = all.iter().map(|n| (n.id, n)).collect();
                let mut picked = Vec::new();
                for id in ids {
                    match by_id.get(id) {
                        Some(n) => picked.push((*n).clone()),
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
        Ok(nodes)
    }

    /// Checks a deployment request whole, records the deployment and publishes its first lists
    /// (blocking). Answers the record (its state left out, as in lists) and what it runs.
    pub fn start(&self, req: &DeployRequest) -> Result<StartedDeployment, StartError> {
        let began = std::time::Instant::now();
        let Request {
            chosen,
            mut nodes,
            snapshot,
            graph_types,
        } = self.read_request(req)?;
        // Every node resolves for every phase, or nothing starts.
        let (inputs, mut resolved) = self.resolve_keeping_inputs(snapshot, &graph_types)?;
        let resolved_at = began.elapsed();
        let configured = self
            .master_node
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let master = master::place(
            self.store.as_ref(),
            configured.as_deref(),
            &mut resolved,
            &nodes,
        )?;
        let mut inventory: Vec<_> = nodes
            .iter()
            .map(|n| plan::inventory_node(n, &resolved.tags))
            .collect();
        let master_id = master.as_ref().map(|m| m.id);
        if let Some(m) = master {
            let node = InventoryNode::new(m.name.clone()).with_tag(plinth_common::tags::MASTER_TAG);
            master::check_selected(&chosen.strategy, &node)?;
            inventory.push(node);
            nodes.push(m);
        }
        let run = Run::new(
            run_plan(
                0,
                &nodes,
                &resolved,
                req.options.noop,
                chosen.name.is_some(),
            ),
            chosen.strategy,
            &inventory,
        )
        .map_err(|e| StartError::Invalid(e.to_string()))?;
        let state = EngineState {
            run: run.state().clone(),
            strategy: chosen.name.clone(),
            chosen_by: Some(chosen.chosen_by),
            action: req.action.as_ref().map(|a| a.name().to_string()),
            master: master_id,
        };
        let primaries: Vec<(u64, Vec<String>)> = nodes
            .iter()
            .map(|n| {
                let mine: Vec<String> = resolved
                    .primaries
                    .iter()
                    .filter(|(_, id)| **id == n.id)
                    .map(|(tag, _)| tag.clone())
                    .collect();
                (n, mine)
            })
            .filter(|(n, mine)| &n.primary_tags != mine)
            .map(|(n, mine)| (n.id, mine))
            .collect();
        let graph_type = match &chosen.name {
            Some(name) => format!("strategy:{name}"),
            None => req.graph_type.clone().unwrap_or_else(|| "default".into()),
        };
        let warnings: Vec<DeploymentEvent> = resolved
            .findings
            .iter()
            .map(|f| DeploymentEvent::Warning {
                code: f.code.clone(),
                message: f.message.clone(),
            })
            .collect();
        let node_ids: Vec<u64> = nodes.iter().map(|n| n.id).collect();
        // What follows holds every node's state (the cluster part lists every node's record) and writes
        // it: the records read for the request, the inventory and the rest of the resolution go first
        // (the run holds the plans it needs, shared).
        drop((nodes, inventory));
        let states = std::mem::take(&mut resolved.states);
        drop(resolved);
        crate::memory::give_back();
        // From the moment its record is committed until it runs here, the deployment is running in the
        // database and not in memory: `resume` (which takes on such deployments) waits until it is.
        let _starting = self.resuming.lock().unwrap_or_else(|p| p.into_inner());
        // Recorded before its states are stored: the inputs are written and dropped before the
        // states' text is made.
        let record = self.store.create_deployment(&NewDeployment {
            cluster_id: req.cluster_id,
            graph_type,
            node_ids,
            options: serde_json::to_value(&req.options).unwrap_or_default(),
            state: state.borrowed().compressed()?,
            inputs,
            now_ms: now_ms(),
            deploys: state.deploys(),
            // Written in the deployment's transaction: a refused deployment elects nothing.
            primaries,
        })?;
        let recorded_at = began.elapsed();
        let started = |record: DeploymentRecord, state: &EngineState| StartedDeployment {
            record,
            strategy: Some(state.summary()),
        };
        // The deployment's id, now that the store gave it one.
        let run = run.with_deployment_id(record.id);
        if !self.is_sequencing() {
            // Another controller sequences: it takes the deployment on from its record, as after a
            // restart (its first lists go out then).
            self.store.append_events(record.id, &warnings)?;
            self.store.notify(&crate::store::Notice::Deployments);
            tracing::info!(
                deployment = record.id,
                "deployment recorded; the controller holding the sequencing lease runs it"
            );
            return Ok(started(record, &state));
        }
        let answer = started(record.clone(), &state);
        // The states are stored as blobs, and the deployment keeps only each node's reference to its
        // state. Should that fail, the deployment is recorded and runs all the same: it is taken on
        // from its record at the next tick, as after a storage failure mid-run (resuming stores the
        // states again), so the answer stands.
        let stored = states::TaskStates::store(states, self.store.as_ref());
        crate::memory::give_back();
        tracing::info!(
            deployment = record.id,
            nodes = record.node_ids.len(),
            resolved_ms = resolved_at.as_secs_f64() * 1e3,
            recorded_ms = recorded_at.as_secs_f64() * 1e3,
            states_stored_ms = began.elapsed().as_secs_f64() * 1e3,
            "deployment resolved, recorded and its states stored"
        );
        match stored {
            Ok(states) => self.launch(&record, run, state, states, warnings),
            Err(e) => {
                tracing::error!(deployment = record.id, error = %e, "cannot store the deployment's task states; it is taken on from its record at the next tick");
                self.store.append_events(record.id, &warnings).ok();
                self.needs_resume.store(true, Ordering::Release);
            }
        }
        Ok(answer)
    }

    /// Resolves a request's snapshot for every graph type of its strategy's phases, and answers what it
    /// resolved from, compressed as it is stored with a deployment.
    fn resolve_keeping_inputs(
        &self,
        snapshot: Snapshot,
        graph_types: &[String],
    ) -> Result<(CompressedJson, Resolved), StartError> {
        // Written before resolving (resolution moves every node's facts out of the snapshot), and
        // compressed as it is written: as text it was held through resolution, the size of every
        // node's record.
        let inputs = CompressedJson::encode(&snapshot).map_err(|e| {
            StartError::Invalid(format!("the deployment's inputs do not serialize: {e}"))
        })?;
        // Reading the nodes left every record's facts as garbage (the request's records drop theirs,
        // the snapshot's are written anew): returned now, not in the middle of resolving.
        crate::memory::give_back();
        let resolved = plinth_common::snapshot::resolve_owned(snapshot, graph_types, &self.exprs)?;
        Ok((inputs, resolved))
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

    /// Starts a new deployment of an ended one's failed and not-started nodes, with the same graph type
    /// or strategy, options and inputs (the cluster as it was resolved then).
    pub fn retry(&self, deployment_id: u64) -> Result<StartedDeployment, StartError> {
        let dep = self.store.get_deployment(deployment_id)?;
        if dep.status == DeploymentStatus::Running {
            return Err(StartError::Invalid(format!(
                "deployment {deployment_id} is still running: cancel it first, or wait"
            )));
        }
        let report = report::build(self.store.as_ref(), &dep)?;
        let nodes: Vec<u64> = report
            .nodes
            .iter()
            .filter(|n| n.status != NodeStatus::Success)
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
        let graph_types: Vec<String> = state.run.phase_graph.values().cloned().collect();
        Ok(plinth_common::snapshot::resolve_owned(
            snapshot,
            &graph_types,
            &self.exprs,
        )?)
    }

    /// Resolves a request without starting anything (for `serialized_tasks` and the checks).
    pub fn resolve_only(&self, req: &DeployRequest) -> Result<Resolved, StartError> {
        let request = self.read_request(req)?;
        Ok(plinth_common::snapshot::resolve_owned(
            request.snapshot,
            &request.graph_types,
            &self.exprs,
        )?)
    }

    /// Resolves a request without starting anything: the lists every node would get, and the findings.
    pub fn dry_run(&self, req: &DeployRequest) -> Result<Value, StartError> {
        let Request {
            chosen,
            nodes,
            snapshot,
            graph_types,
        } = self.read_request(req)?;
        let strategy = chosen.strategy;
        let resolved = plinth_common::snapshot::resolve_owned(snapshot, &graph_types, &self.exprs)?;
        let mut graphs = serde_json::Map::new();
        for (graph_type, phase) in &resolved.phases {
            let mut by_node = serde_json::Map::new();
            if let Some(specs) = phase.specs.get(&plinth_common::graph::MASTER_NODE_ID) {
                by_node.insert(
                    plinth_common::tags::MASTER_TAG.to_string(),
                    serde_json::to_value(&**specs).unwrap_or_default(),
                );
            }
            for node in &nodes {
                if let Some(specs) = phase.specs.get(&node.id) {
                    by_node.insert(
                        node.name.clone(),
                        serde_json::to_value(&**specs).unwrap_or_default(),
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
}

/// A deployment request read and checked ([`Engine::read_request`]).
struct Request {
    /// The strategy, and how it was chosen.
    chosen: plan::Chosen,
    /// The nodes it deploys.
    nodes: Vec<plan::DeployNode>,
    /// What it resolves from: the cluster now, or an earlier deployment's inputs.
    snapshot: Snapshot,
    /// The graph types of the strategy's phases.
    graph_types: Vec<String>,
}

/// What a run needs from a resolution: the deployment's nodes and every graph type's plan.
fn run_plan(
    deployment_id: u64,
    nodes: &[plan::DeployNode],
    resolved: &Resolved,
    noop: bool,
    named_strategy: bool,
) -> RunPlan {
    RunPlan {
        deployment_id,
        nodes: nodes
            .iter()
            .map(|n| {
                (
                    n.id,
                    RunNode {
                        name: n.name.clone(),
                        node_key: n.node_key.clone(),
                    },
                )
            })
            .collect(),
        graphs: resolved.phases.clone(),
        noop,
        named_strategy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_common::strategy::{InventoryNode, Sequencer, Strategy};

    /// What a step writes (borrowed) reads back as the state it was written from, and writes again to
    /// the same text.
    #[test]
    fn the_state_written_from_a_borrow_reads_back_the_same() {
        let inventory: Vec<InventoryNode> = ["a", "b"]
            .iter()
            .map(|name| InventoryNode {
                name: (*name).into(),
                tags: vec!["compute".into()],
                labels: Default::default(),
                rack: None,
            })
            .collect();
        let strategy = Strategy::all_nodes();
        let run = RunState {
            sequencer: Sequencer::new(&strategy, &inventory).unwrap(),
            deadlines: [("all/deploy".to_string(), 5_000)].into(),
            phase_graph: [("deploy".to_string(), "default".to_string())].into(),
        };
        for (strategy, chosen_by, action, master) in [
            (None, None, None, None),
            (
                Some("s"),
                Some("named by the operator"),
                Some("deploy_site"),
                Some(7),
            ),
        ] {
            let borrowed = EngineStateRef {
                run: &run,
                strategy,
                chosen_by,
                action,
                master,
            };
            let text = serde_json::to_string(&borrowed).unwrap();
            let back: EngineState = borrowed.compressed().unwrap().decode().unwrap();
            assert_eq!(back.strategy.as_deref(), strategy);
            assert_eq!(back.chosen_by.as_deref(), chosen_by);
            assert_eq!(back.action.as_deref(), action);
            assert_eq!(back.master, master);
            assert_eq!(back.run.sequencer, run.sequencer);
            assert_eq!(back.run.deadlines, run.deadlines);
            assert_eq!(back.run.phase_graph, run.phase_graph);
            assert_eq!(serde_json::to_string(&back).unwrap(), text);
        }
    }
}
