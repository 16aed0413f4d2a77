//! `poll` mode: authenticated polls per second over TLS keep-alive, and their latency.

use crate::sim::{self, Target};
use anyhow::{bail, Result};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Options of the poll mode.
#[derive(clap::Args)]
pub struct PollArgs {
    /// The controller's URL (https://host:port).
    #[arg(long)]
    controller: String,
    /// The controller's certificate (PEM).
    #[arg(long)]
    cert: PathBuf,
    /// How many simulated nodes to register first.
    #[arg(long, default_value_t = 10_000)]
    nodes: usize,
    /// How many of them poll at once, each over its own keep-alive connection.
    #[arg(long, default_value_t = 256)]
    connections: usize,
    /// How long to poll, in seconds.
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    /// Registration concurrency.
    #[arg(long, default_value_t = 64)]
    register_concurrency: usize,
}

pub(crate) async fn poller(target: Arc<Target>, seed: usize, until: Instant) -> Result<Vec<u32>> {
    let mut c = sim::connect(&target, sim::agent_config(&target, seed)?, None).await?;
    let mut latencies = Vec::with_capacity(100_000);
    let mut n: u64 = 0;
    while Instant::now() < until {
        n += 1;
        let path = format!(
            "/agent/v1/tasks?nonce={:032x}&after=0&wait=0",
            ((seed as u128) << 64) | n as u128
        );
        let start = Instant::now();
        let (status, _) = c.send("GET", &path, None).await?;
        latencies.push(start.elapsed().as_micros().min(u32::MAX as u128) as u32);
        if status != 204 && status != 200 {
            bail!("poll of sim-{seed} got HTTP {status}");
        }
    }
    Ok(latencies)
}

/// Runs the poll mode.
pub async fn run(args: PollArgs) -> Result<()> {
    let target = sim::target(&args.controller, &args.cert)?;
    let secs = sim::register_all(&target, args.nodes, args.register_concurrency, |_| {
        (vec!["sim".into()], None)
    })
    .await?;
    eprintln!(
        "registered {} nodes in {secs:.1} s ({:.0}/s)",
        args.nodes,
        args.nodes as f64 / secs
    );

    let connections = args.connections.min(args.nodes.max(1));
    let until = Instant::now() + Duration::from_secs(args.seconds);
    let started = Instant::now();
    let mut pollers = tokio::task::JoinSet::new();
    for i in 0..connections {
        // Spread the pollers over the registered nodes.
        let seed = i * args.nodes.max(1) / connections;
        pollers.spawn(poller(target.clone(), seed, until));
    }
    let mut all = Vec::new();
    while let Some(r) = pollers.join_next().await {
        all.extend(r??);
    }
    let secs = started.elapsed().as_secs_f64();
    all.sort_unstable();
    let report = serde_json::json!({
        "registered_nodes": args.nodes,
        "connections": connections,
        "seconds": secs,
        "polls": all.len(),
        "polls_per_second": all.len() as f64 / secs,
        "latency_ms": {"p50": sim::percentile_ms(&all, 0.50), "p90": sim::percentile_ms(&all, 0.90),
                       "p99": sim::percentile_ms(&all, 0.99), "max": sim::percentile_ms(&all, 1.0)},
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
