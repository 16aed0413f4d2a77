//! One test suite for every backend: each case is a function of a `&dyn Store`, run against SQLite (in
//! memory) and against PostgreSQL (a scratch server this test binary starts, a fresh database per
//! case, the connection over TLS); the server stops when the last case using it ends.

use super::*;
use plinth_common::json::Json;
use plinth_common::wire::{ResultStatus, TaskKind, TaskSpec, TASK_LIST_FORMAT};
use std::collections::BTreeMap;

pub(crate) fn reg(key: &str) -> NodeRegistration {
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

/// A value's JSON text, as task states' rows are recorded.
fn text(v: &serde_json::Value) -> std::sync::Arc<str> {
    v.to_string().into()
}

/// A value as a task state's blob: a cluster part compressed, a node's part as text (`packed`).
fn blob_body(v: &serde_json::Value, packed: bool) -> BlobBody {
    if packed {
        BlobBody::Packed(CompressedJson::encode(v).expect("a tree encodes"))
    } else {
        BlobBody::Text(v.to_string().into_boxed_str())
    }
}

/// Inputs for a deployment whose inputs no case reads.
fn no_inputs() -> CompressedJson {
    CompressedJson::encode(&serde_json::Value::Null).expect("null encodes")
}

/// An orchestration state as the engine gives it to the store (compressed).
/// A `default` deployment of `nodes` in cluster `cluster` that deploys, with empty inputs and state.
fn default_deployment(cluster: u64, nodes: Vec<u64>) -> NewDeployment {
    NewDeployment {
        inputs: no_inputs(),
        cluster_id: cluster,
        graph_type: "default".into(),
        node_ids: nodes,
        options: serde_json::json!({}),
        state: packed_state("{}"),
        now_ms: 1,
        deploys: true,
        primaries: Vec::new(),
    }
}

fn packed_state(text: &str) -> CompressedJson {
    let value: serde_json::Value = serde_json::from_str(text).expect("a state is JSON");
    CompressedJson::encode(&value).expect("a state encodes")
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

/// A release "r" 1 without graphs, and a cluster "c" of it.
pub(crate) fn release_and_cluster(s: &dyn Store) -> (ReleaseRecord, ClusterRecord) {
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
            generated: serde_json::Value::Null,
        })
        .unwrap();
    (rel, c)
}

fn the_schema_is_the_controllers_once_opened(s: &dyn Store) {
    let v = s.schema_versions().unwrap();
    assert!(v.controller > 0);
    assert_eq!(v.database, v.controller, "every migration applied: {v:?}");
}

fn registration_is_idempotent_per_key(s: &dyn Store) {
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

fn results_are_stored_once(s: &dyn Store) {
    let (_, c) = release_and_cluster(s);
    let n = s
        .register_node(&reg("k1"), NodeAdmission::Accepted)
        .unwrap();
    let d = s
        .create_deployment(&default_deployment(c.id, vec![n.id]))
        .unwrap();
    assert_eq!(d.id, 1);
    let batch = vec![
        result("a", 1, ResultStatus::Running),
        result("a", 1, ResultStatus::Succeeded),
    ];
    assert_eq!(
        s.store_results(n.id, &batch).unwrap(),
        [Stored::New, Stored::New]
    );
    assert_eq!(
        s.store_results(n.id, &batch).unwrap(),
        [Stored::Duplicate, Stored::Duplicate],
        "a resent batch is acknowledged again"
    );
    assert_eq!(s.deployment_results(1).unwrap().len(), 2, "but stored once");
    s.finish_deployment(
        d.id,
        &DeploymentEnd {
            state: &serde_json::json!({}),
            status: DeploymentStatus::Success,
            events: &[],
            succeeded: &[],
            failed: &[],
            untouched: &[],
            deploys: true,
        },
    )
    .unwrap();
    let late = vec![
        result("a", 2, ResultStatus::Failed),
        result("a", 1, ResultStatus::Succeeded),
    ];
    assert_eq!(
        s.store_results(n.id, &late).unwrap(),
        [Stored::Final, Stored::Duplicate],
        "a finished deployment's record is final, whatever the attempt or status"
    );
    assert_eq!(s.deployment_results(1).unwrap().len(), 2);
}

/// A cancelled deployment still takes each attempt's last word (the task the cancel ended, or one that
/// finished as the stop order travelled), once; never a new `running`, never a second last word.
fn a_cancelled_deployment_takes_the_last_word_of_what_it_ended(s: &dyn Store) {
    let (_, c) = release_and_cluster(s);
    let n = s
        .register_node(&reg("k1"), NodeAdmission::Accepted)
        .unwrap();
    let d = s
        .create_deployment(&default_deployment(c.id, vec![n.id]))
        .unwrap();
    let of = |task: &str, attempt: u32, status: ResultStatus| TaskResult {
        deployment_id: d.id,
        ..result(task, attempt, status)
    };
    assert_eq!(
        s.store_results(n.id, &[of("long", 1, ResultStatus::Running)])
            .unwrap(),
        [Stored::New]
    );
    s.finish_deployment(
        d.id,
        &DeploymentEnd {
            state: &serde_json::json!({}),
            status: DeploymentStatus::Cancelled,
            events: &[],
            succeeded: &[],
            failed: &[],
            untouched: &[n.id],
            deploys: true,
        },
    )
    .unwrap();
    let late = [
        of("long", 1, ResultStatus::Interrupted),
        of("next", 1, ResultStatus::Running),
    ];
    assert_eq!(
        s.store_results(n.id, &late).unwrap(),
        [Stored::New, Stored::Final],
        "the ended task's last word goes in; nothing starts after a cancel"
    );
    assert_eq!(
        s.store_results(n.id, &[of("long", 1, ResultStatus::Succeeded)])
            .unwrap(),
        [Stored::Final],
        "one last word per attempt"
    );
    assert_eq!(
        s.store_results(n.id, &late[..1]).unwrap(),
        [Stored::Duplicate],
        "a resend is acknowledged"
    );
    assert_eq!(s.deployment_results(d.id).unwrap().len(), 2);
}

/// A provision task's results move its node through `provisioning` to `provisioned` (with what was
/// installed, where and when), and the end of the deployment leaves it provisioned with its roles
/// pending; other results leave the status alone.
fn a_provision_tasks_results_tell_where_the_node_is_in_its_life(s: &dyn Store) {
    use plinth_api::records::NodeStatus;
    let (_, c) = release_and_cluster(s);
    let n = s
        .register_node(&reg("k1"), NodeAdmission::Accepted)
        .unwrap();
    s.assign_nodes(
        c.id,
        &[plinth_api::records::NodeAssignment {
            id: n.id,
            roles: vec!["controller".into()],
        }],
    )
    .unwrap();
    let d = s
        .create_deployment(&NewDeployment {
            inputs: no_inputs(),
            cluster_id: c.id,
            graph_type: "provision".into(),
            node_ids: vec![n.id],
            options: serde_json::json!({}),
            state: packed_state("{}"),
            now_ms: 1,
            deploys: true,
            primaries: Vec::new(),
        })
        .unwrap();
    s.store_results(n.id, &[result("other", 1, ResultStatus::Succeeded)])
        .unwrap();
    assert_eq!(s.get_node(n.id).unwrap().status, NodeStatus::Deploying);
    let mut running = result("system_provision", 1, ResultStatus::Running);
    running.details = serde_json::json!({"provision": {}});
    s.store_results(n.id, &[running]).unwrap();
    assert_eq!(s.get_node(n.id).unwrap().status, NodeStatus::Provisioning);
    let mut done = result("system_provision", 1, ResultStatus::Succeeded);
    done.started_at_ms = 1_000;
    done.duration_ms = 500;
    done.details = serde_json::json!({"boot_id_before": "a", "provision": {
        "image": "images/debian.qcow2", "sha256": "ab", "format": "qcow2+zstd",
        "disk": "/dev/sdb", "disk_serial": "S2"}});
    s.store_results(n.id, &[done]).unwrap();
    let node = s.get_node(n.id).unwrap();
    assert_eq!(node.status, NodeStatus::Provisioned);
    let p = node.model.provisioned.expect("the record");
    assert_eq!(
        (
            p.image.as_str(),
            p.disk.as_str(),
            p.disk_serial.as_deref(),
            p.at_ms,
            p.deployment_id
        ),
        ("images/debian.qcow2", "/dev/sdb", Some("S2"), 1_500, d.id)
    );
    s.finish_deployment(
        d.id,
        &DeploymentEnd {
            state: &serde_json::json!({}),
            status: DeploymentStatus::Success,
            events: &[],
            succeeded: &[n.id],
            failed: &[],
            untouched: &[],
            deploys: true,
        },
    )
    .unwrap();
    let node = s.get_node(n.id).unwrap();
    assert_eq!(node.status, NodeStatus::Provisioned);
    assert_eq!(
        node.pending_roles,
        ["controller"],
        "its roles wait for the deployment that deploys them"
    );
}

/// A deployment's inputs (every node of its cluster, facts and all) are kept compressed and read back
/// as they were recorded, to retry or resume it.
fn a_deployments_inputs_read_back_as_recorded(s: &dyn Store) {
    let (_, c) = release_and_cluster(s);
    let nodes: Vec<serde_json::Value> = (0..500)
        .map(|i| serde_json::json!({"id": i, "name": format!("node-{i}"), "facts": {"hostname": format!("node-{i}"), "note": "a \"quoted\" \\ text\n"}}))
        .collect();
    let inputs = serde_json::json!({"cluster_id": c.id, "nodes": nodes});
    let made = s
        .create_deployment(&NewDeployment {
            inputs: CompressedJson::encode(&inputs).unwrap(),
            cluster_id: c.id,
            graph_type: "default".into(),
            node_ids: vec![],
            options: serde_json::json!({}),
            state: packed_state("{}"),
            now_ms: 1,
            deploys: false,
            primaries: Vec::new(),
        })
        .unwrap();
    assert_eq!(s.deployment_inputs(made.id).unwrap(), inputs);
    assert!(matches!(
        s.deployment_inputs(made.id + 1),
        Err(StoreError::NotFound { .. })
    ));
}

fn one_running_deployment_per_cluster_and_failed_writes_change_nothing(s: &dyn Store) {
    let (_, c) = release_and_cluster(s);
    let new = NewDeployment {
        inputs: no_inputs(),
        cluster_id: c.id,
        graph_type: "default".into(),
        node_ids: vec![],
        options: serde_json::json!({}),
        state: packed_state("{}"),
        now_ms: 1,
        deploys: true,
        primaries: Vec::new(),
    };
    let made = s.create_deployment(&new).unwrap();
    assert_eq!(
        made.state,
        serde_json::Value::Null,
        "the caller has the state"
    );
    assert!(matches!(
        s.create_deployment(&new),
        Err(StoreError::Conflict(_))
    ));
    let listed = s.list_deployments(None).unwrap();
    assert_eq!(listed.len(), 1);
    // A list leaves the orchestration state out; the deployment itself has it.
    assert_eq!(listed[0].state, serde_json::Value::Null);
    assert_ne!(
        s.get_deployment(listed[0].id).unwrap().state,
        serde_json::Value::Null
    );
    assert_eq!(
        s.list_deployments(Some(c.id)).unwrap()[0].state,
        serde_json::Value::Null
    );
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

fn graphs_create_conflict_replace_delete(s: &dyn Store) {
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

fn revisions_come_from_one_counter_and_nothing_a_node_says_moves_them(s: &dyn Store) {
    let (_, c) = release_and_cluster(s);
    let n = s
        .register_node(&reg("k1"), NodeAdmission::Accepted)
        .unwrap();
    let d = s
        .create_deployment(&default_deployment(c.id, vec![n.id]))
        .unwrap();
    let list = |floor: u64| TaskList {
        format: TASK_LIST_FORMAT,
        node_key: "k1".into(),
        node_id: n.id,
        deployment_id: d.id,
        phase: "deploy".into(),
        revision: floor,
        issued_at: 0,
        expires_at: 0,
        nonce: String::new(),
        noop: false,
        cancel: false,
        tasks: vec![TaskSpec {
            id: "t".into(),
            kind: TaskKind::Shell,
            parameters: Default::default(),
            skip_reason: None,
            waits_for: vec![],
            gated: false,
            manifests: Default::default(),
        }]
        .into(),
    };
    let state = serde_json::json!({"step": 1});
    let mut first = [list(0)];
    s.publish_lists(
        d.id,
        &mut first,
        &state,
        &[plinth_common::wire::DeploymentEvent::GroupStarted { group: "a".into() }],
    )
    .unwrap();
    assert_eq!(first[0].revision, 1);
    let mut second = [list(0)];
    s.publish_lists(d.id, &mut second, &state, &[]).unwrap();
    assert_eq!(second[0].revision, 2, "revisions only grow");
    // What a list carries in on publishing (whatever a node said) is ignored: u64::MAX included.
    let mut third = [list(u64::MAX)];
    s.publish_lists(
        d.id,
        &mut third,
        &state,
        &[plinth_common::wire::DeploymentEvent::GroupStarted { group: "b".into() }],
    )
    .unwrap();
    assert_eq!(third[0].revision, 3);
    let all = s.published_lists(d.id).unwrap();
    assert_eq!(
        all.iter().map(|l| l.revision).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(s.issued_list(n.id, 3).unwrap().unwrap().revision, 3);
    // A node deleted and registered again (a new id) still gets revisions above all it ever ran.
    s.finish_deployment(
        d.id,
        &DeploymentEnd {
            state: &state,
            status: DeploymentStatus::Success,
            events: &[],
            succeeded: &[],
            failed: &[],
            untouched: &[n.id],
            deploys: true,
        },
    )
    .unwrap();
    s.delete_node(n.id).unwrap();
    let again = s
        .register_node(&reg("k1"), NodeAdmission::Accepted)
        .unwrap();
    assert_ne!(again.id, n.id);
    let d2 = s
        .create_deployment(&NewDeployment {
            inputs: no_inputs(),
            cluster_id: c.id,
            graph_type: "default".into(),
            node_ids: vec![again.id],
            options: serde_json::json!({}),
            state: packed_state("{}"),
            now_ms: 2,
            deploys: true,
            primaries: Vec::new(),
        })
        .unwrap();
    let mut fourth = [TaskList {
        node_id: again.id,
        deployment_id: d2.id,
        ..list(0)
    }];
    s.publish_lists(d2.id, &mut fourth, &state, &[]).unwrap();
    assert_eq!(fourth[0].revision, 4);
    assert_eq!(
        s.get_node(again.id).unwrap().revision,
        4,
        "a node's revision is its latest list's"
    );
    // A list for a node that does not exist refuses the whole step: nothing stored, no revision taken.
    let mut unknown = [
        TaskList {
            node_id: again.id,
            deployment_id: d2.id,
            ..list(0)
        },
        TaskList {
            node_id: again.id + 1000,
            deployment_id: d2.id,
            ..list(0)
        },
    ];
    assert!(matches!(
        s.publish_lists(d2.id, &mut unknown, &state, &[]),
        Err(StoreError::NotFound { kind: "node", id }) if id == (again.id + 1000).to_string()
    ));
    assert_eq!(s.published_lists(d2.id).unwrap().len(), 1);
    assert_eq!(s.get_node(again.id).unwrap().revision, 4);
    let mut fifth = [TaskList {
        node_id: again.id,
        deployment_id: d2.id,
        ..list(0)
    }];
    s.publish_lists(d2.id, &mut fifth, &state, &[]).unwrap();
    assert_eq!(fifth[0].revision, 5, "the refused step took no revision");
    assert_eq!(s.get_node(again.id).unwrap().revision, 5);
    assert_eq!(s.events(d.id, 0).unwrap().len(), 2);
    assert_eq!(
        s.events(d.id, s.events(d.id, 0).unwrap()[0].0)
            .unwrap()
            .len(),
        1,
        "events after a cursor"
    );
    assert_eq!(s.get_deployment(d.id).unwrap().state, state);
    // A list for a node that does not exist publishes nothing at all.
    let mut bad = [
        list(0),
        TaskList {
            node_id: 999,
            ..list(0)
        },
    ];
    assert!(s
        .publish_lists(d.id, &mut bad, &serde_json::json!({"step": 2}), &[])
        .is_err());
    assert_eq!(s.published_lists(d.id).unwrap().len(), 3);
    assert_eq!(
        s.get_deployment(d.id).unwrap().state,
        state,
        "the state did not move either"
    );

    // One step of a running deployment is one transaction: a list for a node that does not exist undoes
    // the state, the events and the other lists of the same step.
    let mut step = [
        list(0),
        TaskList {
            node_id: 999,
            ..list(0)
        },
    ];
    let events_before = s.events(d2.id, 0).unwrap().len();
    let lists_before = s.published_lists(d2.id).unwrap().len();
    let state_before = s.get_deployment(d2.id).unwrap().state;
    let refused = s.record_progress(
        d2.id,
        &mut Progress {
            lists: &mut step,
            state: Some(&packed_state(r#"{"step":3}"#)),
            events: &[plinth_common::wire::DeploymentEvent::GroupStarted { group: "c".into() }],
            task_rows: &[],
            end: None,
            nodes_ended: Default::default(),
        },
    );
    assert!(refused.is_err());
    assert_eq!(s.events(d2.id, 0).unwrap().len(), events_before);
    assert_eq!(s.published_lists(d2.id).unwrap().len(), lists_before);
    assert_eq!(s.get_deployment(d2.id).unwrap().state, state_before);
    // A step that ends the deployment records the end with its lists and events; after it, nothing.
    let mut last = [TaskList {
        node_id: again.id,
        deployment_id: d2.id,
        ..list(0)
    }];
    s.record_progress(
        d2.id,
        &mut Progress {
            lists: &mut last,
            state: Some(&packed_state(r#"{"step":4}"#)),
            events: &[plinth_common::wire::DeploymentEvent::GroupStarted { group: "d".into() }],
            task_rows: &[],
            end: Some(Ending {
                status: DeploymentStatus::Failed,
                succeeded: &[],
                failed: &[(again.id, "task boom failed in phase deploy".into())],
                untouched: &[],
                deploys: true,
            }),
            nodes_ended: Default::default(),
        },
    )
    .unwrap();
    assert!(last[0].revision > 4, "revisions only grow");
    let ended = s.get_deployment(d2.id).unwrap();
    assert_eq!(ended.status, DeploymentStatus::Failed);
    assert_eq!(ended.state, serde_json::json!({"step": 4}));
    assert_eq!(s.get_node(again.id).unwrap().status, NodeStatus::Error);
    let late = s.record_progress(
        d2.id,
        &mut Progress {
            lists: &mut [],
            state: Some(&packed_state(r#"{"step":5}"#)),
            events: &[],
            task_rows: &[],
            end: None,
            nodes_ended: Default::default(),
        },
    );
    assert!(
        matches!(late, Err(StoreError::Conflict(_))),
        "an ended deployment's record is final: {late:?}"
    );
    assert_eq!(
        s.get_deployment(d2.id).unwrap().state,
        serde_json::json!({"step": 4})
    );
}

fn strategies_create_conflict_replace_delete(s: &dyn Store) {
    let (_, c) = release_and_cluster(s);
    let doc = serde_json::json!({"groups": []});
    s.put_strategy(c.id, "a", &doc, &serde_json::Value::Null, false)
        .unwrap();
    assert!(matches!(
        s.put_strategy(c.id, "a", &doc, &serde_json::Value::Null, false),
        Err(StoreError::Conflict(_))
    ));
    s.put_strategy(
        c.id,
        "a",
        &serde_json::json!({"groups": [1]}),
        &serde_json::json!({"uploaded": 1}),
        true,
    )
    .unwrap();
    assert_eq!(
        s.get_strategy(c.id, "a").unwrap().document,
        serde_json::json!({"groups": [1]})
    );
    assert_eq!(s.list_strategies(c.id).unwrap().len(), 1);
    s.delete_strategy(c.id, "a").unwrap();
    assert!(matches!(
        s.get_strategy(c.id, "a"),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        s.put_strategy(99, "a", &doc, &serde_json::Value::Null, false),
        Err(StoreError::NotFound { .. })
    ));
}

/// A release, a cluster, `n` accepted nodes and a running deployment on them.
pub(super) fn running_deployment(s: &dyn Store, n: usize) -> (Vec<u64>, DeploymentRecord) {
    let (_, c) = release_and_cluster(s);
    let nodes: Vec<u64> = (0..n)
        .map(|i| {
            s.register_node(&reg(&format!("k{i}")), NodeAdmission::Accepted)
                .unwrap()
                .id
        })
        .collect();
    let d = s
        .create_deployment(&default_deployment(c.id, nodes.clone()))
        .unwrap();
    (nodes, d)
}

pub(super) fn empty_list(node_id: u64, deployment_id: u64) -> TaskList {
    TaskList::unpublished("", node_id, deployment_id, "deploy", Default::default())
}

fn concurrent_publishes_take_distinct_revisions(s: &dyn Store) {
    let (nodes, d) = running_deployment(s, 4);
    const EACH: usize = 10;
    let taken: Vec<u64> = std::thread::scope(|scope| {
        let workers: Vec<_> = nodes
            .iter()
            .map(|node| {
                scope.spawn(move || {
                    (0..EACH)
                        .map(|i| {
                            let mut lists = [empty_list(*node, d.id)];
                            s.publish_lists(d.id, &mut lists, &serde_json::json!({"i": i}), &[])
                                .unwrap();
                            lists[0].revision
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let mut sorted = taken.clone();
    sorted.sort_unstable();
    let expected: Vec<u64> = (1..=(nodes.len() * EACH) as u64).collect();
    assert_eq!(
        sorted, expected,
        "every publish took its own revision, none skipped"
    );
    assert_eq!(s.published_lists(d.id).unwrap().len(), nodes.len() * EACH);
    for node in &nodes {
        let last = s.get_node(*node).unwrap().revision;
        let mine = s
            .published_lists(d.id)
            .unwrap()
            .into_iter()
            .filter(|l| l.node_id == *node)
            .map(|l| l.revision)
            .max();
        assert_eq!(Some(last), mine, "a node's revision is its latest list's");
    }
}

fn results_racing_the_end_of_their_deployment_are_stored_only_before_it(s: &dyn Store) {
    let (nodes, d) = running_deployment(s, 4);
    let stored_new = std::thread::scope(|scope| {
        let writers: Vec<_> = nodes
            .iter()
            .map(|node| {
                scope.spawn(move || {
                    let mut new = 0;
                    for i in 0..40 {
                        let r = TaskResult {
                            deployment_id: d.id,
                            ..result(&format!("t{i}"), 1, ResultStatus::Succeeded)
                        };
                        let out = s.store_results(*node, &[r]).unwrap();
                        new += usize::from(out[0] == Stored::New);
                    }
                    new
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(5));
        s.finish_deployment(
            d.id,
            &DeploymentEnd {
                state: &serde_json::json!({}),
                status: DeploymentStatus::Success,
                events: &[],
                succeeded: &[],
                failed: &[],
                untouched: &nodes,
                deploys: true,
            },
        )
        .unwrap();
        writers
            .into_iter()
            .map(|w| w.join().unwrap())
            .sum::<usize>()
    });
    assert_eq!(
        s.deployment_results(d.id).unwrap().len(),
        stored_new,
        "exactly the results acknowledged as new are stored"
    );
    let late = TaskResult {
        deployment_id: d.id,
        ..result("late", 1, ResultStatus::Succeeded)
    };
    assert_eq!(s.store_results(nodes[0], &[late]).unwrap(), [Stored::Final]);
    assert_eq!(s.deployment_results(d.id).unwrap().len(), stored_new);
}

fn tokens_are_unique_by_name_until_revoked(s: &dyn Store) {
    s.create_token("ops", "h1", TokenRole::Admin).unwrap();
    assert!(matches!(
        s.create_token("ops", "h2", TokenRole::ReadOnly),
        Err(StoreError::Conflict(_))
    ));
    assert!(
        matches!(
            s.create_token("other", "h1", TokenRole::ReadOnly),
            Err(StoreError::Conflict(_)),
        ),
        "a hash is stored once"
    );
    assert_eq!(s.revoke_token("ops", 5).unwrap(), 1);
    assert!(matches!(
        s.revoke_token("ops", 6),
        Err(StoreError::NotFound { .. })
    ));
    let again = s.create_token("ops", "h2", TokenRole::ReadOnly).unwrap();
    assert_eq!(
        s.token_by_hash("h1").unwrap().unwrap().revoked_at_ms,
        Some(5)
    );
    assert_eq!(s.token_by_hash("h2").unwrap().unwrap().id, again.id);
    assert!(s.token_by_hash("h3").unwrap().is_none());
    assert_eq!(s.list_tokens().unwrap().len(), 2);
}

fn discovered_nodes_are_bounded_and_names_made_unique(s: &dyn Store) {
    let mut r = reg("a");
    r.max_discovered = 2;
    let a = s.register_node(&r, NodeAdmission::Discovered).unwrap();
    let b = s
        .register_node(
            &NodeRegistration {
                node_key: "b".into(),
                ..r.clone()
            },
            NodeAdmission::Discovered,
        )
        .unwrap();
    assert_eq!(a.name, "host-a");
    assert_eq!(
        b.name,
        format!("host-a-{}", b.id),
        "a taken name gets the id appended"
    );
    let full = s.register_node(
        &NodeRegistration {
            node_key: "c".into(),
            ..r.clone()
        },
        NodeAdmission::Discovered,
    );
    assert!(matches!(full, Err(StoreError::Full(_))), "{full:?}");
    assert_eq!(
        s.list_nodes().unwrap().len(),
        2,
        "the refused one was not stored"
    );
    // Accepted nodes do not count, and a filter finds nodes by tag and by name.
    s.register_node(
        &NodeRegistration {
            node_key: "c".into(),
            ..r.clone()
        },
        NodeAdmission::Accepted,
    )
    .unwrap();
    let page = s
        .list_nodes_page(&NodeFilter {
            limit: 10,
            tag: Some("web".into()),
            name: Some("HOST-A-".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page.len(), 2, "{page:?}");
    let discovered = s
        .list_nodes_page(&NodeFilter {
            limit: 10,
            admission: Some(NodeAdmission::Discovered),
            after_id: a.id,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(discovered.iter().map(|n| n.id).collect::<Vec<_>>(), [b.id]);
}

fn a_cluster_snapshot_holds_its_graphs_of_the_types_asked_its_nodes_and_their_old_states(
    s: &dyn Store,
) {
    let body = |task: &str| GraphBody {
        name: None,
        tasks: vec![serde_json::json!({"id": task})],
        node_filter: None,
    };
    let graphs = BTreeMap::from([
        ("default".to_string(), body("release-task")),
        ("other".to_string(), body("other-task")),
    ]);
    let rel = s
        .create_release(
            &NewRelease {
                name: "r".into(),
                version: "1".into(),
                data: serde_json::json!({}),
            },
            &graphs,
        )
        .unwrap();
    let c = s
        .create_cluster(&NewCluster {
            name: "c".into(),
            release_id: rel.id,
            settings: serde_json::json!({}),
            generated: serde_json::Value::Null,
        })
        .unwrap();
    s.put_graph(GraphOwner::Cluster(c.id), "default", &body("own"), false)
        .unwrap();
    let inside = s
        .register_node(&reg("k1"), NodeAdmission::Accepted)
        .unwrap();
    s.register_node(&reg("k2"), NodeAdmission::Accepted)
        .unwrap();
    s.assign_nodes(
        c.id,
        &[NodeAssignment {
            id: inside.id,
            roles: vec![],
        }],
    )
    .unwrap();
    let (common, own) = (serde_json::json!({"c": 1}), serde_json::json!({"n": 2}));
    s.save_task_states(
        &[
            (blob_hash(&common), blob_body(&common, true)),
            (blob_hash(&own), blob_body(&own, false)),
        ],
        &[(
            inside.id,
            "release-task".into(),
            text(&serde_json::json!({"common": blob_hash(&common), "node": blob_hash(&own)})),
        )],
    )
    .unwrap();

    let snap = s.cluster_snapshot(c.id, &["default"], true).unwrap();
    assert_eq!((snap.cluster.id, snap.release.id), (c.id, rel.id));
    let mut found: Vec<(String, &str)> = snap
        .graphs
        .iter()
        .map(|g| {
            (
                g.owner.kind().to_string(),
                g.body.tasks[0]["id"].as_str().unwrap(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            ("cluster".to_string(), "own"),
            ("release".to_string(), "release-task")
        ],
        "only graphs of the type asked for"
    );
    let ids: Vec<u64> = snap.nodes.iter().map(|n| n.id).collect();
    assert_eq!(ids, [inside.id], "only the cluster's nodes");
    assert_eq!(
        snap.node_facts,
        [Json::from(&inside.facts)],
        "each node's facts, read apart as the compact tree"
    );
    assert!(snap.nodes.iter().all(|n| n.facts.is_null()));
    let old = snap.old_states.get(inside.id, "release-task").unwrap();
    assert_eq!(
        (&*old.common, old.node()),
        (&Json::from(&common), &Json::from(&own))
    );

    let without = s.cluster_snapshot(c.id, &[], false).unwrap();
    assert!(without.graphs.is_empty() && without.old_states.is_empty());
    assert!(matches!(
        s.cluster_snapshot(999, &["default"], true),
        Err(StoreError::NotFound {
            kind: "cluster",
            ..
        })
    ));
}

fn many_nodes_registering_at_once_all_get_in_with_unique_names(s: &dyn Store) {
    // A fleet coming up: every registration counts the discovered nodes and looks for its name, so on
    // PostgreSQL they would all conflict; none may fail for it.
    let ids: Vec<u64> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..16)
            .map(|w| {
                scope.spawn(move || {
                    (0..8)
                        .map(|i| {
                            let r = NodeRegistration {
                                node_key: format!("w{w}-{i}"),
                                name: "same-host".into(),
                                max_discovered: 1000,
                                identity: Default::default(),
                                ..reg("x")
                            };
                            s.register_node(&r, NodeAdmission::Discovered).unwrap().id
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    assert_eq!(ids.len(), 128);
    let names: std::collections::BTreeSet<String> = s
        .list_nodes()
        .unwrap()
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(names.len(), 128, "every name unique");
}

fn the_sequencing_lease_changes_hands_only_when_free_with_a_new_token(s: &dyn Store) {
    assert_eq!(s.lease().unwrap(), None);
    assert_eq!(s.claim_lease("a", None, 1_000, 5_000).unwrap(), Some(1));
    assert_eq!(
        s.claim_lease("b", None, 2_000, 5_000).unwrap(),
        None,
        "held"
    );
    assert_eq!(
        s.claim_lease("a", Some(1), 3_000, 5_000).unwrap(),
        Some(1),
        "renewed"
    );
    assert_eq!(s.lease().unwrap().map(|l| l.expires_ms), Some(8_000));
    assert_eq!(
        s.claim_lease("b", None, 8_000, 5_000).unwrap(),
        Some(2),
        "expired: taken over with a new token"
    );
    assert_eq!(s.claim_lease("a", Some(1), 8_500, 5_000).unwrap(), None);
    s.release_lease("a", 1).unwrap();
    assert_eq!(
        s.lease().unwrap().map(|l| l.holder),
        Some("b".into()),
        "only its holder releases it"
    );
    s.release_lease("b", 2).unwrap();
    assert_eq!(
        s.claim_lease("a", None, 9_000, 5_000).unwrap(),
        Some(3),
        "released: free at once"
    );

    s.beat_controller(&ControllerBeat {
        id: "a".into(),
        name: "host-a".into(),
        url: "https://a:8443".into(),
        started_ms: 1,
        now_ms: 9_000,
        agents: 3,
    })
    .unwrap();
    s.beat_controller(&ControllerBeat {
        id: "a".into(),
        name: "host-a".into(),
        url: "https://a:8443".into(),
        started_ms: 1,
        now_ms: 10_000,
        agents: 4,
    })
    .unwrap();
    let listed = s.controllers().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!((listed[0].seen_ms, listed[0].agents), (10_000, 4));
}

fn followers_read_lists_after_a_revision_and_cancel_requests_reach_the_sequencer(s: &dyn Store) {
    let (nodes, d) = running_deployment(s, 2);
    let mut first = [empty_list(nodes[0], d.id), empty_list(nodes[1], d.id)];
    s.publish_lists(d.id, &mut first, &serde_json::json!({}), &[])
        .unwrap();
    let all = s.lists_after(0, &|_| true).unwrap();
    assert_eq!(all.iter().map(|l| l.revision()).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(
        all,
        first
            .iter()
            .cloned()
            .map(Published::List)
            .collect::<Vec<_>>(),
        "read whole, as published"
    );
    let later = s.lists_after(1, &|_| true).unwrap();
    assert!(matches!(&later[..], [Published::List(l)] if l.node_id == nodes[1]));
    // Only the nodes chosen are read whole; the others' lists are only noted.
    let some = s.lists_after(0, &|node| node == nodes[1]).unwrap();
    assert_eq!(
        some,
        [
            Published::Noted {
                node_id: nodes[0],
                revision: 1,
                deployment_id: d.id
            },
            Published::List(first[1].clone())
        ]
    );
    assert_eq!(s.running_ids().unwrap(), [d.id]);

    s.store_results(
        nodes[0],
        &[TaskResult {
            deployment_id: d.id,
            ..result("t", 1, ResultStatus::Succeeded)
        }],
    )
    .unwrap();
    let of = s.results_of_nodes(d.id, &nodes).unwrap();
    assert_eq!(of.len(), 1, "nodes without results are left out: {of:?}");
    assert_eq!((of[0].0, of[0].1.len()), (nodes[0], 1));

    assert!(s.cancel_requests().unwrap().is_empty());
    let asked = s.request_cancel(d.id, "token ops").unwrap();
    assert_eq!(asked.status, DeploymentStatus::Running);
    assert_eq!(
        s.cancel_requests().unwrap(),
        [(d.id, "token ops".to_string())]
    );
    s.finish_deployment(
        d.id,
        &DeploymentEnd {
            state: &serde_json::json!({}),
            status: DeploymentStatus::Cancelled,
            events: &[],
            succeeded: &[],
            failed: &[],
            untouched: &[],
            deploys: true,
        },
    )
    .unwrap();
    assert!(
        s.cancel_requests().unwrap().is_empty(),
        "an ended deployment asks nothing"
    );
    assert!(
        s.lists_after(0, &|_| true).unwrap().is_empty(),
        "only running deployments' lists"
    );
    assert!(matches!(
        s.request_cancel(d.id, "token ops"),
        Err(StoreError::Conflict(_))
    ));
}

/// What a deployment's start and end write for many nodes at once (done in one statement each by
/// PostgreSQL) is what writing them one node at a time would leave: assignments (the last of a node
/// given twice wins), node statuses and roles at the end, events in order, task states (the last of a
/// node and task given twice wins) read back node by node as asked, blobs as asked, last-seen times.
fn many_nodes_written_at_once_end_as_one_at_a_time(s: &dyn Store) {
    use plinth_common::wire::DeploymentEvent;
    let (_, c) = release_and_cluster(s);
    let n: Vec<u64> = (0..5)
        .map(|i| {
            s.register_node(&reg(&format!("k{i}")), NodeAdmission::Accepted)
                .unwrap()
                .id
        })
        .collect();
    let assign = |id: u64, role: &str| NodeAssignment {
        id,
        roles: if role.is_empty() {
            vec![]
        } else {
            vec![role.into()]
        },
    };
    let missing = assign(n[4] + 100, "x");
    assert!(matches!(
        s.assign_nodes(c.id, &[assign(n[0], "a"), missing]),
        Err(StoreError::NotFound { kind: "node", .. })
    ));
    assert!(
        s.get_node(n[0]).unwrap().cluster_id.is_none(),
        "a refused assignment writes nothing"
    );
    s.assign_nodes(
        c.id,
        &[
            assign(n[0], "a"),
            assign(n[1], "b"),
            assign(n[2], "c"),
            assign(n[3], ""),
            assign(n[1], "d"),
        ],
    )
    .unwrap();
    let one = s.get_node(n[1]).unwrap();
    assert_eq!(one.pending_roles, ["d"], "the last assignment wins");
    assert!(one.model.pending_addition);
    let d = s
        .create_deployment(&default_deployment(c.id, n[..4].to_vec()))
        .unwrap();
    assert!(n[..4]
        .iter()
        .all(|id| s.get_node(*id).unwrap().status == NodeStatus::Deploying));
    assert!(matches!(
        s.unassign_nodes(c.id, &[n[0]]),
        Err(StoreError::Conflict(_))
    ));
    let started = |g: &str| DeploymentEvent::GroupStarted { group: g.into() };
    let (b1, b2) = (serde_json::json!({"b": 1}), serde_json::json!({"b": 2}));
    // Blobs are stored when a deployment starts; its end records the rows that name them.
    s.save_task_states(
        &[
            (blob_hash(&b1), blob_body(&b1, true)),
            (blob_hash(&b2), blob_body(&b2, false)),
        ],
        &[],
    )
    .unwrap();
    s.record_progress(
        d.id,
        &mut Progress {
            lists: &mut [],
            state: None,
            events: &[started("one"), started("two"), started("three")],
            task_rows: &[
                (n[0], "t".into(), text(&serde_json::json!({"first": true}))),
                (n[1], "t".into(), text(&serde_json::json!({"one": 1}))),
                (n[0], "u".into(), text(&serde_json::json!({"u": 0}))),
                (n[0], "t".into(), text(&serde_json::json!({"last": true}))),
            ],
            end: None,
            nodes_ended: NodesEnded {
                succeeded: &[],
                failed: &[(n[2], "task boom failed in phase deploy".into())],
                deploys: true,
            },
        },
    )
    .unwrap();
    let failing = s.get_node(n[2]).unwrap();
    assert_eq!(
        (failing.status, failing.model.error_msg.as_deref()),
        (NodeStatus::Error, Some("task boom failed in phase deploy")),
        "a node is in error as soon as its failure is final, not at the deployment's end"
    );
    s.finish_deployment(
        d.id,
        &DeploymentEnd {
            state: &serde_json::json!({}),
            status: DeploymentStatus::SuccessWithFailures,
            events: &[started("four")],
            succeeded: &[n[0], n[1]],
            failed: &[(n[2], "task boom failed in phase deploy".into())],
            untouched: &[n[3]],
            deploys: true,
        },
    )
    .unwrap();
    let ready = s.get_node(n[1]).unwrap();
    assert_eq!(
        (ready.status, ready.roles.clone(), ready.pending_roles.len()),
        (NodeStatus::Ready, vec!["d".to_string()], 0)
    );
    assert!(!ready.model.pending_addition && ready.model.error_type.is_none());
    let failed = s.get_node(n[2]).unwrap();
    assert_eq!(failed.status, NodeStatus::Error);
    assert_eq!(failed.model.error_type.as_deref(), Some("deploy"));
    assert_eq!(
        failed.model.error_msg.as_deref(),
        Some("task boom failed in phase deploy"),
        "the record says why"
    );
    assert_eq!(failed.model.error_deployment_id, Some(d.id));
    assert_eq!(s.get_node(n[3]).unwrap().status, NodeStatus::Discover);
    assert_eq!(s.get_node(n[4]).unwrap().status, NodeStatus::Discover);
    let groups: Vec<String> = s
        .events(d.id, 0)
        .unwrap()
        .into_iter()
        .filter_map(|(_, e)| match e {
            DeploymentEvent::GroupStarted { group } => Some(group),
            _ => None,
        })
        .collect();
    assert_eq!(groups, ["one", "two", "three", "four"], "events in order");
    assert_eq!(
        s.task_states(&[n[1], n[0]]).unwrap(),
        [
            (n[1], "t".to_string(), serde_json::json!({"one": 1})),
            (n[0], "t".to_string(), serde_json::json!({"last": true})),
            (n[0], "u".to_string(), serde_json::json!({"u": 0})),
        ],
        "node by node as asked, tasks in order, the last state given wins"
    );
    // Rows sorted by node and task without repeats (a deployment's end gives them so).
    s.save_task_states(
        &[],
        &[
            (n[2], "a".into(), text(&serde_json::json!({"a": 2}))),
            (n[2], "b".into(), text(&serde_json::json!({"b": 2}))),
            (n[3], "a".into(), text(&serde_json::json!({"a": 3}))),
        ],
    )
    .unwrap();
    assert_eq!(
        s.task_states(&[n[3], n[2]]).unwrap(),
        [
            (n[3], "a".to_string(), serde_json::json!({"a": 3})),
            (n[2], "a".to_string(), serde_json::json!({"a": 2})),
            (n[2], "b".to_string(), serde_json::json!({"b": 2})),
        ]
    );
    let gone = "0".repeat(64);
    assert_eq!(
        s.state_blobs(&[blob_hash(&b2), gone, blob_hash(&b1)])
            .unwrap(),
        [
            (blob_hash(&b2), Json::from(b2)),
            (blob_hash(&b1), Json::from(b1))
        ]
    );

    // Last-seen times: the latest wins, an older one changes nothing, an unknown node is ignored.
    s.touch_nodes(&[(n[0], 50), (n[0], 40), (n[4] + 100, 7)])
        .unwrap();
    s.touch_nodes(&[(n[0], 10)]).unwrap();
    assert_eq!(s.get_node(n[0]).unwrap().last_seen_ms, 50);
    assert_eq!(
        s.get_node(n[1]).unwrap().last_seen_ms,
        1,
        "the registration's time until seen"
    );
    assert!(s
        .list_nodes()
        .unwrap()
        .iter()
        .any(|node| node.id == n[0] && node.last_seen_ms == 50));
    s.unassign_nodes(c.id, &[n[0], n[1]]).unwrap();
    assert!(s.get_node(n[0]).unwrap().cluster_id.is_none());
    assert_eq!(s.get_node(n[1]).unwrap().status, NodeStatus::Discover);
}

/// Runs each case against both backends, as `sqlite::<case>` and `postgres::<case>`.
/// Registrations written in one transaction (agents registering at once) end as written one by one:
/// in order, a key given twice is one node whose later facts win, a taken name gets the id appended,
/// and a node refused for room does not stop the others.
fn registrations_written_together_end_as_one_at_a_time(s: &dyn Store) {
    let with = |key: &str, name: &str, host: &str| {
        let mut r = reg(key);
        r.name = name.into();
        r.facts = serde_json::json!({"hostname": host});
        r.max_discovered = 1;
        r
    };
    let regs = [
        (with("a", "web", "first"), NodeAdmission::Accepted),
        (with("b", "web", "b"), NodeAdmission::Accepted),
        (with("c", "db", "c"), NodeAdmission::Discovered),
        (with("d", "db2", "d"), NodeAdmission::Discovered),
        (with("a", "web", "again"), NodeAdmission::Accepted),
    ];
    let refs: Vec<(&NodeRegistration, NodeAdmission)> = regs.iter().map(|(r, a)| (r, *a)).collect();
    let out = s.register_nodes(&refs).unwrap();
    assert_eq!(out.len(), 5, "an answer per registration, in order");
    let ok = |i: usize| {
        out[i]
            .as_ref()
            .unwrap_or_else(|e| panic!("registration {i}: {e}"))
    };
    let (a, b, c) = (ok(0), ok(1), ok(2));
    assert_eq!(a.name, "web");
    assert_eq!(
        b.name,
        format!("web-{}", b.id),
        "a taken name gets the id appended"
    );
    assert_eq!(c.admission, NodeAdmission::Discovered);
    assert!(
        matches!(&out[3], Err(StoreError::Full(_))),
        "one discovered node is the most kept: {:?}",
        out[3]
    );
    assert_eq!(ok(4).id, a.id, "the same key is the same node");
    let nodes = s.list_nodes().unwrap();
    assert_eq!(
        nodes
            .iter()
            .map(|n| n.node_key.as_str())
            .collect::<Vec<_>>(),
        ["a", "b", "c"],
        "the refused one was not stored, the others were"
    );
    assert_eq!(
        nodes[0].facts["hostname"], "again",
        "the later registration's facts"
    );
    // One at a time, on the same store, gives the same answers.
    let one = s.register_node(&regs[1].0, regs[1].1).unwrap();
    assert_eq!((one.id, one.name.as_str()), (b.id, b.name.as_str()));
    let refused = s.register_node(&regs[3].0, regs[3].1);
    assert!(matches!(refused, Err(StoreError::Full(_))), "{refused:?}");
}

fn enrollment(name: &str, macs: &[&str]) -> NewEnrollment {
    NewEnrollment {
        name: name.into(),
        macs: macs.iter().map(|m| m.to_string()).collect(),
        serial: None,
        uuid: None,
        tags: vec!["compute".into()],
        labels: BTreeMap::from([("zone".to_string(), "a".to_string())]),
        rack: Some("rack9".into()),
        profile: Default::default(),
        bmc: None,
        bmc_secret: Some("sealed".into()),
        now_ms: 1,
    }
}

fn claiming(key: &str, macs: &[&str]) -> NodeRegistration {
    NodeRegistration {
        identity: NodeIdentity {
            macs: macs.iter().map(|m| m.to_string()).collect(),
            ..Default::default()
        },
        ..reg(key)
    }
}

fn enrolled_servers_become_their_agents_nodes_and_refuse_a_second_agent(s: &dyn Store) {
    let enrolled = s
        .enroll(&[
            enrollment("n01", &["52:54:00:00:00:01", "52:54:00:00:00:02"]),
            enrollment("n02", &["52:54:00:00:00:03"]),
        ])
        .unwrap();
    assert_eq!(enrolled[0].macs, ["52:54:00:00:00:01", "52:54:00:00:00:02"]);
    // All or none: one conflict writes nothing.
    let again = s.enroll(&[
        enrollment("n03", &["52:54:00:00:00:04"]),
        enrollment("n04", &["52:54:00:00:00:03"]),
    ]);
    assert!(
        matches!(&again, Err(StoreError::Conflict(m)) if m.contains("52:54:00:00:00:03 is enrolled as n02")),
        "{again:?}"
    );
    assert_eq!(s.list_enrollments().unwrap().len(), 2);

    // The agent's name, tags, labels and rack give way to the enrollment's.
    let node = s
        .register_node(
            &claiming("a", &["52:54:00:00:00:02"]),
            NodeAdmission::Discovered,
        )
        .unwrap();
    assert_eq!(node.name, "n01");
    assert_eq!(node.tags, ["compute"]);
    assert_eq!(node.rack.as_deref(), Some("rack9"));
    assert_eq!(node.labels.get("zone").map(String::as_str), Some("a"));
    assert_eq!(s.get_enrollment("n01").unwrap().node_id, Some(node.id));
    // It says so again, and the enrollment still stands; what it said is kept apart.
    let again = s
        .register_node(
            &claiming("a", &["52:54:00:00:00:02"]),
            NodeAdmission::Discovered,
        )
        .unwrap();
    assert_eq!(
        (again.id, again.name.as_str(), again.tags.as_slice()),
        (node.id, "n01", &["compute".to_string()][..])
    );
    assert!(again.model.reported.is_some());

    // A second agent with the same MAC is refused, and the refusal is on the node.
    let second = s.register_node(
        &claiming("b", &["52:54:00:00:00:01"]),
        NodeAdmission::Discovered,
    );
    assert!(
        matches!(&second, Err(StoreError::Claimed(m)) if m.contains("n01")),
        "{second:?}"
    );
    assert!(s.list_nodes().unwrap().iter().all(|n| n.node_key != "b"));
    let refusals = s.node_refusals(node.id).unwrap();
    assert_eq!(refusals.len(), 1);
    assert_eq!(refusals[0].refusal.kind, "claim");

    // Released, the next agent takes the node over with its key; the old key no longer names it.
    s.set_enrollment_boot("n01", true, None).unwrap();
    let taken = s
        .register_node(
            &claiming("b", &["52:54:00:00:00:01"]),
            NodeAdmission::Discovered,
        )
        .unwrap();
    assert_eq!((taken.id, taken.node_key.as_str()), (node.id, "b"));
    assert!(!s.get_enrollment("n01").unwrap().rekey, "closed again");

    // MACs of two enrolled servers at once: refused for that agent.
    let both = s.register_node(
        &claiming("c", &["52:54:00:00:00:01", "52:54:00:00:00:03"]),
        NodeAdmission::Discovered,
    );
    assert!(
        matches!(&both, Err(StoreError::Conflict(m)) if m.contains("several")),
        "{both:?}"
    );

    // An unknown agent is discovered as before, and cannot take an enrolled name.
    let mut stranger = reg("d");
    stranger.name = "n02".into();
    let stranger = s
        .register_node(&stranger, NodeAdmission::Discovered)
        .unwrap();
    assert_eq!(stranger.name, format!("n02-{}", stranger.id));

    // A node deleted frees its enrollment for the server's next agent.
    s.delete_node(taken.id).unwrap();
    assert_eq!(s.get_enrollment("n01").unwrap().node_id, None);
    s.delete_enrollment("n02").unwrap();
    assert!(matches!(
        s.get_enrollment("n02"),
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(
        s.enrollment_by_mac("52:54:00:00:00:02")
            .unwrap()
            .map(|e| e.name),
        Some("n01".to_string())
    );
    assert_eq!(
        s.enrollment_secret("n01").unwrap().1.as_deref(),
        Some("sealed")
    );

    s.record_power(&[PowerReading {
        enrollment_id: enrolled[0].id,
        power: plinth_api::enrollment::PowerView {
            state: plinth_api::enrollment::PowerState::Unknown,
            error: Some("timed out".into()),
            checked_ms: 5,
        },
    }])
    .unwrap();
    let e = s.get_enrollment("n01").unwrap();
    assert_eq!(
        (e.power.error.as_deref(), e.power.checked_ms),
        (Some("timed out"), 5)
    );
}

macro_rules! suite {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(#[test]
            fn $case() {
                super::$case(&crate::store::sqlite::SqliteStore::in_memory().unwrap());
            })*
        }
        mod postgres {
            $(#[test]
            fn $case() {
                let db = super::postgres_database();
                super::$case(&db.store);
            })*
        }
    };
}

suite!(
    the_schema_is_the_controllers_once_opened,
    registration_is_idempotent_per_key,
    results_are_stored_once,
    a_cancelled_deployment_takes_the_last_word_of_what_it_ended,
    one_running_deployment_per_cluster_and_failed_writes_change_nothing,
    graphs_create_conflict_replace_delete,
    revisions_come_from_one_counter_and_nothing_a_node_says_moves_them,
    strategies_create_conflict_replace_delete,
    concurrent_publishes_take_distinct_revisions,
    results_racing_the_end_of_their_deployment_are_stored_only_before_it,
    tokens_are_unique_by_name_until_revoked,
    discovered_nodes_are_bounded_and_names_made_unique,
    a_cluster_snapshot_holds_its_graphs_of_the_types_asked_its_nodes_and_their_old_states,
    many_nodes_registering_at_once_all_get_in_with_unique_names,
    a_deployments_inputs_read_back_as_recorded,
    the_sequencing_lease_changes_hands_only_when_free_with_a_new_token,
    followers_read_lists_after_a_revision_and_cancel_requests_reach_the_sequencer,
    many_nodes_written_at_once_end_as_one_at_a_time,
    registrations_written_together_end_as_one_at_a_time,
    enrolled_servers_become_their_agents_nodes_and_refuse_a_second_agent,
    a_provision_tasks_results_tell_where_the_node_is_in_its_life,
);

/// A fresh PostgreSQL database on the shared scratch server, and a store on it.
struct PgDatabase {
    // Dropped first: the store's connections close before the server may stop.
    store: crate::store::postgres::PgStore,
    _server: std::sync::Arc<crate::store::postgres::scratch::ScratchPostgres>,
}

/// The scratch server shared by the cases running now: started by the first, stopped with the last.
fn shared_server() -> std::sync::Arc<crate::store::postgres::scratch::ScratchPostgres> {
    use std::sync::{Arc, Mutex, Weak};
    static SERVER: Mutex<Weak<crate::store::postgres::scratch::ScratchPostgres>> =
        Mutex::new(Weak::new());
    let mut slot = SERVER.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(server) = slot.upgrade() {
        return server;
    }
    let server = Arc::new(
        crate::store::postgres::scratch::ScratchPostgres::start()
            .expect("a scratch PostgreSQL (scripts/test.sh installs Debian's postgresql)"),
    );
    *slot = Arc::downgrade(&server);
    server
}

fn postgres_database() -> PgDatabase {
    let server = shared_server();
    let url = server.fresh_database().expect("a fresh database");
    PgDatabase {
        store: crate::store::postgres::PgStore::open(&url).expect("the store opens and migrates"),
        _server: server,
    }
}
