//! `fleet` mode: many simulated agents behaving as the agent does. Each has its own node key in its own
//! client certificate and its own TLS connection, registers on it, then holds a long poll
//! (`wait` seconds, the agent's default 25), sends a heartbeat on the same connection when one is due
//! (every `heartbeat_secs`, ±10%), and answers every list with results. Measured while they all hold
//! polls: long polls answered per second and how far past their wait they were answered, heartbeat
//! latency, the throughput and latency of extra `wait=0` pollers (the `poll` mode's measure, with the
//! fleet connected), and the controller's memory and CPU. With `--deploy`, the fleet is then deployed
//! (the five-group strategy, a `deploy` graph of `--tasks` chained tasks) and the hand-overs measured.
//!
//! One process holds at most its open-file limit of connections. A larger fleet is several processes,
//! each simulating its own range of agents (`--first-agent`, `--nodes`) out of the whole fleet
//! (`--fleet`, which placement into groups and `--deploy` count): the others run with `--agents-only`
//! (register, then answer lists until stopped) and one measures and deploys. Its hand-over figures then
//! come from its own agents only: each is at least the fleet's true hand-over (its last result is no
//! later than the fleet's, its first list of the next phase no earlier).
//!
//! A simulated agent whose connection drops connects again, as the agent does, at most three times
//! (`agents_reconnected` in the output counts them); one that cannot, or gets an HTTP error, fails the run.
//!
//! A real agent sends heartbeats on a second pooled connection while its poll is held; a simulated one
//! keeps to one connection (one descriptor per agent on both sides), so it heartbeats between polls: at
//! most once a poll.

use crate::phases::{self, Timeline};
use crate::sim::{self, Target};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Options of the fleet mode.
#[derive(clap::Args)]
pub struct FleetArgs {
    /// The controller's URL (https://host:port); repeat it for several controllers sharing one database
    /// (agents are spread over them in turn; the operator uses the first).
    #[arg(long, required = true)]
    controller: Vec<String>,
    /// The controller's certificate (PEM).
    #[arg(long)]
    cert: PathBuf,
    /// How many simulated agents (in this process).
    #[arg(long, default_value_t = 10_000)]
    nodes: usize,
    /// The number of this process's first agent (agent `i` is node `sim-i`, with its own key).
    #[arg(long, default_value_t = 0)]
    first_agent: usize,
    /// How many agents the whole fleet has, over every load generator process (default: up to this
    /// process's last).
    #[arg(long)]
    fleet: Option<usize>,
    /// Only run the agents: register, print the registration figures, then poll and answer lists until
    /// stopped (another process measures and deploys).
    #[arg(long)]
    agents_only: bool,
    /// How many agents connect and register at once.
    #[arg(long, default_value_t = 64)]
    register_concurrency: usize,
    /// Long-poll wait in seconds (the agent's `poll_wait_secs`).
    #[arg(long, default_value_t = 25)]
    wait: u64,
    /// Heartbeat period in seconds (the agent's `heartbeat_secs`).
    #[arg(long, default_value_t = 15)]
    heartbeat_secs: u64,
    /// Source addresses 127.0.0.2, 127.0.0.3, ... to spread the connections over (default: one per
    /// 20,000 agents of the fleet).
    #[arg(long)]
    addresses: Option<usize>,
    /// How long to measure once every agent holds its poll, in seconds.
    #[arg(long, default_value_t = 60)]
    hold_seconds: u64,
    /// Extra connections polling with `wait=0` during the measurement (0: none).
    #[arg(long, default_value_t = 64)]
    probe_connections: usize,
    /// The controllers' process ids, to read their memory and CPU time (same machine only; repeat it).
    #[arg(long)]
    controller_pid: Vec<u32>,
    /// Then deploy the fleet (needs `--token-file`).
    #[arg(long)]
    deploy: bool,
    /// A file holding an admin token (for `--deploy`).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Tasks in the deployed `deploy` graph, chained.
    #[arg(long, default_value_t = 20)]
    tasks: usize,
    /// A machine's facts as `plinth-agent facts` prints them: every agent reports them as its own
    /// (its host name, MACs, serials and UUID changed by its number). Without it, an agent reports
    /// only its host name.
    #[arg(long)]
    facts_file: Option<PathBuf>,
}

/// What the agents share: counters, the measurement window's samples, the deployment's timeline.
#[derive(Default)]
struct Shared {
    registered: AtomicUsize,
    polling: AtomicUsize,
    measuring: AtomicBool,
    /// Long polls answered 204 during the window: how far past their wait (µs).
    overshoot_us: Mutex<Vec<u32>>,
    /// Lists received during the window.
    lists: AtomicUsize,
    /// Heartbeat latencies during the window (µs).
    heartbeat_us: Mutex<Vec<u32>>,
    timeline: Mutex<Timeline>,
    failed: AtomicUsize,
    /// Connections lost and made again (see [`Link`]).
    reconnects: AtomicUsize,
}

/// After this many lost connections a simulated agent says so (once) on standard error; it goes on
/// connecting again, as a real agent does. (It used to give up, which ended its whole process and took
/// a sixth of a 100,000-agent fleet with it on a machine loaded past what its controllers could
/// answer in time; the run's deadline, not an agent, decides when a deployment has failed.)
const RECONNECTS_TO_REPORT: usize = 12;

/// A simulated agent's connection, made again after a transport error as the agent does (it backs off,
/// one second more each time up to ten, and connects again, also when connecting fails): on a machine
/// this loaded, connections can drop and handshakes fail while the controller is busiest, and that
/// should be counted, not end the run. An HTTP answer, whatever its status, is not retried.
struct Link<'a> {
    c: sim::Conn,
    target: &'a Target,
    plan: &'a AgentPlan,
    shared: &'a Shared,
    lost: usize,
}

impl Link<'_> {
    async fn send(
        &mut self,
        method: &str,
        path: &str,
        body: Option<String>,
    ) -> Result<(u16, hyper::body::Bytes)> {
        loop {
            match self.c.send(method, path, body.clone()).await {
                Ok(answer) => return Ok(answer),
                Err(e) => self.reconnect(e).await?,
            }
        }
    }

    /// Backs off and connects again after `lost`, until a connection is made.
    async fn reconnect(&mut self, mut lost: anyhow::Error) -> Result<()> {
        loop {
            if self.lost == RECONNECTS_TO_REPORT {
                eprintln!(
                    "sim-{}: {} connections lost, connecting again: {lost:#}",
                    self.plan.seed, self.lost
                );
            }
            self.lost += 1;
            self.shared.reconnects.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_secs(self.lost.min(10) as u64)).await;
            let config = sim::agent_config(self.target, self.plan.seed)?;
            match sim::connect_from(self.target, config, None, Some(self.plan.local)).await {
                Ok(c) => {
                    self.c = c;
                    return Ok(());
                }
                Err(e) => lost = e.context(format!("sim-{}: connecting again", self.plan.seed)),
            }
        }
    }

    /// Sends JSON and requires a 2xx answer.
    async fn json(&mut self, method: &str, path: &str, body: serde_json::Value) -> Result<()> {
        let (status, answer) = self.send(method, path, Some(body.to_string())).await?;
        if !(200..300).contains(&status) {
            bail!(
                "{method} {path}: HTTP {status}: {}",
                String::from_utf8_lossy(&answer)
            );
        }
        Ok(())
    }
}

fn micros(d: Duration) -> u32 {
    d.as_micros().min(u32::MAX as u128) as u32
}

/// The heartbeat period with the agent's ±10%, varied by seed.
fn heartbeat_period(secs: u64, seed: usize) -> Duration {
    let base = Duration::from_secs(secs.max(1));
    base.mul_f64(0.9 + 0.2 * ((seed * 7919) % 1000) as f64 / 1000.0)
}

struct AgentPlan {
    seed: usize,
    local: IpAddr,
    /// Group, tag and rack when deploying.
    place: Option<(&'static str, &'static str, String)>,
    /// The machine's facts it reports as its own (see `--facts-file`).
    facts: Option<Arc<Value>>,
}

async fn agent(
    target: Arc<Target>,
    plan: AgentPlan,
    shared: Arc<Shared>,
    gate: Arc<Semaphore>,
    wait: u64,
    heartbeat_secs: u64,
) -> Result<()> {
    let seed = plan.seed;
    let permit = gate.acquire_owned().await?;
    let c = sim::connect_from(
        &target,
        sim::agent_config(&target, seed)?,
        None,
        Some(plan.local),
    )
    .await?;
    let mut c = Link {
        c,
        target: &target,
        plan: &plan,
        shared: &shared,
        lost: 0,
    };
    let (tags, rack) = match &plan.place {
        Some((_, tag, rack)) => (vec![tag.to_string()], Some(rack.clone())),
        None => (vec!["sim".to_string()], None),
    };
    let body = json!({
        "agent_version": "loadgen", "name": format!("sim-{seed}"),
        "facts": crate::facts::for_agent(plan.facts.as_deref(), seed), "tags": tags, "rack": rack
    });
    c.json("POST", "/agent/v1/register", body).await?;
    shared.registered.fetch_add(1, Ordering::Relaxed);
    drop(permit);

    let period = heartbeat_period(heartbeat_secs, seed);
    let mut next_heartbeat = Instant::now() + period;
    let mut after = 0u64;
    let mut n = 0u128;
    let mut counted = false;
    loop {
        if Instant::now() >= next_heartbeat {
            let start = Instant::now();
            let (status, _) = c.send("POST", "/agent/v1/heartbeat", None).await?;
            if status != 204 {
                bail!("sim-{seed}: heartbeat got HTTP {status}");
            }
            if shared.measuring.load(Ordering::Relaxed) {
                let us = micros(start.elapsed());
                shared
                    .heartbeat_us
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(us);
            }
            next_heartbeat = Instant::now() + period;
        }
        n += 1;
        let path = format!(
            "/agent/v1/tasks?nonce={:032x}&after={after}&wait={wait}",
            ((seed as u128) << 64) | n
        );
        if !counted {
            counted = true;
            shared.polling.fetch_add(1, Ordering::Relaxed);
        }
        let start = Instant::now();
        let (status, body) = c.send("GET", &path, None).await?;
        let took = start.elapsed();
        match status {
            204 => {
                if shared.measuring.load(Ordering::Relaxed) {
                    let over = micros(took.saturating_sub(Duration::from_secs(wait)));
                    shared
                        .overshoot_us
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(over);
                }
            }
            200 => {
                let got = Instant::now();
                let list = phases::decode_list(&body)?;
                after = list.revision;
                if shared.measuring.load(Ordering::Relaxed) {
                    shared.lists.fetch_add(1, Ordering::Relaxed);
                }
                let results = phases::all_succeeded(&list);
                let sent = Instant::now();
                if let Some((group, _, _)) = &plan.place {
                    shared
                        .timeline
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .note(group, &list.phase, got, sent);
                }
                c.json("POST", "/agent/v1/results", results).await?;
            }
            other => bail!("sim-{seed}: poll got HTTP {other}"),
        }
    }
}

/// Each controller's memory and CPU time (one object per process id, in order).
fn snapshot(pids: &[u32]) -> serde_json::Value {
    let each: Vec<serde_json::Value> = pids
        .iter()
        .map(|pid| json!({"rss_mib": sim::rss_mib(*pid), "cpu_ms": sim::cpu_ms(*pid)}))
        .collect();
    match each.as_slice() {
        [one] => one.clone(),
        _ => json!(each),
    }
}

/// The CPU time of every controller, summed; `None` when one cannot be read.
fn cpu_ms(pids: &[u32]) -> Option<f64> {
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|pid| sim::cpu_ms(*pid)).sum()
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn percentiles(mut v: Vec<u32>) -> serde_json::Value {
    v.sort_unstable();
    json!({"count": v.len(), "p50": sim::percentile_ms(&v, 0.5), "p99": sim::percentile_ms(&v, 0.99),
           "max": sim::percentile_ms(&v, 1.0)})
}

/// Runs the fleet mode.
pub async fn run(args: FleetArgs) -> Result<()> {
    let files = sim::raise_open_files()?;
    let needed = args.nodes + args.probe_connections + 64;
    if (files as usize) < needed {
        bail!(
            "{} agents need about {needed} open files; this process may open {files} (raise the hard limit: ulimit -Hn)",
            args.nodes
        );
    }
    let targets = args
        .controller
        .iter()
        .map(|c| sim::target(c, &args.cert))
        .collect::<Result<Vec<_>>>()?;
    let target = targets[0].clone();
    let n = args.nodes;
    let first = args.first_agent;
    let fleet = args.fleet.unwrap_or(first + n).max(first + n);
    // Counted over the whole fleet: every process binds its connections to the same addresses.
    let addresses = args
        .addresses
        .unwrap_or(fleet.div_ceil(20_000))
        .clamp(1, 250);
    let shared = Arc::new(Shared::default());
    let gate = Arc::new(Semaphore::new(args.register_concurrency.max(1)));
    let started = Instant::now();
    let mut agents = tokio::task::JoinSet::new();
    // Placed whenever agents may be deployed: by this process, or by another one of the fleet.
    let placed = args.deploy || args.agents_only;
    let facts = match &args.facts_file {
        Some(path) => Some(Arc::new(crate::facts::read_template(path)?)),
        None => None,
    };
    for seed in first..first + n {
        let plan = AgentPlan {
            seed,
            local: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + (seed % addresses) as u8)),
            place: placed.then(|| phases::place(seed, fleet)),
            facts: facts.clone(),
        };
        let (shared, target, gate) = (
            shared.clone(),
            targets[seed % targets.len()].clone(),
            gate.clone(),
        );
        let (wait, heartbeat_secs) = (args.wait, args.heartbeat_secs);
        agents.spawn(async move {
            let r = agent(target, plan, shared.clone(), gate, wait, heartbeat_secs).await;
            if let Err(e) = &r {
                if shared.failed.fetch_add(1, Ordering::Relaxed) < 5 {
                    eprintln!("agent failed: {e:#}");
                }
            }
        });
    }
    // Registration, with progress every ten seconds.
    let mut progress = Vec::new();
    let mut last = Instant::now();
    loop {
        let registered = shared.registered.load(Ordering::Relaxed);
        let failed = shared.failed.load(Ordering::Relaxed);
        if failed > 0 {
            bail!("{failed} agents failed (after {registered} registered)");
        }
        if registered >= n {
            break;
        }
        if last.elapsed() >= Duration::from_secs(10) {
            last = Instant::now();
            let point = json!({"seconds": started.elapsed().as_secs(), "registered": registered,
                               "controller": snapshot(&args.controller_pid)});
            eprintln!("{point}");
            progress.push(point);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let register_secs = started.elapsed().as_secs_f64();
    eprintln!("registered {n} agents in {register_secs:.1} s; waiting one poll cycle");
    if args.agents_only {
        println!(
            "{}",
            json!({"agents": n, "first_agent": first, "fleet": fleet, "load_average": load_average(),
                   "registration": {"seconds": register_secs, "per_second": n as f64 / register_secs, "progress": progress}})
        );
        // The agents poll and answer lists until the process is stopped.
        loop {
            tokio::time::sleep(Duration::from_secs(10)).await;
            let failed = shared.failed.load(Ordering::Relaxed);
            if failed > 0 {
                bail!("{failed} agents failed");
            }
        }
    }
    // Every agent holds a poll; one full cycle lets polls and heartbeats reach their steady rhythm.
    tokio::time::sleep(Duration::from_secs(args.wait + 1)).await;
    let connected = snapshot(&args.controller_pid);

    let before = cpu_ms(&args.controller_pid);
    shared.measuring.store(true, Ordering::Relaxed);
    let window = Instant::now();
    let until = window + Duration::from_secs(args.hold_seconds);
    let mut probes = tokio::task::JoinSet::new();
    for i in 0..args.probe_connections.min(n) {
        probes.spawn(crate::poll::poller(
            target.clone(),
            first + i * n / args.probe_connections.min(n),
            until,
        ));
    }
    let mut probe_us = Vec::new();
    while let Some(r) = probes.join_next().await {
        probe_us.extend(r??);
    }
    tokio::time::sleep_until(until.into()).await;
    shared.measuring.store(false, Ordering::Relaxed);
    let secs = window.elapsed().as_secs_f64();
    let cpu = before.zip(cpu_ms(&args.controller_pid)).map(|(a, b)| b - a);
    let overshoot = std::mem::take(
        &mut *shared
            .overshoot_us
            .lock()
            .unwrap_or_else(|p| p.into_inner()),
    );
    let heartbeats = std::mem::take(
        &mut *shared
            .heartbeat_us
            .lock()
            .unwrap_or_else(|p| p.into_inner()),
    );
    let long_polls = overshoot.len() + shared.lists.load(Ordering::Relaxed);
    let probe_count = probe_us.len();
    let mut out = json!({
        "agents": n,
        "fleet": fleet,
        "source_addresses": addresses,
        "load_average": load_average(),
        "registration": {"seconds": register_secs, "per_second": n as f64 / register_secs, "progress": progress},
        "controller_connected": connected,
        "window_seconds": secs,
        "long_polls_answered_per_second": long_polls as f64 / secs,
        "long_poll_ms_past_wait": percentiles(overshoot),
        "heartbeats_per_second": heartbeats.len() as f64 / secs,
        "heartbeat_ms": percentiles(heartbeats),
        "probe": {"connections": args.probe_connections, "polls_per_second": probe_count as f64 / secs,
                  "latency_ms": percentiles(probe_us)},
        "controller_cpu_percent": cpu.map(|ms| ms / 10.0 / secs),
        "controller_after": snapshot(&args.controller_pid),
    });
    if args.deploy {
        let token_file = args
            .token_file
            .as_ref()
            .context("--deploy needs --token-file")?;
        let token = std::fs::read_to_string(token_file)
            .with_context(|| format!("read {}", token_file.display()))?
            .trim()
            .to_string();
        let config = sim::operator_config(&target)?;
        let mut op = sim::connect(&target, config, Some(token.clone())).await?;
        let cid = phases::setup_cluster(&mut op, fleet, args.tasks).await?;
        let cpu_before = cpu_ms(&args.controller_pid);
        let (report, took) = phases::deploy(&mut op, cid, &target, &token).await?;
        let cpu = cpu_before
            .zip(cpu_ms(&args.controller_pid))
            .map(|(a, b)| b - a);
        // Answers still on their way are not waited for: the deployment's end is what counts.
        let sum = phases::summary(&shared.timeline.lock().unwrap_or_else(|p| p.into_inner()));
        out["deployment"] = json!({
            "tasks": args.tasks, "status": report["status"], "seconds": took.as_secs_f64(),
            "controller_cpu_ms": cpu, "controller": snapshot(&args.controller_pid),
            "load_average": load_average(), "summary": sum,
        });
    }
    let failed = shared.failed.load(Ordering::Relaxed);
    out["agents_failed"] = json!(failed);
    out["agents_reconnected"] = json!(shared.reconnects.load(Ordering::Relaxed));
    println!("{}", serde_json::to_string_pretty(&out)?);
    // The agents are still holding polls; leaving ends them.
    std::process::exit(if failed == 0 { 0 } else { 1 });
}
