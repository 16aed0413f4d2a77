//! `chaos` mode: a fault-injection soak. It starts its own controller (so it can kill it), registers
//! simulated agents, and deploys a chain of tasks over and over for a bounded time while it injects
//! faults: agents killed mid-list (their running task reported interrupted after the restart, as a real
//! agent does), the controller killed (SIGKILL) and restarted, acknowledgements dropped (results sent
//! again), batches sent twice, and slow links. Every simulated agent keeps a journal as a real one does:
//! a result is kept until the controller acknowledges it.
//!
//! At the end every deployment must be finished, successful, and its report must hold exactly one line
//! per (node, task), each with the final attempt the agent acknowledged: `results lost` counts every
//! difference and must be 0. The process exits non-zero otherwise.

use crate::sim::{self, Conn, Target};
use anyhow::{bail, Context, Result};
use base64::Engine as _;
use plinth_common::wire::TaskList;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Options of the chaos mode.
#[derive(clap::Args)]
pub struct ChaosArgs {
    /// The `plinth-controller` binary (default: beside this one).
    #[arg(long)]
    controller_bin: Option<PathBuf>,
    /// How many simulated agents.
    #[arg(long, default_value_t = 30)]
    nodes: usize,
    /// Tasks in the deployed chain.
    #[arg(long, default_value_t = 5)]
    tasks: usize,
    /// How long to keep starting deployments, in seconds (the last one is then finished).
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Mean seconds between controller kills (0: never).
    #[arg(long, default_value_t = 8)]
    controller_kill_every: u64,
    /// Seed of the fault schedule.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Probability, per step of an agent, that it is killed.
    #[arg(long, default_value_t = 0.02)]
    agent_kill: f64,
    /// Probability that an acknowledgement is dropped (the batch is sent again).
    #[arg(long, default_value_t = 0.1)]
    drop_ack: f64,
    /// Probability that a batch is sent twice.
    #[arg(long, default_value_t = 0.1)]
    duplicate: f64,
    /// Probability that a request waits up to 300 ms first (a slow link).
    #[arg(long, default_value_t = 0.2)]
    slow: f64,
    /// Probability that a task's first attempt fails (its retry succeeds).
    #[arg(long, default_value_t = 0.1)]
    fail_first: f64,
}

/// A small deterministic generator (xorshift64*), so a fault schedule can be replayed by its seed.
struct Dice(u64);

impl Dice {
    fn new(seed: u64) -> Dice {
        Dice(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

/// What was injected and what came of it.
#[derive(Default)]
struct Counters {
    agent_kills: AtomicU64,
    controller_kills: AtomicU64,
    dropped_acks: AtomicU64,
    duplicated_batches: AtomicU64,
    slow_requests: AtomicU64,
    failed_first_attempts: AtomicU64,
    interrupted_attempts: AtomicU64,
    refused_results: AtomicU64,
    results_acknowledged: AtomicU64,
}

impl Counters {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The final attempt each (deployment, node name, task) was acknowledged with.
type Finals = Arc<Mutex<HashMap<(u64, String, String), u32>>>;

/// The controller under test, which the soak kills and restarts.
struct Managed {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Managed {
    fn start(&mut self) -> Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.data.with_extension("log"))?;
        self.child = Some(
            Command::new(&self.bin)
                .arg("--data-dir")
                .arg(&self.data)
                .args(["serve", "--auto-accept", "--phase-timeout", "3600"])
                .args(["--listen", &format!("127.0.0.1:{}", self.port)])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .with_context(|| format!("cannot start {}", self.bin.display()))?,
        );
        Ok(())
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One simulated agent's durable state: its last accepted revision, its list, and its journal.
struct Agent {
    seed: usize,
    name: String,
    target: Arc<Target>,
    conn: Option<Conn>,
    last_revision: u64,
    list: Option<TaskList>,
    next_task: usize,
    /// Results not yet acknowledged, oldest first.
    journal: Vec<Value>,
    polls: u128,
}

impl Agent {
    async fn connection(&mut self) -> Result<&mut Conn> {
        if self.conn.is_none() {
            let mut c = sim::connect(
                &self.target,
                sim::agent_config(&self.target, self.seed)?,
                None,
            )
            .await?;
            let body = json!({"agent_version": "chaos", "name": self.name,
                              "facts": {"hostname": self.name}});
            c.json("POST", "/agent/v1/register", Some(body)).await?;
            self.conn = Some(c);
        }
        self.conn.as_mut().context("a connection")
    }

    fn record(&mut self, list: &TaskList, task: &str, attempt: u32, status: &str, last: bool) {
        self.journal.push(json!({
            "deployment_id": list.deployment_id, "revision": list.revision, "task_id": task,
            "attempt": attempt, "status": status, "last": last, "started_at_ms": 0, "duration_ms": 0
        }));
    }
}

async fn agent_loop(
    mut a: Agent,
    args: Arc<ChaosArgs>,
    counters: Arc<Counters>,
    finals: Finals,
    stop: Arc<AtomicBool>,
) {
    let mut dice = Dice::new(args.seed ^ (a.seed as u64).wrapping_mul(7919));
    while !stop.load(Ordering::Relaxed) {
        if let Err(e) = step(&mut a, &args, &counters, &finals, &mut dice).await {
            // The controller is down or restarting: reconnect after a pause.
            let _ = e;
            a.conn = None;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

async fn step(
    a: &mut Agent,
    args: &ChaosArgs,
    counters: &Counters,
    finals: &Finals,
    dice: &mut Dice,
) -> Result<()> {
    if dice.chance(args.agent_kill) {
        Counters::bump(&counters.agent_kills);
        a.conn = None;
        // A task was running when the agent died: the restarted agent reports it interrupted, retries.
        if let Some(list) = a.list.clone() {
            if let Some(task) = list.tasks.get(a.next_task) {
                Counters::bump(&counters.interrupted_attempts);
                a.record(&list, &task.id, 1, "interrupted", false);
                a.record(&list, &task.id, 2, "succeeded", true);
                a.next_task += 1;
            }
        }
    }
    if dice.chance(args.slow) {
        Counters::bump(&counters.slow_requests);
        tokio::time::sleep(Duration::from_millis((dice.unit() * 300.0) as u64)).await;
    }
    if !a.journal.is_empty() {
        let batch: Vec<Value> = a.journal.iter().take(50).cloned().collect();
        let body = json!({ "results": batch });
        let twice = dice.chance(args.duplicate);
        let drop_ack = dice.chance(args.drop_ack);
        let conn = a.connection().await?;
        if twice {
            Counters::bump(&counters.duplicated_batches);
            conn.json("POST", "/agent/v1/results", Some(body.clone()))
                .await?;
        }
        let ack = conn.json("POST", "/agent/v1/results", Some(body)).await?;
        if drop_ack {
            Counters::bump(&counters.dropped_acks);
            return Ok(());
        }
        let verdicts = ack["verdicts"].as_array().cloned().unwrap_or_default();
        let mut settled = 0;
        for (sent, verdict) in batch.iter().zip(&verdicts) {
            match verdict["verdict"].as_str() {
                Some("accepted" | "duplicate") => {
                    Counters::bump(&counters.results_acknowledged);
                    if sent["last"] == true {
                        finals.lock().unwrap_or_else(|p| p.into_inner()).insert(
                            (
                                sent["deployment_id"].as_u64().unwrap_or(0),
                                a.name.clone(),
                                sent["task_id"].as_str().unwrap_or("").to_string(),
                            ),
                            u32::try_from(sent["attempt"].as_u64().unwrap_or(0)).unwrap_or(0),
                        );
                    }
                    settled += 1;
                }
                Some("refused") => {
                    Counters::bump(&counters.refused_results);
                    eprintln!("{}: a result was refused: {verdict}", a.name);
                    settled += 1;
                }
                _ => break,
            }
        }
        a.journal.drain(..settled);
        return Ok(());
    }
    if let Some(list) = a.list.clone() {
        if let Some(task) = list.tasks.get(a.next_task) {
            if dice.chance(args.fail_first) {
                Counters::bump(&counters.failed_first_attempts);
                a.record(&list, &task.id, 1, "failed", false);
                a.record(&list, &task.id, 2, "succeeded", true);
            } else {
                a.record(&list, &task.id, 1, "succeeded", true);
            }
            a.next_task += 1;
            return Ok(());
        }
        a.list = None;
    }
    a.polls += 1;
    let path = format!(
        "/agent/v1/tasks?nonce={:032x}&after={}&wait=1",
        ((a.seed as u128) << 64) | a.polls,
        a.last_revision
    );
    let conn = a.connection().await?;
    let (status, body) = conn.send("GET", &path, None).await?;
    match status {
        204 => Ok(()),
        200 => {
            let envelope: Value = serde_json::from_slice(&body)?;
            let payload = base64::engine::general_purpose::STANDARD
                .decode(envelope["payload"].as_str().context("envelope payload")?)?;
            let list: TaskList = serde_json::from_slice(&payload)?;
            if list.revision > a.last_revision {
                a.last_revision = list.revision;
                a.list = Some(list);
                a.next_task = 0;
            }
            Ok(())
        }
        401 => {
            a.conn = None;
            Ok(())
        }
        other => bail!("poll: HTTP {other}"),
    }
}

/// An operator request that outlives controller restarts: retried until it gets an answer.
async fn operator(
    target: &Arc<Target>,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let attempt = async {
            let mut c = sim::connect(
                target,
                sim::operator_config(target)?,
                Some(token.to_string()),
            )
            .await?;
            c.json(method, &format!("/api/v1{path}"), body.clone())
                .await
        };
        match attempt.await {
            Ok(v) => return Ok(v),
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            Err(e) => return Err(e.context(format!("{method} {path}"))),
        }
    }
}

/// Runs the chaos mode.
pub async fn run(args: ChaosArgs) -> Result<()> {
    let args = Arc::new(args);
    let bin = match &args.controller_bin {
        Some(b) => b.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("the binary's directory")?
            .join("plinth-controller"),
    };
    let dir = std::env::temp_dir().join(format!("plinth-chaos-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut controller = Managed {
        bin,
        data: dir.join("data"),
        port,
        child: None,
    };
    controller.start()?;
    let cert = controller.data.join("tls/cert.pem");
    let token_file = controller.data.join("admin.token");
    let ready = Instant::now();
    while !(cert.exists() && token_file.exists()) {
        if ready.elapsed() > Duration::from_secs(30) {
            bail!(
                "the controller did not start; see {}",
                controller.data.with_extension("log").display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let target = sim::target(&format!("https://127.0.0.1:{port}"), &cert)?;
    let token = std::fs::read_to_string(&token_file)?.trim().to_string();

    let counters = Arc::new(Counters::default());
    let finals: Finals = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut agents = tokio::task::JoinSet::new();
    for seed in 0..args.nodes {
        let agent = Agent {
            seed,
            name: format!("chaos-{seed}"),
            target: target.clone(),
            conn: None,
            last_revision: 0,
            list: None,
            next_task: 0,
            journal: Vec::new(),
            polls: 0,
        };
        agents.spawn(agent_loop(
            agent,
            args.clone(),
            counters.clone(),
            finals.clone(),
            stop.clone(),
        ));
    }
    let ids = loop {
        let nodes = operator(&target, &token, "GET", "/nodes?limit=10000", None).await?;
        let ids: Vec<u64> = nodes
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n["id"].as_u64())
            .collect();
        if ids.len() >= args.nodes {
            break ids;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let tasks: Vec<Value> = (0..args.tasks)
        .map(|i| {
            let requires = if i == 0 {
                vec![]
            } else {
                vec![format!("step-{}", i - 1)]
            };
            json!({"id": format!("step-{i}"), "type": "shell", "tags": ["*"], "requires": requires,
                   "parameters": {"cmd": "true"}})
        })
        .collect();
    let release = operator(
        &target,
        &token,
        "POST",
        "/releases",
        Some(json!({"name": "chaos", "version": "1", "graphs": {"default": {"tasks": tasks}}})),
    )
    .await?;
    let cluster = operator(
        &target,
        &token,
        "POST",
        "/clusters",
        Some(json!({"name": "chaos", "release_id": release["id"]})),
    )
    .await?;
    let cid = cluster["id"].as_u64().context("cluster id")?;
    let assign: Vec<Value> = ids.iter().map(|id| json!({"id": id})).collect();
    operator(
        &target,
        &token,
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(json!({"nodes": assign})),
    )
    .await?;

    // The controller killer.
    let killer_stop = Arc::new(AtomicBool::new(false));
    let killer = {
        let stop = killer_stop.clone();
        let counters = counters.clone();
        let every = args.controller_kill_every;
        let seed = args.seed;
        let mut controller = controller;
        tokio::spawn(async move {
            let mut dice = Dice::new(seed ^ 0xC0FFEE);
            while every > 0 && !stop.load(Ordering::Relaxed) {
                let wait = every as f64 * (0.5 + dice.unit());
                tokio::time::sleep(Duration::from_secs_f64(wait)).await;
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                controller.kill();
                Counters::bump(&counters.controller_kills);
                tokio::time::sleep(Duration::from_millis(300)).await;
                if let Err(e) = controller.start() {
                    eprintln!("cannot restart the controller: {e:#}");
                }
            }
            controller
        })
    };

    let started = Instant::now();
    let mut deployments = Vec::new();
    let mut problems = Vec::new();
    while started.elapsed() < Duration::from_secs(args.seconds) {
        let dep = operator(
            &target,
            &token,
            "PUT",
            &format!("/clusters/{cid}/deploy/"),
            None,
        )
        .await?;
        let id = dep["id"].as_u64().context("deployment id")?;
        deployments.push(id);
        let report = loop {
            let r = operator(&target, &token, "GET", &format!("/deployments/{id}"), None).await?;
            if r["status"] != "running" {
                break r;
            }
            if started.elapsed() > Duration::from_secs(args.seconds + 300) {
                problems.push(format!("deployment {id} never finished"));
                break r;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        };
        if report["status"] != "success" {
            problems.push(format!("deployment {id} ended {}", report["status"]));
        }
    }
    killer_stop.store(true, Ordering::Relaxed);
    let controller = killer.await?;
    // Let the agents send what they still hold, then stop them.
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    while agents.join_next().await.is_some() {}

    // Every report holds exactly one line per (node, task), with the acknowledged final attempt.
    let finals = finals.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut lost = 0u64;
    let mut lines = 0u64;
    for id in &deployments {
        let report = operator(&target, &token, "GET", &format!("/deployments/{id}"), None).await?;
        for node in report["nodes"].as_array().into_iter().flatten() {
            let name = node["name"].as_str().unwrap_or_default().to_string();
            let mut seen: BTreeMap<String, u32> = BTreeMap::new();
            for t in node["tasks"].as_array().into_iter().flatten() {
                let task = t["id"].as_str().unwrap_or_default().to_string();
                let attempts = u32::try_from(t["attempts"].as_u64().unwrap_or(0)).unwrap_or(0);
                if seen.insert(task.clone(), attempts).is_some() {
                    problems.push(format!("deployment {id}: {name} has {task} twice"));
                }
                if t["status"] != "succeeded" {
                    problems.push(format!(
                        "deployment {id}: {name}'s {task} is {}",
                        t["status"]
                    ));
                }
                lines += 1;
            }
            for i in 0..args.tasks {
                let task = format!("step-{i}");
                let acked = finals.get(&(*id, name.clone(), task.clone()));
                match (seen.get(&task), acked) {
                    (Some(stored), Some(acked)) if stored == acked => {}
                    (stored, acked) => {
                        lost += 1;
                        problems.push(format!(
                            "deployment {id}: {name}'s {task}: stored attempt {stored:?}, acknowledged {acked:?}"
                        ));
                    }
                }
            }
        }
    }
    drop(controller);
    let c = &counters;
    if c.refused_results.load(Ordering::Relaxed) > 0 {
        problems.push("the controller refused results of an honest agent".into());
    }
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let injected = load(&c.agent_kills)
        + load(&c.controller_kills)
        + load(&c.dropped_acks)
        + load(&c.duplicated_batches)
        + load(&c.slow_requests)
        + load(&c.failed_first_attempts);
    let out = json!({
        "nodes": args.nodes,
        "tasks_per_deployment": args.tasks,
        "seconds": started.elapsed().as_secs_f64(),
        "events_injected": injected,
        "agent_kills": load(&c.agent_kills),
        "controller_kills": load(&c.controller_kills),
        "dropped_acks": load(&c.dropped_acks),
        "duplicated_batches": load(&c.duplicated_batches),
        "slow_requests": load(&c.slow_requests),
        "failed_first_attempts": load(&c.failed_first_attempts),
        "interrupted_attempts": load(&c.interrupted_attempts),
        "results_acknowledged": load(&c.results_acknowledged),
        "refused_results": load(&c.refused_results),
        "deployments_finished": deployments.len(),
        "report_lines_checked": lines,
        "results_lost": lost,
        "problems": problems,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    if !problems.is_empty() {
        bail!(
            "{} problem(s); the data directory is kept at {}",
            problems.len(),
            dir.display()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
