//! A client that reads an answer into its type and prints it again prints what the controller sent:
//! every field survives the round trip (`plinthctl -o json` relies on it).

use plinth_api::deployments::{DeploymentRecord, NodeLine, Report, StartedDeployment, Summary};
use plinth_api::errors::ErrorBody;
use plinth_api::records::{
    AgentInfo, ClusterRecord, Hardware, NodeAdmission, NodeModelFields, NodeRecord, NodeStatus,
    NodeView, Reported,
};
use plinth_common::wire::{DeploymentStatus, ResultStatus};
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn again<T: serde::de::DeserializeOwned + serde::Serialize>(sent: &Value) -> Value {
    let typed: T = serde_json::from_value(sent.clone()).expect("the answer reads as its type");
    serde_json::to_value(typed).expect("and serialises")
}

#[test]
fn a_node_as_listed_reads_and_prints_unchanged() {
    let view = NodeView {
        node: NodeRecord {
            id: 3,
            node_key: "SHA256:abc".into(),
            public_key: "pk".into(),
            name: "web-1".into(),
            admission: NodeAdmission::Accepted,
            status: NodeStatus::Ready,
            cluster_id: Some(1),
            pending_roles: vec!["compute".into()],
            roles: vec!["controller".into()],
            tags: vec!["rack-a".into()],
            labels: BTreeMap::from([("zone".into(), "a".into())]),
            rack: None,
            facts: Value::Null,
            registered_at_ms: 1,
            last_seen_ms: 2,
            revision: 7,
            model: NodeModelFields {
                tags_added: vec!["extra".into()],
                primary_tags: vec!["controller".into()],
                pending_addition: true,
                error_type: Some("deploy".into()),
                reported: Some(Reported {
                    name: "other".into(),
                    ..Reported::default()
                }),
                ..NodeModelFields::default()
            },
        },
        online: true,
        deployed_roles: vec!["controller".into()],
        effective_tags: vec!["controller".into(), "primary-controller".into()],
        hardware: Hardware {
            cpus: Some(4),
            memory_bytes: None,
            disks: 1,
            disk_bytes: 10,
            nics: 2,
        },
        agent: Some(AgentInfo {
            version: "0.1.0".into(),
            protocol: 2,
        }),
    };
    let sent = serde_json::to_value(&view).unwrap();
    assert_eq!(
        sent["reported"]["name"], "other",
        "flattened as the API sends it"
    );
    assert_eq!(again::<NodeView>(&sent), sent);
    assert_eq!(again::<Vec<NodeView>>(&json!([sent])), json!([sent]));
}

#[test]
fn a_cluster_reads_and_prints_unchanged_and_never_shows_its_generated_secrets() {
    let sent = json!({
        "id": 1, "name": "prod", "release_id": 2, "settings": {"a": {"value": 1}},
        "plugins": [4], "tags_metadata": {"rack-a": {"has_primary": false}},
        "roles_metadata": {"x": {}}, "status": "partially_deployed"
    });
    let mut typed: ClusterRecord = serde_json::from_value(sent.clone()).unwrap();
    assert_eq!(typed.data.plugins, [4]);
    assert_eq!(again::<ClusterRecord>(&sent), sent);
    typed.generated = json!({"mysql": {"root_password": "s3cret"}});
    let shown = serde_json::to_string(&typed).unwrap();
    assert!(
        !shown.contains("s3cret") && !shown.contains("generated"),
        "{shown}"
    );
}

#[test]
fn an_error_answer_reads_with_its_findings() {
    let sent = json!({"error": {"code": "checks_failed", "message": "the pre-deployment checks failed: x",
        "details": {"findings": [{"severity": "error", "code": "cycle", "message": "x"}]}}});
    let body: ErrorBody = serde_json::from_value(sent.clone()).unwrap();
    let findings = body.error.findings();
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].code.as_deref(), Some("cycle"));
    assert_eq!(serde_json::to_value(&body).unwrap(), sent);
    let plain: ErrorBody = serde_json::from_value(
        json!({"error": {"code": "not_found", "message": "node 4 not found"}}),
    )
    .unwrap();
    assert!(plain.error.findings().is_empty());
}

/// Reads the controller's text into `T` and prints it again: byte for byte the same text.
fn again_text<T: serde::de::DeserializeOwned + serde::Serialize>(sent: &Value) -> String {
    let text = serde_json::to_string(sent).expect("a JSON value prints");
    let typed: T = serde_json::from_str(&text).expect("the answer reads as its type");
    let printed = serde_json::to_string(&typed).expect("and serialises");
    assert_eq!(printed, text, "printed again as sent");
    printed
}

/// A report as the controller sends it for a strategy deployment with a failed group, a group not
/// attempted because of it, a node with two tasks (one with details, one that failed) and notices.
fn a_report() -> Value {
    json!({
        "id": 7, "cluster_id": 1, "graph_type": "strategy:rolling", "strategy": "rolling",
        "chosen_by": "the cluster's deployment configuration",
        "steps": [
            {"index": 1, "name": "prepare ntp", "group": "ntp", "phase": "prepare", "state": "success",
             "detail": "SUCCESS"},
            {"index": 2, "name": "deploy ntp", "group": "ntp", "phase": "deploy", "state": "failed",
             "detail": "FAILED"},
            {"index": 3, "name": "prepare web", "group": "web", "phase": "prepare", "state": "skipped",
             "detail": "FAILED, due to dependency (ntp)"}
        ],
        "status": "failed", "created_at_ms": 1000, "finished_at_ms": 9000,
        "phases": ["prepare", "deploy"], "order": ["ntp", "web"],
        "groups": [
            {"name": "ntp", "critical": true, "state": "failed",
             "reason": "phase deploy timed out after 30 s: n-2",
             "failure": {"kind": "timeout", "phase": "deploy", "nodes": ["n-2"], "failures": [],
                         "after_secs": 30},
             "depends_on": [],
             "success_criteria": {"percent_successful_nodes": 90, "maximum_failed_nodes": 0},
             "nodes": ["n-1", "n-2"], "succeeded": ["n-1"], "prepared": [], "failed": ["n-2"],
             "not_started": [], "running": [], "cancelled": []},
            {"name": "web", "critical": false, "state": "failed", "current_phase": "prepare",
             "reason": "due to dependency ntp",
             "failure": {"kind": "dependency", "dependency": "ntp", "root": "ntp"},
             "depends_on": ["ntp"], "nodes": ["n-3"], "succeeded": [], "prepared": [],
             "failed": [], "not_started": ["n-3"], "running": [], "cancelled": []}
        ],
        "nodes": [
            {"id": 1, "name": "n-1", "status": "success", "total_tasks": 1, "finished_tasks": 1,
             "succeeded_tasks": 1,
             "tasks": [{"phase": "deploy", "id": "puppet", "status": "succeeded", "attempts": 1,
                        "exit_code": 0, "duration_ms": 1200, "message": "", "stdout_tail": "ok\n",
                        "stderr_tail": "", "details": {"changed": 3, "failed": 0}}]},
            {"id": 2, "name": "n-2", "status": "failure", "failed_phase": "deploy",
             "reason": "timed out after 30 s in phase deploy", "total_tasks": 2, "finished_tasks": 1,
             "succeeded_tasks": 0, "failed_task": "sync",
             "tasks": [{"phase": "deploy", "id": "sync", "status": "failed", "attempts": 3,
                        "exit_code": 2, "duration_ms": 40, "message": "exit 2\nsecond line",
                        "stdout_tail": "", "stderr_tail": "no route"},
                       {"phase": "deploy", "id": "wait", "status": "running", "attempts": 1,
                        "exit_code": null, "duration_ms": 0, "message": "", "stdout_tail": "",
                        "stderr_tail": ""}]},
            {"id": 3, "name": "n-3", "status": "not_started", "total_tasks": 0,
             "finished_tasks": 0, "succeeded_tasks": 0, "tasks": []}
        ],
        "unselected_nodes": ["n-4"],
        "notices": [
            {"event": "warning", "code": "unassigned_tag", "message": "tag db is on no node"},
            {"event": "result_refused", "node": "n-2", "message": "stale revision",
             "detail": {"revision": 1}},
            {"event": "stopped", "message": "fault tolerance exceeded"}
        ]
    })
}

#[test]
fn a_deployment_report_reads_and_prints_unchanged() {
    let sent = a_report();
    again_text::<Report>(&sent);
    let typed: Report = serde_json::from_value(sent.clone()).unwrap();
    assert_eq!(typed.status, DeploymentStatus::Failed);
    assert_eq!(typed.nodes[1].tasks[1].status, ResultStatus::Running);
    assert_eq!(typed.notices[1].kind(), "result_refused");
    // One node's part, as `GET /deployments/{id}/nodes/{node_id}/` answers.
    again_text::<NodeLine>(&sent["nodes"][1]);
    // A report without notices has no `notices` field, and prints again without one.
    let mut quiet = sent.clone();
    quiet.as_object_mut().unwrap().shift_remove("notices");
    again_text::<Report>(&quiet);
}

#[test]
fn a_deployment_summary_reads_and_prints_unchanged_and_is_the_reports_summary() {
    let report: Report = serde_json::from_value(a_report()).unwrap();
    let summary = Summary::from(report);
    assert_eq!(summary.nodes[1].last_task.as_deref(), Some("wait"));
    assert_eq!(summary.groups[0].failed, 1);
    let sent = serde_json::to_value(&summary).unwrap();
    assert_eq!(
        sent["counts"],
        json!({"not_started": 1, "success": 1, "failure": 1})
    );
    again_text::<Summary>(&sent);
}

#[test]
fn a_deployment_record_and_the_start_answer_read_and_print_unchanged() {
    let record = json!({
        "id": 8, "cluster_id": 1, "graph_type": "default", "status": "cancelled",
        "node_ids": [2, 3], "options": {"noop": false, "force": true},
        "state": {"strategy": null}, "created_at_ms": 5, "finished_at_ms": null
    });
    again_text::<DeploymentRecord>(&record);
    again_text::<Vec<DeploymentRecord>>(&json!([record, record]));
    let mut started = record.clone();
    started["status"] = json!("running");
    started["strategy"] = json!({"name": "rolling", "chosen_by": "named in the request",
        "phases": [{"name": "prepare", "graph_type": "prepare", "timeout_secs": 600},
                   {"name": "deploy", "graph_type": "default", "timeout_secs": 3600}]});
    again_text::<StartedDeployment>(&started);
    let typed: StartedDeployment = serde_json::from_value(started).unwrap();
    assert_eq!(typed.record.node_ids, [2, 3]);
    assert_eq!(typed.strategy.unwrap().phases[1].timeout_secs, 3600);
    // Every node at once: no name, no reason.
    let mut plain = record.clone();
    plain["strategy"] = json!({"name": null, "chosen_by": null, "phases": []});
    again_text::<StartedDeployment>(&plain);
}
