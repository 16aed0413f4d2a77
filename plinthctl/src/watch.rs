//! `plinthctl deploy watch`: follows a deployment's event stream (Server-Sent Events), printing the
//! seed-style processing lines (`| prepare ntp-node <SUCCESS>`) above live progress bars per group and per
//! node, then returns the final report. A lost controller, a takeover or a database outage is waited
//! out with one line saying so; the stream resumes after the last event seen.

use crate::client::{ApiError, Client, Failure};
use anyhow::Result;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use plinth_api::deployments::Report;
use plinth_common::strategy::FailureReason;
use plinth_common::wire::{DeploymentEvent, DeploymentStatus, ResultStatus};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The bars, kept in step with the report.
struct Bars {
    multi: MultiProgress,
    groups: BTreeMap<String, ProgressBar>,
    nodes: BTreeMap<u64, ProgressBar>,
    group_style: ProgressStyle,
    node_style: ProgressStyle,
    quiet: bool,
}

impl Bars {
    fn new(show: bool) -> Bars {
        let target = if show {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Bars {
            multi: MultiProgress::with_draw_target(target),
            groups: BTreeMap::new(),
            nodes: BTreeMap::new(),
            group_style: ProgressStyle::with_template(
                "{prefix:>22} [{bar:30.green/red}] {pos}/{len} nodes {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
            node_style: ProgressStyle::with_template(
                "{prefix:>22} [{bar:30.cyan/blue}] {pos}/{len} tasks {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
            quiet: !show,
        }
    }

    fn line(&self, text: String) {
        if !self.quiet {
            let _ = self.multi.println(text);
        }
    }

    /// A notice about the connection: above the bars, or on standard error when they are hidden.
    fn note(&self, text: String) {
        // Hidden bars (JSON, or standard error not a terminal) print nothing: the notice goes out anyway.
        if self.quiet || self.multi.is_hidden() {
            eprintln!("plinthctl: {text}");
        } else {
            let _ = self.multi.println(format!("plinthctl: {text}"));
        }
    }

    fn update(&mut self, report: &Report) {
        for g in &report.groups {
            let name = g.name.clone();
            let total = g.nodes.len();
            let done = g.succeeded.len() + g.failed.len();
            let bar = self.groups.entry(name.clone()).or_insert_with(|| {
                let b = self.multi.add(ProgressBar::new(total as u64));
                b.set_style(self.group_style.clone());
                b.set_prefix(format!("group {name}"));
                b
            });
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            let phase = g
                .current_phase
                .as_ref()
                .map(|p| format!(" ({p})"))
                .unwrap_or_default();
            bar.set_message(format!("{}{phase}", g.state));
        }
        for n in &report.nodes {
            let bar = self.nodes.entry(n.id).or_insert_with(|| {
                let b = self.multi.add(ProgressBar::new(0));
                b.set_style(self.node_style.clone());
                b.set_prefix(n.name.clone());
                b
            });
            bar.set_length(n.total_tasks as u64);
            bar.set_position(n.finished_tasks as u64);
            let running = n
                .tasks
                .iter()
                .rev()
                .find(|t| t.status == ResultStatus::Running)
                .map(|t| t.id.clone());
            bar.set_message(match (running, n.phase.as_deref()) {
                (Some(t), Some(p)) => format!("{p}: running {t}"),
                (Some(t), None) => format!("running {t}"),
                _ => n.status.to_string(),
            });
        }
    }

    fn finish(&self) {
        for b in self.groups.values().chain(self.nodes.values()) {
            b.finish();
        }
    }
}

/// The seed-style line for an event, if it makes one.
fn diagram_line(e: &DeploymentEvent) -> Option<String> {
    Some(match e {
        DeploymentEvent::PhaseFinished {
            group,
            phase,
            passed,
            succeeded,
            total,
            ..
        } => {
            let verdict = if *passed { "SUCCESS" } else { "FAILED" };
            format!("| {phase:<8} {group:<24} <{verdict}> {succeeded}/{total} nodes succeeded")
        }
        DeploymentEvent::GroupFailed { group, reason, .. } => {
            format!("| {group:<33} <FAILED: {}>", reason_words(reason))
        }
        DeploymentEvent::GroupSucceeded { group } => format!("V {group} succeeded"),
        DeploymentEvent::DeploymentFinished { status } => format!("Finish ({status})"),
        DeploymentEvent::Warning { code, message } => format!("! warning ({code}): {message}"),
        DeploymentEvent::Stopped { message } => format!("! stopped: {message}"),
        DeploymentEvent::Cancelled { message, .. } => format!("! {message}"),
        DeploymentEvent::ResultRefused { node, message, .. } => {
            format!("! node {node}: a result was refused: {message}")
        }
        DeploymentEvent::ListRefused { node, message, .. } => {
            format!("! node {node} refused its list: {message}")
        }
        DeploymentEvent::NodeError { node, message, .. } => format!("! node {node}: {message}"),
        DeploymentEvent::GroupStarted { .. }
        | DeploymentEvent::PhaseStarted { .. }
        | DeploymentEvent::NodeStatusChanged { .. }
        | DeploymentEvent::TaskResult { .. } => return None,
    })
}

fn reason_words(r: &FailureReason) -> String {
    match r {
        FailureReason::Dependency { dependency, .. } => format!("due to dependency {dependency}"),
        FailureReason::Timeout { .. } => "phase timed out".into(),
        FailureReason::Criteria { .. } => "success criteria not met".into(),
    }
}

/// How long `watch` keeps trying to reach a controller before it gives up.
const GIVE_UP_AFTER: Duration = Duration::from_secs(600);
/// The longest wait between two tries.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Whether a failure may pass: no controller could be reached or serve (a controller died, another is
/// taking over, the database is away). Anything else (401, 404, ...) will not change by waiting.
fn transient(e: &anyhow::Error) -> bool {
    e.chain()
        .find_map(|c| c.downcast_ref::<ApiError>())
        .is_some_and(|a| a.kind == Failure::Unavailable)
}

/// The first line of an error, for a one-line notice.
fn first_line(e: &anyhow::Error) -> String {
    format!("{e:#}")
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// An outage being waited out: since when, and the next wait.
struct Outage {
    since: Instant,
    wait: Duration,
}

/// Follows the trouble and the recovery of the connection, saying each once.
struct Connection {
    outage: Option<Outage>,
    id: u64,
}

impl Connection {
    /// A failure that may pass: says so at its first occurrence, waits (more each time), and fails
    /// once it has lasted [`GIVE_UP_AFTER`].
    async fn lost(&mut self, bars: &Bars, e: anyhow::Error) -> Result<()> {
        let outage = self.outage.get_or_insert_with(|| {
            bars.note(format!(
                "lost the controller ({}); reconnecting",
                first_line(&e)
            ));
            Outage {
                since: Instant::now(),
                wait: Duration::from_millis(250),
            }
        });
        if outage.since.elapsed() >= GIVE_UP_AFTER {
            return Err(anyhow::Error::new(ApiError {
                kind: Failure::Unavailable,
                message: format!(
                    "{}\n  gave up reconnecting after {} s; the deployment goes on without this \
                     command: `plinthctl deploy watch {}` follows it again",
                    first_line(&e),
                    GIVE_UP_AFTER.as_secs(),
                    self.id
                ),
            }));
        }
        tokio::time::sleep(outage.wait).await;
        outage.wait = (outage.wait * 2).min(MAX_BACKOFF);
        Ok(())
    }

    /// An answer came: the end of an outage, if there was one.
    fn back(&mut self, bars: &Bars, client: &Client) {
        if let Some(o) = self.outage.take() {
            bars.note(format!(
                "reconnected to {} after {:.1} s",
                client.current(),
                o.since.elapsed().as_secs_f64()
            ));
        }
    }
}

/// What reading the event stream ended with.
enum StreamEnd {
    /// The deployment finished (its last event came).
    Finished,
    /// The controller ended it before the deployment finished (it stopped, or gave up the stream).
    Closed,
    /// It broke: the connection was lost.
    Broken,
}

/// Reads a deployment's events, printing their lines and refreshing the bars, until the stream ends;
/// `last_event` follows the stored events' ids (the stream resumes after it).
async fn follow_stream(
    client: &Client,
    id: u64,
    mut resp: reqwest::Response,
    bars: &mut Bars,
    last_event: &mut Option<u64>,
) -> StreamEnd {
    let mut buf = String::new();
    let mut data = String::new();
    let mut event_id: Option<u64> = None;
    let mut last_refresh = Instant::now() - Duration::from_secs(1);
    let mut finished = false;
    loop {
        let chunk = match resp.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) if finished => return StreamEnd::Finished,
            Ok(None) => return StreamEnd::Closed,
            Err(_) => return StreamEnd::Broken,
        };
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(pos) = buf.find('\n') {
            let line = buf[..pos].trim_end_matches('\r').to_string();
            buf.drain(..=pos);
            if let Some(d) = line.strip_prefix("data:") {
                data.push_str(d.trim_start());
            } else if let Some(v) = line.strip_prefix("id:") {
                event_id = v.trim().parse().ok();
            } else if line.is_empty() && !data.is_empty() {
                // An event this version does not know (a newer controller) prints nothing.
                let event = serde_json::from_str::<DeploymentEvent>(&data).ok();
                data.clear();
                finished |= matches!(event, Some(DeploymentEvent::DeploymentFinished { .. }));
                if let Some(seq) = event_id.take() {
                    *last_event = Some(seq);
                }
                if let Some(text) = event.as_ref().and_then(diagram_line) {
                    bars.line(text);
                }
                if last_refresh.elapsed() >= Duration::from_millis(200) {
                    if let Ok(r) = client.get::<Report>(&format!("/deployments/{id}")).await {
                        bars.update(&r);
                    }
                    last_refresh = Instant::now();
                }
            }
        }
    }
}

/// Follows a deployment until it ends; returns its final report. A lost controller, a takeover or a
/// database outage is waited out (the next controller given is tried, with a growing wait between
/// tries, for up to [`GIVE_UP_AFTER`]); the event stream resumes after the last event seen
/// (`Last-Event-ID`), so no line is printed twice.
pub async fn watch(client: &Client, id: u64, show_bars: bool) -> Result<Report> {
    let mut bars = Bars::new(show_bars);
    let mut conn = Connection { outage: None, id };
    let mut last_event: Option<u64> = None;
    // Polling only: the stream was refused (too many watchers); the report is read instead.
    let mut poll_only = false;
    loop {
        match client.get::<Report>(&format!("/deployments/{id}")).await {
            Ok(report) => {
                conn.back(&bars, client);
                bars.update(&report);
                if report.status != DeploymentStatus::Running {
                    bars.finish();
                    return Ok(report);
                }
            }
            Err(e) if transient(&e) => {
                conn.lost(&bars, e).await?;
                continue;
            }
            Err(e) => return Err(e),
        }
        if poll_only {
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        let resp = match client
            .stream(&format!("/deployments/{id}/events"), last_event)
            .await
        {
            Ok(resp) => resp,
            Err(e) if transient(&e) => {
                conn.lost(&bars, e).await?;
                continue;
            }
            Err(e) => {
                bars.note(format!(
                    "cannot follow the events ({}); reading the report every second instead",
                    first_line(&e)
                ));
                poll_only = true;
                continue;
            }
        };
        conn.back(&bars, client);
        match follow_stream(client, id, resp, &mut bars, &mut last_event).await {
            // The report, read next, says how it ended.
            StreamEnd::Finished => {}
            StreamEnd::Closed => {
                let e = anyhow::anyhow!("{} ended the event stream", client.current());
                conn.lost(&bars, e).await?
            }
            StreamEnd::Broken => {
                // Its cause (a connection reset, a TLS end) says less than this.
                let e = anyhow::anyhow!("the event stream from {} broke", client.current());
                conn.lost(&bars, e).await?
            }
        }
    }
}
