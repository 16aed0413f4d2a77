//! `plinth-loadgen fleet` against a real controller: agents on their own connections from two source
//! addresses register, hold long polls, heartbeat, and are deployed with a multi-task graph through the
//! five-group strategy; every result arrives and the report says so.

use plinth_e2e::{bin, Controller};
use serde_json::Value;

#[test]
fn a_small_fleet_holds_polls_heartbeats_and_is_deployed() {
    let c = Controller::start_with(&[
        "--auto-accept",
        "--registrations-per-minute",
        "1000000",
        "--max-connections-per-address",
        "4096",
    ]);
    let mut cmd = std::process::Command::new(bin("plinth-loadgen"));
    cmd.args([
        "fleet",
        "--nodes",
        "40",
        "--wait",
        "1",
        "--heartbeat-secs",
        "1",
    ])
    .args([
        "--hold-seconds",
        "3",
        "--probe-connections",
        "2",
        "--addresses",
        "2",
    ])
    .args(["--deploy", "--tasks", "3", "--controller", &c.url, "--cert"])
    .arg(c.cert_path())
    .arg("--token-file")
    .arg(c.data_dir().join("admin.token"));
    if let Some(pid) = c.pid() {
        cmd.args(["--controller-pid", &pid.to_string()]);
    }
    let out = cmd.output().expect("plinth-loadgen runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "loadgen failed: {stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(report["agents"], 40);
    assert_eq!(report["agents_failed"], 0, "{stderr}");
    // Nothing disturbed the controller: no agent had to connect again.
    assert_eq!(report["agents_reconnected"], 0, "{report}");
    assert_eq!(report["source_addresses"], 2);
    // Over the 3 s window, with a 1 s heartbeat and a 1 s long poll, every agent heartbeats and has its
    // held poll answered at least once.
    let window = report["window_seconds"].as_f64().unwrap_or(0.0);
    let heartbeats = report["heartbeat_ms"]["count"].as_u64().unwrap_or(0);
    assert!(
        heartbeats >= 40,
        "every agent heartbeats while polls are held: {report}"
    );
    let polls = report["long_polls_answered_per_second"]
        .as_f64()
        .unwrap_or(0.0)
        * window;
    assert!(
        polls >= 40.0,
        "every agent's held poll was answered: {report}"
    );
    let dep = &report["deployment"];
    assert_eq!(dep["status"], "success", "{report}");
    assert_eq!(dep["tasks"], 3);
    // Every node answered its `prepare` list and its `deploy` list.
    assert_eq!(dep["summary"]["results"], 80, "{report}");
    // The controller was measured, and 40 agents cost it little memory.
    let rss = report["controller_connected"]["rss_mib"]
        .as_f64()
        .unwrap_or(0.0);
    assert!(
        rss > 0.0 && rss < 256.0,
        "the controller's memory with 40 agents: {rss} MiB: {report}"
    );
    // The controller knows the 40 nodes the fleet registered, each accepted.
    let nodes = c.api.get("/nodes").expect("the nodes");
    let nodes = nodes.as_array().expect("a list");
    assert_eq!(nodes.len(), 40, "{nodes:?}");
    assert!(
        nodes.iter().all(|n| n["admission"] == "accepted"),
        "{nodes:?}"
    );
}
