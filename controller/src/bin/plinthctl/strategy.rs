//! `plinthctl strategy ...`: deployment strategies on a controller, and offline checks and simulations
//! that run the controller's own sequencing code on files.

use crate::client::Client;
use crate::output::{self, Format};
use anyhow::{bail, Context, Result};
use plinth_common::strategy::{self, SimulatedFailure};
use reqwest::Method;
use serde_json::Value;
use std::path::Path;

fn read(path: &Path) -> Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .context("cannot read standard input")?;
        return Ok(text);
    }
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Reads and validates a strategy file; every finding is in the error.
pub fn load_strategy(path: &Path) -> Result<strategy::Strategy> {
    let text = read(path)?;
    strategy::parse_strategy(&text).map_err(|e| {
        let mut msg = format!("{}: ", path.display());
        match e.findings() {
            [] => msg.push_str(&e.to_string()),
            findings => {
                msg.push_str(&format!("{} problem(s)", findings.len()));
                for f in findings {
                    msg.push_str(&format!("\n  - {f}"));
                }
            }
        }
        anyhow::anyhow!(msg)
    })
}

/// Reads a node inventory file (YAML or JSON list of {name, tags, labels, rack}).
pub fn load_inventory(path: &Path) -> Result<Vec<strategy::InventoryNode>> {
    let text = read(path)?;
    strategy::parse_inventory(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// `plinthctl strategy check STRATEGY --inventory NODES`.
pub fn check(strategy_file: &Path, inventory: &Path, format: Format) -> Result<bool> {
    let s = load_strategy(strategy_file)?;
    let nodes = load_inventory(inventory)?;
    let report = strategy::check(&s, &nodes).map_err(|e| anyhow::anyhow!("{e}"))?;
    match format {
        Format::Json => output::json(&serde_json::to_value(&report)?),
        Format::Table => print!("{}", report.to_text()),
    }
    Ok(true)
}

/// `plinthctl strategy simulate STRATEGY --inventory NODES --fail node:phase ...`.
pub fn simulate(
    strategy_file: &Path,
    inventory: &Path,
    fail: &[String],
    format: Format,
) -> Result<bool> {
    let s = load_strategy(strategy_file)?;
    let nodes = load_inventory(inventory)?;
    let failures = fail
        .iter()
        .map(|f| {
            f.parse::<SimulatedFailure>()
                .map_err(|e| anyhow::anyhow!("--fail {f:?}: {e}"))
        })
        .collect::<Result<Vec<_>>>()?;
    let sim = strategy::simulate(&s, &nodes, &failures).map_err(|e| anyhow::anyhow!("{e}"))?;
    if !sim.unused_failures.is_empty() {
        bail!(
            "these --fail entries never applied (no such node, or the node never reached that phase): {}",
            sim.unused_failures.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", ")
        );
    }
    match format {
        Format::Json => output::json(&serde_json::to_value(&sim.report)?),
        Format::Table => print!("{}", sim.report.to_text()),
    }
    Ok(sim.report.status != strategy::DeploymentStatus::Failed)
}

/// Uploads a strategy (create, or replace by name).
pub async fn upload(
    client: &Client,
    cluster: u64,
    file: &Path,
    name: Option<&str>,
    replace: bool,
) -> Result<Value> {
    let text = read(file)?;
    // Check locally first for a message that names the file.
    load_strategy(file)?;
    let (method, path) = match (replace, name) {
        (true, Some(n)) => (Method::PUT, format!("/clusters/{cluster}/strategies/{n}/")),
        (true, None) => bail!("replacing a strategy needs its name"),
        (false, Some(n)) => (
            Method::POST,
            format!("/clusters/{cluster}/strategies/?name={n}"),
        ),
        (false, None) => (Method::POST, format!("/clusters/{cluster}/strategies/")),
    };
    client
        .call_text(method, &path, "application/yaml", text)
        .await
}

/// Validates a strategy file against a cluster's nodes on the controller.
pub async fn validate(client: &Client, cluster: u64, file: &Path, format: Format) -> Result<bool> {
    let text = read(file)?;
    let v = client
        .call_text(
            Method::POST,
            &format!("/clusters/{cluster}/strategies/validate/"),
            "application/yaml",
            text,
        )
        .await?;
    match format {
        Format::Json => output::json(&v),
        Format::Table => print!("{}", v["text"].as_str().unwrap_or_default()),
    }
    Ok(true)
}
