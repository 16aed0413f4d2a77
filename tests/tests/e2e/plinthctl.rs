//! `plinthctl` as users run it: the quickstart, and the offline strategy commands on files.

use plinth_e2e::*;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

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
    // The primary rule is shown on purpose, not met as a warning.
    assert!(
        err.contains("db-1 is elected primary-db"),
        "the quickstart says where the primary was elected:\n{err}"
    );
    assert_eq!(
        task_line(&report, "db-1", "init-db").map(|t| t["status"].clone()),
        Some(serde_json::json!("succeeded")),
        "init-db runs on the elected primary"
    );
    let (code, out, err) = plinthctl(&["quickstart"]);
    assert_eq!(code, 0, "quickstart failed:\n{err}\n{out}");
    assert!(
        !format!("{out}{err}").to_lowercase().contains("warning"),
        "a first run shows no warning the sample causes:\n{err}\n{out}"
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

/// `plinthctl` against a controller with its admin token and certificate, `extra` options first;
/// (exit code, stdout, stderr).
fn ctl_at(c: &Controller, extra: &[&str], args: &[&str]) -> (i32, String, String) {
    let cert = c.cert_path();
    let cert = cert.to_str().expect("a UTF-8 path");
    plinthctl(
        &[
            &["--token", c.api.token.as_str(), "--ca-cert", cert][..],
            extra,
            &["--controller", c.url.as_str()][..],
            args,
        ]
        .concat(),
    )
}

/// The node's id in a table row that names it.
fn wait_named_nodes(c: &Controller, count: usize) -> Vec<u64> {
    c.api.wait_nodes(count).iter().map(|(_, id)| *id).collect()
}

#[test]
fn errors_say_what_to_do_and_each_kind_has_its_exit_code() {
    // No auto-accept: the agents' nodes wait to be accepted.
    let c = Controller::start_with(&[]);
    let agents: Vec<Agent> = (1..=2)
        .map(|i| Agent::start(&c, &format!("cli-{i}"), &["cli"]))
        .collect();
    let ids = wait_named_nodes(&c, 2);
    let (a, b) = (ids[0].to_string(), ids[1].to_string());

    // Several ids at once; one that does not exist is named, the others are done, exit 4.
    let (code, out, err) = ctl_at(&c, &[], &["nodes", "accept", &a, &b, "999"]);
    assert_eq!(code, 4, "{out}{err}");
    assert!(out.contains("cli-1") && out.contains("cli-2"), "{out}");
    assert!(
        err.contains("999") && err.contains("1 of 3 not accepted"),
        "{err}"
    );
    let (code, _, err) = ctl_at(&c, &[], &["nodes", "accept"]);
    assert_eq!(code, 2, "a usage mistake: {err}");

    // Not found, unauthorized (with what to give), unreachable, an untrusted certificate.
    let (code, _, err) = ctl_at(&c, &[], &["deploy", "report", "4242"]);
    assert_eq!(code, 4, "{err}");
    let (code, _, err) = ctl_at(&c, &[], &["nodes", "list", "--token", "wrong"]);
    assert_eq!(code, 6, "{err}");
    assert!(err.contains("--token-file"), "{err}");
    let no_token = std::process::Command::new(bin("plinthctl"))
        .args(["--controller", &c.url, "--ca-cert"])
        .arg(c.cert_path())
        .args(["nodes", "list"])
        .env_remove("PLINTH_TOKEN")
        .env("PLINTH_TOKEN_FILE", "")
        .output()
        .expect("plinthctl runs");
    let err = String::from_utf8_lossy(&no_token.stderr);
    assert_eq!(
        no_token.status.code(),
        Some(6),
        "an empty PLINTH_TOKEN_FILE is unset: {err}"
    );
    assert!(
        err.contains("PLINTH_TOKEN_FILE") && !err.contains("a value is required"),
        "{err}"
    );
    let untrusted = std::process::Command::new(bin("plinthctl"))
        .args([
            "--controller",
            &c.url,
            "--token",
            &c.api.token,
            "nodes",
            "list",
        ])
        .env_remove("PLINTH_CA_CERT")
        .output()
        .expect("plinthctl runs");
    let err = String::from_utf8_lossy(&untrusted.stderr);
    assert_eq!(untrusted.status.code(), Some(5), "{err}");
    assert!(err.contains("PLINTH_CA_CERT"), "{err}");
    let closed = reserve_port().release();
    let (code, _, err) = ctl_at(
        &c,
        &[],
        &[
            "nodes",
            "list",
            "--controller",
            &format!("https://127.0.0.1:{closed}"),
        ],
    );
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains("cannot reach") && err.contains("--controller"),
        "{err}"
    );
    // A controller that cannot be reached is passed over for the next one given.
    let both = format!("https://127.0.0.1:{closed},{}", c.url);
    let (code, out, err) = ctl_at(&c, &[], &["nodes", "list", "--controller", &both]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("cli-1") && err.contains("trying"),
        "{out}{err}"
    );

    // A failed task: the deployment's id first, then the report with the end of its output; exit 1.
    let graph = serde_json::json!({"default": {"tasks": [
        shell("breaks", &["cli"], "echo first-out; echo the-last-words >&2; exit 3"),
    ]}});
    let cid = c.api.cluster_with_graph("cli", graph, &ids).to_string();
    let (code, out, err) = ctl_at(&c, &[], &["deploy", "start", &cid, "--watch"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("started; following it"), "{err}");
    assert!(out.contains("FAILED"), "{out}");
    assert!(
        out.contains("Failed tasks' output")
            && out.contains("the-last-words")
            && out.contains("exit 3"),
        "{out}"
    );
    // A request the controller refuses: a running deployment's nodes, or an ended one cancelled.
    let dep: Value = c.api.get("/deployments").unwrap();
    let dep = dep[0]["id"].as_u64().unwrap().to_string();
    let (code, _, err) = ctl_at(&c, &[], &["deploy", "cancel", &dep]);
    assert_eq!(code, 3, "{err}");
    drop(agents);
}

#[test]
fn help_shows_options_where_they_apply_and_the_exit_codes() {
    let (code, out, _) = plinthctl(&["--help"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("Exit codes") && out.contains("6  unauthorized"),
        "{out}"
    );
    let (_, out, _) = plinthctl(&["graph", "resolve", "--help"]);
    assert!(
        !out.contains("--controller") && !out.contains("--token-file"),
        "{out}"
    );
    let (_, out, _) = plinthctl(&["expr", "eval", "--help"]);
    assert!(!out.contains("--controller"), "{out}");
    let (_, out, _) = plinthctl(&["nodes", "list", "--help"]);
    assert!(
        out.contains("--controller") && out.contains("--token-file"),
        "{out}"
    );
}

#[test]
fn a_fixture_with_several_releases_asks_which() {
    let fixture = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/corpus/fuel-web/openstack.yaml"
    ));
    let fixture = fixture.to_str().expect("a UTF-8 path");
    let c = Controller::start();
    let (code, _, err) = ctl_at(&c, &[], &["release", "create", fixture]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("3 releases")
            && err.contains("\"Newton on Ubuntu 16.04\"")
            && err.contains("--name"),
        "{err}"
    );
    let (code, out, err) = ctl_at(
        &c,
        &["-o", "json"],
        &[
            "release",
            "create",
            fixture,
            "--name",
            "Newton on Ubuntu+UCA 16.04",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let created: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(created["name"], "Newton on Ubuntu+UCA 16.04");
}

/// Two shell tasks of a few seconds on each node: long enough to kill a controller in between.
fn slow_graph() -> Value {
    serde_json::json!({"default": {"tasks": [
        shell("slow-1", &["w"], "sleep 2; echo one"),
        {"id": "slow-2", "type": "shell", "tags": ["w"], "requires": ["slow-1"],
         "parameters": {"cmd": "sleep 3; echo two", "timeout": 60, "retries": 0}},
    ]}})
}

/// Waits for a `plinthctl` child to end; (exit code, stdout, stderr).
fn ended(child: std::process::Child) -> (i32, String, String) {
    let pid = child.id();
    let guard = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(240));
        // Still running after this long: end it so that the test fails rather than hangs.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    });
    let out = child.wait_with_output().expect("plinthctl ends");
    drop(guard);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn watching(c: &Controller, controllers: &str, dep: u64) -> std::process::Child {
    std::process::Command::new(bin("plinthctl"))
        .args([
            "--controller",
            controllers,
            "--token",
            &c.api.token,
            "--ca-cert",
        ])
        .arg(c.cert_path())
        .args(["deploy", "watch", &dep.to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("plinthctl starts")
}

/// Whether a controller `c` lists matches `f`.
fn any_controller(c: &Controller, f: impl Fn(&Value) -> bool) -> bool {
    c.api.get("/cluster-status").is_ok_and(|s| {
        s["controllers"]
            .as_array()
            .is_some_and(|list| list.iter().any(&f))
    })
}

/// Two controllers sharing a fresh database of `pg` (the first sequences), two agents given both, and a
/// deployment of [`slow_graph`] started at the first; `plinthctl deploy watch` follows it through the
/// first (the second given too) once a first task ended. (first, second, agents, deployment, watcher)
fn watched_on_two_controllers(
    pg: &plinth_controller::store::postgres::scratch::ScratchPostgres,
) -> (Controller, Controller, Vec<Agent>, u64, std::process::Child) {
    let url = pg.fresh_database().expect("a database");
    let flags = ["--auto-accept", "--database-url", url.as_str()];
    let a = Controller::start_with(&flags);
    wait_until(
        "the first controller sequences",
        Duration::from_secs(60),
        || any_controller(&a, |x| x["sequencer"] == true),
    );
    let b = Controller::start_sharing(&a, &flags);
    let agents: Vec<Agent> = (1..=2)
        .map(|i| Agent::start_for_controllers(&a, &[&a.url, &b.url], &format!("w-{i}"), &["w"]))
        .collect();
    let ids = wait_named_nodes(&b, 2);
    let cid = b.api.cluster_with_graph("w", slow_graph(), &ids);
    let dep = a.api.deploy(cid, "");
    let child = watching(&a, &format!("{},{}", a.url, b.url), dep);
    wait_until("a first task ended", Duration::from_secs(60), || {
        b.api.get(&format!("/deployments/{dep}")).is_ok_and(|r| {
            task_line(&r, "w-1", "slow-1").is_some_and(|t| t["status"] == "succeeded")
        })
    });
    (a, b, agents, dep, child)
}

#[test]
fn watch_outlives_the_database_going_away() {
    let pg = plinth_e2e::needs::postgres();
    let (a, _b, agents, _dep, child) = watched_on_two_controllers(&pg);
    pg.kill().expect("the database stops at once");
    std::thread::sleep(Duration::from_secs(6));
    pg.restart().expect("the database starts again");
    let (code, out, err) = ended(child);
    assert_eq!(code, 0, "{out}\n{err}\n{}", a.log());
    assert!(out.contains("SUCCESS"), "{out}");
    // The stream may stay open through the outage; a report read that failed is waited out.
    assert_eq!(
        err.contains("lost the controller"),
        err.contains("reconnected"),
        "{err}"
    );
    drop(agents);
}

#[test]
fn watch_outlives_the_controller_it_follows_being_killed_and_another_taking_over() {
    let pg = plinth_e2e::needs::postgres();
    let (mut a, b, agents, _dep, child) = watched_on_two_controllers(&pg);
    a.kill();
    let (code, out, err) = ended(child);
    // What the operator reads (printed with --nocapture).
    eprintln!("plinthctl deploy watch, standard error:\n{err}");
    assert_eq!(code, 0, "the deployment's real outcome:\n{out}\n{err}");
    assert!(out.contains("SUCCESS"), "{out}");
    assert!(err.contains("lost the controller"), "said once: {err}");
    assert_eq!(err.matches("lost the controller").count(), 1, "{err}");

    // The controllers, readable: distinct names, times in words, no stale agent count for the dead one.
    wait_until(
        "the killed controller is not live",
        Duration::from_secs(60),
        || any_controller(&b, |x| x["live"] == false),
    );
    let (code, out, err) = ctl_at(&b, &[], &["controllers"]);
    assert_eq!(code, 0, "{err}");
    eprintln!("plinthctl controllers:\n{out}");
    let dead = out
        .lines()
        .find(|l| l.contains("not live"))
        .expect("a dead row");
    assert!(dead.contains(" - ") && dead.contains("s ago"), "{out}");
    let names: Vec<&str> = out
        .lines()
        .skip(1)
        .filter(|l| l.contains("https://"))
        .filter_map(|l| l.split("  ").filter(|s| !s.is_empty()).nth(1))
        .collect();
    assert_eq!(names.len(), 2, "{out}");
    assert_ne!(names[0], names[1], "{out}");
    drop(agents);
}

#[test]
fn watch_waits_out_its_only_controller_restarting() {
    let mut c = Controller::start();
    let agent = Agent::start(&c, "r-1", &["w"]);
    let ids = wait_named_nodes(&c, 1);
    let cid = c.api.cluster_with_graph("r", slow_graph(), &ids);
    let dep = c.api.deploy(cid, "");
    let child = watching(&c, &c.url, dep);
    std::thread::sleep(Duration::from_secs(1));
    c.restart();
    let (code, out, err) = ended(child);
    assert_eq!(code, 0, "{out}\n{err}\n{}", c.log());
    assert!(out.contains("SUCCESS"), "{out}");
    assert!(
        err.contains("lost the controller") && err.contains("reconnected"),
        "{err}"
    );
    drop(agent);
}
