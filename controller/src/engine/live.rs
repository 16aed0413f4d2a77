//! Driving the deployments running here: each one's [`Run`] behind its own lock; each call's effects
//! applied in one store transaction, then published (board, event streams, gate wake-ups).

use super::states::TaskStates;
use super::{run_plan, Engine, EngineState, EngineStateRef};
use crate::clock::now_ms;
use crate::metrics::{metrics, PhaseOutcome};
use crate::store::{DeploymentRecord, DeploymentStatus, Ending, NodesEnded, Progress, StoreError};
use plinth_common::run::{Effects, Run};
use plinth_common::wire::{DeploymentEvent, NodeStatus, TaskList, TaskResult};
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tokio::sync::watch;

/// A step that publishes at least this many lists logs how long each of its parts took.
const TIMED_PUBLICATION: u64 = 1_000;

/// How long a controller that does not sequence waits for a cancel it passed on to take effect.
const CANCEL_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A deployment running here.
pub(super) struct Deployment {
    /// Its run; `None` once it finished (or was dropped to be rebuilt from the database).
    live: Mutex<Option<Live>>,
    /// Bumped whenever a gated task's answer may have changed; the gate waits on it.
    waits: watch::Sender<u64>,
}

impl Deployment {
    fn new() -> Deployment {
        Deployment {
            live: Mutex::new(None),
            waits: watch::channel(0).0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Live>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running deployment's run and what the engine keeps beside it.
pub(super) struct Live {
    run: Run,
    strategy: Option<String>,
    chosen_by: Option<String>,
    action: Option<String>,
    master: Option<u64>,
    /// Every node's reference to its state, stored at the start (and again, identically, at a resume).
    states: TaskStates,
    deploys: bool,
    /// The deployment's graph type, as its record names it (what its duration is labelled by).
    graph_type: String,
    /// When it started (its record's time, for one taken on from the database).
    started: Instant,
    /// The phases running, as (group, phase, graph type, when it started here): a phase that
    /// started before this controller took the deployment on is not among them, nor timed.
    phases: Vec<(String, String, String, Instant)>,
}

impl Live {
    fn new(run: Run, record: &DeploymentRecord, state: &EngineState, states: TaskStates) -> Live {
        metrics().deployment_known(
            &record.graph_type,
            run.state().phase_graph.values().map(String::as_str),
        );
        let age = std::time::Duration::from_millis(
            u64::try_from(now_ms().saturating_sub(record.created_at_ms)).unwrap_or(0),
        );
        Live {
            run,
            strategy: state.strategy.clone(),
            chosen_by: state.chosen_by.clone(),
            action: state.action.clone(),
            master: state.master,
            states,
            deploys: state.deploys(),
            graph_type: record.graph_type.clone(),
            started: Instant::now().checked_sub(age).unwrap_or_else(Instant::now),
            phases: Vec::new(),
        }
    }

    /// Times the phases a step starts and ends, and the deployment when it ends (the step is
    /// recorded): `plinth_phase_duration_seconds` and `plinth_deployment_duration_seconds`. Reads
    /// only the step's events.
    fn measure(&mut self, fx: &Effects) {
        let now = Instant::now();
        for e in &fx.events {
            match e {
                DeploymentEvent::PhaseStarted {
                    group,
                    phase,
                    graph_type,
                    ..
                } => self
                    .phases
                    .push((group.clone(), phase.clone(), graph_type.clone(), now)),
                DeploymentEvent::PhaseFinished {
                    group,
                    phase,
                    passed,
                    ..
                } => {
                    let Some(at) = self
                        .phases
                        .iter()
                        .position(|(g, p, _, _)| g == group && p == phase)
                    else {
                        continue;
                    };
                    let (_, _, graph_type, began) = self.phases.swap_remove(at);
                    let outcome = if *passed {
                        PhaseOutcome::Passed
                    } else {
                        PhaseOutcome::Failed
                    };
                    metrics().phase_ended(&graph_type, outcome, now.duration_since(began));
                }
                _ => {}
            }
        }
        if let Some(f) = &fx.finish {
            for (_, _, graph_type, began) in self.phases.drain(..) {
                if f.status == DeploymentStatus::Cancelled {
                    metrics().phase_ended(
                        &graph_type,
                        PhaseOutcome::Cancelled,
                        now.duration_since(began),
                    );
                }
            }
            metrics().deployment_ended(
                &self.graph_type,
                f.status,
                now.duration_since(self.started),
            );
        }
    }

    /// The orchestration state as it is now, borrowed (what each step writes).
    fn state_ref(&self) -> EngineStateRef<'_> {
        EngineStateRef {
            run: self.run.state(),
            strategy: self.strategy.as_deref(),
            chosen_by: self.chosen_by.as_deref(),
            action: self.action.as_deref(),
            master: self.master,
        }
    }

    fn engine_state(&self) -> EngineState {
        EngineState {
            run: self.run.state().clone(),
            strategy: self.strategy.clone(),
            chosen_by: self.chosen_by.clone(),
            action: self.action.clone(),
            master: self.master,
        }
    }

    /// For every task that succeeded on a node that succeeded, a row naming the state it ran against:
    /// what `old()` and `changed()` compare with next time.
    fn task_states(&self, succeeded_tasks: &[(u64, Arc<str>)]) -> Vec<crate::store::StateRow> {
        self.states.rows(succeeded_tasks)
    }
}

impl Engine {
    fn deployment(&self, id: u64) -> Option<Arc<Deployment>> {
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
    }

    fn forget(&self, id: u64) {
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }

    /// Puts a new deployment's run in place and starts it (its first lists go out). `first_events` are
    /// recorded with its first step (the pre-deployment checks' warnings).
    pub(super) fn launch(
        &self,
        record: &DeploymentRecord,
        run: Run,
        state: EngineState,
        states: TaskStates,
        first_events: Vec<DeploymentEvent>,
    ) {
        let id = record.id;
        let dep = Arc::new(Deployment::new());
        // Locked before it is findable: a result for its first lists waits until they are recorded.
        let mut slot = dep.lock();
        *slot = Some(Live::new(run, record, &state, states));
        self.events.open(id);
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, dep.clone());
        let Some(live) = slot.as_mut() else { return };
        let began = Instant::now();
        let mut fx = live.run.start(now_ms());
        fx.events.splice(0..0, first_events);
        let _ = self.apply(id, &dep, &mut slot, fx, began);
    }

    /// Applies a run's effects: records them in one transaction, then takes lists off the board and puts
    /// new ones on, sends events, wakes gated tasks, and lets a finished deployment go. Lists beyond
    /// the first `lists_per_write` are stored and handed out in further transactions, each twice the
    /// one before. On a storage failure the run is dropped and rebuilt from the database at the next
    /// tick. Returns how many task lists it published. `began` is when the run started computing `fx`:
    /// a large publication logs its parts' times from there.
    fn apply(
        &self,
        id: u64,
        dep: &Deployment,
        slot: &mut Option<Live>,
        mut fx: Effects,
        began: Instant,
    ) -> Result<u64, StoreError> {
        let Some(live) = slot.as_mut() else {
            return Ok(0);
        };
        if fx.is_empty() {
            return Ok(0);
        }
        let computed = Instant::now();
        self.files.seal_lists(&mut fx.publish);
        let published = fx.publish.len() as u64;
        // A large phase goes out in slices, each stored then put on the board: its first nodes start
        // while the rest are written. The first slice, `lists_per_write` lists, goes with the step's
        // state and events; each next one is twice the one before, so a phase of n lists takes about
        // log2(n / lists_per_write) more transactions. A controller that stops between two gives the
        // nodes left their lists when it restores the run.
        let mut slice = self.lists_per_write.load(Ordering::Relaxed).max(1);
        let later = match fx.finish {
            Some(_) => Vec::new(),
            None => fx.publish.split_off(fx.publish.len().min(slice)),
        };
        let mut lists: Vec<TaskList> = fx
            .publish
            .drain(..)
            .chain(fx.stop_orders.drain(..))
            .collect();
        let sealed = Instant::now();
        let stated = match self.record(id, live, &mut lists, &fx) {
            Ok(stated) => stated,
            Err(e) => return Err(self.let_go(id, dep, slot, e)),
        };
        let recorded = Instant::now();
        live.measure(&fx);
        for node in &fx.withdraw {
            self.board.withdraw(*node, id);
        }
        // Handing lists out tells the other controllers; a step that only takes lists off tells them here.
        let told = !lists.is_empty();
        self.hand_out(id, live, lists);
        for list in fx.repost.drain(..) {
            self.board.publish(list);
        }
        if !told && (fx.finish.is_some() || !fx.withdraw.is_empty()) {
            // Polls held by other controllers sharing the database look again.
            self.store.notify(&crate::store::Notice::Board);
        }
        self.events.send(id, &fx.live);
        self.events.send(id, &fx.events);
        if fx.waits_changed {
            dep.waits.send_modify(|v| *v = v.wrapping_add(1));
        }
        let first_out = Instant::now();
        let mut later = later.into_iter();
        loop {
            slice = slice.saturating_mul(2);
            let mut lists: Vec<TaskList> = later.by_ref().take(slice).collect();
            if lists.is_empty() {
                break;
            }
            let stored = self
                .store
                .record_progress(id, &mut Progress::lists_only(&mut lists));
            if let Err(e) = stored {
                return Err(self.let_go(id, dep, slot, e));
            }
            self.hand_out(id, live, lists);
        }
        if published >= TIMED_PUBLICATION {
            let ms = |from: Instant, to: Instant| to.duration_since(from).as_secs_f64() * 1000.0;
            let done = Instant::now();
            tracing::info!(
                deployment = id,
                lists = published,
                computed_ms = ms(began, computed),
                sealed_ms = ms(computed, sealed),
                state_ms = ms(sealed, stated),
                stored_ms = ms(stated, recorded),
                first_out_ms = ms(began, first_out),
                all_out_ms = ms(began, done),
                "lists published"
            );
        }
        if let Some(f) = &fx.finish {
            self.events.close(id);
            *slot = None;
            self.forget(id);
            tracing::info!(
                deployment = id,
                status = f.status.as_str(),
                succeeded = f.succeeded.len(),
                failed = f.failed.len(),
                "deployment finished"
            );
        }
        Ok(published)
    }

    /// Lets a deployment go after a storage failure: on a fenced write (another controller sequences
    /// now) every deployment here, otherwise this one, rebuilt from the database at the next tick.
    fn let_go(
        &self,
        id: u64,
        dep: &Deployment,
        slot: &mut Option<Live>,
        e: StoreError,
    ) -> StoreError {
        *slot = None;
        if let StoreError::Fenced(why) = &e {
            tracing::warn!(deployment = id, reason = %why, "another controller sequences now; letting every deployment go");
            self.step_down();
        } else {
            tracing::error!(deployment = id, error = %e, "cannot record deployment progress; rebuilding it from the database");
            self.forget(id);
            self.needs_resume.store(true, Ordering::Release);
        }
        dep.waits.send_modify(|v| *v = v.wrapping_add(1));
        e
    }

    /// Puts stored lists on the board, one copy of each shared by the run and the board, and tells
    /// the other controllers sharing the database.
    fn hand_out(&self, id: u64, live: &mut Live, lists: Vec<TaskList>) {
        if lists.is_empty() {
            return;
        }
        let lists: Vec<Arc<TaskList>> = lists.into_iter().map(Arc::new).collect();
        if let Err(e) = live.run.published(&lists) {
            tracing::error!(deployment = id, error = %e, "the store gave a revision that does not grow");
        }
        let fresh = lists.iter().filter(|l| !l.cancel).count() as u64;
        self.published.fetch_add(fresh, Ordering::Relaxed);
        for list in lists {
            self.board.publish(list);
        }
        self.store.notify(&crate::store::Notice::Board);
    }

    /// Records one step's effects in one transaction; returns when the state to store was written out.
    fn record(
        &self,
        id: u64,
        live: &Live,
        lists: &mut [TaskList],
        fx: &Effects,
    ) -> Result<Instant, StoreError> {
        let state = if fx.save_state || fx.finish.is_some() {
            Some(live.state_ref().compressed()?)
        } else {
            None
        };
        let stated = Instant::now();
        let rows = match &fx.finish {
            Some(f) => live.task_states(&f.succeeded_tasks),
            None => Vec::new(),
        };
        // Each failed node with why, for its record.
        let failed: Vec<(u64, String)> = fx.finish.as_ref().map_or_else(Vec::new, |f| {
            f.failed
                .iter()
                .map(|n| (*n, f.reasons.get(n).cloned().unwrap_or_default()))
                .collect()
        });
        if lists.is_empty() && state.is_none() && fx.events.is_empty() && rows.is_empty() {
            return Ok(stated);
        }
        // Nodes whose outcome became final in this step (the end covers them all at once).
        let (ended_ok, ended_failed) = match fx.finish {
            None => nodes_ended(&live.run, &fx.events),
            Some(_) => (Vec::new(), Vec::new()),
        };
        let began = Instant::now();
        self.store.record_progress(
            id,
            &mut Progress {
                lists,
                state: state.as_ref(),
                events: &fx.events,
                task_rows: &rows,
                end: fx.finish.as_ref().map(|f| Ending {
                    status: f.status,
                    succeeded: &f.succeeded,
                    failed: &failed,
                    untouched: &f.untouched,
                    deploys: live.deploys,
                }),
                nodes_ended: NodesEnded {
                    succeeded: &ended_ok,
                    failed: &ended_failed,
                    deploys: live.deploys,
                },
            },
        )?;
        crate::metrics::metrics().transaction("progress", began.elapsed());
        Ok(stated)
    }

    /// The orchestration state of a deployment running here, as it is in memory now (the stored one
    /// catches up only when lists are published or the deployment finishes); `None` when not running.
    pub fn live_state(&self, id: u64) -> Option<EngineState> {
        let dep = self.deployment(id)?;
        let slot = dep.lock();
        slot.as_ref().map(Live::engine_state)
    }

    /// Stops a running deployment for the operator `by`: nothing new starts, every node still running
    /// its list is sent a signed order to stop (its running task terminated, the rest not started), and
    /// the deployment ends `cancelled`, with who cancelled it in its events and report. Nodes that had
    /// finished every phase keep their success (their pending roles become deployed roles).
    pub fn cancel(&self, deployment_id: u64, by: &str) -> Result<DeploymentRecord, StoreError> {
        let not_running = || -> Result<DeploymentRecord, StoreError> {
            let dep = self.store.get_deployment(deployment_id)?;
            Err(StoreError::Conflict(format!(
                "deployment {deployment_id} is not running (it is {})",
                dep.status.as_str()
            )))
        };
        if !self.is_sequencing() {
            // The controller that sequences cancels it (it looks for such requests when told, and
            // every few seconds).
            let mut record = self.store.request_cancel(deployment_id, by)?;
            self.store.notify(&crate::store::Notice::Commands);
            tracing::info!(
                deployment = deployment_id,
                by,
                "cancel requested from the controller that sequences"
            );
            // Answered once it is cancelled, or as it is after a while (then it is cancelled as soon
            // as a controller sequences it).
            let deadline = std::time::Instant::now() + CANCEL_WAIT;
            while record.status == DeploymentStatus::Running && std::time::Instant::now() < deadline
            {
                std::thread::sleep(std::time::Duration::from_millis(50));
                record = self.store.get_deployment(deployment_id)?;
            }
            return Ok(record);
        }
        if self.deployment(deployment_id).is_none() {
            // Recorded by another controller and not taken on yet.
            self.resume()?;
        }
        let Some(dep) = self.deployment(deployment_id) else {
            return not_running();
        };
        let mut slot = dep.lock();
        let Some(live) = slot.as_mut() else {
            drop(slot);
            return not_running();
        };
        let began = Instant::now();
        let fx = live
            .run
            .cancel(by)
            .map_err(|e| StoreError::Conflict(format!("deployment {deployment_id}: {e}")))?;
        self.apply(deployment_id, &dep, &mut slot, fx, began)?;
        drop(slot);
        tracing::info!(deployment = deployment_id, by, "deployment cancelled");
        self.store.get_deployment(deployment_id)
    }

    /// Loads running deployments that are not in memory from the store (after a start, or to rebuild one
    /// after a storage failure). Blocking.
    pub fn resume(&self) -> Result<usize, StoreError> {
        if !self.is_sequencing() {
            return Ok(0);
        }
        // One at a time: two would both take the same deployment on.
        let _one = self.resuming.lock().unwrap_or_else(|p| p.into_inner());
        self.needs_resume.store(false, Ordering::Release);
        let ids = self.store.running_ids()?;
        if ids.iter().all(|id| self.is_running(*id)) {
            return Ok(0);
        }
        let running = self.store.running_deployments()?;
        let mut count = 0;
        for record in running {
            let id = record.id;
            if self.is_running(id) {
                continue;
            }
            let state: EngineState = match serde_json::from_value(record.state.clone()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(deployment = id, error = %e, "cannot read a running deployment's state; leaving it");
                    continue;
                }
            };
            let nodes = super::plan::deployment_nodes(
                self.store.as_ref(),
                record.cluster_id,
                &record.node_ids,
            )?;
            let noop = record
                .options
                .get("noop")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let mut resolved = match self.resolve_stored(id, &state) {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(deployment = id, error = %e, "cannot resolve a running deployment again; leaving it");
                    continue;
                }
            };
            if let Some(master) = state.master {
                super::master::reassign(&mut resolved, master);
            }
            let plan = run_plan(id, &nodes, &resolved, noop, state.strategy.is_some());
            let states = std::mem::take(&mut resolved.states);
            drop((nodes, resolved));
            let states = TaskStates::store(states, self.store.as_ref());
            crate::memory::give_back();
            let states = states?;
            let lists = self.store.published_lists(id)?;
            let results = self.store.deployment_results(id)?;
            let began = Instant::now();
            let (run, fx) = Run::restore(
                Arc::new(plan),
                state.run.clone(),
                &lists,
                &results,
                now_ms(),
            );
            count += 1;
            let dep = Arc::new(Deployment::new());
            let mut slot = dep.lock();
            *slot = Some(Live::new(run, &record, &state, states));
            self.events.open(id);
            self.running
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, dep.clone());
            tracing::info!(deployment = id, "resumed deployment");
            let _ = self.apply(id, &dep, &mut slot, fx, began);
        }
        Ok(count)
    }

    /// Whether `node_id` holds this result's list now, in a deployment running here (the fast path of
    /// the ownership check: false only means "not known here", and the store is asked).
    pub fn owns(&self, node_id: u64, r: &TaskResult) -> bool {
        self.deployment(r.deployment_id)
            .is_some_and(|dep| dep.lock().as_ref().is_some_and(|l| l.run.owns(node_id, r)))
    }

    /// The graph type of the phase whose list `node_id` holds at this result's revision, when its
    /// deployment runs here (what its task duration is labelled by).
    pub fn graph_type_of(&self, node_id: u64, r: &TaskResult) -> Option<String> {
        let dep = self.deployment(r.deployment_id)?;
        let slot = dep.lock();
        slot.as_ref()?
            .run
            .graph_type_of(node_id, r.revision)
            .map(str::to_string)
    }

    /// Whether a deployment is running here.
    pub fn is_running(&self, deployment_id: u64) -> bool {
        self.deployment(deployment_id).is_some()
    }

    /// Records events of a running deployment (refusals a node caused) and sends them to its watchers;
    /// a deployment that is not running is left as it is (its record is final).
    pub fn note_events(
        &self,
        deployment_id: u64,
        events: &[DeploymentEvent],
    ) -> Result<(), StoreError> {
        let Some(dep) = self.deployment(deployment_id) else {
            if !self.is_sequencing() && self.store.running_ids()?.contains(&deployment_id) {
                // Sequenced by another controller: its report reads them from the database.
                self.store.append_events(deployment_id, events)?;
            }
            return Ok(());
        };
        let slot = dep.lock();
        if slot.is_none() {
            return Ok(());
        }
        self.store.append_events(deployment_id, events)?;
        self.events.send(deployment_id, events);
        Ok(())
    }

    /// Folds stored results of many nodes in (blocking): each deployment's run takes them node by node,
    /// and what they do is recorded as one step (one transaction) per deployment. Returns how many task
    /// lists this published.
    pub fn on_result_batches(&self, batches: &[(u64, Vec<TaskResult>)]) -> u64 {
        let mut by_deployment: std::collections::BTreeMap<u64, Vec<(u64, Vec<TaskResult>)>> =
            Default::default();
        for (node, results) in batches {
            for r in results {
                let of_node = by_deployment.entry(r.deployment_id).or_default();
                match of_node.last_mut() {
                    Some((n, rs)) if n == node => rs.push(r.clone()),
                    _ => of_node.push((*node, vec![r.clone()])),
                }
            }
        }
        let mut published = 0;
        for (id, nodes) in by_deployment {
            let Some(dep) = self.deployment(id) else {
                continue;
            };
            let mut slot = dep.lock();
            let Some(live) = slot.as_mut() else {
                continue;
            };
            let began = Instant::now();
            let fx = live.run.results_of(now_ms(), &nodes);
            published += self.apply(id, &dep, &mut slot, fx, began).unwrap_or(0);
        }
        published
    }

    /// Times out phases past their deadline, and rebuilds deployments after a storage failure (blocking;
    /// called every second).
    pub fn tick(&self) {
        if !self.is_sequencing() {
            return;
        }
        if self.needs_resume.load(Ordering::Acquire) {
            if let Err(e) = self.resume() {
                tracing::error!(error = %e, "cannot resume deployments");
                self.needs_resume.store(true, Ordering::Release);
            }
        }
        let now = now_ms();
        let running: Vec<(u64, Arc<Deployment>)> = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(id, dep)| (*id, dep.clone()))
            .collect();
        for (id, dep) in running {
            let mut slot = dep.lock();
            let Some(live) = slot.as_mut() else {
                continue;
            };
            let began = Instant::now();
            let fx = live.run.tick(now);
            let _ = self.apply(id, &dep, &mut slot, fx, began);
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
        let dep = self.deployment(deployment_id)?;
        let mut slot = dep.lock();
        let g = slot.as_mut()?.run.gate(node_id, task)?;
        Some((g.ready, g.blocked, g.waiting_for))
    }

    /// A watch on a running deployment's wait state: it changes whenever a gated task's answer may have
    /// (a task finished, a node settled, a phase began, the deployment ended). `None` when not running.
    pub fn gate_watch(&self, deployment_id: u64) -> Option<watch::Receiver<u64>> {
        self.deployment(deployment_id).map(|d| d.waits.subscribe())
    }

    /// Starts sequencing (this controller took the sequencing lease); [`Engine::resume`] then takes every
    /// running deployment on from the database, as after a restart.
    pub fn start_sequencing(&self) {
        self.sequencing.store(true, Ordering::Release);
    }

    /// Stops sequencing (the lease passed to another controller): every run here is let go, nothing
    /// more is recorded for them; the lists stay on the board for the polls held here.
    pub fn step_down(&self) {
        self.sequencing.store(false, Ordering::Release);
        let gone: Vec<(u64, Arc<Deployment>)> = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .collect();
        for (id, dep) in gone {
            self.events.close(id);
            // Gated tasks waiting here look again (and are answered by the new sequencer).
            dep.waits.send_modify(|v| *v = v.wrapping_add(1));
        }
    }

    /// Cancels the running deployments operators asked to cancel at other controllers. Blocking.
    pub fn cancel_requested(&self) -> Result<(), StoreError> {
        if !self.is_sequencing() {
            return Ok(());
        }
        for (id, by) in self.store.cancel_requests()? {
            match self.cancel(id, &by) {
                Ok(_) | Err(StoreError::Conflict(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Folds in these nodes' results that another controller stored, as one step. Blocking.
    pub fn fold_stored(&self, deployment_id: u64, node_ids: &[u64]) -> Result<u64, StoreError> {
        if !self.is_running(deployment_id) {
            return Ok(0);
        }
        let batches = self.store.results_of_nodes(deployment_id, node_ids)?;
        Ok(self.on_result_batches(&batches))
    }

    /// Folds in every stored result of the deployments running here (after notices may have been
    /// missed). Blocking.
    pub fn fold_all_stored(&self) -> Result<(), StoreError> {
        let ids: Vec<u64> = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .copied()
            .collect();
        for id in ids {
            let mut by_node: std::collections::BTreeMap<u64, Vec<TaskResult>> = Default::default();
            for (node, r) in self.store.deployment_results(id)? {
                by_node.entry(node).or_default().push(r);
            }
            let batches: Vec<(u64, Vec<TaskResult>)> = by_node.into_iter().collect();
            self.on_result_batches(&batches);
        }
        Ok(())
    }
}

/// The nodes a step's events end: those whose status became `success` (every phase done) or
/// `failure`, the latter with why.
fn nodes_ended(run: &Run, events: &[DeploymentEvent]) -> (Vec<u64>, Vec<(u64, String)>) {
    let (mut succeeded, mut failed) = (Vec::new(), Vec::new());
    for e in events {
        let DeploymentEvent::NodeStatusChanged { node, to, .. } = e else {
            continue;
        };
        let Some(id) = run.id_of(node) else {
            continue;
        };
        match to {
            NodeStatus::Success => succeeded.push(id),
            NodeStatus::Failure => failed.push((id, run.failure_reason(id).unwrap_or_default())),
            _ => {}
        }
    }
    (succeeded, failed)
}
