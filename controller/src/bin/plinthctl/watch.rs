//! `plinthctl deploy watch`: live progress bars per group and per node, then the report.

use crate::client::Client;
use crate::output;
use anyhow::Result;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// Follows a deployment until it ends; returns its final report.
pub async fn watch(client: &Client, id: u64, show_bars: bool) -> Result<Value> {
    let multi = MultiProgress::with_draw_target(if show_bars {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    let group_style =
        ProgressStyle::with_template("{prefix:>16} [{bar:30.green/red}] {pos}/{len} nodes {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
    let node_style =
        ProgressStyle::with_template("{prefix:>16} [{bar:30.cyan/blue}] {pos}/{len} tasks {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
    let mut groups: BTreeMap<String, ProgressBar> = BTreeMap::new();
    let mut nodes: BTreeMap<u64, ProgressBar> = BTreeMap::new();
    loop {
        let report: Value = client.get(&format!("/deployments/{id}")).await?;
        for g in report["groups"].as_array().into_iter().flatten() {
            let name = output::cell(g, "/name");
            let total = g["nodes"].as_array().map_or(0, Vec::len);
            let done = g["succeeded"].as_array().map_or(0, Vec::len)
                + g["failed"].as_array().map_or(0, Vec::len);
            let bar = groups.entry(name.clone()).or_insert_with(|| {
                let b = multi.add(ProgressBar::new(total as u64));
                b.set_style(group_style.clone());
                b.set_prefix(format!("group {name}"));
                b
            });
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_message(output::cell(g, "/state"));
        }
        for n in report["nodes"].as_array().into_iter().flatten() {
            let nid = n["id"].as_u64().unwrap_or_default();
            let bar = nodes.entry(nid).or_insert_with(|| {
                let b = multi.add(ProgressBar::new(0));
                b.set_style(node_style.clone());
                b.set_prefix(output::cell(n, "/name"));
                b
            });
            bar.set_length(n["total_tasks"].as_u64().unwrap_or(0));
            bar.set_position(n["finished_tasks"].as_u64().unwrap_or(0));
            let current = n["tasks"]
                .as_array()
                .and_then(|t| t.iter().rev().find(|t| t["status"] == "running"))
                .map(|t| output::cell(t, "/id"));
            bar.set_message(match current {
                Some(t) => format!("running {t}"),
                None => output::cell(n, "/status"),
            });
        }
        if report["status"] != "running" {
            for b in groups.values().chain(nodes.values()) {
                b.finish();
            }
            return Ok(report);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
