use super::*;
use plinth_common::wire::{ResultStatus, TaskKind, TaskSpec, TASK_LIST_FORMAT};
use std::collections::BTreeMap;

fn store() -> SqliteStore {
    SqliteStore::in_memory().unwrap()
}

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
    }
}

fn result(task: &str, attempt: u32, status: ResultStatus) -> TaskResult {
    TaskResult {
        deployment_id: 1,
        revision: 1,
        task_id: task.into(),
        attempt,
        status,
        last: status != ResultStatus::Running,
        exit_code: Some(0),
        started_at_ms: 0,
        duration_ms: 1,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        message: String::new(),
        details: serde_json::Value::Null,
    }
}

#[test]
fn registration_is_idempotent_per_key() {
    let s = store();
    let a = s
        .register_node(&reg("k1"), NodeAdmission::Discovered)
        .unwrap();
    let again = s
        .register_node(&reg("k1"), NodeAdmission::Accepted)
        .unwrap();
    assert_eq!(a.id, again.id);
    assert_eq!(
        again.admission,
        NodeAdmission::Discovered,
        "re-registering never changes admission"
    );
    let b = s
        .register_node(&reg("k2"), NodeAdmission::Accepted)
        .unwrap();
    assert_ne!(a.id, b.id);
    assert_eq!(s.list_nodes().unwrap().len(), 2);
}

#[test]
fn revisions_only_grow() {
    let s = store();
    let n = s
        .register_node(&reg("k1"), NodeAdmission::Accepted)
        .unwrap();
    let r1 = s.next_revision(n.id).unwrap();
    let r2 = s.next_revision(n.id).unwrap();
    assert!(r2 > r1);
    assert!(s.next_revision(999).is_err());
}

#[test]
fn results_are_stored_once() {
    let s = store();
    let rel = s
        .create_release(
            &NewRelease {
                name: "r".into(),
                version: "1".into(),
                data: serde_json::json!({}),
            },
            &BTreeMap::new(),
        )
        .unwrap();
    let c = s
        .create_cluster(&NewCluster {
            name: "c".into(),
            release_id: rel.id,
            settings: serde_json::json!({}),
        })
        .unwrap();
    let n = s
        .register_node(&reg("k1"), NodeAdmission::Accepted)
        .unwrap();
    let d = s
        .create_deployment(&NewDeployment {
            cluster_id: c.id,
            graph_type: "default".into(),
            node_ids: vec![n.id],
            options: serde_json::json!({}),
            state: serde_json::json!({}),
            now_ms: 1,
        })
        .unwrap();
    assert_eq!(d.id, 1);
    let batch = vec![
        result("a", 1, ResultStatus::Running),
        result("a", 1, ResultStatus::Succeeded),
    ];
    assert_eq!(s.store_results(n.id, &batch).unwrap().len(), 2);
    assert_eq!(
        s.store_results(n.id, &batch).unwrap().len(),
        2,
        "a resent batch is acknowledged again"
    );
    assert_eq!(s.deployment_results(1).unwrap().len(), 2, "but stored once");
}

#[test]
fn one_running_deployment_per_cluster_and_failed_writes_change_nothing() {
    let s = store();
    let rel = s
        .create_release(
            &NewRelease {
                name: "r".into(),
                version: "1".into(),
                data: serde_json::json!({}),
            },
            &BTreeMap::new(),
        )
        .unwrap();
    let c = s
        .create_cluster(&NewCluster {
            name: "c".into(),
            release_id: rel.id,
            settings: serde_json::json!({}),
        })
        .unwrap();
    let new = NewDeployment {
        cluster_id: c.id,
        graph_type: "default".into(),
        node_ids: vec![],
        options: serde_json::json!({}),
        state: serde_json::json!({}),
        now_ms: 1,
    };
    s.create_deployment(&new).unwrap();
    assert!(matches!(
        s.create_deployment(&new),
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(s.list_deployments(None).unwrap().len(), 1);
    // Assigning two nodes where the second does not exist assigns neither.
    let n = s
        .register_node(&reg("k1"), NodeAdmission::Accepted)
        .unwrap();
    let err = s.assign_nodes(
        c.id,
        &[
            NodeAssignment {
                id: n.id,
                roles: vec![],
            },
            NodeAssignment {
                id: 77,
                roles: vec![],
            },
        ],
    );
    assert!(matches!(err, Err(StoreError::NotFound { .. })));
    assert_eq!(s.get_node(n.id).unwrap().cluster_id, None);
}

#[test]
fn graphs_create_conflict_replace_delete() {
    let s = store();
    let rel = s
        .create_release(
            &NewRelease {
                name: "r".into(),
                version: "1".into(),
                data: serde_json::json!({}),
            },
            &BTreeMap::new(),
        )
        .unwrap();
    let owner = GraphOwner::Release(rel.id);
    let body = GraphBody {
        name: Some("g".into()),
        tasks: vec![serde_json::json!({"id": "t"})],
        node_filter: None,
    };
    s.put_graph(owner, "default", &body, false).unwrap();
    assert!(matches!(
        s.put_graph(owner, "default", &body, false),
        Err(StoreError::Conflict(_))
    ));
    s.put_graph(owner, "default", &GraphBody::default(), true)
        .unwrap();
    assert!(s.get_graph(owner, "default").unwrap().body.tasks.is_empty());
    s.delete_graph(owner, "default").unwrap();
    assert!(matches!(
        s.get_graph(owner, "default"),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        s.list_graphs(GraphOwner::Release(42)),
        Err(StoreError::NotFound { .. })
    ));
}

#[test]
fn published_lists_round_trip() {
    let s = store();
    let list = TaskList {
        format: TASK_LIST_FORMAT,
        node_key: "k".into(),
        node_id: 3,
        deployment_id: 9,
        phase: "deploy".into(),
        revision: 2,
        issued_at: 0,
        expires_at: 0,
        nonce: String::new(),
        noop: false,
        tasks: vec![TaskSpec {
            id: "t".into(),
            kind: TaskKind::Shell,
            parameters: Default::default(),
            skip_reason: None,
            waits_for: vec![],
            gated: false,
        }],
    };
    // The deployment row is referenced by a foreign key.
    assert!(s.publish_lists(9, std::slice::from_ref(&list)).is_err());
    assert!(s.published_lists(9).unwrap().is_empty());
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
