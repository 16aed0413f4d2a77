//! `plinthctl` as users run it: the quickstart, and the offline strategy commands on files.

use plinth_e2e::*;
use serde_json::Value;
use std::process::Command;

const STRATEGY: &str = r#"
schema: shipyard/DeploymentStrategy/v1
metadata: {name: site}
data:
  groups:
    - {name: ntp-node, critical: true, depends_on: [], selectors: [{node_names: [ntp01]}], success_criteria: {minimum_successful_nodes: 1}}
    - {name: control-nodes, critical: true, depends_on: [ntp-node], selectors: [{node_tags: [control]}]}
    - {name: monitoring-nodes, critical: false, depends_on: [], selectors: [{node_tags: [monitoring]}]}
"#;

const INVENTORY: &str = r#"
- {name: ntp01, tags: [ntp], rack: rack01}
- {name: ctl01, tags: [control], rack: rack03}
- {name: mon01, tags: [monitoring], labels: {zone: east}, rack: rack02}
"#;

fn plinthctl(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin("plinthctl"))
        .args(args)
        .output()
        .expect("plinthctl runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn the_quickstart_deploys_its_sample_graph() {
    let (code, out, err) = plinthctl(&["quickstart", "-o", "json"]);
    assert_eq!(code, 0, "quickstart failed:\n{err}\n{out}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["status"], "success");
    assert_eq!(report["nodes"].as_array().unwrap().len(), 3);
    let flaky = task_line(&report, "web-1", "flaky-fetch").unwrap();
    assert_eq!(
        flaky["attempts"], 2,
        "the sample shows a failure and a retry"
    );
}

#[test]
fn strategy_check_and_simulate_work_offline() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("strategy.yaml");
    let inv = dir.path().join("nodes.yaml");
    std::fs::write(&s, STRATEGY).unwrap();
    std::fs::write(&inv, INVENTORY).unwrap();
    let (s, inv) = (s.to_str().unwrap(), inv.to_str().unwrap());

    let (code, out, err) = plinthctl(&["strategy", "check", s, "--inventory", inv]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("ntp-node") && out.contains("ctl01"), "{out}");
    let (code, out, _) = plinthctl(&["strategy", "check", s, "--inventory", inv, "-o", "json"]);
    assert_eq!(code, 0);
    let _: Value = serde_json::from_str(&out).expect("JSON");

    let (code, out, _) = plinthctl(&["strategy", "simulate", s, "--inventory", inv, "-o", "json"]);
    assert_eq!(code, 0);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["status"], "success");

    let (code, out, _) = plinthctl(&[
        "strategy",
        "simulate",
        s,
        "--inventory",
        inv,
        "--fail",
        "ntp01:prepare",
        "-o",
        "json",
    ]);
    assert_eq!(code, 1, "a failed deployment exits 1");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["status"], "failed");
    let (code, out, _) = plinthctl(&[
        "strategy",
        "simulate",
        s,
        "--inventory",
        inv,
        "--fail",
        "ntp01:prepare",
    ]);
    assert_eq!(code, 1);
    assert!(out.contains("prepare") && out.contains("FAILED"), "{out}");

    let (code, _, err) = plinthctl(&[
        "strategy",
        "simulate",
        s,
        "--inventory",
        inv,
        "--fail",
        "nobody:prepare",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("nobody"), "{err}");
}

#[test]
fn bad_strategy_files_exit_non_zero_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("bad.yaml");
    let inv = dir.path().join("nodes.yaml");
    std::fs::write(
        &s,
        "groups:\n  - {name: a, critical: yes please, depends_on: [zz], selectors: []}\n",
    )
    .unwrap();
    std::fs::write(&inv, INVENTORY).unwrap();
    let (code, _, err) = plinthctl(&[
        "strategy",
        "check",
        s.to_str().unwrap(),
        "--inventory",
        inv.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("bad.yaml") && err.contains("critical") && err.contains("zz"),
        "{err}"
    );
    let (code, _, err) = plinthctl(&[
        "strategy",
        "check",
        "/nonexistent.yaml",
        "--inventory",
        inv.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent.yaml"), "{err}");
}

/// Runs `plinthctl ARGS` with its standard output a pipe whose reader has already gone (as after
/// `plinthctl ... | head` once `head` exits); returns the exit code and standard error.
fn plinthctl_into_closed_pipe(args: &[&str]) -> (i32, String) {
    let (reader, writer) = nix::unistd::pipe().expect("a pipe");
    drop(reader);
    let out = Command::new(bin("plinthctl"))
        .args(args)
        .stdout(std::process::Stdio::from(writer))
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("plinthctl runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("strategy.yaml");
    let inv = dir.path().join("nodes.yaml");
    std::fs::write(&s, STRATEGY).unwrap();
    std::fs::write(&inv, INVENTORY).unwrap();
    let (s, inv) = (s.to_str().unwrap(), inv.to_str().unwrap());
    let c = Controller::start();
    let token = c.data_dir().join("admin.token");
    let cert = c.cert_path();
    let online = [
        "--controller",
        &c.url,
        "--token-file",
        token.to_str().unwrap(),
        "--ca-cert",
        cert.to_str().unwrap(),
    ];
    let commands: Vec<Vec<&str>> = vec![
        vec!["strategy", "check", s, "--inventory", inv],
        vec!["strategy", "simulate", s, "--inventory", inv, "-o", "json"],
        vec!["expr", "eval", "range(1, 5000)"],
        vec!["release", "list"],
        vec!["cluster", "list", "-o", "json"],
        vec!["nodes", "list"],
    ];
    for (i, cmd) in commands.iter().enumerate() {
        let mut args: Vec<&str> = Vec::new();
        if i >= 3 {
            args.extend_from_slice(&online);
        }
        args.extend_from_slice(cmd);
        let (code, err) = plinthctl_into_closed_pipe(&args);
        assert_eq!(code, 0, "plinthctl {cmd:?} into a closed pipe: {err}");
        // Nothing more on standard error than the command says before its output when read whole.
        let (normal, out, normal_err) = plinthctl(&args);
        assert!(normal == 0 && !out.is_empty(), "{cmd:?}: {normal_err}");
        assert!(
            normal_err.starts_with(&err),
            "plinthctl {cmd:?} into a closed pipe printed: {err}"
        );
    }
}
