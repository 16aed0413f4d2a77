//! `metrics-cost` mode: what exporting metrics costs the pull loop. It starts controllers itself, in
//! turn without and with `--metrics-listen` (each fresh, on a data directory of its own), and runs the
//! `poll` mode's load against each: the same nodes, connections and time. While metrics are on, a
//! scraper reads `/metrics` every `--scrape-ms`, as Prometheus would. Runs alternate (off, on, on, off,
//! ...) so that the machine's drift falls on both; the report gives every run and the ratio of the
//! medians, on over off.

use crate::poll::poller;
use crate::sim;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Options of the metrics-cost mode.
#[derive(clap::Args)]
pub struct MetricsCostArgs {
    /// The `plinth-controller` binary (default: beside this one).
    #[arg(long)]
    controller_bin: Option<PathBuf>,
    /// How many simulated nodes to register in each controller.
    #[arg(long, default_value_t = 10_000)]
    nodes: usize,
    /// How many of them poll at once, each over its own keep-alive connection.
    #[arg(long, default_value_t = 256)]
    connections: usize,
    /// How long each run polls, in seconds.
    #[arg(long, default_value_t = 15)]
    seconds: u64,
    /// Runs of each kind (metrics off, metrics on).
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Milliseconds between two scrapes of `/metrics` while metrics are on.
    #[arg(long, default_value_t = 1000)]
    scrape_ms: u64,
    /// Registration concurrency.
    #[arg(long, default_value_t = 64)]
    register_concurrency: usize,
}

/// A controller this mode started; killed on drop.
struct Started {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Starts a controller on a fresh data directory, its metrics listener on `metrics` if given; answers
/// it with its URL and certificate once it serves.
async fn start(bin: &PathBuf, metrics: Option<u16>) -> Result<(Started, String, PathBuf)> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let port = free_port()?;
    let log = std::fs::File::create(dir.path().join("controller.log"))?;
    let mut command = Command::new(bin);
    command
        .arg("--data-dir")
        .arg(&data)
        .args(["serve", "--auto-accept"])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--registrations-per-minute", "1000000"])
        .args(["--max-connections-per-address", "100000"]);
    if let Some(m) = metrics {
        command.args(["--metrics-listen", &format!("127.0.0.1:{m}")]);
    }
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .with_context(|| format!("cannot start {}", bin.display()))?;
    let started = Started { child, _dir: dir };
    let cert = data.join("tls/cert.pem");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(cert.exists() && data.join("listening.json").exists()) {
        if Instant::now() > deadline {
            bail!("the controller did not start");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok((started, format!("https://127.0.0.1:{port}"), cert))
}

/// One plain HTTP GET of `/metrics`; whether it answered 200.
async fn scrape(port: u16) -> Result<bool> {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).await?;
    Ok(answer.starts_with(b"HTTP/1.1 200"))
}

/// One run's figures.
struct Figures {
    polls_per_second: f64,
    p99_ms: f64,
    scrapes: u64,
}

async fn one_run(args: &MetricsCostArgs, bin: &PathBuf, metrics: bool) -> Result<Figures> {
    let metrics_port = if metrics { Some(free_port()?) } else { None };
    let (_controller, url, cert) = start(bin, metrics_port).await?;
    let target = sim::target(&url, &cert)?;
    sim::register_all(&target, args.nodes, args.register_concurrency, |_| {
        (vec!["sim".into()], None)
    })
    .await?;
    let stop = Arc::new(AtomicBool::new(false));
    let scrapes = Arc::new(AtomicU64::new(0));
    let scraper = metrics_port.map(|port| {
        let (stop, scrapes, every) = (
            stop.clone(),
            scrapes.clone(),
            Duration::from_millis(args.scrape_ms),
        );
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                match scrape(port).await {
                    Ok(true) => {
                        scrapes.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(false) => bail!("a scrape of /metrics did not answer 200"),
                    Err(e) => return Err(e),
                }
                tokio::time::sleep(every).await;
            }
            Ok(())
        })
    });
    let connections = args.connections.min(args.nodes.max(1));
    let until = Instant::now() + Duration::from_secs(args.seconds);
    let started = Instant::now();
    let mut pollers = tokio::task::JoinSet::new();
    for i in 0..connections {
        let seed = i * args.nodes.max(1) / connections;
        pollers.spawn(poller(target.clone(), seed, until));
    }
    let mut all = Vec::new();
    while let Some(r) = pollers.join_next().await {
        all.extend(r??);
    }
    let secs = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    if let Some(s) = scraper {
        s.await??;
    }
    all.sort_unstable();
    Ok(Figures {
        polls_per_second: all.len() as f64 / secs,
        p99_ms: sim::percentile_ms(&all, 0.99),
        scrapes: scrapes.load(Ordering::Relaxed),
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Runs the metrics-cost mode.
pub async fn run(args: MetricsCostArgs) -> Result<()> {
    let bin = match &args.controller_bin {
        Some(b) => b.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("the binary's directory")?
            .join("plinth-controller"),
    };
    let mut runs = Vec::new();
    for round in 0..args.rounds.max(1) {
        // off, on, then on, off: each kind goes first as often.
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for metrics in order {
            let f = one_run(&args, &bin, metrics).await?;
            eprintln!(
                "metrics {}: {:.0} polls/s, p99 {:.1} ms, {} scrapes",
                if metrics { "on" } else { "off" },
                f.polls_per_second,
                f.p99_ms,
                f.scrapes
            );
            runs.push((metrics, f));
        }
    }
    let of = |on: bool| -> Vec<f64> {
        runs.iter()
            .filter(|(m, _)| *m == on)
            .map(|(_, f)| f.polls_per_second)
            .collect()
    };
    let (off, on) = (median(of(false)), median(of(true)));
    let report = serde_json::json!({
        "registered_nodes": args.nodes,
        "connections": args.connections,
        "seconds_each": args.seconds,
        "scrape_ms": args.scrape_ms,
        "runs": runs.iter().map(|(m, f)| serde_json::json!({
            "metrics": if *m { "on" } else { "off" },
            "polls_per_second": f.polls_per_second.round(),
            "p99_ms": f.p99_ms,
            "scrapes": f.scrapes,
        })).collect::<Vec<_>>(),
        "median_polls_per_second": {"off": off.round(), "on": on.round()},
        "on_over_off": if off > 0.0 { (on / off * 1000.0).round() / 1000.0 } else { 0.0 },
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
