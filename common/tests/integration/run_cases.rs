//! Data-driven cases of a running deployment (`plinth_common::run`): each `run_cases/NAME.yaml` is a
//! deployment and a sequence of events; `run_cases/NAME.expect` is what the run answered to each, as
//! text. A case fails when the answers differ from the expectation; `UPDATE_EXPECT=1 cargo test -p
//! plinth-common --test integration run_cases::` writes the answers as the new expectations (review the diff).
//!
//! Steps, one a line:
//! - `start`: the deployment starts;
//! - `at MS`: the time is now MS milliseconds (0 at first);
//! - `tick MS`: the time is MS and the run checks its phase timeouts;
//! - `results NODE: TASK STATUS, ...`: the node sends results in one batch, for the list it holds
//!   (STATUS is `ok`, `failed`, `timed_out`, `interrupted`, `skipped` or `running`, which is not a last
//!   word; `TASK STATUS rev=N` names another revision, `TASK STATUS deployment=N` another deployment);
//! - `gate NODE TASK`: the node's gated task asks whether it may start;
//! - `cancel OPERATOR`: the operator cancels;
//! - `restart`: the controller restarts: the run is rebuilt from its state as last saved, its
//!   published lists and the results stored so far (those it owned when they came);
//!   `restart after N lists`: the same, when the previous step's publication stopped after its first N
//!   lists were stored (a large phase's lists are stored in slices, each in its own transaction).
//!
//! Answers are printed with node names; revisions come from one counter, as the store gives them.

use crate::run_support;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plinth_common::run::{Effects, Run};
use plinth_common::wire::{ResultStatus, TaskList};
use run_support::{result, Case, Driver};

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/run_cases")
}

fn status(word: &str) -> Result<ResultStatus, String> {
    Ok(match word {
        "ok" => ResultStatus::Succeeded,
        "failed" => ResultStatus::Failed,
        "timed_out" => ResultStatus::TimedOut,
        "interrupted" => ResultStatus::Interrupted,
        "skipped" => ResultStatus::Skipped,
        "running" => ResultStatus::Running,
        other => return Err(format!("unknown status {other:?}")),
    })
}

struct Names(HashMap<u64, String>);

impl Names {
    fn of(&self, id: u64) -> String {
        self.0.get(&id).cloned().unwrap_or_else(|| format!("#{id}"))
    }

    fn list(&self, ids: &[u64]) -> String {
        ids.iter()
            .map(|i| self.of(*i))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn tasks(&self, list: &TaskList) -> String {
        list.tasks
            .iter()
            .map(|t| {
                let mut words = vec![t.id.clone()];
                if t.gated {
                    words.push("gated".into());
                }
                for w in &t.waits_for {
                    words.push(format!("waits:{}.{}", self.of(w.node_id), w.task));
                }
                words.join(" ")
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn render(out: &mut String, names: &Names, fx: &Effects) {
    if !fx.withdraw.is_empty() {
        let _ = writeln!(out, "  withdraw {}", names.list(&fx.withdraw));
    }
    for l in &fx.publish {
        let _ = writeln!(
            out,
            "  publish {} {} rev {}: {}",
            names.of(l.node_id),
            l.phase,
            l.revision,
            names.tasks(l)
        );
    }
    for l in &fx.repost {
        let _ = writeln!(out, "  repost {} rev {}", names.of(l.node_id), l.revision);
    }
    for l in &fx.stop_orders {
        let _ = writeln!(
            out,
            "  stop order {} {} rev {}",
            names.of(l.node_id),
            l.phase,
            l.revision
        );
    }
    for e in &fx.events {
        let _ = writeln!(
            out,
            "  event {}",
            serde_json::to_string(e).unwrap_or_default()
        );
    }
    for e in &fx.live {
        let _ = writeln!(
            out,
            "  live {}",
            serde_json::to_string(e).unwrap_or_default()
        );
    }
    if fx.save_state {
        let _ = writeln!(out, "  save state");
    }
    if let Some(f) = &fx.finish {
        let tasks: Vec<String> = f
            .succeeded_tasks
            .iter()
            .map(|(n, t)| format!("{}.{t}", names.of(*n)))
            .collect();
        let _ = writeln!(
            out,
            "  finish {}: succeeded [{}] failed [{}] untouched [{}] tasks [{}]",
            f.status,
            names.list(&f.succeeded),
            names.list(&f.failed),
            names.list(&f.untouched),
            tasks.join(", ")
        );
        for (n, why) in &f.reasons {
            let _ = writeln!(out, "    {}: {why}", names.of(*n));
        }
    }
    if fx.waits_changed {
        let _ = writeln!(out, "  waits changed");
    }
}

/// Runs a case; returns its answers as text.
fn play(case: &Case) -> Result<String, String> {
    let mut run: Run = case.run()?;
    let ids = case.ids();
    let names = Names(ids.iter().map(|(n, i)| (*i, n.clone())).collect());
    let mut driver = Driver::default();
    let mut now: i64 = 0;
    let mut out = String::new();
    let mut stored: Vec<(u64, plinth_common::wire::TaskResult)> = Vec::new();
    let mut saved = serde_json::to_string(run.state()).map_err(|e| e.to_string())?;
    // What the previous step published, in order: (node, revision).
    let mut last_published: Vec<(u64, u64)> = Vec::new();
    for (line, step) in case.steps.iter().enumerate() {
        let _ = writeln!(out, "> {step}");
        let at = |what: &str| format!("step {} ({step}): {what}", line + 1);
        let (verb, rest) = step.split_once(' ').unwrap_or((step.as_str(), ""));
        let mut fx = match verb {
            "start" => run.start(now),
            "at" => {
                now = rest.trim().parse().map_err(|_| at("at MS"))?;
                continue;
            }
            "tick" => {
                now = rest.trim().parse().map_err(|_| at("tick MS"))?;
                run.tick(now)
            }
            "results" => {
                let (node, items) = rest
                    .split_once(':')
                    .ok_or_else(|| at("results NODE: ..."))?;
                let node = *ids.get(node.trim()).ok_or_else(|| at("unknown node"))?;
                let mut batch = Vec::new();
                for item in items.split(',') {
                    let words: Vec<&str> = item.split_whitespace().collect();
                    let [task, word, more @ ..] = words.as_slice() else {
                        return Err(at("TASK STATUS"));
                    };
                    let mut r = result(
                        driver.revision_of(node),
                        task,
                        status(word).map_err(|e| at(&e))?,
                        1,
                    );
                    for m in more {
                        if let Some(v) = m.strip_prefix("rev=") {
                            r.revision = v.parse().map_err(|_| at("rev=N"))?;
                        } else if let Some(v) = m.strip_prefix("deployment=") {
                            r.deployment_id = v.parse().map_err(|_| at("deployment=N"))?;
                        } else if let Some(v) = m.strip_prefix("attempt=") {
                            r.attempt = v.parse().map_err(|_| at("attempt=N"))?;
                        } else {
                            return Err(at(&format!("unknown word {m:?}")));
                        }
                    }
                    batch.push(r);
                }
                stored.extend(
                    batch
                        .iter()
                        .filter(|r| run.owns(node, r))
                        .map(|r| (node, r.clone())),
                );
                run.results(now, node, &batch)
            }
            "gate" => {
                let (node, task) = rest
                    .trim()
                    .split_once(' ')
                    .ok_or_else(|| at("gate NODE TASK"))?;
                let node = *ids.get(node).ok_or_else(|| at("unknown node"))?;
                match run.gate(node, task.trim()) {
                    None => {
                        let _ = writeln!(out, "  gate: not running here");
                    }
                    Some(g) => {
                        let _ = writeln!(
                            out,
                            "  gate: ready {} blocked {} waiting for {:?}",
                            g.ready, g.blocked, g.waiting_for
                        );
                    }
                }
                continue;
            }
            "cancel" => match run.cancel(rest.trim()) {
                Ok(fx) => fx,
                Err(e) => {
                    let _ = writeln!(out, "  refused: {e}");
                    continue;
                }
            },
            "restart" => {
                if let Some(kept) = rest.strip_prefix("after ") {
                    let kept: usize = kept
                        .trim_end_matches(" lists")
                        .trim()
                        .parse()
                        .map_err(|_| at("restart after N lists"))?;
                    for (node, revision) in last_published.iter().skip(kept) {
                        if let Some(lists) = driver.lists.get_mut(node) {
                            lists.retain(|l| l.revision != *revision);
                        }
                    }
                }
                // What the store has: the state as last saved, not as it is in memory.
                let state = serde_json::from_str(&saved).map_err(|e| at(&e.to_string()))?;
                let lists: Vec<TaskList> = driver.lists.values().flatten().cloned().collect();
                let (restored, fx) = Run::restore(run.plan().clone(), state, &lists, &stored, now);
                run = restored;
                fx
            }
            other => return Err(at(&format!("unknown step {other:?}"))),
        };
        let finished_before = driver_finished(&out, line);
        driver.apply(&mut run, &mut fx);
        last_published = fx.publish.iter().map(|l| (l.node_id, l.revision)).collect();
        if fx.save_state {
            saved = serde_json::to_string(run.state()).map_err(|e| e.to_string())?;
        }
        if finished_before && !fx.publish.is_empty() {
            return Err(at("published after the deployment finished"));
        }
        render(&mut out, &names, &fx);
    }
    Ok(out)
}

/// Whether an earlier step's answer finished the deployment.
fn driver_finished(out: &str, _line: usize) -> bool {
    out.lines().any(|l| l.starts_with("  finish "))
}

#[test]
fn every_case_answers_as_expected() {
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .expect("the cases folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 30, "only {} cases", paths.len());
    let mut failures = Vec::new();
    for path in &paths {
        let name = path.file_stem().unwrap_or_default().to_string_lossy();
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let case: Case = match serde_yaml_ng::from_str(&text) {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let got = match play(&case) {
            Ok(got) => got,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let expect_path = path.with_extension("expect");
        let expected = std::fs::read_to_string(&expect_path).unwrap_or_default();
        if got != expected {
            if update {
                std::fs::write(&expect_path, &got).expect("write the expectation");
            } else {
                failures.push(format!(
                    "{name}: the answers differ from {}\n--- expected\n{expected}--- got\n{got}",
                    expect_path.display()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed (UPDATE_EXPECT=1 rewrites expectations):\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n")
    );
}
