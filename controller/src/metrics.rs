//! Prometheus metrics (`prometheus-client`): counters and histograms kept as work happens, and gauges
//! read when scraped (agents, deployments, connections, the lease), so that a scrape costs only what
//! it reads. Label values are small fixed sets (verdicts, statuses, kinds), never node names or ids.
//!
//! Served as `GET /metrics` on the listener of its own (`metrics_listen`, no token) and on the main
//! listener behind an operator token.
//!
//! Graph types are operators' names, so they are bounded as label values ([`GraphTypes`]): the first
//! [`MAX_GRAPH_TYPES`] distinct ones this process meets are labels of their own, any later one is
//! `other`.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};
use std::collections::HashSet;
use std::sync::{LazyLock, Mutex};

/// The most distinct graph types that are label values of their own; later ones are `other`.
pub const MAX_GRAPH_TYPES: usize = 16;

/// The label value of a graph type past [`MAX_GRAPH_TYPES`].
pub const OTHER_GRAPH_TYPE: &str = "other";

/// The label value of a graph type not known where a measure is taken (a result accepted by a
/// controller that does not sequence its deployment).
pub const UNKNOWN_GRAPH_TYPE: &str = "unknown";

/// How a phase ended, as `plinth_phase_duration_seconds` labels it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhaseOutcome {
    /// Its group met the phase's success criteria.
    Passed,
    /// It did not (a node failed beyond the criteria, or the phase timed out).
    Failed,
    /// The deployment was cancelled while the phase ran.
    Cancelled,
}

impl PhaseOutcome {
    fn as_str(self) -> &'static str {
        match self {
            PhaseOutcome::Passed => "passed",
            PhaseOutcome::Failed => "failed",
            PhaseOutcome::Cancelled => "cancelled",
        }
    }
}

/// The graph types that are label values: the first [`MAX_GRAPH_TYPES`] distinct ones met; any other
/// is [`OTHER_GRAPH_TYPE`]. An empty type is [`UNKNOWN_GRAPH_TYPE`].
#[derive(Debug, Default)]
pub struct GraphTypes {
    known: Mutex<HashSet<String>>,
}

impl GraphTypes {
    /// The label value of `graph_type`, admitting it while there is room.
    pub fn label(&self, graph_type: &str) -> String {
        if graph_type.is_empty() {
            return UNKNOWN_GRAPH_TYPE.to_string();
        }
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if known.contains(graph_type) {
            return graph_type.to_string();
        }
        if known.len() < MAX_GRAPH_TYPES
            && graph_type != OTHER_GRAPH_TYPE
            && graph_type != UNKNOWN_GRAPH_TYPE
        {
            known.insert(graph_type.to_string());
            return graph_type.to_string();
        }
        OTHER_GRAPH_TYPE.to_string()
    }
}

/// How a poll was answered.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum PollAnswer {
    /// A signed task list.
    list,
    /// Nothing new before the wait ran out (204).
    empty,
}

/// Whether the agent asked to wait for a change (a long poll) or to be answered at once.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum PollWait {
    /// `wait` above zero.
    long,
    /// `wait=0`.
    short,
}

/// Labels of `plinth_polls_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PollLabels {
    /// Long or short poll.
    pub wait: PollWait,
    /// List or nothing.
    pub answer: PollAnswer,
}

/// Labels of `plinth_results_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerdictLabels {
    /// `accepted`, `duplicate` or `refused`.
    pub verdict: &'static str,
}

/// Labels of `plinth_refusals_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabels {
    /// What was refused: `list` (an agent refused a task list) or `result` (the controller refused a
    /// result).
    pub kind: &'static str,
}

/// Labels of `plinth_task_duration_seconds` and `plinth_phase_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TaskLabels {
    /// The graph type the task or phase ran (bounded, see [`GraphTypes`]).
    pub graph_type: String,
    /// How the task ended (`succeeded`, `failed`, `timed_out`, `interrupted` or `skipped`), or the
    /// phase (`passed`, `failed`, `cancelled`).
    pub outcome: &'static str,
}

/// Labels of `plinth_deployment_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeploymentLabels {
    /// The deployment's graph type (bounded, see [`GraphTypes`]), or `strategy` for a deployment that
    /// runs a strategy's phases.
    pub graph_type: String,
    /// How it ended: `success`, `success_with_failures`, `failed` or `cancelled`.
    pub status: &'static str,
}

/// Task outcomes, as labels.
const TASK_OUTCOMES: [&str; 5] = ["succeeded", "failed", "timed_out", "interrupted", "skipped"];
/// Phase outcomes, as labels.
const PHASE_OUTCOMES: [PhaseOutcome; 3] = [
    PhaseOutcome::Passed,
    PhaseOutcome::Failed,
    PhaseOutcome::Cancelled,
];
/// Deployments' final statuses, as labels.
const FINAL_STATUSES: [&str; 4] = ["success", "success_with_failures", "failed", "cancelled"];

/// Labels of `plinth_store_transaction_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TransactionLabels {
    /// Which write: `progress` (a deployment's step: lists, state, events) or `results` (a batch of
    /// agents' results).
    pub kind: &'static str,
}

/// The metrics kept as work happens.
pub struct Metrics {
    registry: Registry,
    /// Polls answered, by wait and answer.
    pub polls: Family<PollLabels, Counter>,
    /// Results judged, by verdict.
    pub results: Family<VerdictLabels, Counter>,
    /// Refusals recorded, by kind.
    pub refusals: Family<RefusalLabels, Counter>,
    /// Tasks' run times as their agents report them, by graph type and outcome.
    pub task_duration: Family<TaskLabels, Histogram>,
    /// Phases' times, from their start to their end, by graph type and outcome.
    pub phase_duration: Family<TaskLabels, Histogram>,
    /// Deployments' times, from their start to their end, by graph type and status.
    pub deployment_duration: Family<DeploymentLabels, Histogram>,
    /// The graph types that are label values.
    pub graph_types: GraphTypes,
    /// Store transactions' times, by kind.
    pub store_transaction: Family<TransactionLabels, Histogram>,
    /// Registrations turned away by the registration limits.
    pub registrations_limited: Counter,
    /// Times this controller took the sequencing lease.
    pub lease_takeovers: Counter,
}

/// The one set of metrics of the process.
pub fn metrics() -> &'static Metrics {
    static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);
    &METRICS
}

impl Metrics {
    fn new() -> Self {
        let mut registry = Registry::with_prefix("plinth");
        let polls = Family::<PollLabels, Counter>::default();
        registry.register(
            "polls",
            "Agent polls answered, by wait (long or short) and answer (list or empty)",
            polls.clone(),
        );
        let results = Family::<VerdictLabels, Counter>::default();
        registry.register(
            "results",
            "Task results judged, by verdict (accepted, duplicate, refused)",
            results.clone(),
        );
        let refusals = Family::<RefusalLabels, Counter>::default();
        registry.register(
            "refusals",
            "Refusals recorded, by kind (list: an agent refused a task list; result: a result was refused)",
            refusals.clone(),
        );
        let task_duration = Family::<TaskLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.1, 2.0, 16))
        });
        registry.register_with_unit(
            "task_duration",
            "Run time of ended tasks as their agents report it (accepted results only), by graph type and outcome",
            Unit::Seconds,
            task_duration.clone(),
        );
        let phase_duration = Family::<TaskLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.5, 2.0, 16))
        });
        registry.register_with_unit(
            "phase_duration",
            "Time of ended phases of a group, from their start to their end, by graph type and outcome (passed, failed, cancelled)",
            Unit::Seconds,
            phase_duration.clone(),
        );
        let deployment_duration =
            Family::<DeploymentLabels, Histogram>::new_with_constructor(|| {
                Histogram::new(exponential_buckets(1.0, 2.0, 16))
            });
        registry.register_with_unit(
            "deployment_duration",
            "Time of ended deployments, from their start to their end, by graph type and final status",
            Unit::Seconds,
            deployment_duration.clone(),
        );
        let store_transaction =
            Family::<TransactionLabels, Histogram>::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0005, 2.0, 16))
            });
        registry.register_with_unit(
            "store_transaction_duration",
            "Time of the store's write transactions, by kind (progress: a deployment's step; results: a batch of results)",
            Unit::Seconds,
            store_transaction.clone(),
        );
        let registrations_limited = Counter::default();
        registry.register(
            "registrations_limited",
            "Agent registrations turned away by the registration limits",
            registrations_limited.clone(),
        );
        let lease_takeovers = Counter::default();
        registry.register(
            "lease_takeovers",
            "Times this controller took the sequencing lease",
            lease_takeovers.clone(),
        );
        // Every label value is known: each series is there from the start, at zero, so that rates and
        // sums answer before the first event of a kind.
        for wait in [PollWait::long, PollWait::short] {
            for answer in [PollAnswer::list, PollAnswer::empty] {
                let _ = polls.get_or_create(&PollLabels {
                    wait: wait.clone(),
                    answer,
                });
            }
        }
        for verdict in ["accepted", "duplicate", "refused"] {
            let _ = results.get_or_create(&VerdictLabels { verdict });
        }
        for kind in ["list", "result"] {
            let _ = refusals.get_or_create(&RefusalLabels { kind });
        }
        for kind in ["progress", "results"] {
            let _ = store_transaction.get_or_create(&TransactionLabels { kind });
        }
        Metrics {
            registry,
            polls,
            results,
            refusals,
            task_duration,
            phase_duration,
            deployment_duration,
            graph_types: GraphTypes::default(),
            store_transaction,
            registrations_limited,
            lease_takeovers,
        }
    }

    /// Counts one poll answered.
    pub fn poll(&self, long: bool, list: bool) {
        let labels = PollLabels {
            wait: if long {
                PollWait::long
            } else {
                PollWait::short
            },
            answer: if list {
                PollAnswer::list
            } else {
                PollAnswer::empty
            },
        };
        self.polls.get_or_create(&labels).inc();
    }

    /// Counts one result's verdict.
    pub fn verdict(&self, verdict: plinth_common::wire::Verdict) {
        use plinth_common::wire::Verdict;
        let verdict = match verdict {
            Verdict::Accepted => "accepted",
            Verdict::Duplicate => "duplicate",
            Verdict::Refused => "refused",
        };
        self.results.get_or_create(&VerdictLabels { verdict }).inc();
        if verdict == "refused" {
            self.refusal("result");
        }
    }

    /// Records the run time of a task of `graph_type` whose final result was accepted (results still
    /// running are not counted). `graph_type` is `None` when it is not known here.
    pub fn task_ended(
        &self,
        graph_type: Option<&str>,
        status: plinth_common::wire::ResultStatus,
        duration_ms: u64,
    ) {
        use plinth_common::wire::ResultStatus;
        let outcome = match status {
            ResultStatus::Running => return,
            ResultStatus::Succeeded => "succeeded",
            ResultStatus::Failed => "failed",
            ResultStatus::TimedOut => "timed_out",
            ResultStatus::Interrupted => "interrupted",
            ResultStatus::Skipped => "skipped",
        };
        let graph_type = match graph_type {
            Some(t) => self.graph_types.label(t),
            None => UNKNOWN_GRAPH_TYPE.to_string(),
        };
        self.task_duration
            .get_or_create(&TaskLabels {
                graph_type,
                outcome,
            })
            .observe(duration_ms as f64 / 1000.0);
    }

    /// A deployment of `graph_type` (its record's, `strategy:NAME` for a strategy) whose phases run
    /// `phase_types` starts or is taken on here: the series it will count in are there from now on,
    /// at zero.
    pub fn deployment_known<'a>(
        &self,
        graph_type: &str,
        phase_types: impl IntoIterator<Item = &'a str>,
    ) {
        for t in phase_types {
            let graph_type = self.graph_types.label(t);
            for outcome in TASK_OUTCOMES {
                let _ = self.task_duration.get_or_create(&TaskLabels {
                    graph_type: graph_type.clone(),
                    outcome,
                });
            }
            for outcome in PHASE_OUTCOMES {
                let _ = self.phase_duration.get_or_create(&TaskLabels {
                    graph_type: graph_type.clone(),
                    outcome: outcome.as_str(),
                });
            }
        }
        let graph_type = self.deployment_label(graph_type);
        for status in FINAL_STATUSES {
            let _ = self.deployment_duration.get_or_create(&DeploymentLabels {
                graph_type: graph_type.clone(),
                status,
            });
        }
    }

    /// Records a phase of `graph_type` that ended after `took`.
    pub fn phase_ended(&self, graph_type: &str, outcome: PhaseOutcome, took: std::time::Duration) {
        self.phase_duration
            .get_or_create(&TaskLabels {
                graph_type: self.graph_types.label(graph_type),
                outcome: outcome.as_str(),
            })
            .observe(took.as_secs_f64());
    }

    /// Records a deployment of `graph_type` (its record's) that ended with `status` after `took`.
    pub fn deployment_ended(
        &self,
        graph_type: &str,
        status: plinth_common::wire::DeploymentStatus,
        took: std::time::Duration,
    ) {
        use plinth_common::wire::DeploymentStatus;
        let status = match status {
            DeploymentStatus::Running => return,
            DeploymentStatus::Success => "success",
            DeploymentStatus::SuccessWithFailures => "success_with_failures",
            DeploymentStatus::Failed => "failed",
            DeploymentStatus::Cancelled => "cancelled",
        };
        self.deployment_duration
            .get_or_create(&DeploymentLabels {
                graph_type: self.deployment_label(graph_type),
                status,
            })
            .observe(took.as_secs_f64());
    }

    /// A deployment's graph type as a label: `strategy` for any strategy's, else bounded.
    fn deployment_label(&self, graph_type: &str) -> String {
        if graph_type.starts_with("strategy:") {
            "strategy".to_string()
        } else {
            self.graph_types.label(graph_type)
        }
    }

    /// Records one store transaction of `kind` that took `took`.
    pub fn transaction(&self, kind: &'static str, took: std::time::Duration) {
        self.store_transaction
            .get_or_create(&TransactionLabels { kind })
            .observe(took.as_secs_f64());
    }

    /// Counts one refusal of `kind` (`list` or `result`).
    pub fn refusal(&self, kind: &'static str) {
        self.refusals.get_or_create(&RefusalLabels { kind }).inc();
    }
}

/// What a scrape reads besides the kept metrics.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Task lists published since the start.
    pub lists_published: u64,
    /// Node keys with a connection open here.
    pub agents_connected: u64,
    /// Connections in the untrusted pool.
    pub connections_untrusted: u64,
    /// Whether this controller holds the sequencing lease (sequences deployments).
    pub lease_holder: bool,
    /// Nodes by (status, admission).
    pub agents: Vec<((&'static str, &'static str), u64)>,
    /// Deployments by status.
    pub deployments: Vec<(&'static str, u64)>,
    /// The database connection pool's use (PostgreSQL only).
    pub pool: Option<crate::store::PoolUse>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AgentLabels {
    status: &'static str,
    admission: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClassLabels {
    class: &'static str,
}

/// The exposition (OpenMetrics text) of the kept metrics and of `snap`.
pub fn render(snap: &Snapshot) -> String {
    let mut now = Registry::with_prefix("plinth");
    let published = Counter::<u64>::default();
    published.inc_by(snap.lists_published);
    now.register(
        "lists_published",
        "Task lists published by this controller since it started",
        published,
    );
    let connected = Gauge::<i64>::default();
    connected.set(snap.agents_connected as i64);
    now.register(
        "agents_connected",
        "Agents (node keys) with a connection open to this controller",
        connected,
    );
    let connections = Family::<ClassLabels, Gauge>::default();
    connections
        .get_or_create(&ClassLabels { class: "agent" })
        .set(snap.agents_connected as i64);
    connections
        .get_or_create(&ClassLabels { class: "untrusted" })
        .set(snap.connections_untrusted as i64);
    now.register(
        "connections",
        "Open connections by class (agent: node keys connected; untrusted: not yet proven)",
        connections,
    );
    let holder = Gauge::<i64>::default();
    holder.set(i64::from(snap.lease_holder));
    now.register(
        "lease_holder",
        "1 when this controller holds the sequencing lease (sequences deployments), else 0",
        holder,
    );
    let agents = Family::<AgentLabels, Gauge>::default();
    for ((status, admission), n) in &snap.agents {
        agents
            .get_or_create(&AgentLabels { status, admission })
            .set(*n as i64);
    }
    now.register("agents", "Known nodes by status and admission", agents);
    let deployments = Family::<StatusLabels, Gauge>::default();
    for (status, n) in &snap.deployments {
        deployments
            .get_or_create(&StatusLabels { status })
            .set(*n as i64);
    }
    now.register("deployments", "Deployments by status", deployments);
    if let Some(pool) = snap.pool {
        let used = Family::<StateLabels, Gauge>::default();
        used.get_or_create(&StateLabels { state: "in_use" })
            .set(pool.open.saturating_sub(pool.idle) as i64);
        used.get_or_create(&StateLabels { state: "idle" })
            .set(pool.idle as i64);
        now.register(
            "database_connections",
            "Database connections of the pool by state (in_use, idle); PostgreSQL only",
            used,
        );
        let max = Gauge::<i64>::default();
        max.set(pool.max as i64);
        now.register(
            "database_connections_max",
            "The most database connections the pool opens; PostgreSQL only",
            max,
        );
    }
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode_registry(&mut out, &metrics().registry);
    let _ = prometheus_client::encoding::text::encode_registry(&mut out, &now);
    let _ = prometheus_client::encoding::text::encode_eof(&mut out);
    out
}

/// The content type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_conventions() {
        metrics().poll(true, false);
        metrics().verdict(plinth_common::wire::Verdict::Refused);
        metrics().task_ended(
            Some("test-provision"),
            plinth_common::wire::ResultStatus::Failed,
            1500,
        );
        metrics().task_ended(None, plinth_common::wire::ResultStatus::Succeeded, 10);
        metrics().deployment_known("strategy:rolling", ["test-deploy"]);
        metrics().phase_ended(
            "test-deploy",
            PhaseOutcome::Passed,
            std::time::Duration::from_secs(3),
        );
        metrics().deployment_ended(
            "strategy:rolling",
            plinth_common::wire::DeploymentStatus::Success,
            std::time::Duration::from_secs(70),
        );
        let snap = Snapshot {
            lists_published: 3,
            agents: vec![(("ready", "accepted"), 2)],
            deployments: vec![("failed", 1)],
            pool: Some(crate::store::PoolUse {
                open: 3,
                idle: 1,
                max: 16,
            }),
            ..Snapshot::default()
        };
        let text = render(&snap);
        for line in [
            "plinth_lists_published_total 3",
            "plinth_agents{status=\"ready\",admission=\"accepted\"} 2",
            "plinth_deployments{status=\"failed\"} 1",
            "plinth_lease_holder 0",
            "plinth_database_connections{state=\"in_use\"} 2",
            "plinth_database_connections{state=\"idle\"} 1",
            "plinth_database_connections_max 16",
            "plinth_connections{class=\"untrusted\"} 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing in:\n{text}"
            );
        }
        assert!(text.contains("plinth_polls_total{wait=\"long\",answer=\"empty\"}"));
        assert!(text.contains("plinth_results_total{verdict=\"refused\"}"));
        assert!(text.contains("plinth_refusals_total{kind=\"result\"}"));
        assert!(text.contains("# TYPE plinth_task_duration_seconds histogram"));
        assert!(
            text.contains("plinth_store_transaction_duration_seconds_count{kind=\"progress\"} ")
        );
        for line in [
            "plinth_task_duration_seconds_count{graph_type=\"test-provision\",outcome=\"failed\"} 1",
            "plinth_task_duration_seconds_count{graph_type=\"test-deploy\",outcome=\"skipped\"} 0",
            "plinth_phase_duration_seconds_count{graph_type=\"test-deploy\",outcome=\"passed\"} 1",
            "plinth_phase_duration_seconds_count{graph_type=\"test-deploy\",outcome=\"cancelled\"} 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing in:\n{text}"
            );
        }
        // Other tests of this binary may end deployments and accept results too: these only exist.
        for prefix in [
            "plinth_task_duration_seconds_count{graph_type=\"unknown\",outcome=\"succeeded\"} ",
            "plinth_deployment_duration_seconds_count{graph_type=\"strategy\",status=\"success\"} ",
        ] {
            assert!(text.contains(prefix), "{prefix} missing in:\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
        assert_eq!(text.matches("# EOF").count(), 1);
    }

    #[test]
    fn graph_types_past_the_bound_are_other() {
        let types = GraphTypes::default();
        assert_eq!(types.label(""), UNKNOWN_GRAPH_TYPE);
        assert_eq!(types.label("other"), OTHER_GRAPH_TYPE);
        for i in 0..MAX_GRAPH_TYPES {
            assert_eq!(types.label(&format!("t{i}")), format!("t{i}"));
        }
        assert_eq!(types.label("one-too-many"), OTHER_GRAPH_TYPE);
        assert_eq!(types.label("t0"), "t0", "a known one stays itself");
    }
}
