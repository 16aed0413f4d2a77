//! `phases` mode: the seed's five groups scaled up to many simulated agents. Each agent answers every task
//! list at once with successful results, so what is measured is the controller: for each phase of each
//! group, the time from the last result of one phase being sent to the first list of the next phase
//! arriving (the hand-over), and how long publishing a phase to all its nodes took.

use crate::sim::{self, Target};
use anyhow::{bail, Context, Result};
use base64::Engine as _;
use plinth_common::wire::TaskList;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Options of the phases mode.
#[derive(clap::Args)]
pub struct PhaseArgs {
    /// The controller's URL (https://host:port).
    #[arg(long)]
    controller: String,
    /// The controller's certificate (PEM).
    #[arg(long)]
    cert: PathBuf,
    /// A file holding an admin token.
    #[arg(long)]
    token_file: PathBuf,
    /// How many simulated nodes.
    #[arg(long, default_value_t = 1000)]
    nodes: usize,
    /// Registration concurrency.
    #[arg(long, default_value_t = 64)]
    register_concurrency: usize,
    /// Each simulated node waits this long (plus up to a quarter more, by its seed) before answering a
    /// list, so the deployment lasts long enough to be watched (the console's measurements use it).
    #[arg(long, default_value_t = 0)]
    answer_delay_ms: u64,
    /// The controller's process id, to read its CPU time during the deployment (same machine only).
    #[arg(long)]
    controller_pid: Option<u32>,
}

const STRATEGY: &str = r#"{"name": "five-groups", "groups": [
  {"name": "ntp-node", "critical": true, "depends_on": [], "selectors": [{"node_tags": ["ntp"]}],
   "success_criteria": {"minimum_successful_nodes": 1}},
  {"name": "control-nodes", "critical": true, "depends_on": ["ntp-node"],
   "selectors": [{"node_tags": ["control"], "rack_names": ["rack03"]}], "success_criteria": {"percent_successful_nodes": 90}},
  {"name": "compute-nodes-1", "critical": false, "depends_on": ["control-nodes"],
   "selectors": [{"node_tags": ["compute"], "rack_names": ["rack01"]}], "success_criteria": {"percent_successful_nodes": 50}},
  {"name": "compute-nodes-2", "critical": false, "depends_on": ["control-nodes"],
   "selectors": [{"node_tags": ["compute"], "rack_names": ["rack02"]}], "success_criteria": {"percent_successful_nodes": 50}},
  {"name": "monitoring-nodes", "critical": false, "depends_on": [],
   "selectors": [{"node_tags": ["monitoring"], "rack_names": ["rack01", "rack02", "rack03"]}]}
]}"#;

/// The group and placement of simulated node `i` of `n`: 1 ntp node, 10% control, 40% + 40% compute in
/// two racks, the rest monitoring.
fn place(i: usize, n: usize) -> (&'static str, &'static str, String) {
    let control = (n / 10).max(1);
    let compute = (n * 4 / 10).max(1);
    if i == 0 {
        ("ntp-node", "ntp", "rack01".into())
    } else if i <= control {
        ("control-nodes", "control", "rack03".into())
    } else if i <= control + compute {
        ("compute-nodes-1", "compute", "rack01".into())
    } else if i <= control + 2 * compute {
        ("compute-nodes-2", "compute", "rack02".into())
    } else {
        (
            "monitoring-nodes",
            "monitoring",
            format!("rack0{}", 1 + i % 3),
        )
    }
}

/// One phase of one group: its key, first list, last list, last result sent, and node count.
type Batch<'a> = (&'a (String, String), Instant, Instant, Instant, usize);

#[derive(Default)]
struct Timeline {
    /// (group, phase) → times lists arrived.
    lists: BTreeMap<(String, String), Vec<Instant>>,
    /// (group, phase) → times result batches were sent.
    results: BTreeMap<(String, String), Vec<Instant>>,
}

async fn agent(
    target: Arc<Target>,
    seed: usize,
    group: String,
    timeline: Arc<Mutex<Timeline>>,
    stop: Arc<AtomicBool>,
    answer_delay: Duration,
) -> Result<()> {
    let mut c = sim::connect(&target, sim::agent_config(&target, seed)?, None).await?;
    let mut after = 0u64;
    let mut n = 0u128;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let path = format!(
            "/agent/v1/tasks?nonce={:032x}&after={after}&wait=2",
            ((seed as u128) << 64) | n
        );
        let (status, body) = c.send("GET", &path, None).await?;
        if status == 204 {
            continue;
        }
        if status != 200 {
            bail!("sim-{seed}: poll got HTTP {status}");
        }
        let got = Instant::now();
        let envelope: serde_json::Value = serde_json::from_slice(&body)?;
        let payload = base64::engine::general_purpose::STANDARD
            .decode(envelope["payload"].as_str().context("envelope payload")?)?;
        let list: TaskList = serde_json::from_slice(&payload)?;
        after = list.revision;
        let key = (group.clone(), list.phase.clone());
        let results: Vec<_> = list
            .tasks
            .iter()
            .map(|t| {
                json!({"deployment_id": list.deployment_id, "revision": list.revision, "task_id": t.id, "attempt": 1,
                       "status": "succeeded", "last": true, "started_at_ms": 0, "duration_ms": 0})
            })
            .collect();
        if !answer_delay.is_zero() {
            let jitter = answer_delay / 4 * u32::try_from(seed % 8).unwrap_or(0) / 8;
            tokio::time::sleep(answer_delay + jitter).await;
        }
        let sent = Instant::now();
        {
            let mut tl = timeline.lock().unwrap_or_else(|p| p.into_inner());
            tl.lists.entry(key.clone()).or_default().push(got);
            tl.results.entry(key).or_default().push(sent);
        }
        c.json(
            "POST",
            "/agent/v1/results",
            Some(json!({"results": results})),
        )
        .await?;
    }
    Ok(())
}

/// Runs the phases mode.
pub async fn run(args: PhaseArgs) -> Result<()> {
    let target = sim::target(&args.controller, &args.cert)?;
    let token = std::fs::read_to_string(&args.token_file)
        .with_context(|| format!("read {}", args.token_file.display()))?
        .trim()
        .to_string();
    let n = args.nodes;
    let secs = sim::register_all(&target, n, args.register_concurrency, |i| {
        let (_, tag, rack) = place(i, n);
        (vec![tag.to_string()], Some(rack))
    })
    .await?;
    eprintln!("registered {n} nodes in {secs:.1} s");

    let mut op = sim::connect(&target, sim::operator_config(&target)?, Some(token)).await?;
    let task =
        |id: &str| json!({"id": id, "type": "shell", "tags": ["*"], "parameters": {"cmd": "true"}});
    let release = op
        .json("POST", "/api/v1/releases", Some(json!({"name": format!("bench-{}", std::process::id()), "version": "1",
            "graphs": {"prepare": {"tasks": [task("prepare-node")]}, "deploy": {"tasks": [task("deploy-node")]}}})))
        .await?;
    let cluster = op
        .json("POST", "/api/v1/clusters", Some(json!({"name": format!("bench-{}", std::process::id()), "release_id": release["id"]})))
        .await?;
    let cid = cluster["id"].as_u64().context("cluster id")?;
    let nodes = op.json("GET", "/api/v1/nodes?limit=10000", None).await?;
    let mut ids = BTreeMap::new();
    for node in nodes.as_array().into_iter().flatten() {
        if let (Some(name), Some(id)) = (node["name"].as_str(), node["id"].as_u64()) {
            if let Some(seed) = name
                .strip_prefix("sim-")
                .and_then(|s| s.parse::<usize>().ok())
            {
                if seed < n {
                    ids.insert(seed, id);
                }
            }
        }
    }
    let assign: Vec<_> = ids.values().map(|id| json!({"id": id})).collect();
    op.json(
        "PUT",
        &format!("/api/v1/clusters/{cid}/nodes"),
        Some(json!({"nodes": assign})),
    )
    .await?;
    let (status, body) = op
        .send(
            "POST",
            &format!("/api/v1/clusters/{cid}/strategies/"),
            Some(STRATEGY.to_string()),
        )
        .await?;
    if status != 201 {
        bail!(
            "strategy upload: HTTP {status}: {}",
            String::from_utf8_lossy(&body)
        );
    }

    let timeline = Arc::new(Mutex::new(Timeline::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut agents = tokio::task::JoinSet::new();
    for seed in 0..n {
        let (group, _, _) = place(seed, n);
        agents.spawn(agent(
            target.clone(),
            seed,
            group.to_string(),
            timeline.clone(),
            stop.clone(),
            Duration::from_millis(args.answer_delay_ms),
        ));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cpu_before = args.controller_pid.and_then(sim::cpu_ms);
    let started = Instant::now();
    let dep = op
        .json(
            "PUT",
            &format!("/api/v1/clusters/{cid}/deploy/?strategy=five-groups"),
            None,
        )
        .await?;
    let did = dep["id"].as_u64().context("deployment id")?;
    let report = loop {
        let r = op
            .json("GET", &format!("/api/v1/deployments/{did}"), None)
            .await?;
        if r["status"] != "running" {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let total = started.elapsed();
    let cpu_ms = cpu_before
        .zip(args.controller_pid.and_then(sim::cpu_ms))
        .map(|(a, b)| b - a);
    stop.store(true, Ordering::Relaxed);
    while let Some(r) = agents.join_next().await {
        r??;
    }

    let tl = timeline.lock().unwrap_or_else(|p| p.into_inner());
    let mut batches: Vec<Batch<'_>> = tl
        .lists
        .iter()
        .filter_map(|(k, times)| {
            let first = *times.iter().min()?;
            let last = *times.iter().max()?;
            let last_result = *tl.results.get(k)?.iter().max()?;
            Some((k, first, last, last_result, times.len()))
        })
        .collect();
    batches.sort_by_key(|b| b.1);
    let mut phases = Vec::new();
    for (i, (key, first, last, last_result, count)) in batches.iter().enumerate() {
        let handover_ms = batches
            .get(i + 1)
            .map(|next| next.1.saturating_duration_since(*last_result).as_secs_f64() * 1000.0);
        phases.push(json!({
            "group": key.0, "phase": key.1, "nodes": count,
            "spread_first_to_last_list_ms": last.duration_since(*first).as_secs_f64() * 1000.0,
            "handover_to_next_phase_ms": handover_ms,
        }));
    }
    let results_sent: usize = tl.results.values().map(Vec::len).sum();
    let handovers: Vec<f64> = phases
        .iter()
        .filter_map(|p| p["handover_to_next_phase_ms"].as_f64())
        .collect();
    let out = json!({
        "nodes": n,
        "status": report["status"],
        "deployment_seconds": total.as_secs_f64(),
        "phases": phases,
        "results": results_sent,
        "controller_cpu_ms": cpu_ms,
        "controller_cpu_us_per_result": cpu_ms.map(|ms| ms * 1000.0 / results_sent.max(1) as f64),
        "handover_ms_max": handovers.iter().cloned().fold(0.0, f64::max),
        "handover_ms_mean": if handovers.is_empty() { 0.0 } else { handovers.iter().sum::<f64>() / handovers.len() as f64 },
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
