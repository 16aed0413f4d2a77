use super::*;
use crate::store::sql::access::{sql_id, to_json};
use crate::store::*;
use rusqlite::params;
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
        identity: Default::default(),
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
    let conn = s.backend.conn.lock().unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    let sync: i64 = conn
        .pragma_query_value(None, "synchronous", |r| r.get(0))
        .unwrap();
    assert_eq!((mode.as_str(), sync), ("wal", 2), "2 is FULL");
}

#[test]
fn lists_stored_whole_before_their_tasks_were_kept_apart_read_back() {
    let s = SqliteStore::in_memory().unwrap();
    let (nodes, dep) = crate::store::suite::running_deployment(&s, 2);
    // Published now: header and tasks apart.
    let mut fresh = vec![crate::store::suite::empty_list(nodes[0], dep.id)];
    fresh[0].tasks = vec![plinth_common::wire::TaskSpec {
        id: "t".into(),
        kind: plinth_common::wire::TaskKind::Shell,
        parameters: serde_json::json!({"cmd": "true"})
            .as_object()
            .cloned()
            .unwrap(),
        skip_reason: None,
        waits_for: Vec::new(),
        gated: false,
        manifests: Default::default(),
    }]
    .into();
    s.publish_lists(dep.id, &mut fresh, &serde_json::json!({}), &[])
        .unwrap();
    // Written as lists were before migration 10: whole, with no tasks hash.
    let mut old = fresh[0].clone();
    old.node_id = nodes[1];
    old.revision = fresh[0].revision + 100;
    s.backend.conn
        .lock()
        .unwrap()
        .execute(
            "INSERT INTO task_lists (deployment_id, node_id, revision, list) VALUES (?1, ?2, ?3, ?4)",
            params![
                sql_id(dep.id),
                sql_id(old.node_id),
                sql_id(old.revision),
                to_json(&old)
            ],
        )
        .unwrap();
    assert_eq!(
        s.issued_list(nodes[0], fresh[0].revision).unwrap(),
        Some(fresh[0].clone())
    );
    assert_eq!(
        s.issued_list(old.node_id, old.revision).unwrap(),
        Some(old.clone())
    );
    assert_eq!(
        s.published_lists(dep.id).unwrap(),
        vec![fresh[0].clone(), old]
    );
}

#[test]
fn inputs_recorded_as_text_before_they_were_kept_compressed_read_back() {
    let s = SqliteStore::in_memory().unwrap();
    let (_, dep) = crate::store::suite::running_deployment(&s, 1);
    // As deployments were recorded before migration 12: the inputs' text, nothing compressed.
    s.backend
        .conn
        .lock()
        .unwrap()
        .execute(
            "UPDATE deployments SET inputs = ?1, inputs_gz = NULL WHERE id = ?2",
            params![r#"{"cluster_id": 7, "nodes": []}"#, sql_id(dep.id)],
        )
        .unwrap();
    assert_eq!(
        s.deployment_inputs(dep.id).unwrap(),
        serde_json::json!({"cluster_id": 7, "nodes": []})
    );
    // Bytes that are not a compressed document are reported, not read as something else.
    s.backend
        .conn
        .lock()
        .unwrap()
        .execute(
            "UPDATE deployments SET inputs_gz = x'1f8b0800' WHERE id = ?1",
            params![sql_id(dep.id)],
        )
        .unwrap();
    assert!(matches!(
        s.deployment_inputs(dep.id),
        Err(StoreError::Corrupt(m)) if m.contains("deployment inputs")
    ));
}

#[test]
fn a_deployment_state_recorded_as_text_before_it_was_kept_compressed_reads_back() {
    let s = SqliteStore::in_memory().unwrap();
    let (_, dep) = crate::store::suite::running_deployment(&s, 1);
    // Written now: compressed, its text column empty.
    let (text, packed): (String, Option<Vec<u8>>) = s
        .backend
        .conn
        .lock()
        .unwrap()
        .query_row(
            "SELECT state, state_gz FROM deployments WHERE id = ?1",
            params![sql_id(dep.id)],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((text.as_str(), packed.is_some()), ("", true));
    // As deployments were recorded before the state was kept compressed: its text, nothing else.
    let set = |text: &str, packed: Option<&[u8]>| {
        s.backend
            .conn
            .lock()
            .unwrap()
            .execute(
                "UPDATE deployments SET state = ?1, state_gz = ?2 WHERE id = ?3",
                params![text, packed, sql_id(dep.id)],
            )
            .unwrap();
    };
    set(r#"{"step": 7}"#, None);
    assert_eq!(
        s.get_deployment(dep.id).unwrap().state,
        serde_json::json!({"step": 7})
    );
    // Lists of deployments leave the state out either way.
    assert_eq!(
        s.list_deployments(None).unwrap()[0].state,
        serde_json::Value::Null
    );
    // Bytes that are not a compressed document are reported, not read as something else.
    set("", Some(b"\x1f\x8b\x08\x00"));
    assert!(matches!(
        s.get_deployment(dep.id),
        Err(StoreError::Corrupt(m)) if m.contains("deployment state")
    ));
}

#[test]
fn state_blobs_stored_as_text_before_they_were_kept_compressed_read_back() {
    let s = SqliteStore::in_memory().unwrap();
    let old = serde_json::json!({"nodes": [{"uid": "1"}]});
    let hash = crate::store::blob_hash(&old);
    s.backend
        .conn
        .lock()
        .unwrap()
        .execute(
            "INSERT INTO state_blobs (hash, body) VALUES (?1, ?2)",
            params![hash, old.to_string()],
        )
        .unwrap();
    let new = serde_json::json!({"uid": "2"});
    s.save_task_states(
        &[(
            crate::store::blob_hash(&new),
            BlobBody::Packed(CompressedJson::encode(&new).unwrap()),
        )],
        &[],
    )
    .unwrap();
    let both = [hash, crate::store::blob_hash(&new)];
    assert_eq!(
        s.state_blobs(&both).unwrap(),
        vec![
            (both[0].clone(), plinth_common::json::Json::from(old)),
            (both[1].clone(), plinth_common::json::Json::from(new))
        ]
    );
}

#[test]
fn a_write_waits_for_another_process_writing_instead_of_failing() {
    // Another process (a `plinth-controller token create` beside a running controller) holds the write
    // lock while this store reads, then writes: the write waits its turn and succeeds.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sqlite");
    let s = SqliteStore::open(&path).unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other
        .execute_batch("BEGIN IMMEDIATE; INSERT INTO counters (name, value) VALUES ('other', 1);")
        .unwrap();
    let committer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        other.execute_batch("COMMIT").unwrap();
    });
    // create_token reads (is the name taken?) and then writes, in one transaction.
    let made = s.create_token("ops", "hash-1", TokenRole::Admin);
    committer.join().unwrap();
    assert!(made.is_ok(), "{made:?}");
    assert_eq!(s.list_tokens().unwrap().len(), 1);
}
