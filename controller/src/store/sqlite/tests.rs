use super::*;
use std::collections::BTreeMap;

fn reg(key: &str) -> NodeRegistration {
    NodeRegistration {
        node_key: key.into(),
        public_key: "pk".into(),
        name: format!("host-{key}"),
        facts: serde_json::json!({"hostname": key}),
        tags: vec!["web".into()],
        labels: BTreeMap::new(),
        rack: Some("r1".into()),
        now_ms: 1,
        max_discovered: 10,
    }
}

#[test]
fn migrations_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.db");
    {
        let s = SqliteStore::open(&path).unwrap();
        s.register_node(&reg("k1"), NodeAdmission::Accepted)
            .unwrap();
    }
    let s = SqliteStore::open(&path).unwrap();
    assert_eq!(s.list_nodes().unwrap().len(), 1);
}

#[test]
fn acknowledged_writes_are_durable() {
    // WAL with synchronous=FULL: each commit fsyncs the log before it returns, so what is acknowledged
    // survives a power loss (NORMAL would only survive a crash of the process).
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("db.sqlite")).unwrap();
    let conn = s.conn.lock().unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    let sync: i64 = conn
        .pragma_query_value(None, "synchronous", |r| r.get(0))
        .unwrap();
    assert_eq!((mode.as_str(), sync), ("wal", 2), "2 is FULL");
}
