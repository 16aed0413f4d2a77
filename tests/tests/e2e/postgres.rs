//! The controller on PostgreSQL: one real controller started with `--database-url` on a scratch
//! PostgreSQL server (TLS to it, certificate verified), one real agent, and a deployment of a small graph
//! that completes. The records are in PostgreSQL, not in a SQLite file, and a controller restarted on the
//! same database finds them.

use plinth_controller::store::postgres::PgStore;
use plinth_controller::store::{DeploymentStatus, Store};
use plinth_e2e::*;
use serde_json::json;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

#[test]
fn a_controller_on_postgresql_runs_a_deployment_to_the_end() {
    let pg = plinth_e2e::needs::postgres();
    let url = pg.fresh_database().expect("a database");
    let mut c = Controller::start_with(&["--auto-accept", "--database-url", &url]);
    let agent = Agent::start(&c, "pg-node", &[]);
    let ids: Vec<u64> = c.api.wait_nodes(1).iter().map(|(_, id)| *id).collect();
    let graph = json!({"default": {"tasks": [
        shell("first", &["*"], "echo one > first-ran"),
        {"id": "second", "type": "shell", "tags": ["*"], "requires": ["first"],
         "parameters": {"cmd": "test -e first-ran && touch second-ran", "retries": 0}},
    ]}});
    let cid = c.api.cluster_with_graph("on-postgres", graph, &ids);
    let dep = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success", "{report:#}");
    for task in ["first", "second"] {
        assert_eq!(
            task_line(&report, &agent.name, task).map(|t| t["status"].clone()),
            Some(json!("succeeded")),
            "{report:#}"
        );
    }
    assert!(
        agent.work().join("second-ran").exists(),
        "the tasks ran, in order"
    );
    assert!(
        !c.data_dir().join("plinth.db").exists(),
        "no SQLite database was made in the data directory"
    );

    // The records are PostgreSQL's: another store on the same database reads them.
    let store = PgStore::open(&url).expect("the database opens");
    let stored = store.get_deployment(dep).expect("the deployment is stored");
    assert_eq!(stored.status, DeploymentStatus::Success);
    let results = store.deployment_results(dep).expect("results");
    for task in ["first", "second"] {
        assert!(
            results.iter().any(|(_, r)| r.task_id == task && r.last),
            "the final result of {task} is stored: {results:?}"
        );
    }
    drop(store);

    // A controller restarted on the same database serves what the first one recorded.
    c.restart();
    let again = c
        .api
        .get(&format!("/deployments/{dep}"))
        .expect("the deployment after a restart");
    assert_eq!(again["status"], "success", "{again:#}");
    assert_eq!(c.api.node_ids().len(), 1, "the node is still registered");
}

#[test]
fn a_database_url_that_is_not_postgresql_is_refused_with_its_setting_named() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = std::process::Command::new(bin("plinth-controller"))
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--database-url", "mysql://db/plinth", "serve", "--listen"])
        .arg("127.0.0.1:0")
        .output()
        .expect("the controller runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused: {err}");
    assert!(err.contains("database_url"), "names the setting: {err}");
    assert!(!err.contains("mysql://db"), "never repeats the URL: {err}");
}

/// The probes, as a load balancer asks them (no token): `/healthz` while the process answers,
/// `/readyz` 200 while PostgreSQL answers with this controller's schema, 503 naming the database
/// while it is down, and 200 again once it is back.
#[test]
fn readyz_follows_the_database_and_healthz_the_process() {
    let pg = plinth_e2e::needs::postgres();
    let url = pg.fresh_database().expect("a database");
    let c = Controller::start_with(&["--database-url", &url]);
    let probe = |path: &str| {
        let resp = c
            .api
            .http()
            .get(format!("{}{path}", c.url))
            .send()
            .expect("the controller answers");
        let status = resp.status().as_u16();
        (status, resp.text().unwrap_or_default())
    };
    assert_eq!(probe("/healthz"), (200, "ok\n".to_string()));
    let (status, body) = probe("/readyz");
    assert_eq!(status, 200, "{body}");
    let ready: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        ready,
        json!({"ready": true, "database": "ok", "migrations": "applied", "sequencing": true})
    );

    pg.kill().expect("PostgreSQL stops");
    let (status, body) = probe("/readyz");
    assert_eq!(status, 503, "{body}");
    let down: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(down["ready"], false, "{body}");
    assert_ne!(down["database"], "ok", "{body}");
    assert!(
        !body.contains("postgres://"),
        "no connection details: {body}"
    );
    assert_eq!(probe("/healthz").0, 200, "the process still answers");

    pg.restart().expect("PostgreSQL starts again");
    wait_until("/readyz answers 200 again", LONG, || {
        probe("/readyz").0 == 200
    });
}

/// On PostgreSQL the database is backed up with `pg_dump` (the whole database, custom format) and the
/// data directory with `plinth-controller backup`; after `pg_restore` into a new database,
/// `plinth-controller check` reads it as a controller starting on it would, running deployment
/// included.
#[test]
fn pg_dump_and_restore_pass_the_check_with_the_running_deployment() {
    let pg = plinth_e2e::needs::postgres();
    let url = pg.fresh_database().expect("a database");
    let c = Controller::start_with(&["--auto-accept", "--database-url", &url]);
    let agent = Agent::start(&c, "pg-held", &[]);
    let ids: Vec<u64> = c.api.wait_nodes(1).iter().map(|(_, id)| *id).collect();
    let hold = "touch holding; while [ ! -e go ]; do sleep 0.1; done";
    let graph = json!({"default": {"tasks": [shell("hold", &["*"], hold)]}});
    let cid = c.api.cluster_with_graph("pg-backup", graph, &ids);
    let dep = c.api.deploy(cid, "");
    let holding = agent.work().join("holding");
    wait_until("the task to hold", LONG, || holding.exists());

    let dir = tempfile::tempdir().unwrap();
    let (ok, out, err) = c.command(&[
        "--database-url",
        &url,
        "backup",
        "--to",
        dir.path().join("data.backup").to_str().unwrap(),
        "--with-secrets",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("left to pg_dump"), "{out}");
    let bin = plinth_controller::store::postgres::scratch::find_bin().unwrap();
    // `postgres://plinth@HOST:PORT/NAME?...`: the database's name.
    let name = |u: &str| {
        u.split('?')
            .next()
            .and_then(|u| u.rsplit('/').next())
            .unwrap()
            .to_string()
    };
    let port = pg.port().to_string();
    let dump = dir.path().join("plinth.dump");
    let tool = |program: &str, args: &[&str]| {
        let out = std::process::Command::new(bin.join(program))
            .args(["-h", "127.0.0.1", "-p", &port, "-U", "plinth"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{program}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    tool(
        "pg_dump",
        &[
            "--format=custom",
            "--file",
            dump.to_str().unwrap(),
            &name(&url),
        ],
    );
    let restored = pg.fresh_database().expect("a second database");
    tool(
        "pg_restore",
        &[
            "--no-owner",
            "--dbname",
            &name(&restored),
            dump.to_str().unwrap(),
        ],
    );
    let (ok, said, err) = c.command(&["--database-url", &restored, "check"]);
    assert!(ok, "{said}{err}");
    assert!(
        said.contains(&format!("running deployment {dep}: its state reads")),
        "{said}"
    );
    assert!(said.contains("1 nodes"), "{said}");
    std::fs::write(agent.work().join("go"), "").unwrap();
    assert_eq!(c.api.wait_deployment(dep, LONG)["status"], "success");
}
