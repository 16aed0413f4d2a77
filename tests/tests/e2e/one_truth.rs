//! Every view of a deployment tells one story: the report, the summary, the event stream and `nodes
//! list` are compared with what the test knows each real agent is doing, at points of real deployments
//! (running, one node done, failure, retry, cancel, a controller restart), not only at the end.
//!
//! Each agent's first task holds until the test lets it go (a file in the agent's work directory), so at
//! each point the run stands still while every view is read. The order nodes are let go in is random
//! (the seed is printed; `PLINTH_TRUTH_SEED` replays one).

use plinth_e2e::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(120);
const NODES: [&str; 3] = ["web-1", "db-1", "web-2"];

/// What the test knows of one node in one deployment.
#[derive(Debug, Clone, PartialEq)]
enum Doing {
    /// Running this task now (held).
    Running(&'static str),
    /// Finished every task.
    Succeeded,
    /// This task failed it.
    Failed(&'static str),
    /// Was running this task when the deployment was cancelled.
    Cancelled(&'static str),
    /// Not part of this deployment.
    Absent,
}

impl Doing {
    /// The node's status in the report and the summary.
    fn status(&self) -> &'static str {
        match self {
            Doing::Running(_) => "running",
            Doing::Succeeded => "success",
            Doing::Failed(_) => "failure",
            Doing::Cancelled(_) => "cancelled",
            Doing::Absent => "absent",
        }
    }
}

/// A small deterministic generator for the order nodes are let go in.
struct Order(u64);

impl Order {
    fn new() -> Order {
        let seed = std::env::var("PLINTH_TRUTH_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            });
        eprintln!("one truth: PLINTH_TRUTH_SEED={seed}");
        Order(seed | 1)
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            items.swap(i, (self.0 % (i as u64 + 1)) as usize);
        }
    }
}

struct Fleet {
    c: Controller,
    agents: Vec<Agent>,
}

impl Fleet {
    fn agent(&self, name: &str) -> &Agent {
        self.agents.iter().find(|a| a.name == name).expect("agent")
    }

    /// Lets a node's held task finish.
    fn release(&self, name: &str) {
        std::fs::write(self.agent(name).work().join("go"), "").unwrap();
    }

    /// Holds every node's first task again.
    fn hold_all(&self) {
        for a in &self.agents {
            let _ = std::fs::remove_file(a.work().join("go"));
            let _ = std::fs::remove_file(a.work().join("holding"));
        }
    }

    /// Waits until a node's agent runs its held task.
    fn wait_holding(&self, name: &str) {
        let marker = self.agent(name).work().join("holding");
        wait_until(&format!("{name} to hold"), LONG, || marker.exists());
    }
}

/// The graph: `hold` waits for its node's `go` file; `check` fails on db-1 unless it was fixed; `last`
/// runs after it (skipped on a node whose `check` failed).
fn graph() -> Value {
    let hold = "touch holding; while [ ! -e go ]; do sleep 0.1; done";
    let check = "if [ \"$(hostname -s 2>/dev/null)\" = never ]; then exit 9; fi; \
                 if [ -e is-db ] && [ ! -e fixed ]; then echo 'db check failed: no quorum' >&2; exit 3; fi";
    json!({"default": {"tasks": [
        {"id": "hold", "type": "shell", "tags": ["*"],
         "parameters": {"cmd": hold, "timeout": 600, "retries": 0}},
        {"id": "check", "type": "shell", "tags": ["*"], "requires": ["hold"],
         "parameters": {"cmd": check, "timeout": 60, "retries": 0}},
        {"id": "last", "type": "shell", "tags": ["*"], "requires": ["check"],
         "parameters": {"cmd": "true", "timeout": 60, "retries": 0}},
    ]}})
}

fn start() -> (Fleet, u64) {
    let c = Controller::start();
    let agents: Vec<Agent> = NODES.iter().map(|n| Agent::start(&c, n, &[])).collect();
    std::fs::write(agents[1].work().join("is-db"), "").unwrap();
    let all: Vec<u64> = c
        .api
        .wait_nodes(NODES.len())
        .iter()
        .map(|(_, id)| *id)
        .collect();
    let cid = c.api.cluster_with_graph("truth", graph(), &all);
    (Fleet { c, agents }, cid)
}

/// Reads every view until they show `expect` (the run may still be taking in a result), then checks
/// that they all tell the same story, strictly; panics naming the point and the disagreement.
fn check_views(f: &Fleet, dep: u64, point: &str, status: &str, expect: &BTreeMap<&str, Doing>) {
    let started = Instant::now();
    let mut last = String::new();
    while started.elapsed() < LONG {
        match compare(f, dep, status, expect) {
            Ok(()) => return,
            Err(why) => last = why,
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("at {point}: the views never showed the run's state: {last}");
}

/// One reading of every view against the run's state; `Err` names the first disagreement.
fn compare(
    f: &Fleet,
    dep: u64,
    status: &str,
    expect: &BTreeMap<&str, Doing>,
) -> Result<(), String> {
    let report =
        f.c.api
            .get(&format!("/deployments/{dep}"))
            .map_err(|e| e.to_string())?;
    let summary =
        f.c.api
            .get(&format!("/deployments/{dep}/summary"))
            .map_err(|e| e.to_string())?;
    let nodes = f.c.api.get("/nodes").map_err(|e| e.to_string())?;
    let again =
        f.c.api
            .get(&format!("/deployments/{dep}"))
            .map_err(|e| e.to_string())?;
    if again["status"] != report["status"]
        || again["nodes"].as_array().map(Vec::len) != report["nodes"].as_array().map(Vec::len)
    {
        return Err("the run moved while it was read".into());
    }
    let want = |cond: bool, what: String| if cond { Ok(()) } else { Err(what) };
    want(
        report["status"] == status && summary["status"] == status,
        format!(
            "deployment status: report {} summary {}, the run {status}",
            report["status"], summary["status"]
        ),
    )?;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for (name, doing) in expect.iter().filter(|(_, d)| **d != Doing::Absent) {
        let line = node_line(&report, name).ok_or(format!("{name} is not in the report"))?;
        let brief = summary["nodes"]
            .as_array()
            .and_then(|ns| ns.iter().find(|n| n["name"] == *name))
            .ok_or(format!("{name} is not in the summary"))?;
        *counts.entry(doing.status().to_string()).or_default() += 1;
        want(
            line["status"] == doing.status() && brief["status"] == doing.status(),
            format!(
                "{name}: report says {}, summary says {}, the node is {doing:?}",
                line["status"], brief["status"]
            ),
        )?;
        // Progress counts the node's list of tasks, never a cancel's empty stop order.
        want(
            line["total_tasks"] == 3 && brief["total_tasks"] == 3,
            format!(
                "{name}: progress over {} / {} tasks, its list has 3",
                line["total_tasks"], brief["total_tasks"]
            ),
        )?;
        match doing {
            Doing::Running(task) => {
                let t =
                    task_line(&report, name, task).ok_or(format!("{name}: no line for {task}"))?;
                want(
                    t["status"] == "running" && t["duration_ms"].as_u64() > Some(0),
                    format!(
                        "{name}: running {task} shows {} after {} ms",
                        t["status"], t["duration_ms"]
                    ),
                )?;
                want(
                    brief["last_task"] == *task && line["phase"].is_string(),
                    format!(
                        "{name}: the summary's task is {} and phase {}",
                        brief["last_task"], line["phase"]
                    ),
                )?;
            }
            Doing::Failed(task) => {
                let reason = line["reason"].as_str().unwrap_or_default();
                want(
                    reason.contains(&format!("task {task} failed"))
                        && brief["reason"] == line["reason"],
                    format!("{name}: reason {:?} / summary {}", reason, brief["reason"]),
                )?;
                want(
                    brief["failed_phase"] == "deploy" && line["failed_phase"] == "deploy",
                    format!(
                        "{name}: failed phase {} / {}",
                        line["failed_phase"], brief["failed_phase"]
                    ),
                )?;
                want(
                    brief["last_task"] == *task && line["failed_task"] == *task,
                    format!(
                        "{name}: the summary shows task {}, not the one that failed",
                        brief["last_task"]
                    ),
                )?;
            }
            Doing::Cancelled(task) => {
                let t =
                    task_line(&report, name, task).ok_or(format!("{name}: no line for {task}"))?;
                want(
                    t["status"] == "interrupted",
                    format!(
                        "{name}: {task} was ended by the cancel, report says {}",
                        t["status"]
                    ),
                )?;
            }
            Doing::Succeeded | Doing::Absent => {}
        }
        // Every task of a finished deployment is final; of a running one, only held tasks run.
        for t in line["tasks"].as_array().into_iter().flatten() {
            let running = t["status"] == "running";
            want(
                !running || matches!(doing, Doing::Running(id) if t["id"] == *id),
                format!(
                    "{name}: task {} shows running; the node is {doing:?}",
                    t["id"]
                ),
            )?;
        }
        // `nodes list`: deploying while it runs here; afterwards ready, or error with the report's reason.
        let record = nodes
            .as_array()
            .and_then(|ns| ns.iter().find(|n| n["name"] == *name))
            .ok_or(format!("{name} not in nodes list"))?;
        // As soon as a node's outcome is final its record says so, with the report's reason; a node the
        // cancel cut short is back to what it was (every node here was deployed before a cancel).
        let (want_status, want_msg) = match doing {
            Doing::Running(_) => ("deploying", Value::Null),
            Doing::Succeeded => ("ready", Value::Null),
            Doing::Failed(_) => ("error", line["reason"].clone()),
            Doing::Cancelled(_) | Doing::Absent => ("ready", Value::Null),
        };
        want(
            record["status"] == want_status
                && (want_msg.is_null() || record["error_msg"] == want_msg),
            format!(
                "{name}: nodes list says {} ({}), the node is {doing:?} in a {status} deployment",
                record["status"], record["error_msg"]
            ),
        )?;
        if want_status == "error" {
            want(
                record["error_deployment_id"] == dep,
                format!(
                    "{name}: the record names deployment {}",
                    record["error_deployment_id"]
                ),
            )?;
        }
    }
    // Counts and groups agree with the nodes.
    let summary_counts: BTreeMap<String, u64> = summary["counts"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
        .collect();
    want(
        summary_counts == counts,
        format!("summary counts {summary_counts:?}, the run {counts:?}"),
    )?;
    for (g, brief) in report["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .zip(summary["groups"].as_array().into_iter().flatten())
    {
        let mut seen = 0;
        for (key, status) in [
            ("running", "running"),
            ("succeeded", "success"),
            ("prepared", "prepared"),
            ("failed", "failure"),
            ("cancelled", "cancelled"),
            ("not_started", "not_started"),
        ] {
            let members = g[key].as_array().cloned().unwrap_or_default();
            seen += members.len();
            want(
                brief[key].as_u64() == Some(members.len() as u64),
                format!(
                    "group {}: summary {key} {} vs report {members:?}",
                    g["name"], brief[key]
                ),
            )?;
            for m in &members {
                let node = m.as_str().unwrap_or_default();
                let doing = expect.get(node).cloned().unwrap_or(Doing::Absent);
                want(
                    doing.status() == status,
                    format!(
                        "group {} lists {node} as {key}; the node is {doing:?}",
                        g["name"]
                    ),
                )?;
            }
        }
        want(
            seen == g["nodes"].as_array().map_or(0, Vec::len),
            format!("group {}: its lists do not cover its nodes: {g}", g["name"]),
        )?;
        if status != "running" {
            want(
                !matches!(g["state"].as_str(), Some("running" | "pending")),
                format!(
                    "group {} is {} in a {status} deployment",
                    g["name"], g["state"]
                ),
            )?;
        }
    }
    if status != "running" {
        for s in report["steps"].as_array().into_iter().flatten() {
            want(
                !matches!(s["state"].as_str(), Some("running" | "pending")),
                format!(
                    "step {} is {} in a {status} deployment",
                    s["name"], s["state"]
                ),
            )?;
        }
    }
    Ok(())
}

/// The event stream's last word on each node and on the deployment agrees with the report.
fn check_events(events: &[Value], report: &Value) {
    let finished: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "deployment_finished")
        .collect();
    assert_eq!(finished.len(), 1, "one end in the stream: {events:#?}");
    assert_eq!(finished[0]["status"], report["status"]);
    for n in report["nodes"].as_array().into_iter().flatten() {
        let last = events
            .iter()
            .rfind(|e| e["event"] == "node_status_changed" && e["node"] == n["name"]);
        match n["status"].as_str() {
            Some("success" | "failure") => assert_eq!(
                last.map(|e| e["to"].clone()),
                Some(n["status"].clone()),
                "the stream's last word on {} is the report's: {events:#?}",
                n["name"]
            ),
            _ => assert!(
                last.is_none_or(|e| !matches!(e["to"].as_str(), Some("success" | "failure"))),
                "the stream ended {} which the report shows {}",
                n["name"],
                n["status"]
            ),
        }
    }
}

fn doing(pairs: &[(&'static str, Doing)]) -> BTreeMap<&'static str, Doing> {
    pairs.iter().cloned().collect()
}

#[test]
fn every_view_shows_the_runs_state_through_failure_retry_cancel_and_restart() {
    let (mut f, cid) = start();
    let mut order = Order::new();

    // A deployment where db-1 fails, its nodes let go one by one in a random order.
    let dep = f.c.api.deploy(cid, "");
    let events = f.c.api.follow_events(dep);
    let mut state: BTreeMap<&str, Doing> =
        NODES.iter().map(|n| (*n, Doing::Running("hold"))).collect();
    for n in NODES {
        f.wait_holding(n);
    }
    check_views(&f, dep, "all three hold", "running", &state);
    let mut names = NODES;
    order.shuffle(&mut names);
    for (i, name) in names.iter().enumerate() {
        f.release(name);
        state.insert(
            name,
            if *name == "db-1" {
                Doing::Failed("check")
            } else {
                Doing::Succeeded
            },
        );
        let status = if i + 1 == names.len() {
            "failed"
        } else {
            "running"
        };
        check_views(&f, dep, &format!("{name} let go"), status, &state);
    }
    let report = f.c.api.wait_deployment(dep, LONG);
    check_events(&events.join().unwrap(), &report);
    let (ok, out, err) = f.c.plinthctl(&["nodes", "list"]);
    assert!(ok, "{err}");
    let db_row = out.lines().find(|l| l.contains("db-1")).unwrap_or_default();
    assert!(
        db_row.contains("task check failed in phase deploy")
            && db_row.contains(&format!("deployment {dep}")),
        "nodes list says why db-1 is in error: {out}"
    );
    for web in ["web-1", "web-2"] {
        let row = out.lines().find(|l| l.contains(web)).unwrap_or_default();
        assert!(!row.contains("error"), "only db-1 failed: {out}");
    }

    // The retry runs db-1 only, fixed; its outcome is its own.
    std::fs::write(f.agent("db-1").work().join("fixed"), "").unwrap();
    let (ok, out, err) =
        f.c.plinthctl(&["deploy", "retry", &dep.to_string(), "--watch"]);
    assert!(ok, "{out}{err}");
    assert!(
        !out.contains("failed") && !err.contains("nodes failed"),
        "the retry succeeded, and its watch says so: {out}{err}"
    );
    let retry: u64 =
        f.c.api
            .get("/deployments")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d["id"].as_u64())
            .max()
            .unwrap();
    let mut after_retry = doing(&[("db-1", Doing::Succeeded)]);
    after_retry.insert("web-1", Doing::Absent);
    after_retry.insert("web-2", Doing::Absent);
    check_views(&f, retry, "the retry ended", "success", &after_retry);

    // A deployment cancelled while two nodes hold and one has finished.
    f.hold_all();
    let dep = f.c.api.deploy(cid, "");
    let events = f.c.api.follow_events(dep);
    for n in NODES {
        f.wait_holding(n);
    }
    let first = names[0];
    f.release(first);
    let mut state: BTreeMap<&str, Doing> =
        NODES.iter().map(|n| (*n, Doing::Running("hold"))).collect();
    state.insert(first, Doing::Succeeded);
    check_views(
        &f,
        dep,
        &format!("{first} done, two hold"),
        "running",
        &state,
    );
    let (ok, out, err) = f.c.plinthctl(&["deploy", "cancel", &dep.to_string()]);
    assert!(ok, "{out}{err}");
    for n in NODES.iter().filter(|n| **n != first) {
        state.insert(n, Doing::Cancelled("hold"));
    }
    check_views(&f, dep, "cancelled", "cancelled", &state);
    check_events(
        &events.join().unwrap(),
        &f.c.api.get(&format!("/deployments/{dep}")).unwrap(),
    );
    // The agents' results for what the cancel ended are taken: none is quarantined.
    for a in f.agents.iter().filter(|a| a.name != first) {
        wait_until("the agent to take the cancel", LONG, || {
            a.log().contains("the controller cancelled the deployment")
        });
    }
    std::thread::sleep(Duration::from_secs(2));
    for a in &f.agents {
        assert!(
            !a.log().contains("refused a result"),
            "{}: a normal cancel refuses nothing: {}",
            a.name,
            a.log()
        );
    }

    // A controller restarted while the nodes hold: after it, every view shows the same run.
    f.hold_all();
    let dep = f.c.api.deploy(cid, "");
    for n in NODES {
        f.wait_holding(n);
    }
    let state: BTreeMap<&str, Doing> = NODES.iter().map(|n| (*n, Doing::Running("hold"))).collect();
    check_views(&f, dep, "all hold before the restart", "running", &state);
    f.c.restart();
    check_views(&f, dep, "all hold after the restart", "running", &state);
    let mut state = state;
    order.shuffle(&mut names);
    for (i, name) in names.iter().enumerate() {
        f.release(name);
        state.insert(name, Doing::Succeeded);
        let status = if i + 1 == names.len() {
            "success"
        } else {
            "running"
        };
        check_views(
            &f,
            dep,
            &format!("{name} let go after the restart"),
            status,
            &state,
        );
    }
}
