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
    /// Tasks in the release's `deploy` graph, chained one after another.
    #[arg(long, default_value_t = 1)]
    tasks: usize,
}

pub(crate) const STRATEGY: &str = r#"{"name": "five-groups", "groups": [
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

/// The strategy's groups.
const GROUPS: [&str; 5] = [
    "ntp-node",
    "control-nodes",
    "compute-nodes-1",
    "compute-nodes-2",
    "monitoring-nodes",
];
/// The strategy's `depends_on` edges: (group depended on, dependent group).
const DEPENDS: [(&str, &str); 3] = [
    ("ntp-node", "control-nodes"),
    ("control-nodes", "compute-nodes-1"),
    ("control-nodes", "compute-nodes-2"),
];

/// The group and placement of simulated node `i` of `n`: 1 ntp node, 10% control, 40% + 40% compute in
/// two racks, the rest monitoring.
pub(crate) fn place(i: usize, n: usize) -> (&'static str, &'static str, String) {
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

/// When lists arrived and results were sent, by group and phase.
#[derive(Default)]
pub(crate) struct Timeline {
    /// (group, phase) → times lists arrived.
    lists: BTreeMap<(String, String), Vec<Instant>>,
    /// (group, phase) → times result batches were sent.
    results: BTreeMap<(String, String), Vec<Instant>>,
}

impl Timeline {
    /// Notes a list of `group`'s `phase` that arrived at `got` and was answered at `sent`.
    pub(crate) fn note(&mut self, group: &str, phase: &str, got: Instant, sent: Instant) {
        let key = (group.to_string(), phase.to_string());
        self.lists.entry(key.clone()).or_default().push(got);
        self.results.entry(key).or_default().push(sent);
    }
}

/// Successful results for every task of a list, as an agent that ran them all would send.
pub(crate) fn all_succeeded(list: &TaskList) -> serde_json::Value {
    let results: Vec<_> = list
        .tasks
        .iter()
        .map(|t| {
            json!({"deployment_id": list.deployment_id, "revision": list.revision, "task_id": t.id, "attempt": 1,
                   "status": "succeeded", "last": true, "started_at_ms": 0, "duration_ms": 0})
        })
        .collect();
    json!({"results": results})
}

/// Decodes a signed list envelope's payload (the simulated agents trust their controller).
pub(crate) fn decode_list(body: &[u8]) -> Result<TaskList> {
    let envelope: serde_json::Value = serde_json::from_slice(body)?;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(envelope["payload"].as_str().context("envelope payload")?)?;
    Ok(serde_json::from_slice(&payload)?)
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
        let list = decode_list(&body)?;
        after = list.revision;
        let results = all_succeeded(&list);
        if !answer_delay.is_zero() {
            let jitter = answer_delay / 4 * u32::try_from(seed % 8).unwrap_or(0) / 8;
            tokio::time::sleep(answer_delay + jitter).await;
        }
        let sent = Instant::now();
        timeline
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .note(&group, &list.phase, got, sent);
        c.json("POST", "/agent/v1/results", Some(results)).await?;
    }
    Ok(())
}

/// Runs the phases mode.
pub async fn run(args: PhaseArgs) -> Result<()> {
    let target = sim::target(&args.controller, &args.cert)?;
    let token = sim::read_token(&args.token_file)?;
    let n = args.nodes;
    let secs = sim::register_all(&target, n, args.register_concurrency, |i| {
        let (_, tag, rack) = place(i, n);
        (vec![tag.to_string()], Some(rack))
    })
    .await?;
    eprintln!("registered {n} nodes in {secs:.1} s");

    let mut op = sim::connect(&target, sim::operator_config(&target)?, Some(token.clone())).await?;
    let cid = setup_cluster(&mut op, n, args.tasks).await?;

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
    let (report, total) = deploy(&mut op, cid, &target, &token).await?;
    let cpu_ms = cpu_before
        .zip(args.controller_pid.and_then(sim::cpu_ms))
        .map(|(a, b)| b - a);
    stop.store(true, Ordering::Relaxed);
    while let Some(r) = agents.join_next().await {
        r??;
    }

    let tl = timeline.lock().unwrap_or_else(|p| p.into_inner());
    let sum = summary(&tl);
    let out = json!({
        "nodes": n,
        "status": report["status"],
        "deployment_seconds": total.as_secs_f64(),
        "tasks": args.tasks,
        "phases": sum["phases"],
        "results": sum["results"],
        "controller_cpu_ms": cpu_ms,
        "controller_cpu_us_per_result": cpu_ms.map(|ms| ms * 1000.0 / sum["results"].as_f64().unwrap_or(0.0).max(1.0)),
        "handover_ms_max": sum["handover_ms_max"],
        "handover_ms_mean": sum["handover_ms_mean"],
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

/// A release whose `deploy` graph holds `tasks` tasks in a chain (after one `prepare` task), a cluster
/// of simulated nodes `sim-0` .. `sim-{n-1}`, and the five-group strategy. Returns the cluster's id.
pub(crate) async fn setup_cluster(op: &mut sim::Conn, n: usize, tasks: usize) -> Result<u64> {
    let task = |id: &str, requires: Option<String>| {
        json!({"id": id, "type": "shell", "tags": ["*"], "parameters": {"cmd": "true"},
               "requires": requires.into_iter().collect::<Vec<_>>()})
    };
    let deploy: Vec<_> = (0..tasks.max(1))
        .map(|i| {
            let id = if tasks <= 1 {
                "deploy-node".to_string()
            } else {
                format!("deploy-{i:02}")
            };
            task(&id, (i > 0).then(|| format!("deploy-{:02}", i - 1)))
        })
        .collect();
    let release = op
        .json("POST", "/api/v1/releases", Some(json!({"name": format!("bench-{}", std::process::id()), "version": "1",
            "graphs": {"prepare": {"tasks": [task("prepare-node", None)]}, "deploy": {"tasks": deploy}}})))
        .await?;
    let cluster = op
        .json("POST", "/api/v1/clusters", Some(json!({"name": format!("bench-{}", std::process::id()), "release_id": release["id"]})))
        .await?;
    let cid = cluster["id"].as_u64().context("cluster id")?;
    sim::assign_simulated(op, cid, n).await?;
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
    Ok(cid)
}

/// Starts a five-group deployment of cluster `cid` and waits for it to finish; returns its final record
/// and how long it took.
/// Deploys cluster `cid` and follows its record until it ends. A status read whose connection the
/// controller closed (a keep-alive connection closed as the next request went out) is sent again on a
/// new connection, as an operator's script would, up to `RECONNECTS` times.
pub(crate) async fn deploy(
    op: &mut sim::Conn,
    cid: u64,
    target: &sim::Target,
    token: &str,
) -> Result<(serde_json::Value, Duration)> {
    const RECONNECTS: usize = 5;
    let mut reconnects = 0;
    let started = Instant::now();
    let dep = op
        .json(
            "PUT",
            &format!("/api/v1/clusters/{cid}/deploy/?strategy=five-groups"),
            None,
        )
        .await?;
    let did = dep["id"].as_u64().context("deployment id")?;
    loop {
        // The record, not the report: a report reads back every list and result of the deployment
        // (about 150 MiB of the controller's heap for a while at 5,000 nodes and 21 tasks each), which
        // four times a second would be the measurement's largest cost.
        let path = format!("/api/v1/deployments/?cluster_id={cid}");
        let records = match op.json("GET", &path, None).await {
            Ok(records) => records,
            Err(e) if reconnects < RECONNECTS && e.downcast_ref::<hyper::Error>().is_some() => {
                reconnects += 1;
                eprintln!("reading the deployment's record: {e:#}; again on a new connection");
                let config = sim::operator_config(target)?;
                *op = sim::connect(target, config, Some(token.to_string())).await?;
                continue;
            }
            Err(e) => return Err(e),
        };
        let r = records
            .as_array()
            .and_then(|all| all.iter().find(|r| r["id"].as_u64() == Some(did)))
            .cloned()
            .context("the deployment's record")?;
        if r["status"] != "running" {
            return Ok((r, started.elapsed()));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Each phase of each group, in the order they started: nodes, spread of list arrival, and the
/// hand-over to the next phase (last result sent → first list of the next phase); the results sent; and
/// the hand-overs' maximum and mean.
pub(crate) fn summary(tl: &Timeline) -> serde_json::Value {
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
    // Along the strategy's edges: a group's `prepare` → its `deploy`, and a group's last phase → the first
    // phase of each group that depends on it. The last result of the one sent → the first list of the other.
    let find =
        |group: &str, phase: &str| batches.iter().find(|b| b.0 .0 == group && b.0 .1 == phase);
    let mut edges: Vec<(&str, &str, &str, &str)> = GROUPS
        .iter()
        .map(|g| (*g, "prepare", *g, "deploy"))
        .collect();
    edges.extend(
        DEPENDS
            .iter()
            .map(|(from, to)| (*from, "deploy", *to, "prepare")),
    );
    let mut along = Vec::new();
    for (fg, fp, tg, tp) in edges {
        if let (Some(from), Some(to)) = (find(fg, fp), find(tg, tp)) {
            let ms = to.1.saturating_duration_since(from.3).as_secs_f64() * 1000.0;
            along.push(json!({"from": format!("{fg}/{fp}"), "to": format!("{tg}/{tp}"), "ms": ms}));
        }
    }
    let along_max = along
        .iter()
        .filter_map(|h| h["ms"].as_f64())
        .fold(0.0, f64::max);
    json!({
        "phases": phases,
        "results": results_sent,
        "handovers": along,
        "handover_along_strategy_ms_max": along_max,
        "handover_ms_max": handovers.iter().cloned().fold(0.0, f64::max),
        "handover_ms_mean": if handovers.is_empty() { 0.0 } else { handovers.iter().sum::<f64>() / handovers.len() as f64 },
    })
}
