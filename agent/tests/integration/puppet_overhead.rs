//! Measures what a puppet task costs over running the same `puppet apply` by hand: the same manifest is
//! applied alternately by the agent's puppet executor and by a plain `puppet apply --detailed-exitcodes`,
//! and the medians are compared. Ignored by default (it takes about a minute); run it on demand:
//!
//! ```text
//! cargo test -p plinth-agent --release --test integration puppet_overhead:: -- --ignored --nocapture
//! ```

use plinth_agent::executor::{self, AttemptContext, Services};
use plinth_common::wire::{ResultStatus, TaskKind, TaskSpec};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

const RUNS: usize = 11;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[tokio::test]
#[ignore = "a measurement; run on demand"]
async fn puppet_task_overhead_over_puppet_apply() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("motd");
    let manifest = dir.path().join("site.pp");
    std::fs::write(
        &manifest,
        format!(
            "file {{ '{}': content => \"hello\\n\" }}\n",
            target.display()
        ),
    )
    .unwrap();
    let task = TaskSpec {
        id: "bench".into(),
        kind: TaskKind::Puppet,
        parameters: serde_json::json!({"puppet_manifest": manifest})
            .as_object()
            .cloned()
            .unwrap(),
        skip_reason: None,
        waits_for: vec![],
        gated: false,
        manifests: Default::default(),
    };
    let services = Arc::new(Services::local(dir.path().join("state")));
    let (_trigger, shutdown) = plinth_agent::shutdown::channel();
    let (mut by_agent, mut by_hand) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let _ = std::fs::remove_file(&target);
        let started = Instant::now();
        let prepared = executor::prepare(&task, false).unwrap();
        let ctx = AttemptContext {
            work_dir: dir.path().to_path_buf(),
            kill_grace: Duration::from_secs(1),
            deployment_id: 1,
            revision: 1,
            task_id: "bench".into(),
            attempt: 1,
            shutdown: shutdown.clone(),
            noop: false,
            services: services.clone(),
        };
        let o = prepared.executor.run(&ctx).await;
        by_agent.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(o.status, ResultStatus::Succeeded, "{o:?}");

        let _ = std::fs::remove_file(&target);
        let started = Instant::now();
        let out = Command::new("puppet")
            .args(["apply", "--detailed-exitcodes", "--color=false"])
            .arg(&manifest)
            .current_dir(dir.path())
            .output()
            .unwrap();
        by_hand.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(out.status.code(), Some(2));
    }
    let (agent, hand) = (median(by_agent.clone()), median(by_hand.clone()));
    println!("runs: {RUNS} each, alternating");
    println!("puppet task through the agent: median {agent:.0} ms  {by_agent:.0?}");
    println!("puppet apply by hand:          median {hand:.0} ms  {by_hand:.0?}");
    println!("overhead (median difference):  {:.0} ms", agent - hand);
}

/// The agent's own cost per puppet task, without puppet's noise: a stand-in program that writes a run
/// summary and exits 2, run through the executor and by hand.
#[tokio::test]
#[ignore = "a measurement; run on demand"]
async fn executor_cost_with_a_stand_in_for_puppet() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("fake-puppet");
    std::fs::write(
        &fake,
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --lastrunfile ] && out=\"$2\"; shift; done\n\
         printf 'resources:\\n  changed: 1\\n  failed: 0\\ntime:\\n  total: 0.1\\n  last_run: %s\\n' \
         \"$(date +%s)\" > \"${out:-/dev/null}\"\nexit 2\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let task = TaskSpec {
        id: "bench".into(),
        kind: TaskKind::Puppet,
        parameters: serde_json::json!({"puppet_manifest": "site.pp"})
            .as_object()
            .cloned()
            .unwrap(),
        skip_reason: None,
        waits_for: vec![],
        gated: false,
        manifests: Default::default(),
    };
    let mut services = Services::local(dir.path().join("state"));
    services.puppet = fake.clone();
    let services = Arc::new(services);
    let (_trigger, shutdown) = plinth_agent::shutdown::channel();
    let (mut by_agent, mut by_hand) = (Vec::new(), Vec::new());
    for _ in 0..101 {
        let started = Instant::now();
        let prepared = executor::prepare(&task, false).unwrap();
        let ctx = AttemptContext {
            work_dir: dir.path().to_path_buf(),
            kill_grace: Duration::from_secs(1),
            deployment_id: 1,
            revision: 1,
            task_id: "bench".into(),
            attempt: 1,
            shutdown: shutdown.clone(),
            noop: false,
            services: services.clone(),
        };
        let o = prepared.executor.run(&ctx).await;
        by_agent.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(o.status, ResultStatus::Succeeded, "{o:?}");

        let started = Instant::now();
        let out = Command::new(&fake)
            .args(["apply", "--lastrunfile"])
            .arg(dir.path().join("by-hand.yaml"))
            .output()
            .unwrap();
        by_hand.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(out.status.code(), Some(2));
    }
    let (agent, hand) = (median(by_agent), median(by_hand));
    println!("stand-in through the agent: median {agent:.2} ms");
    println!("stand-in by hand:           median {hand:.2} ms");
    println!("executor cost:              {:.2} ms", agent - hand);
}
