//! A client that reads an answer into its type and prints it again prints what the controller sent:
//! every field survives the round trip (`plinthctl -o json` relies on it).

use plinth_api::errors::ErrorBody;
use plinth_api::records::{
    ClusterRecord, Hardware, NodeAdmission, NodeModelFields, NodeRecord, NodeStatus, NodeView,
    Reported,
};
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
