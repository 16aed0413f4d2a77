//! The queries a fleet runs per node (every registration, every poll) must not read every node: each is
//! checked against SQLite's own query plan, so a dropped index or a reworded query that cannot use one
//! fails here rather than as a registration rate that falls as the fleet grows.

use super::{SqliteStore, COUNT_DISCOVERED, COUNT_NAME_TAKEN};

/// SQLite's plan for `sql`, one line per step (`SCAN nodes` reads the whole table; `SEARCH nodes USING
/// INDEX ...` does not).
fn plan(store: &SqliteStore, sql: &str) -> String {
    let conn = store.conn.lock().unwrap_or_else(|p| p.into_inner());
    let mut stmt = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
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
