//! The agent's own metrics, written to a file for node_exporter's textfile collector (the convention on
//! bare metal: the node's exporter already serves the machine, and the agent opens no port).
//!
//! Kept in memory as work happens (`prometheus-client`), they are written when `metrics_textfile` is set
//! (`--metrics-textfile PATH`): at start, then a second at most after each change, and once more when the
//! agent stops. Each write goes to a temporary file beside the target (named `.NAME.tmp`, which the
//! collector skips: it reads only `*.prom`), then is renamed over it, so the collector never reads half a
//! file. Names carry the `plinth_agent_` prefix; labels are small fixed sets.
//!
//! The collector reads Prometheus's text format (0.0.4), not OpenMetrics: [`text_format`] turns the
//! encoder's output into it (a counter's `# HELP` and `# TYPE` name its `_total` sample, and `# UNIT` and
//! `# EOF` go), leaving every sample line as the encoder wrote it.

use crate::journal::SharedJournal;
use crate::shutdown::Shutdown;
use crate::verify::Refused;
use plinth_common::signing::VerifyError;
use plinth_common::wire::{ResultStatus, TaskResult};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// How long a change waits before it is written, so that a burst of results is one write.
pub const DEBOUNCE: Duration = Duration::from_secs(1);

/// Task outcomes, as labels of `plinth_agent_task_duration_seconds`.
const TASK_OUTCOMES: [&str; 5] = ["succeeded", "failed", "timed_out", "interrupted", "skipped"];

/// Why a task list was refused, as labels of `plinth_agent_lists_refused_total`.
pub const REFUSAL_KINDS: [&str; 10] = [
    "too_large",
    "malformed",
    "bad_signature",
    "wrong_node",
    "wrong_nonce",
    "stale_revision",
    "expired",
    "from_the_future",
    "unsupported_format",
    "storage",
];

/// Why the metrics file cannot be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the metrics file {path}: {source}")]
pub struct MetricsError {
    /// The file.
    pub path: PathBuf,
    /// The cause.
    pub source: std::io::Error,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

struct Inner {
    registry: Registry,
    revision: Gauge,
    accepted_at: Gauge,
    task_duration: Family<OutcomeLabels, Histogram>,
    backlog: Gauge,
    lists_refused: Family<ReasonLabels, Counter>,
    results_refused: Counter,
    changed: Notify,
}

/// The agent's metrics; clones share them.
#[derive(Clone)]
pub struct AgentMetrics {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AgentMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentMetrics").finish_non_exhaustive()
    }
}

impl Default for AgentMetrics {
    fn default() -> Self {
        AgentMetrics::new()
    }
}

impl AgentMetrics {
    /// Every metric at zero, each series of a known label value there from the start.
    pub fn new() -> AgentMetrics {
        let mut registry = Registry::with_prefix("plinth_agent");
        let revision = Gauge::default();
        registry.register(
            "list_revision",
            "Revision of the last task list this agent accepted (0: none yet)",
            revision.clone(),
        );
        let accepted_at = Gauge::default();
        registry.register(
            "list_accepted_timestamp_seconds",
            "When the last task list was accepted, in seconds since the Unix epoch (0: none yet)",
            accepted_at.clone(),
        );
        let task_duration = Family::<OutcomeLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.1, 2.0, 16))
        });
        registry.register_with_unit(
            "task_duration",
            "Run time of ended task attempts on this node, by outcome",
            Unit::Seconds,
            task_duration.clone(),
        );
        let backlog = Gauge::default();
        registry.register(
            "journal_backlog",
            "Results in the journal the controller has not acknowledged yet",
            backlog.clone(),
        );
        let lists_refused = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "lists_refused",
            "Task lists this agent refused, by reason",
            lists_refused.clone(),
        );
        let results_refused = Counter::default();
        registry.register(
            "results_refused",
            "Results the controller refused for good (kept in the journal's quarantine)",
            results_refused.clone(),
        );
        for outcome in TASK_OUTCOMES {
            let _ = task_duration.get_or_create(&OutcomeLabels { outcome });
        }
        for reason in REFUSAL_KINDS {
            let _ = lists_refused.get_or_create(&ReasonLabels { reason });
        }
        AgentMetrics {
            inner: Arc::new(Inner {
                registry,
                revision,
                accepted_at,
                task_duration,
                backlog,
                lists_refused,
                results_refused,
                changed: Notify::new(),
            }),
        }
    }

    fn changed(&self) {
        self.inner.changed.notify_one();
    }

    /// A task list was accepted (verified and its revision stored) at `unix_secs`.
    pub fn list_accepted(&self, revision: u64, unix_secs: i64) {
        self.inner
            .revision
            .set(i64::try_from(revision).unwrap_or(i64::MAX));
        self.inner.accepted_at.set(unix_secs);
        self.changed();
    }

    /// A task attempt's result was journaled: an ended one's run time counts (one still running does
    /// not).
    pub fn task_ended(&self, result: &TaskResult) {
        let outcome = match result.status {
            ResultStatus::Running => return,
            ResultStatus::Succeeded => "succeeded",
            ResultStatus::Failed => "failed",
            ResultStatus::TimedOut => "timed_out",
            ResultStatus::Interrupted => "interrupted",
            ResultStatus::Skipped => "skipped",
        };
        self.inner
            .task_duration
            .get_or_create(&OutcomeLabels { outcome })
            .observe(result.duration_ms as f64 / 1000.0);
        self.changed();
    }

    /// The journal holds `unacked` results the controller has not acknowledged.
    pub fn backlog(&self, unacked: usize) {
        let unacked = i64::try_from(unacked).unwrap_or(i64::MAX);
        if self.inner.backlog.set(unacked) != unacked {
            self.changed();
        }
    }

    /// A task list was refused.
    pub fn list_refused(&self, refused: &Refused) {
        self.inner
            .lists_refused
            .get_or_create(&ReasonLabels {
                reason: refusal_kind(refused),
            })
            .inc();
        self.changed();
    }

    /// The controller refused `n` results for good.
    pub fn results_refused(&self, n: usize) {
        if n > 0 {
            self.inner.results_refused.inc_by(n as u64);
            self.changed();
        }
    }

    /// The metrics in Prometheus's text format, as node_exporter's textfile collector reads it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.inner.registry);
        text_format(&out)
    }

    /// Writes [`AgentMetrics::render`] to `path` atomically.
    pub fn write(&self, path: &Path) -> Result<(), MetricsError> {
        crate::fsutil::write_atomic(path, self.render().as_bytes(), 0o644).map_err(|source| {
            MetricsError {
                path: path.to_path_buf(),
                source,
            }
        })
    }

    /// Writes the metrics to `path` now, then after each change (a [`DEBOUNCE`] later, so bursts are
    /// one write), and once more when `stop` fires. A failed write is logged and tried again at the
    /// next change.
    pub async fn write_until(self, path: PathBuf, stop: Shutdown) {
        let write = |m: &AgentMetrics| {
            if let Err(e) = m.write(&path) {
                tracing::warn!(error = %e, "cannot write the agent's metrics");
            }
        };
        write(&self);
        loop {
            tokio::select! {
                _ = self.inner.changed.notified() => {}
                _ = stop.wait() => break,
            }
            if !stop.sleep(DEBOUNCE).await {
                break;
            }
            write(&self);
        }
        write(&self);
    }
}

/// The label of a refused list's reason.
pub fn refusal_kind(refused: &Refused) -> &'static str {
    match refused {
        Refused::Storage { .. } => "storage",
        Refused::Invalid { error, .. } => match error {
            VerifyError::TooLarge(_) => "too_large",
            VerifyError::Malformed(_) | VerifyError::BadPayload(_) => "malformed",
            VerifyError::BadSignature => "bad_signature",
            VerifyError::WrongNode { .. } => "wrong_node",
            VerifyError::WrongNonce => "wrong_nonce",
            VerifyError::StaleRevision { .. } => "stale_revision",
            VerifyError::Expired { .. } => "expired",
            VerifyError::FromTheFuture { .. } => "from_the_future",
            VerifyError::UnsupportedFormat(_) => "unsupported_format",
        },
    }
}

/// What the metrics start from: the revision accepted last (from the state directory; its time is the
/// revision file's change time) and the journal's backlog.
pub fn start_from(
    metrics: &AgentMetrics,
    revision: u64,
    state_dir: &Path,
    journal: &SharedJournal,
) {
    if revision > 0 {
        let at = std::fs::metadata(state_dir.join(crate::verify::REVISION_FILE))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        metrics.list_accepted(revision, at);
    }
    metrics.backlog(journal.with(|j| j.unacked_count()));
}

/// OpenMetrics text as `prometheus-client` encodes it, made Prometheus's text format (0.0.4): a
/// counter's family is named by its `_total` sample in `# HELP` and `# TYPE` (else the collector reads the
/// sample as untyped), `# UNIT` and `# EOF` are left out. Sample lines pass unchanged.
pub fn text_format(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let mut help: Option<&str> = None;
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if line.starts_with("# HELP ") {
            if let Some(h) = help.replace(line) {
                out.push_str(h);
                out.push('\n');
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let Some(name) = rest.strip_suffix(" counter") {
                if let Some(h) = help.take() {
                    match h.strip_prefix(&format!("# HELP {name} ")) {
                        Some(text) => out.push_str(&format!("# HELP {name}_total {text}\n")),
                        None => {
                            out.push_str(h);
                            out.push('\n');
                        }
                    }
                }
                out.push_str(&format!("# TYPE {name}_total counter\n"));
                continue;
            }
        }
        if let Some(h) = help.take() {
            out.push_str(h);
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
    }
    if let Some(h) = help {
        out.push_str(h);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(status: ResultStatus, duration_ms: u64) -> TaskResult {
        TaskResult {
            deployment_id: 1,
            revision: 1,
            task_id: "a".into(),
            attempt: 1,
            status,
            last: true,
            exit_code: None,
            started_at_ms: 1,
            duration_ms,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
            message: String::new(),
            details: serde_json::Value::Null,
        }
    }

    fn line_value(text: &str, name: &str) -> f64 {
        text.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} missing in:\n{text}"))
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} has no number in:\n{text}"))
    }

    #[test]
    fn what_happened_is_in_the_text_format() {
        let m = AgentMetrics::new();
        m.list_accepted(7, 1_700_000_000);
        m.task_ended(&result(ResultStatus::Succeeded, 1500));
        m.task_ended(&result(ResultStatus::Succeeded, 500));
        m.task_ended(&result(ResultStatus::Failed, 100));
        m.task_ended(&result(ResultStatus::Running, 100));
        m.backlog(3);
        m.list_refused(&Refused::Invalid {
            error: VerifyError::BadSignature,
            claimed_revision: None,
        });
        m.results_refused(2);
        let text = m.render();
        assert_eq!(line_value(&text, "plinth_agent_list_revision"), 7.0);
        assert_eq!(
            line_value(&text, "plinth_agent_list_accepted_timestamp_seconds"),
            1.7e9
        );
        assert_eq!(
            line_value(
                &text,
                "plinth_agent_task_duration_seconds_count{outcome=\"succeeded\"}"
            ),
            2.0
        );
        assert_eq!(
            line_value(
                &text,
                "plinth_agent_task_duration_seconds_sum{outcome=\"succeeded\"}"
            ),
            2.0
        );
        assert_eq!(
            line_value(
                &text,
                "plinth_agent_task_duration_seconds_count{outcome=\"failed\"}"
            ),
            1.0
        );
        assert_eq!(
            line_value(
                &text,
                "plinth_agent_task_duration_seconds_count{outcome=\"timed_out\"}"
            ),
            0.0
        );
        assert_eq!(line_value(&text, "plinth_agent_journal_backlog"), 3.0);
        assert_eq!(
            line_value(
                &text,
                "plinth_agent_lists_refused_total{reason=\"bad_signature\"}"
            ),
            1.0
        );
        assert_eq!(
            line_value(
                &text,
                "plinth_agent_lists_refused_total{reason=\"expired\"}"
            ),
            0.0
        );
        assert_eq!(line_value(&text, "plinth_agent_results_refused_total"), 2.0);
        // The text format: counters typed by their sample's name, no OpenMetrics-only lines.
        for want in [
            "# TYPE plinth_agent_lists_refused_total counter",
            "# HELP plinth_agent_results_refused_total Results the controller refused for good (kept in the journal's quarantine).",
            "# TYPE plinth_agent_task_duration_seconds histogram",
            "# TYPE plinth_agent_journal_backlog gauge",
        ] {
            assert!(text.lines().any(|l| l == want), "{want} missing in:\n{text}");
        }
        assert!(
            !text.contains("# EOF") && !text.contains("# UNIT"),
            "{text}"
        );
    }

    #[test]
    fn only_counters_are_renamed() {
        let om = "# HELP a_b Things.\n# TYPE a_b counter\na_b_total 1\n# HELP c Level.\n# TYPE c gauge\n# UNIT c seconds\nc 2\n# EOF\n";
        assert_eq!(
            text_format(om),
            "# HELP a_b_total Things.\n# TYPE a_b_total counter\na_b_total 1\n# HELP c Level.\n# TYPE c gauge\nc 2\n"
        );
    }

    #[test]
    fn a_write_replaces_the_file_whole() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("plinth_agent.prom");
        let m = AgentMetrics::new();
        m.write(&path).expect("written");
        assert_eq!(
            line_value(
                &std::fs::read_to_string(&path).expect("the file"),
                "plinth_agent_list_revision"
            ),
            0.0
        );
        m.list_accepted(12, 5);
        m.write(&path).expect("written again");
        let text = std::fs::read_to_string(&path).expect("the file");
        assert_eq!(line_value(&text, "plinth_agent_list_revision"), 12.0);
        // Only the file itself is left: the temporary one was renamed over it.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("the directory")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(names, ["plinth_agent.prom"]);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path)
            .expect("its metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644, "readable by node_exporter's user");
    }

    #[test]
    fn a_write_to_a_missing_directory_names_the_file() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("missing").join("plinth_agent.prom");
        let e = AgentMetrics::new().write(&path).expect_err("no directory");
        assert!(e.to_string().contains("plinth_agent.prom"), "{e}");
    }

    #[tokio::test]
    async fn the_writer_writes_at_start_after_a_change_and_at_stop() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("plinth_agent.prom");
        let m = AgentMetrics::new();
        let (trigger, stop) = crate::shutdown::channel();
        let writer = tokio::spawn(m.clone().write_until(path.clone(), stop));
        let read = |path: &Path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            text.lines()
                .find(|l| l.starts_with("plinth_agent_list_revision "))
                .map(str::to_string)
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while read(&path).is_none() {
            assert!(std::time::Instant::now() < deadline, "no first write");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        m.list_accepted(3, 10);
        while read(&path).as_deref() != Some("plinth_agent_list_revision 3") {
            assert!(
                std::time::Instant::now() < deadline,
                "no write after a change"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        m.list_accepted(4, 11);
        trigger.trigger();
        writer.await.expect("the writer ends");
        assert_eq!(
            read(&path).as_deref(),
            Some("plinth_agent_list_revision 4"),
            "the last write is at stop"
        );
    }
}
