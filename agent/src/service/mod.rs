//! The long-running agent (`plinth-agent run`): collect facts, end what a killed run left running, register,
//! resume an interrupted list, then
//! long-poll for signed task lists, verify them, persist their revision and run them, while the sender
//! uploads results and heartbeats flow; stop cleanly on SIGTERM/SIGINT.
//!
//! | module | owns |
//! |---|---|
//! | [`registration`] | registering, and registering again after a 401 |
//! | [`adapters`] | the controller as the runner's gate and the sender's sink |
//! | [`heartbeat`] | periodic heartbeats |
//! | [`systemd`] | readiness, status lines, watchdog |
//! | [`signals`] | SIGTERM/SIGINT to the stop trigger, SIGHUP to a reload request |
//! | [`reload`] | reloading the configuration on SIGHUP |

pub mod adapters;
pub mod heartbeat;
pub mod registration;
pub mod reload;
pub mod signals;
pub mod systemd;

use crate::cmdline::KernelCmdline;
use crate::config::Settings;
use crate::executor::Services;
use crate::facts;
use crate::identity::{IdentityError, NodeIdentity};
use crate::journal::{Journal, JournalError, SharedJournal};
use crate::metrics::AgentMetrics;
use crate::runner::{RunEnd, Runner, RunnerSettings};
use crate::sender::Sender;
use crate::shutdown::{self, Shutdown};
use crate::tracking::Tracker;
use crate::transport::{self, Backoff, Controller, PollAnswer, TransportError};
use crate::verify::keyring::Keyring;
use crate::verify::{Refused, StateError, Verifier};
use adapters::{ControllerFiles, ControllerGate, ControllerSink};
use plinth_common::signing::VerifyError;
use plinth_common::wire::{Refusal, TaskList};
use registration::Registrar;
use reload::ReloadSource;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use systemd::Systemd;
use tokio::sync::watch;

/// The journal's directory inside the state directory.
pub const JOURNAL_DIR: &str = "journal";
/// How long the agent tries to send waiting results when it stops.
pub const FINAL_FLUSH: Duration = Duration::from_secs(3);
/// The shortest time between two polls, so a controller that answers 204 at once is not hammered.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Why the agent stopped with an error. See [`ServiceError::exit_code`].
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The node key cannot be loaded or made.
    #[error(transparent)]
    Identity(#[from] IdentityError),
    /// The verifier's state cannot be read or written.
    #[error(transparent)]
    State(#[from] StateError),
    /// The journal cannot be opened or written.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The TLS client cannot be set up.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The signal handlers cannot be installed.
    #[error("cannot install signal handlers: {0}")]
    Signals(std::io::Error),
}

impl ServiceError {
    /// The process exit code: 3 for state directory problems (key, revision, journal), 4 for TLS setup,
    /// 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            ServiceError::Identity(_) | ServiceError::State(_) | ServiceError::Journal(_) => 3,
            ServiceError::Transport(_) => 4,
            ServiceError::Signals(_) => 1,
        }
    }
}

/// Everything the running agent shares between its parts.
struct Agent {
    settings: Settings,
    controller: Controller,
    registrar: Arc<Registrar>,
    journal: SharedJournal,
    verifier: Verifier,
    systemd: Systemd,
    shutdown: Shutdown,
    /// Settings as reloads change them.
    live: watch::Receiver<Settings>,
    /// Holds the commands tasks run.
    tracker: Arc<Tracker>,
}

/// Runs the agent until SIGTERM/SIGINT, reloading the configuration from `source` on SIGHUP. Returns
/// `Ok` on a clean stop.
pub async fn run(
    settings: Settings,
    cmdline: KernelCmdline,
    source: ReloadSource,
) -> Result<(), ServiceError> {
    let identity = NodeIdentity::load_or_create(&settings.state_dir)?;
    let controllers: Vec<&str> = settings.controllers.iter().map(|u| u.as_str()).collect();
    tracing::info!(
        node_key = identity.fingerprint(),
        controllers = %controllers.join(","),
        state_dir = %settings.state_dir.display(),
        version = crate::AGENT_VERSION,
        "plinth-agent starting"
    );
    for warning in &cmdline.warnings {
        tracing::warn!("{warning}");
    }
    let keys = Arc::new(Keyring::open(&settings.state_dir, settings.controller_key)?);
    let controller = Controller::new(&settings, &identity, &keys.tls_pins())?;
    let (trigger, shutdown) = shutdown::channel();
    let reload_requests = signals::install(trigger).map_err(ServiceError::Signals)?;
    let systemd = Systemd::from_env();
    tokio::spawn(systemd.watchdog(shutdown.clone()));
    systemd.status("collecting facts");

    let sources = facts::Sources::live(cmdline);
    let facts = tokio::task::spawn_blocking(move || facts::collect(&sources))
        .await
        .unwrap_or_default();
    tracing::info!(
        collected_in_us = facts.collected_in_us.unwrap_or(0),
        disks = facts.disks.len(),
        nics = facts.nics.len(),
        "facts collected"
    );
    let registrar = Arc::new(Registrar::new(
        controller.clone(),
        reload::registration(&settings, facts),
    ));
    let (live_tx, live) = watch::channel(settings.clone());
    tokio::spawn(reload::run(
        reload_requests,
        source,
        live_tx,
        registrar.clone(),
        systemd,
        shutdown.clone(),
    ));

    let verifier = Verifier::open(&settings.state_dir, keys, identity.fingerprint())?;
    let journal = Journal::open(&settings.state_dir.join(JOURNAL_DIR))?;
    if journal.skipped_lines() > 0 {
        tracing::warn!(
            lines = journal.skipped_lines(),
            "journal had unreadable lines (torn by a crash); they were dropped"
        );
    }
    let metrics = AgentMetrics::new();
    let journal = SharedJournal::with_metrics(journal, metrics.clone());
    crate::metrics::start_from(
        &metrics,
        verifier.last_revision(),
        &settings.state_dir,
        &journal,
    );
    // Read at start only: a reload does not move it.
    let textfile = settings.metrics_textfile.clone();
    if let Some(path) = &textfile {
        tracing::info!(path = %path.display(), "writing the agent's metrics for node_exporter's textfile collector");
        tokio::spawn(metrics.clone().write_until(path.clone(), shutdown.clone()));
    }
    // What a killed agent left running ends before anything resumes or starts.
    let tracker = Arc::new(Tracker::detect(&settings.state_dir));
    systemd.status("ending what the last run left running");
    let swept = tracker.sweep(settings.kill_grace).await;
    tracing::info!(
        containment = tracker.containment().name(),
        commands_left_by_the_last_run = swept.len(),
        processes_ended = swept.iter().map(|s| s.ended).sum::<usize>(),
        "task commands are held"
    );
    let mut agent = Agent {
        settings,
        controller,
        registrar,
        journal,
        verifier,
        systemd,
        shutdown,
        live,
        tracker,
    };
    let pending = agent.pending_list()?;
    agent
        .journal
        .with(|j| j.set_active_revision(pending.as_ref().map(|l| l.revision)));

    let sink = Arc::new(ControllerSink {
        controller: agent.controller.clone(),
        registrar: agent.registrar.clone(),
    });
    let sender = Sender::new(
        agent.journal.clone(),
        sink.clone(),
        agent.settings.backoff_min,
        agent.settings.backoff_max,
    );
    tokio::spawn(sender.run(agent.shutdown.clone()));
    tokio::spawn(heartbeat::run(
        agent.controller.clone(),
        agent.registrar.clone(),
        agent.live.clone(),
        agent.shutdown.clone(),
    ));

    agent.systemd.status("registering");
    let status = match agent.registrar.register().await {
        Ok(ack) => {
            format!("registered as node {} ({:?})", ack.node_id, ack.admission).to_lowercase()
        }
        Err(e) => {
            tracing::warn!(error = %e, "registration failed; will retry");
            "controller unreachable; retrying".to_string()
        }
    };
    agent.systemd.ready(&status);

    let result = agent.main_loop(pending).await;

    agent.systemd.stopping();
    let flush = Sender::new(
        agent.journal.clone(),
        sink,
        agent.settings.backoff_min,
        agent.settings.backoff_max,
    );
    let unsent = flush.flush(FINAL_FLUSH).await;
    if let Some(path) = &textfile {
        // What the final flush changed (the backlog).
        if let Err(e) = metrics.write(path) {
            tracing::warn!(error = %e, "cannot write the agent's metrics");
        }
    }
    tracing::info!(unsent_results = unsent, "plinth-agent stopped");
    result
}

impl Agent {
    /// The stored list to resume, if any. One that no longer verifies (say, the pinned key changed) is
    /// reported and given up; a state file that cannot be read stops the agent.
    fn pending_list(&mut self) -> Result<Option<TaskList>, ServiceError> {
        match self.verifier.pending() {
            Ok(list) => Ok(list),
            Err(Refused::Storage { source, .. }) => Err(ServiceError::State(source)),
            Err(refused) => {
                tracing::error!(error = %refused, "the stored task list cannot be resumed; giving it up");
                self.report_refusal(&refused);
                self.verifier.abandon_pending()?;
                Ok(None)
            }
        }
    }

    async fn main_loop(&mut self, pending: Option<TaskList>) -> Result<(), ServiceError> {
        if let Some(list) = pending {
            tracing::info!(
                revision = list.revision,
                deployment = list.deployment_id,
                "resuming the interrupted task list"
            );
            if !self.run_lists(list).await? {
                return Ok(());
            }
        }
        let mut backoff = Backoff::new(self.settings.backoff_min, self.settings.backoff_max);
        let mut idle_status_sent = false;
        while !self.shutdown.is_triggered() {
            if self.live.has_changed().unwrap_or(false) {
                self.settings = self.live.borrow_and_update().clone();
                backoff = Backoff::new(self.settings.backoff_min, self.settings.backoff_max);
            }
            if !idle_status_sent {
                self.systemd.status(&format!(
                    "waiting for work (last revision {})",
                    self.verifier.last_revision()
                ));
                idle_status_sent = true;
            }
            let nonce = transport::fresh_nonce()?;
            let after = self.verifier.last_revision();
            let asked = Instant::now();
            let seen = self.registrar.epoch();
            let answer = tokio::select! {
                a = self.controller.poll(&nonce, after, self.settings.poll_wait) => a,
                _ = self.shutdown.wait() => break,
            };
            if let Ok((_, notice)) = &answer {
                self.verifier.checker().take_key_notice(
                    notice.announcement.as_deref(),
                    notice.signer.as_deref(),
                    &nonce,
                    now_secs(),
                );
            }
            let pause = match answer.map(|(answer, _)| answer) {
                Ok(PollAnswer::NoWork) => {
                    backoff.reset();
                    MIN_POLL_INTERVAL.saturating_sub(asked.elapsed())
                }
                Ok(PollAnswer::List(envelope)) => {
                    backoff.reset();
                    let now = now_secs();
                    match self.verifier.accept(&envelope, &nonce, now) {
                        Ok(list) => {
                            self.journal.metrics().list_accepted(list.revision, now);
                            idle_status_sent = false;
                            if !self.run_lists(list).await? {
                                break;
                            }
                            Duration::ZERO
                        }
                        Err(refused) => {
                            tracing::error!(error = %refused, claimed_revision = ?refused.claimed_revision(), "task list refused; nothing in it runs");
                            self.report_refusal(&refused);
                            backoff.next_delay()
                        }
                    }
                }
                Err(TransportError::TooLarge { size, .. }) => {
                    // An oversized answer is a list the agent refuses without reading it.
                    let refused = Refused::Invalid {
                        error: VerifyError::TooLarge(size),
                        claimed_revision: None,
                    };
                    tracing::error!(error = %refused, "task list refused; nothing in it runs");
                    self.report_refusal(&refused);
                    backoff.next_delay()
                }
                Err(TransportError::Unauthorized) => {
                    match self.registrar.reregister_after(seen).await {
                        Ok(()) => Duration::ZERO,
                        Err(e) => {
                            let delay = backoff.next_delay();
                            tracing::warn!(error = %e, retry_in_ms = delay.as_millis() as u64, "registration failed");
                            delay
                        }
                    }
                }
                Err(e) => {
                    let delay = backoff.next_delay();
                    tracing::warn!(error = %e, retry_in_ms = delay.as_millis() as u64, "poll failed");
                    delay
                }
            };
            if !pause.is_zero() && !self.shutdown.sleep(pause).await {
                break;
            }
        }
        Ok(())
    }

    /// Runs an accepted list, and the lists that supersede it while it runs; returns false when the
    /// agent is stopping.
    async fn run_lists(&mut self, list: TaskList) -> Result<bool, ServiceError> {
        let mut next = Some(list);
        while let Some(list) = next.take() {
            match self.run_list(&list).await? {
                After::Stop => return Ok(false),
                After::Poll => {}
                After::Run(newer) => next = Some(newer),
            }
        }
        Ok(true)
    }

    /// Runs an accepted list. A newer signed list that arrives meanwhile supersedes it (the controller
    /// moved on: the deployment was cancelled, or its phase ended without this node): the running task
    /// is ended and nothing more of this list starts; an order to stop (`cancel`) runs nothing in its
    /// place, any other list runs next.
    async fn run_list(&mut self, list: &TaskList) -> Result<After, ServiceError> {
        self.systemd.status(&format!(
            "running revision {} of deployment {} ({} tasks)",
            list.revision,
            list.deployment_id,
            list.tasks.len()
        ));
        tracing::info!(revision = list.revision, deployment = list.deployment_id, phase = %list.phase, tasks = list.tasks.len(), "running task list");
        let gate = ControllerGate {
            controller: self.controller.clone(),
            registrar: self.registrar.clone(),
            wait: self.settings.poll_wait,
            verifier: &self.verifier,
        };
        // While the list runs, a second long poll waits for a signed order to stop it.
        let (list_trigger, list_stop) = shutdown::channel();
        let list_trigger = Arc::new(list_trigger);
        let forward = {
            let (global, trigger) = (self.shutdown.clone(), list_trigger.clone());
            tokio::spawn(async move {
                global.wait().await;
                trigger.trigger();
            })
        };
        let watcher = tokio::spawn(watch_for_cancel(
            CancelWatch {
                controller: self.controller.clone(),
                registrar: self.registrar.clone(),
                checker: self.verifier.checker(),
                wait: self.settings.poll_wait,
                backoff: Backoff::new(self.settings.backoff_min, self.settings.backoff_max),
                revision: list.revision,
                deployment_id: list.deployment_id,
            },
            list_trigger.clone(),
            self.shutdown.clone(),
        ));
        let runner = Runner::new(
            self.journal.clone(),
            &gate,
            RunnerSettings {
                work_dir: self.settings.work_dir.clone(),
                kill_grace: self.settings.kill_grace,
                backoff_min: self.settings.backoff_min,
                backoff_max: self.settings.backoff_max,
                services: Arc::new(self.services()),
            },
            list_stop,
        );
        let end = runner.run(list).await;
        forward.abort();
        let order = if watcher.is_finished() {
            watcher.await.ok().flatten()
        } else {
            watcher.abort();
            None
        };
        let end = end?;
        if let Some((envelope, nonce)) = order.filter(|_| !self.shutdown.is_triggered()) {
            self.verifier.mark_finished(list.revision)?;
            self.journal.with(|j| j.set_active_revision(None));
            let now = now_secs();
            let accepted = self.verifier.accept(&envelope, &nonce, now);
            if let Ok(newer) = &accepted {
                self.journal.metrics().list_accepted(newer.revision, now);
            }
            return match accepted {
                Ok(newer) if newer.cancel => {
                    tracing::warn!(
                        revision = list.revision,
                        deployment = list.deployment_id,
                        "the controller cancelled the deployment: the running task was ended, the rest not started"
                    );
                    self.verifier.mark_finished(newer.revision)?;
                    Ok(After::Poll)
                }
                Ok(newer) => {
                    tracing::warn!(
                        revision = list.revision,
                        newer = newer.revision,
                        "a newer list superseded the running one: the controller moved on"
                    );
                    Ok(After::Run(newer))
                }
                Err(refused) => {
                    tracing::error!(error = %refused, "the list that stopped the running one cannot be stored");
                    Ok(After::Poll)
                }
            };
        }
        match end {
            RunEnd::Completed { failed_task } => {
                self.verifier.mark_finished(list.revision)?;
                self.journal.with(|j| j.set_active_revision(None));
                match failed_task {
                    Some(task) => {
                        tracing::warn!(revision = list.revision, task = %task, "task list ended: a task failed")
                    }
                    None => tracing::info!(
                        revision = list.revision,
                        "task list ended: every task succeeded"
                    ),
                }
                if crate::executor::move_to_bootstrap::take_reboot_request(&self.settings.state_dir)
                {
                    self.reboot_after_list().await;
                }
                Ok(After::Poll)
            }
            RunEnd::Stopped => {
                tracing::info!(
                    revision = list.revision,
                    "stopping in the middle of the task list; it resumes on the next start"
                );
                Ok(After::Stop)
            }
        }
    }

    /// Reboots the node after a list whose `move_to_bootstrap` task asked for it, once the list's
    /// results are acknowledged (a minute at most; they stay journaled otherwise, though the discovery
    /// image the node boots starts with a new journal).
    async fn reboot_after_list(&self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while self.journal.with(|j| j.unacked_count()) > 0 && std::time::Instant::now() < deadline {
            if !self.shutdown.sleep(Duration::from_millis(200)).await {
                return;
            }
        }
        let Some((program, args)) = self.settings.reboot.command.split_first() else {
            tracing::error!("the node should reboot into its discovery image, but no reboot command is configured");
            return;
        };
        tracing::warn!(command = ?self.settings.reboot.command, "rebooting into the discovery image, as the list's move_to_bootstrap task asked");
        match tokio::process::Command::new(program)
            .args(args)
            .status()
            .await
        {
            Ok(status) if status.success() => {}
            Ok(status) => tracing::error!(%status, "the reboot command failed"),
            Err(e) => tracing::error!(error = %e, "cannot run the reboot command"),
        }
    }

    /// What executors borrow: the state directory, programs, the controller's files, the journal.
    fn services(&self) -> Services {
        let controller = Arc::new(ControllerFiles {
            controller: self.controller.clone(),
            registrar: self.registrar.clone(),
            backoff: Backoff::new(self.settings.backoff_min, self.settings.backoff_max),
        });
        Services {
            state_dir: self.settings.state_dir.clone(),
            puppet: self.settings.puppet.clone(),
            reboot: self.settings.reboot.clone(),
            files: controller.clone(),
            journal: Some(self.journal.clone()),
            tracker: self.tracker.clone(),
            node: controller,
            install: Some(crate::executor::services::InstallSource {
                controllers: self
                    .settings
                    .controllers
                    .iter()
                    .map(|u| u.as_str().trim_end_matches('/').to_string())
                    .collect(),
                public_key: plinth_common::signing::public_key_to_text(
                    &self.settings.controller_key,
                ),
                trust: self.settings.trust.clone(),
                binary: std::env::current_exe().unwrap_or_else(|_| "/usr/bin/plinth-agent".into()),
            }),
        }
    }

    /// Reports a refused list to the controller in the background (a few tries).
    fn report_refusal(&self, refused: &Refused) {
        self.journal.metrics().list_refused(refused);
        let refusal = Refusal {
            reason: refused.to_string(),
            claimed_revision: refused.claimed_revision(),
        };
        let controller = self.controller.clone();
        let registrar = self.registrar.clone();
        let mut backoff = Backoff::new(self.settings.backoff_min, self.settings.backoff_max);
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            for _ in 0..5 {
                match registrar.call(|| controller.send_refusal(&refusal)).await {
                    Ok(()) => return,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot report the refusal");
                        if !shutdown.sleep(backoff.next_delay()).await {
                            return;
                        }
                    }
                }
            }
        });
    }
}

/// What the watch for an order to stop needs.
struct CancelWatch {
    controller: Controller,
    registrar: Arc<Registrar>,
    checker: crate::verify::ListChecker,
    wait: Duration,
    backoff: Backoff,
    revision: u64,
    deployment_id: u64,
}

/// What the agent does after a list.
enum After {
    /// It is stopping.
    Stop,
    /// Poll for the next list.
    Poll,
    /// Run this list, which superseded the last.
    Run(TaskList),
}

/// Long-polls while a list runs; when a newer signed list arrives (an order to stop this list's
/// deployment, or the next work: the controller moved on), pulls the list's stop trigger and returns it
/// (its envelope and the poll's nonce) so it can be accepted. Ends with the agent.
async fn watch_for_cancel(
    mut w: CancelWatch,
    trigger: Arc<shutdown::Trigger>,
    stop: Shutdown,
) -> Option<(Vec<u8>, String)> {
    while !stop.is_triggered() {
        let nonce = transport::fresh_nonce().ok()?;
        let seen = w.registrar.epoch();
        let answer = tokio::select! {
            a = w.controller.poll(&nonce, w.revision, w.wait) => a,
            _ = stop.wait() => return None,
        };
        if let Ok((_, notice)) = &answer {
            w.checker.take_key_notice(
                notice.announcement.as_deref(),
                notice.signer.as_deref(),
                &nonce,
                now_secs(),
            );
        }
        let pause = match answer.map(|(answer, _)| answer) {
            Ok(PollAnswer::NoWork) => {
                w.backoff.reset();
                MIN_POLL_INTERVAL
            }
            Ok(PollAnswer::List(envelope)) => {
                match w.checker.check(&envelope, &nonce, now_secs(), w.revision) {
                    Ok(newer) => {
                        tracing::info!(
                            running = w.revision,
                            deployment = w.deployment_id,
                            newer = newer.revision,
                            cancel = newer.cancel,
                            "a newer list arrived while a list runs"
                        );
                        trigger.trigger();
                        return Some((envelope, nonce));
                    }
                    Err(refused) => {
                        tracing::warn!(error = %refused, "a list received while running another was refused");
                        w.backoff.next_delay()
                    }
                }
            }
            Err(TransportError::Unauthorized) => {
                let _ = w.registrar.reregister_after(seen).await;
                w.backoff.next_delay()
            }
            Err(_) => w.backoff.next_delay(),
        };
        if !stop.sleep(pause).await {
            return None;
        }
    }
    None
}

/// Seconds since the Unix epoch.
fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
