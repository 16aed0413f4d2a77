//! The queries a fleet runs per node (every registration, every poll) must not read every node: each is
//! checked against SQLite's own query plan, so a dropped index or a reworded query that cannot use one
//! fails here rather than as a registration rate that falls as the fleet grows.

use super::{positional, SqliteStore};
use crate::store::sql::access::Dialect;
use crate::store::sql::nodes::{COUNT_DISCOVERED, COUNT_NAME_TAKEN};

/// SQLite's plan for `sql`, one line per step (`SCAN nodes` reads the whole table; `SEARCH nodes USING
/// INDEX ...` does not).
fn plan(store: &SqliteStore, sql: &str) -> String {
    let conn = store.backend.conn.lock().unwrap_or_else(|p| p.into_inner());
    let mut stmt = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {}", positional(sql)))
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let count = stmt.parameter_count();
    let params: Vec<i64> = vec![1; count];
    let rows = stmt
        .query_map(rusqlite::params_from_iter(params), |r| {
            r.get::<_, String>(3)
        })
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.map(|r| r.unwrap_or_else(|e| panic!("{sql}: {e}")))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn registration_and_cluster_queries_use_an_index_not_a_scan_of_every_node() {
    let store = SqliteStore::in_memory().unwrap();
    let hot = [
        (
            "a node by its key",
            "SELECT id FROM nodes WHERE node_key = ?1",
        ),
        ("the count of discovered nodes", COUNT_DISCOVERED),
        ("whether a name is taken", COUNT_NAME_TAKEN),
        (
            "a cluster's nodes",
            "SELECT id FROM nodes WHERE cluster_id = ?1",
        ),
    ];
    for (what, sql) in hot {
        let plan = plan(&store, sql);
        assert!(
            !plan.lines().any(|l| l.starts_with("SCAN nodes")),
            "{what} reads every node: {sql}\nplan:\n{plan}"
        );
    }
}

/// The queries that read rows by a list of keys (a phase's lists, a cluster's nodes, their states and
/// results) look each key up: SQLite binds the list as a JSON array, and a query that scanned the
/// table instead would read every list or result ever stored.
#[test]
fn lists_of_keys_are_looked_up_one_by_one_not_scanned() {
    let store = SqliteStore::in_memory().unwrap();
    let d = super::SqliteDialect;
    let by_list = [
        ("lists by revision", "task_lists", format!("SELECT l.list FROM task_lists l WHERE l.revision {}", d.in_list(1))),
        ("nodes by id", "nodes", format!("SELECT id FROM nodes WHERE id {}", d.in_list(1))),
        ("task states of nodes", "task_states", format!("SELECT task_id FROM task_states WHERE node_id {}", d.in_list(1))),
        ("state blobs by hash", "state_blobs", format!("SELECT body FROM state_blobs WHERE hash {}", d.in_list(1))),
        (
            "results of nodes",
            "results",
            format!("SELECT result FROM results WHERE deployment_id = $1 AND node_id {} ORDER BY node_id, seq", d.in_list(2)),
        ),
    ];
    for (what, table, sql) in by_list {
        let plan = plan(&store, &sql);
        assert!(
            !plan
                .lines()
                .any(|l| l.starts_with(&format!("SCAN {table}")) || l.starts_with("SCAN l")),
            "{what} reads the whole table: {sql}\nplan:\n{plan}"
        );
    }
}
