//! A short run of the fault-injection soak (`plinth-loadgen chaos`): simulated agents killed mid-list,
//! the controller killed and restarted, acknowledgements dropped, batches duplicated, slow links. Every
//! deployment must finish with exactly one line per (node, task) holding the acknowledged final attempt.

use plinth_e2e::bin;
use std::process::Command;

#[test]
fn a_short_chaos_soak_finishes_every_deployment_and_loses_nothing() {
    let out = Command::new(bin("plinth-loadgen"))
        .args(["chaos", "--nodes", "12", "--tasks", "4", "--seconds", "20"])
        .args(["--controller-kill-every", "5", "--seed", "7"])
        .arg("--controller-bin")
        .arg(bin("plinth-controller"))
        .output()
        .expect("plinth-loadgen runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).expect("a JSON summary");
    assert_eq!(summary["results_lost"], 0, "{summary:#}");
    assert!(summary["deployments_finished"].as_u64().unwrap() >= 1);
    assert!(
        summary["controller_kills"].as_u64().unwrap() >= 1,
        "{summary:#}"
    );
    assert!(summary["agent_kills"].as_u64().unwrap() >= 1, "{summary:#}");
}
