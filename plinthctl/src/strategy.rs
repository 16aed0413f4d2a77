//! `plinthctl strategy ...`: deployment strategies on a controller, and offline checks and simulations
//! that run the controller's own sequencing code on files.

use crate::client::Client;
use crate::output::{self, Format};
use anyhow::{bail, Context, Result};
use plinth_api::deployments::StartedDeployment;
use plinth_api::records::{ConfigurationRecord, StrategyCheck, StrategyRecord};
use plinth_common::strategy::{self, SimulatedFailure, Source};
use reqwest::Method;
use std::path::{Path, PathBuf};

fn read(path: &Path) -> Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .context("cannot read standard input")?;
        return Ok(text);
    }
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// The findings of a refused document, one per line, after `what`.
fn refusal(what: &str, e: &strategy::StrategyError) -> anyhow::Error {
    let mut msg = format!("{what}: ");
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
}

/// The files named, read (`-` is standard input; a folder is read whole, as a site is).
fn read_all(paths: &[PathBuf]) -> Result<Vec<(String, String)>> {
    if paths.is_empty() {
        bail!("give at least one file");
    }
    let (stdin, files): (Vec<&PathBuf>, Vec<&PathBuf>) =
        paths.iter().partition(|p| p.as_path() == Path::new("-"));
    let files: Vec<PathBuf> = files.into_iter().cloned().collect();
    stdin
        .into_iter()
        .cloned()
        .chain(crate::site::site_files(&files)?)
        .map(|p| Ok((p.display().to_string(), read(&p)?)))
        .collect()
}

/// Reads and validates a strategy from one or several files (a site design's layers); every finding is in
/// the error. Warnings (unknown fields kept, repeated keys) and, for several documents, where the strategy
/// came from go to standard error.
pub fn load_strategy(paths: &[PathBuf]) -> Result<strategy::LoadedStrategy> {
    let texts = read_all(paths)?;
    let sources: Vec<Source<'_>> = texts.iter().map(|(n, t)| Source::new(n, t)).collect();
    let names: Vec<&str> = texts.iter().map(|(n, _)| n.as_str()).collect();
    let loaded = strategy::load_strategy(&sources).map_err(|e| refusal(&names.join(", "), &e))?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    if paths.len() > 1 || loaded.document.get("metadata").is_some() {
        eprintln!("strategy from {}", loaded.provenance);
    }
    Ok(loaded)
}

/// Reads a node inventory: a file (YAML or JSON list of {name, tags, labels, rack}), or an Airship
/// site (a folder, or a file of `drydock/BaremetalNode/v1` documents) whose Drydock nodes, compiled
/// as Drydock compiles them, are the inventory.
pub fn load_inventory(path: &Path) -> Result<Vec<strategy::InventoryNode>> {
    if path.is_dir() {
        return crate::site::inventory(&[path.to_path_buf()]);
    }
    let text = read(path)?;
    if text.contains("drydock/BaremetalNode/v1") {
        return crate::site::inventory(&[path.to_path_buf()]);
    }
    strategy::parse_inventory(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// `plinthctl strategy check FILE... --inventory NODES`.
pub fn check(files: &[PathBuf], inventory: &Path, format: Format) -> Result<bool> {
    let s = load_strategy(files)?.strategy;
    let nodes = load_inventory(inventory)?;
    let report = strategy::check(&s, &nodes).map_err(|e| anyhow::anyhow!("{e}"))?;
    match format {
        Format::Json => output::json(&serde_json::to_value(&report)?),
        Format::Table => print!("{}", report.to_text()),
    }
    Ok(true)
}

/// `plinthctl strategy simulate FILE... --inventory NODES --fail node:phase ...`. A failure that never
/// applies (the node never reached that phase) is reported as such; the simulation still runs.
pub fn simulate(
    files: &[PathBuf],
    inventory: &Path,
    fail: &[String],
    format: Format,
) -> Result<bool> {
    let s = load_strategy(files)?.strategy;
    let nodes = load_inventory(inventory)?;
    let failures = fail
        .iter()
        .map(|f| {
            f.parse::<SimulatedFailure>()
                .map_err(|e| anyhow::anyhow!("--fail {f:?}: {e}"))
        })
        .collect::<Result<Vec<_>>>()?;
    let sim = strategy::simulate(&s, &nodes, &failures).map_err(|e| anyhow::anyhow!("{e}"))?;
    let never: Vec<String> = sim
        .unused_failures
        .iter()
        .map(|f| f.why_never_applied(&sim.report))
        .collect();
    match format {
        Format::Json => {
            let mut v = serde_json::to_value(&sim.report)?;
            v["never_applied"] = serde_json::json!(never);
            output::json(&v)
        }
        Format::Table => {
            print!("{}", sim.report.to_text());
            for line in &never {
                println!("{line}");
            }
        }
    }
    Ok(sim.report.status != strategy::DeploymentStatus::Failed)
}

/// The files as one YAML stream (each file's documents in order).
fn stream(texts: &[(String, String)]) -> String {
    let mut out = String::new();
    for (_, text) in texts {
        if !out.is_empty() || texts.len() > 1 {
            out.push_str("---\n");
        }
        out.push_str(text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Uploads a strategy from one or several files (create, or replace by name).
pub async fn upload(
    client: &Client,
    cluster: u64,
    files: &[PathBuf],
    name: Option<&str>,
    replace: bool,
) -> Result<StrategyRecord> {
    // Check locally first for messages that name the files.
    load_strategy(files)?;
    let text = stream(&read_all(files)?);
    let (method, path) = match (replace, name) {
        (true, Some(n)) => (Method::PUT, format!("/clusters/{cluster}/strategies/{n}/")),
        (true, None) => bail!("replacing a strategy needs its name"),
        (false, Some(n)) => (
            Method::POST,
            format!("/clusters/{cluster}/strategies/?name={n}"),
        ),
        (false, None) => (Method::POST, format!("/clusters/{cluster}/strategies/")),
    };
    let v = client
        .call_text(method.clone(), &path, "application/yaml", text)
        .await?;
    serde_json::from_value(v).with_context(|| format!("unexpected answer to {method} {path}"))
}

/// Validates a strategy (one or several files) against a cluster's nodes on the controller.
pub async fn validate(
    client: &Client,
    cluster: u64,
    files: &[PathBuf],
    format: Format,
) -> Result<bool> {
    let text = stream(&read_all(files)?);
    let v = client
        .call_text(
            Method::POST,
            &format!("/clusters/{cluster}/strategies/validate/"),
            "application/yaml",
            text,
        )
        .await?;
    let checked: StrategyCheck = serde_json::from_value(v)
        .context("the controller's answer to a strategy check does not have the expected shape")?;
    match format {
        Format::Json => output::json(&serde_json::to_value(&checked)?),
        Format::Table => print!("{}", checked.text),
    }
    Ok(true)
}

/// `plinthctl config set CLUSTER FILE...`: stores the cluster's deployment configuration (Shipyard's
/// `DeploymentConfiguration` document, or a site design holding one).
pub async fn set_configuration(
    client: &Client,
    cluster: u64,
    files: &[PathBuf],
) -> Result<ConfigurationRecord> {
    let texts = read_all(files)?;
    let sources: Vec<Source<'_>> = texts.iter().map(|(n, t)| Source::new(n, t)).collect();
    let names: Vec<&str> = texts.iter().map(|(n, _)| n.as_str()).collect();
    let loaded =
        strategy::load_configuration(&sources).map_err(|e| refusal(&names.join(", "), &e))?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let path = format!("/clusters/{cluster}/deployment_configuration/");
    let v = client
        .call_text(Method::PUT, &path, "application/yaml", stream(&texts))
        .await?;
    serde_json::from_value(v).with_context(|| format!("unexpected answer to PUT {path}"))
}

/// The lines `plinthctl deploy start` prints about what a deployment runs: its strategy, how it was
/// chosen, and each phase's timeout.
pub fn describe_start(dep: &StartedDeployment) -> String {
    let Some(s) = &dep.strategy else {
        return "strategy: none (every node at once)\n".to_string();
    };
    let mut out = match &s.name {
        Some(name) => format!("strategy: {name}\n"),
        None => "strategy: none (every node at once)\n".to_string(),
    };
    if let Some(by) = &s.chosen_by {
        out.push_str(&format!("chosen by: {by}\n"));
    }
    for p in &s.phases {
        out.push_str(&format!(
            "phase {} (graph type {}): times out after {} s\n",
            p.name, p.graph_type, p.timeout_secs
        ));
    }
    out
}
