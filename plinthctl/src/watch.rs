//! `plinthctl deploy watch`: follows a deployment's event stream (Server-Sent Events), printing the
//! seed-style processing lines (`| prepare ntp-node <SUCCESS>`) above live progress bars per group and per
//! node, then returns the final report. Falls back to polling the report if the stream breaks.

use crate::client::Client;
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

/// Follows a deployment until it ends; returns its final report.
pub async fn watch(client: &Client, id: u64, show_bars: bool) -> Result<Report> {
    let mut bars = Bars::new(show_bars);
    let report: Report = client.get(&format!("/deployments/{id}")).await?;
    bars.update(&report);
    if report.status != DeploymentStatus::Running {
        bars.finish();
        return Ok(report);
    }
    if let Ok(mut resp) = client.stream(&format!("/deployments/{id}/events")).await {
        let mut buf = String::new();
        let mut data = String::new();
        let mut last_refresh = Instant::now() - Duration::from_secs(1);
        while let Ok(Some(chunk)) = resp.chunk().await {
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(pos) = buf.find('\n') {
                let line = buf[..pos].trim_end_matches('\r').to_string();
                buf.drain(..=pos);
                if let Some(d) = line.strip_prefix("data:") {
                    data.push_str(d.trim_start());
                } else if line.is_empty() && !data.is_empty() {
                    // An event this version does not know (a newer controller) prints nothing.
                    let event = serde_json::from_str::<DeploymentEvent>(&data).ok();
                    data.clear();
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
    // The stream ended (the deployment finished) or broke: poll until the report says it is over.
    loop {
        let report: Report = client.get(&format!("/deployments/{id}")).await?;
        bars.update(&report);
        if report.status != DeploymentStatus::Running {
            bars.finish();
            return Ok(report);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
