//! These tests run the real `puppet apply` (Debian's `puppet` package; scripts/test.sh installs it).

use super::*;
use crate::executor::Services;
use crate::shutdown;
use crate::testutil::task;
use plinth_common::wire::TaskKind;
use serde_json::json;
use std::sync::Arc;

struct Fixture {
    dir: tempfile::TempDir,
    services: Arc<Services>,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let services = Arc::new(Services::local(dir.path().join("state")));
        Fixture { dir, services }
    }

    fn with_puppet(program: &Path) -> Fixture {
        let mut f = Fixture::new();
        let mut s = Services::local(f.dir.path().join("state"));
        s.puppet = program.to_path_buf();
        f.services = Arc::new(s);
        f
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn manifest(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    async fn run(&self, params: serde_json::Value, noop: bool) -> Outcome {
        let (_trigger, sd) = shutdown::channel();
        self.run_with(params, noop, sd).await
    }

    async fn run_with(
        &self,
        params: serde_json::Value,
        noop: bool,
        shutdown: crate::shutdown::Shutdown,
    ) -> Outcome {
        let prepared = prepare(&task("puppet-task", TaskKind::Puppet, params)).unwrap();
        let ctx = AttemptContext {
            work_dir: self.path("work"),
            kill_grace: Duration::from_millis(500),
            deployment_id: 1,
            revision: 1,
            task_id: "puppet-task".into(),
            attempt: 1,
            shutdown,
            noop,
            services: self.services.clone(),
        };
        prepared.executor.run(&ctx).await
    }
}

#[tokio::test]
async fn a_manifest_that_changes_a_file_then_changes_nothing() {
    let f = Fixture::new();
    let target = f.path("motd");
    let m = f.manifest(
        "motd.pp",
        &format!(
            "file {{ '{}': content => \"managed by plinth\\n\", mode => '0640' }}\n",
            target.display()
        ),
    );
    let o = f.run(json!({"puppet_manifest": m}), false).await;
    assert_eq!(o.status, ResultStatus::Succeeded, "{o:#?}");
    assert_eq!(o.exit_code, Some(2));
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "managed by plinth\n"
    );
    assert_eq!(o.details["summary"]["changed"], 1);
    assert_eq!(o.details["summary"]["failed"], 0);
    assert_eq!(o.details["summary_written_by_this_run"], true);
    assert!(o.details["summary"]["time_total"].as_f64().is_some());
    assert!(o.message.contains("1 resource(s) changed"), "{}", o.message);
    // The log is captured: puppet's notices on standard output and in the log file.
    assert!(
        o.stdout_tail.contains("defined content"),
        "{}",
        o.stdout_tail
    );
    let log = std::fs::read_to_string(o.details["log_file"].as_str().unwrap()).unwrap();
    assert!(log.contains("defined content"), "{log}");

    let again = f.run(json!({"puppet_manifest": m}), false).await;
    assert_eq!(again.status, ResultStatus::Succeeded, "{again:#?}");
    assert_eq!(again.exit_code, Some(0));
    assert_eq!(again.details["summary"]["changed"], 0);
    assert!(
        again.message.contains("nothing to change"),
        "{}",
        again.message
    );
}

#[tokio::test]
async fn a_failing_resource_fails_the_task_with_its_summary() {
    let f = Fixture::new();
    let m = f.manifest(
        "fail.pp",
        &format!(
            "exec {{ 'boom': command => '/bin/false' }}\nfile {{ '{}': content => 'x' }}\n",
            f.path("other").display()
        ),
    );
    let o = f.run(json!({"puppet_manifest": m}), false).await;
    assert_eq!(o.status, ResultStatus::Failed, "{o:#?}");
    assert_eq!(o.exit_code, Some(6));
    assert_eq!(o.details["summary"]["failed"], 1);
    assert_eq!(o.details["summary"]["changed"], 1);
    assert!(o.message.contains("code 6"), "{}", o.message);
    assert!(o.message.contains("1 failed"), "{}", o.message);
    assert!(o.message.contains("/bin/false"), "{}", o.message);
}

#[tokio::test]
async fn a_compile_failure_fails_without_a_fresh_summary() {
    let f = Fixture::new();
    let good = f.manifest("good.pp", "notify { 'hello': }\n");
    assert_eq!(
        f.run(json!({"puppet_manifest": good}), false).await.status,
        ResultStatus::Succeeded
    );
    let bad = f.manifest("bad.pp", "file {\n");
    let o = f.run(json!({"puppet_manifest": bad}), false).await;
    assert_eq!(o.status, ResultStatus::Failed, "{o:#?}");
    assert_eq!(o.exit_code, Some(1));
    assert_eq!(o.details["summary_written_by_this_run"], false);
    assert!(o.message.contains("Syntax error"), "{}", o.message);
}

#[tokio::test]
async fn a_run_past_its_timeout_is_stopped() {
    let f = Fixture::new();
    let marker = f.path("after-sleep");
    let m = f.manifest(
        "slow.pp",
        &format!(
            "exec {{ 'slow': command => '/bin/sleep 60 && /usr/bin/touch {}', provider => shell }}\n",
            marker.display()
        ),
    );
    let started = std::time::Instant::now();
    let o = f
        .run(json!({"puppet_manifest": m, "timeout": 8}), false)
        .await;
    assert_eq!(o.status, ResultStatus::TimedOut, "{o:#?}");
    assert!(o.message.contains("timed out after 8s"), "{}", o.message);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    // Nothing of the run is left, though puppet starts its execs in sessions of their own.
    let needle = format!("touch {}", marker.display());
    let survivors: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&needle))
        .collect();
    assert!(survivors.is_empty(), "{survivors:?}");
}

#[tokio::test]
async fn noop_mode_reports_what_would_change_and_changes_nothing() {
    let f = Fixture::new();
    let target = f.path("untouched");
    let m = f.manifest(
        "noop.pp",
        &format!("file {{ '{}': content => 'x' }}\n", target.display()),
    );
    let o = f.run(json!({"puppet_manifest": m}), true).await;
    assert_eq!(o.status, ResultStatus::Succeeded, "{o:#?}");
    assert!(!target.exists());
    assert_eq!(o.details["noop"], true);
    assert_eq!(o.details["summary"]["out_of_sync"], 1);
    assert_eq!(o.details["summary"]["changed"], 0);
    assert!(
        o.message.contains("no-op run: 1 resource(s)"),
        "{}",
        o.message
    );
}

#[tokio::test]
async fn modules_and_cwd_are_used() {
    let f = Fixture::new();
    let modules = f.path("modules");
    std::fs::create_dir_all(modules.join("greeting/manifests")).unwrap();
    let target = f.path("greeting.txt");
    std::fs::write(
        modules.join("greeting/manifests/init.pp"),
        format!(
            "class greeting {{ file {{ '{}': content => 'hi' }} }}\n",
            target.display()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(f.path("work/site")).unwrap();
    std::fs::write(f.path("work/site/site.pp"), "include greeting\n").unwrap();
    let o = f
        .run(
            json!({"puppet_manifest": "site.pp", "puppet_modules": modules, "cwd": "site"}),
            false,
        )
        .await;
    assert_eq!(o.status, ResultStatus::Succeeded, "{o:#?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hi");
}

/// A stand-in for puppet that exits with a chosen code after writing a chosen summary.
fn fake_puppet(dir: &Path, summary: &str, code: i32) -> PathBuf {
    let script = dir.join("fake-puppet");
    let text = format!(
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --lastrunfile ] && out=\"$2\"; shift; done\n\
         cat > \"$out\" <<'END'\n{summary}END\nexit {code}\n"
    );
    std::fs::write(&script, text).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    script
}

#[tokio::test]
async fn an_old_summary_or_a_failed_resource_fails_despite_exit_code_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let stale = "resources:\n  changed: 0\n  failed: 0\ntime:\n  total: 1.0\n  last_run: 1000\n";
    let f = Fixture::with_puppet(&fake_puppet(tmp.path(), stale, 0));
    let o = f.run(json!({"puppet_manifest": "x.pp"}), false).await;
    assert_eq!(o.status, ResultStatus::Failed, "{o:#?}");
    assert!(o.message.contains("wrote no run summary"), "{}", o.message);
    assert_eq!(o.details["summary_written_by_this_run"], false);

    let failed = format!(
        "resources:\n  changed: 0\n  failed: 2\ntime:\n  last_run: {}\n",
        now_secs() + 5
    );
    let f = Fixture::with_puppet(&fake_puppet(tmp.path(), &failed, 0));
    let o = f.run(json!({"puppet_manifest": "x.pp"}), false).await;
    assert_eq!(o.status, ResultStatus::Failed, "{o:#?}");
    assert!(o.message.contains("2 failed resource(s)"), "{}", o.message);

    let f = Fixture::with_puppet(&fake_puppet(tmp.path(), "- not a mapping\n", 2));
    let o = f.run(json!({"puppet_manifest": "x.pp"}), false).await;
    assert_eq!(o.status, ResultStatus::Failed, "{o:#?}");
    assert!(o.message.contains("cannot be read"), "{}", o.message);
}

#[tokio::test]
async fn stopping_the_agent_interrupts_puppet() {
    let f = Fixture::new();
    let m = f.manifest("slow.pp", "exec { 'slow': command => '/bin/sleep 60' }\n");
    let (trigger, sd) = shutdown::channel();
    let (o, _) = tokio::join!(
        f.run_with(json!({"puppet_manifest": m}), false, sd),
        async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            trigger.trigger();
        }
    );
    assert_eq!(o.status, ResultStatus::Interrupted, "{o:#?}");
}

#[test]
fn parameters_and_defaults() {
    let p = prepare(&task(
        "p",
        TaskKind::Puppet,
        json!({"puppet_manifest": "/etc/site.pp"}),
    ))
    .unwrap();
    assert_eq!(p.policy, DEFAULTS);
    assert_eq!(p.policy.timeout, Duration::from_secs(5400));
    assert_eq!(p.policy.attempts, 3);
    for (params, field) in [
        (json!({}), "puppet_manifest"),
        (json!({"puppet_manifest": 3}), "puppet_manifest"),
        (
            json!({"puppet_manifest": "a.pp", "puppet_modules": ["a"]}),
            "puppet_modules",
        ),
        (
            json!({"puppet_manifest": "a.pp", "puppet_debug": "loud"}),
            "puppet_debug",
        ),
        (
            json!({"puppet_manifest": "a.pp", "timeout": "later"}),
            "timeout",
        ),
    ] {
        let e = prepare(&task("p", TaskKind::Puppet, params.clone())).unwrap_err();
        assert_eq!(e.field, field, "{params}");
    }
    assert_eq!(file_stem("deploy/netconfig"), "deploy_netconfig");
    assert_eq!(file_stem("..."), "task");
}
