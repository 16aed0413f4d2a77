//! The orchestrator: starts deployments, publishes each node's task list, folds results into node and
//! deployment outcomes, enforces the phase timeout, and resumes running deployments after a restart.
//!
//! Invariants: the database is written before memory changes (a restart loses nothing that was acknowledged);
//! a node's list revision only grows; a deployment finishes exactly once.

pub mod report;

use crate::board::Board;
use crate::clock::now_ms;
use crate::resolve;
use crate::store::{
    DeploymentRecord, DeploymentStatus, GraphOwner, NewDeployment, NodeRecord, Store, StoreError,
};
use plinth_common::wire::{ResultStatus, TaskList, TaskResult, TASK_LIST_FORMAT};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

/// Why a deployment cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Storage failed or refused (not found, conflict).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The request is wrong (names the node or graph).
    #[error("{0}")]
    Invalid(String),
    /// The graph does not resolve.
    #[error(transparent)]
    Resolve(#[from] resolve::ResolveError),
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

/// How a node's phase ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome", content = "reason")]
pub enum NodeOutcome {
    /// Every task succeeded (or was skipped on purpose).
    Succeeded,
    /// A task failed, or the phase timed out.
    Failed(String),
}

/// What is persisted as the deployment's state.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PhaseState {
    /// The phase running.
    pub phase: String,
    /// When it times out (ms).
    pub deadline_ms: i64,
    /// Outcomes decided by the controller itself (timeouts), which results cannot show.
    #[serde(default)]
    pub forced: BTreeMap<u64, NodeOutcome>,
}

struct Running {
    record: DeploymentRecord,
    state: PhaseState,
    lists: HashMap<u64, Arc<TaskList>>,
    finals: HashMap<u64, HashMap<String, ResultStatus>>,
    outcomes: BTreeMap<u64, NodeOutcome>,
}

impl Running {
    /// Folds a node's final results into its outcome, once every task has its last word.
    fn settle(&mut self, node_id: u64) {
        if self.outcomes.contains_key(&node_id) {
            return;
        }
        if let Some(o) = self.state.forced.get(&node_id) {
            self.outcomes.insert(node_id, o.clone());
            return;
        }
        let Some(list) = self.lists.get(&node_id) else {
            return;
        };
        let no_results = HashMap::new();
        // A node with nothing to do has finished as soon as its list exists.
        let finals = self.finals.get(&node_id).unwrap_or(&no_results);
        if list.tasks.iter().any(|t| !finals.contains_key(&t.id)) {
            return;
        }
        let failed = list.tasks.iter().find(|t| {
            matches!(
                finals.get(&t.id),
                Some(ResultStatus::Failed | ResultStatus::TimedOut | ResultStatus::Interrupted)
            )
        });
        let outcome = match failed {
            Some(t) => NodeOutcome::Failed(format!("task {} failed", t.id)),
            None => NodeOutcome::Succeeded,
        };
        self.outcomes.insert(node_id, outcome);
    }

    fn complete(&self) -> bool {
        self.record
            .node_ids
            .iter()
            .all(|n| self.outcomes.contains_key(n))
    }
}

/// Drives deployments.
pub struct Engine {
    store: Arc<dyn Store>,
    board: Arc<Board>,
    signer_ttl_secs: i64,
    phase_timeout_ms: i64,
    running: Mutex<HashMap<u64, Running>>,
}

impl Engine {
    /// An engine over a store and a board.
    pub fn new(
        store: Arc<dyn Store>,
        board: Arc<Board>,
        list_ttl: std::time::Duration,
        phase_timeout: std::time::Duration,
    ) -> Self {
        Engine {
            store,
            board,
            signer_ttl_secs: i64::try_from(list_ttl.as_secs()).unwrap_or(600),
            phase_timeout_ms: i64::try_from(phase_timeout.as_millis()).unwrap_or(i64::MAX / 2),
            running: Mutex::new(HashMap::new()),
        }
    }

    /// How long a list is valid after it is fetched, in seconds.
    pub fn list_ttl_secs(&self) -> i64 {
        self.signer_ttl_secs
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Running>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Resolves the cluster's graph for the chosen nodes and publishes their lists (blocking: run it on the
    /// blocking pool).
    pub fn start(
        &self,
        cluster_id: u64,
        graph_type: &str,
        node_ids: Option<&[u64]>,
        options: &DeployOptions,
    ) -> Result<DeploymentRecord, StartError> {
        let cluster = self.store.get_cluster(cluster_id)?;
        let all: Vec<NodeRecord> = self
            .store
            .list_nodes()?
            .into_iter()
            .filter(|n| n.cluster_id == Some(cluster_id))
            .collect();
        let nodes: Vec<NodeRecord> = match node_ids {
            None => all,
            Some(ids) => {
                let mut picked = Vec::new();
                for id in ids {
                    match all.iter().find(|n| n.id == *id) {
                        Some(n) => picked.push(n.clone()),
                        None => {
                            return Err(StartError::Invalid(format!(
                                "node {id} is not in cluster {cluster_id}"
                            )))
                        }
                    }
                }
                picked
            }
        };
        if nodes.is_empty() {
            return Err(StartError::Invalid(format!(
                "cluster {cluster_id} has no nodes to deploy"
            )));
        }
        if let Some(n) = nodes.iter().find(|n| !n.admission_accepted()) {
            return Err(StartError::Invalid(format!(
                "node {} ({}) is not accepted yet",
                n.id, n.name
            )));
        }
        let release_graph = match self
            .store
            .get_graph(GraphOwner::Release(cluster.release_id), graph_type)
        {
            Ok(g) => g.body.tasks,
            Err(StoreError::NotFound { .. }) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let cluster_graph = match self
            .store
            .get_graph(GraphOwner::Cluster(cluster_id), graph_type)
        {
            Ok(g) => g.body.tasks,
            Err(StoreError::NotFound { .. }) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        if release_graph.is_empty() && cluster_graph.is_empty() {
            return Err(StartError::Invalid(format!(
                "no graph of type {graph_type:?} for cluster {cluster_id} or its release"
            )));
        }
        let merged = resolve::merge(&[&release_graph, &cluster_graph])?;
        let mut planned = Vec::with_capacity(nodes.len());
        for n in &nodes {
            let tags: BTreeSet<String> = n
                .tags
                .iter()
                .chain(&n.roles)
                .chain(&n.pending_roles)
                .cloned()
                .collect();
            planned.push((n, resolve::tasks_for_node(&merged, &n.name, &tags)?));
        }

        let now = now_ms();
        let state = PhaseState {
            phase: "deploy".into(),
            deadline_ms: now + self.phase_timeout_ms,
            forced: BTreeMap::new(),
        };
        let record = self.store.create_deployment(&NewDeployment {
            cluster_id,
            graph_type: graph_type.to_string(),
            node_ids: nodes.iter().map(|n| n.id).collect(),
            options: serde_json::to_value(options).unwrap_or_default(),
            state: serde_json::to_value(&state).unwrap_or_default(),
            now_ms: now,
        })?;
        let mut lists = Vec::with_capacity(planned.len());
        for (n, tasks) in planned {
            lists.push(TaskList {
                format: TASK_LIST_FORMAT,
                node_key: n.node_key.clone(),
                node_id: n.id,
                deployment_id: record.id,
                phase: state.phase.clone(),
                revision: self.store.next_revision(n.id)?,
                issued_at: 0,
                expires_at: 0,
                nonce: String::new(),
                noop: options.noop,
                tasks,
            });
        }
        self.store.publish_lists(record.id, &lists)?;
        self.adopt(record.clone(), state, lists, Vec::new());
        Ok(record)
    }

    /// Puts a deployment in memory and on the board, folding in results already stored.
    fn adopt(
        &self,
        record: DeploymentRecord,
        state: PhaseState,
        lists: Vec<TaskList>,
        results: Vec<(u64, TaskResult)>,
    ) {
        let mut run = Running {
            record,
            state,
            lists: lists
                .into_iter()
                .map(|l| (l.node_id, Arc::new(l)))
                .collect(),
            finals: HashMap::new(),
            outcomes: BTreeMap::new(),
        };
        for (node, r) in &results {
            fold(&mut run, *node, r);
        }
        let nodes: Vec<u64> = run.record.node_ids.clone();
        for n in &nodes {
            run.settle(*n);
        }
        for list in run.lists.values() {
            if !run.outcomes.contains_key(&list.node_id) {
                self.board.publish(list.clone());
            }
        }
        let id = run.record.id;
        let finished = run.complete();
        self.lock().insert(id, run);
        if finished {
            self.finish(id);
        }
    }

    /// Loads running deployments from the store after a start (blocking).
    pub fn resume(&self) -> Result<usize, StoreError> {
        let running = self.store.running_deployments()?;
        let count = running.len();
        for record in running {
            let state: PhaseState =
                serde_json::from_value(record.state.clone()).unwrap_or_default();
            let lists = self.store.published_lists(record.id)?;
            let results = self.store.deployment_results(record.id)?;
            tracing::info!(
                deployment = record.id,
                nodes = lists.len(),
                results = results.len(),
                "resuming deployment"
            );
            self.adopt(record, state, lists, results);
        }
        Ok(count)
    }

    /// Whether `node_id` has a published list with this deployment and revision, and the task is in it.
    pub fn owns(&self, node_id: u64, r: &TaskResult) -> Option<bool> {
        let map = self.lock();
        let run = map.get(&r.deployment_id)?;
        let list = run.lists.get(&node_id)?;
        Some(list.revision == r.revision && list.tasks.iter().any(|t| t.id == r.task_id))
    }

    /// Folds stored results in; finishes nodes and deployments they complete (blocking).
    pub fn on_results(&self, node_id: u64, results: &[TaskResult]) {
        let mut done = Vec::new();
        {
            let mut map = self.lock();
            for r in results {
                if let Some(run) = map.get_mut(&r.deployment_id) {
                    fold(run, node_id, r);
                    run.settle(node_id);
                    if run.outcomes.contains_key(&node_id) {
                        self.board.withdraw(node_id, r.deployment_id);
                    }
                    if run.complete() {
                        done.push(r.deployment_id);
                    }
                }
            }
        }
        done.dedup();
        for id in done {
            self.finish(id);
        }
    }

    /// Fails nodes whose phase ran past its deadline (blocking; called every second).
    pub fn tick(&self) {
        let now = now_ms();
        let mut expired = Vec::new();
        {
            let mut map = self.lock();
            for run in map.values_mut() {
                if now < run.state.deadline_ms {
                    continue;
                }
                for n in run.record.node_ids.clone() {
                    if !run.outcomes.contains_key(&n) {
                        let o = NodeOutcome::Failed(format!(
                            "phase {} timed out before the node finished",
                            run.state.phase
                        ));
                        run.state.forced.insert(n, o.clone());
                        run.outcomes.insert(n, o);
                        self.board.withdraw(n, run.record.id);
                    }
                }
                expired.push(run.record.id);
            }
        }
        for id in expired {
            self.finish(id);
        }
    }

    /// Records the end of a deployment.
    fn finish(&self, id: u64) {
        let Some(run) = self.lock().remove(&id) else {
            return;
        };
        let succeeded: Vec<u64> = run
            .outcomes
            .iter()
            .filter(|(_, o)| **o == NodeOutcome::Succeeded)
            .map(|(n, _)| *n)
            .collect();
        let failed: Vec<u64> = run
            .outcomes
            .keys()
            .copied()
            .filter(|n| !succeeded.contains(n))
            .collect();
        // The default strategy: one critical group that needs every node.
        let status = if failed.is_empty() {
            DeploymentStatus::Success
        } else {
            DeploymentStatus::Failed
        };
        let mut state = serde_json::to_value(&run.state).unwrap_or_default();
        if let Some(obj) = state.as_object_mut() {
            obj.insert(
                "outcomes".into(),
                serde_json::to_value(&run.outcomes).unwrap_or_default(),
            );
        }
        let result = self
            .store
            .finish_nodes(&succeeded, &failed)
            .and_then(|_| self.store.save_deployment_state(id, &state, status));
        for n in &run.record.node_ids {
            self.board.withdraw(*n, id);
        }
        match result {
            Ok(()) => tracing::info!(
                deployment = id,
                status = status.as_str(),
                succeeded = succeeded.len(),
                failed = failed.len(),
                "deployment finished"
            ),
            Err(e) => {
                tracing::error!(deployment = id, error = %e, "cannot record the end of a deployment; keeping it running");
                self.lock().insert(id, run);
            }
        }
    }

    /// The status of a task's dependencies for a gated task: (ready, blocked, waiting_for).
    pub fn gate(
        &self,
        node_id: u64,
        deployment_id: u64,
        task: &str,
    ) -> Option<(bool, bool, Vec<String>)> {
        let map = self.lock();
        let run = map.get(&deployment_id)?;
        let spec = run
            .lists
            .get(&node_id)?
            .tasks
            .iter()
            .find(|t| t.id == task)?;
        let mut waiting = Vec::new();
        let mut blocked = false;
        for dep in &spec.waits_for {
            match run.finals.get(&dep.node_id).and_then(|f| f.get(&dep.task)) {
                Some(ResultStatus::Succeeded | ResultStatus::Skipped) => {}
                Some(_) => blocked = true,
                None if run.outcomes.contains_key(&dep.node_id) => blocked = true,
                None => waiting.push(format!("{} on node {}", dep.task, dep.node_id)),
            }
        }
        Some((waiting.is_empty() && !blocked, blocked, waiting))
    }
}

fn fold(run: &mut Running, node_id: u64, r: &TaskResult) {
    let current = run.lists.get(&node_id).map(|l| l.revision);
    if r.last && current == Some(r.revision) {
        run.finals
            .entry(node_id)
            .or_default()
            .insert(r.task_id.clone(), r.status);
    }
}

trait AdmissionExt {
    fn admission_accepted(&self) -> bool;
}

impl AdmissionExt for NodeRecord {
    fn admission_accepted(&self) -> bool {
        self.admission == crate::store::NodeAdmission::Accepted
    }
}
