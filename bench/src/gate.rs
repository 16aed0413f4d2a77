//! `gate` mode: what cross-node waits cost the controller. One leader node runs `lead`; every other
//! node runs `follow`, which waits for `lead` on the leader (`cross_depends`), so each follower's agent
//! asks the controller's gate and holds the question open. The leader answers only after `--hold-secs`.
//! Measured: the controller's CPU time while the followers wait (their cost), and the time from the
//! leader's result to each follower being told to go (the wake-up).

use crate::sim::{self, Target};
use anyhow::{bail, Context, Result};
use base64::Engine as _;
use plinth_common::wire::TaskList;
use serde_json::json;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Options of the gate mode.
#[derive(clap::Args)]
pub struct GateArgs {
    /// The controller's URL (https://host:port).
    #[arg(long)]
    controller: String,
    /// The controller's certificate (PEM).
    #[arg(long)]
    cert: PathBuf,
    /// A file holding an admin token.
    #[arg(long)]
    token_file: PathBuf,
    /// The controller's process id, to read its CPU time (same machine only).
    #[arg(long)]
    controller_pid: Option<u32>,
    /// How many waiting (follower) nodes; one more node leads.
    #[arg(long, default_value_t = 1000)]
    waiting: usize,
    /// How long the leader holds its task once every follower waits.
    #[arg(long, default_value_t = 20)]
    hold_secs: u64,
    /// Registration concurrency.
    #[arg(long, default_value_t = 64)]
    register_concurrency: usize,
}

/// What the simulated agents saw.
#[derive(Default)]
struct Seen {
    /// Followers that have asked the gate at least once.
    asking: usize,
    /// Gate requests sent (all followers).
    asks: u64,
    /// When each follower was told to go.
    ready_at: Vec<Instant>,
}

/// Polls until a list arrives; returns it.
async fn next_list(c: &mut sim::Conn, seed: usize, after: u64, n: &mut u128) -> Result<TaskList> {
    loop {
        *n += 1;
        let path = format!(
            "/agent/v1/tasks?nonce={:032x}&after={after}&wait=30",
            ((seed as u128) << 64) | *n
        );
        let (status, body) = c.send("GET", &path, None).await?;
        if status == 204 {
            continue;
        }
        if status != 200 {
            bail!("sim-{seed}: poll got HTTP {status}");
        }
        let envelope: serde_json::Value = serde_json::from_slice(&body)?;
        let payload = base64::engine::general_purpose::STANDARD
            .decode(envelope["payload"].as_str().context("envelope payload")?)?;
        return Ok(serde_json::from_slice(&payload)?);
    }
}

async fn succeed(c: &mut sim::Conn, list: &TaskList) -> Result<()> {
    let results: Vec<_> = list
        .tasks
        .iter()
        .map(|t| {
            json!({"deployment_id": list.deployment_id, "revision": list.revision, "task_id": t.id, "attempt": 1,
                   "status": "succeeded", "last": true, "started_at_ms": 0, "duration_ms": 0})
        })
        .collect();
    c.json(
        "POST",
        "/agent/v1/results",
        Some(json!({"results": results})),
    )
    .await?;
    Ok(())
}

async fn follower(target: Arc<Target>, seed: usize, seen: Arc<Mutex<Seen>>) -> Result<()> {
    let mut c = sim::connect(&target, sim::agent_config(&target, seed)?, None).await?;
    let mut n = 0u128;
    let list = next_list(&mut c, seed, 0, &mut n).await?;
    for task in list.tasks.iter().filter(|t| t.gated) {
        let mut first = true;
        loop {
            n += 1;
            let path = format!(
                "/agent/v1/gate?deployment={}&task={}&nonce={:032x}&wait=30",
                list.deployment_id,
                task.id,
                ((seed as u128) << 64) | n
            );
            {
                let mut s = seen.lock().unwrap_or_else(|p| p.into_inner());
                s.asks += 1;
                if first {
                    s.asking += 1;
                    first = false;
                }
            }
            let answer = c.json("GET", &path, None).await?;
            let payload = base64::engine::general_purpose::STANDARD
                .decode(answer["payload"].as_str().context("gate payload")?)?;
            let answer: serde_json::Value = serde_json::from_slice(&payload)?;
            if answer["blocked"] == true {
                bail!("sim-{seed}: gate says blocked: {answer}");
            }
            if answer["ready"] == true {
                seen.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .ready_at
                    .push(Instant::now());
                break;
            }
        }
    }
    succeed(&mut c, &list).await
}

/// Runs the gate mode.
pub async fn run(args: GateArgs) -> Result<()> {
    let target = sim::target(&args.controller, &args.cert)?;
    let token = sim::read_token(&args.token_file)?;
    let n = args.waiting + 1;
    let secs = sim::register_all(&target, n, args.register_concurrency, |i| {
        let tag = if i == 0 { "leader" } else { "follower" };
        (vec![tag.to_string()], None)
    })
    .await?;
    eprintln!("registered {n} nodes in {secs:.1} s");

    let mut op = sim::connect(&target, sim::operator_config(&target)?, Some(token)).await?;
    let release = op
        .json("POST", "/api/v1/releases", Some(json!({"name": format!("gate-{}", std::process::id()), "version": "1",
            "graphs": {"default": {"tasks": [
                {"id": "lead", "type": "shell", "tags": ["leader"], "parameters": {"cmd": "true"}},
                {"id": "follow", "type": "shell", "tags": ["follower"], "parameters": {"cmd": "true"},
                 "cross_depends": [{"name": "lead", "tags": ["leader"]}]}
            ]}}})))
        .await?;
    let cluster = op
        .json("POST", "/api/v1/clusters", Some(json!({"name": format!("gate-{}", std::process::id()), "release_id": release["id"]})))
        .await?;
    let cid = cluster["id"].as_u64().context("cluster id")?;
    sim::assign_simulated(&mut op, cid, n).await?;

    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut agents = tokio::task::JoinSet::new();
    for seed in 1..n {
        agents.spawn(follower(target.clone(), seed, seen.clone()));
    }
    let mut leader = sim::connect(&target, sim::agent_config(&target, 0)?, None).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let dep = op
        .json("PUT", &format!("/api/v1/clusters/{cid}/deploy/"), None)
        .await?;
    let did = dep["id"].as_u64().context("deployment id")?;
    let mut polls = 0u128;
    let lead = next_list(&mut leader, 0, 0, &mut polls).await?;
    // Wait until every follower holds a gate question open.
    let all_asking = Instant::now();
    while seen.lock().unwrap_or_else(|p| p.into_inner()).asking < args.waiting {
        if all_asking.elapsed() > Duration::from_secs(300) {
            bail!("the followers did not all reach the gate within 300 s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let asks_before = seen.lock().unwrap_or_else(|p| p.into_inner()).asks;
    let cpu_before = args.controller_pid.and_then(sim::cpu_ms);
    tokio::time::sleep(Duration::from_secs(args.hold_secs)).await;
    let cpu_after = args.controller_pid.and_then(sim::cpu_ms);
    let asks_held = seen.lock().unwrap_or_else(|p| p.into_inner()).asks - asks_before;
    let released = Instant::now();
    succeed(&mut leader, &lead).await?;
    while let Some(r) = agents.join_next().await {
        r??;
    }
    let report = loop {
        let r = op
            .json("GET", &format!("/api/v1/deployments/{did}"), None)
            .await?;
        if r["status"] != "running" {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    let mut wake: Vec<u32> = seen
        .ready_at
        .iter()
        .map(|t| {
            u32::try_from(t.saturating_duration_since(released).as_micros()).unwrap_or(u32::MAX)
        })
        .collect();
    wake.sort_unstable();
    let cpu_ms = cpu_before.zip(cpu_after).map(|(a, b)| b - a);
    let out = json!({
        "waiting_agents": args.waiting,
        "status": report["status"],
        "hold_seconds": args.hold_secs,
        "gate_requests_while_held": asks_held,
        "controller_cpu_ms_while_held": cpu_ms,
        "controller_cpu_percent_while_held": cpu_ms.map(|ms| ms / (args.hold_secs as f64 * 10.0)),
        "wake_ms_p50": sim::percentile_ms(&wake, 0.5),
        "wake_ms_p99": sim::percentile_ms(&wake, 0.99),
        "wake_ms_max": sim::percentile_ms(&wake, 1.0),
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
