//! Measures the idle agent against a scripted controller: registered, long-polling, heartbeating,
//! nothing to do: its memory, its CPU per request, and how fast it picks up new work. A benchmark, not a
//! test: run it with a release binary for figures (docs/BENCHMARKS.md):
//!
//! ```text
//! cargo build -p plinth-agent --release
//! PLINTH_AGENT_BIN=$PWD/target/release/plinth-agent cargo bench -p plinth-agent --bench idle_footprint
//! ```

#[path = "../tests/integration/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::Duration;
use support::*;

/// User plus system CPU time of a process, in seconds (from `/proc/<pid>/stat`, clock ticks of 10 ms).
fn cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3 of the line, utime 14 and stime 15.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let ctl = FakeController::start();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agent.toml");
    std::fs::write(
        &config,
        format!(
            "controller = \"{}\"\ncontroller_public_key = \"{}\"\ncontroller_cert = \"{}\"\n\
             state_dir = \"{}\"\npoll_wait_secs = 2\nheartbeat_secs = 1\n",
            ctl.url,
            ctl.public_key(),
            ctl.cert.display(),
            dir.path().join("state").display()
        ),
    )
    .unwrap();
    let bin = std::env::var("PLINTH_AGENT_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_plinth-agent").to_string());
    let mut child = Command::new(&bin)
        .args(["run", "--config"])
        .arg(&config)
        .args(["--cmdline", "/dev/null"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("registration", Duration::from_secs(30), || {
        ctl.log(|l| !l.registrations.is_empty())
    });
    // Several long-poll cycles and heartbeats, after start-up settled.
    std::thread::sleep(Duration::from_secs(2));
    let (cpu_before, (polls_before, beats_before)) = (
        cpu_secs(child.id()).unwrap_or(0.0),
        ctl.log(|l| (l.polls, l.heartbeats)),
    );
    std::thread::sleep(Duration::from_secs(30));
    let rss = rss_kib(child.id());
    let cpu = cpu_secs(child.id()).unwrap_or(0.0) - cpu_before;
    let (polls, heartbeats) = ctl.log(|l| (l.polls, l.heartbeats));
    let requests = (polls - polls_before) + (heartbeats - beats_before);

    // Pickup latency: from publishing a list to receiving its first `running` result.
    let pem = std::fs::read_to_string(dir.path().join("state/node.key")).unwrap();
    let node = plinth_common::signing::fingerprint(
        &plinth_common::signing::signing_key_from_pem(&pem)
            .unwrap()
            .verifying_key(),
    );
    let published = std::time::Instant::now();
    ctl.push_list(list(
        &node,
        1,
        serde_json::json!([{"id": "t", "type": "shell", "parameters": {"cmd": "true"}}]),
    ));
    wait_until("the first result", Duration::from_secs(30), || {
        ctl.log(|l| !l.results.is_empty())
    });
    let pickup = published.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    println!("binary: {bin}");
    println!("idle RSS after 32 s: {} KiB", rss.unwrap_or(0));
    println!("polls: {polls}, heartbeats: {heartbeats}");
    println!(
        "CPU over 30 s idle: {:.2} s for {requests} requests ({:.2} ms per poll or heartbeat)",
        cpu,
        cpu * 1000.0 / requests.max(1) as f64
    );
    println!(
        "publish -> first result received: {:.1} ms",
        pickup.as_secs_f64() * 1000.0
    );
}
