//! Deckhand's replacement cases (`test_document_layering_and_replacement*.py`), each test named after
//! Deckhand's.

use plinth_deckhand::RenderError;
use serde_json::{json, Value};

use crate::support::{check_layers, error_of, yaml, Factory};

fn values(text: &str) -> Vec<Value> {
    yaml(text).into_iter().map(|d| d.value.to_value()).collect()
}

const WITH_REPLACER: &str = include_str!("fixtures/replacement_with_layering_with_replacer.yaml");
const THREE_TIER: &str = include_str!("fixtures/replacement_3_tier.yaml");

/// Rotations of the documents: the order never matters.
fn rotations(docs: &[Value]) -> Vec<Vec<Value>> {
    (0..docs.len())
        .map(|n| {
            let mut d = docs.to_vec();
            d.rotate_left(n);
            d
        })
        .collect()
}

#[test]
fn basic_replacement() {
    let mut docs = values(WITH_REPLACER);
    docs.retain(|d| d["metadata"]["name"] != "b" && d["metadata"]["name"] != "c");
    check_layers(
        &docs,
        &[json!({"conf": {"foo": "default", "bar": "override"}})],
        &[],
        &[],
    );
}

#[test]
fn replacement_with_substitution_from_replacer() {
    let mut docs = values(WITH_REPLACER);
    docs.retain(|d| d["metadata"]["name"] != "b");
    for docs in rotations(&docs) {
        check_layers(
            &docs,
            &[json!({"conf": {"foo": "default", "bar": "override"}})],
            &[],
            &[json!({"application": {"conf": {"foo": "default", "bar": "override"}}})],
        );
    }
}

#[test]
fn replacement_with_layering_with_replacer() {
    for docs in rotations(&values(WITH_REPLACER)) {
        check_layers(
            &docs,
            &[
                json!({"conf": {"foo": "default", "bar": "override"}}),
                json!({"conf": {"foo": "default", "bar": "override", "baz": "another"}}),
            ],
            &[],
            &[json!({"application": {"conf": {"foo": "default", "bar": "override"}}})],
        );
    }
}

#[test]
fn replacement_document_receives_substitution() {
    let docs = values(include_str!(
        "fixtures/replacement_document_receives_substitution.yaml"
    ));
    for docs in rotations(&docs) {
        check_layers(
            &docs,
            &[
                json!("CERTIFICATE DATA\n"),
                json!("KEY DATA\n"),
                json!({"chart": {"details": {"data": "bar"},
                                 "values": {"tls": {"certificate": "CERTIFICATE DATA\n", "key": "KEY DATA\n"}}}}),
            ],
            &[],
            &[],
        );
    }
}

fn nova_site() -> Value {
    json!({"values": {"pod": {"replicas": {"api_metadata": 16, "placement": 2, "osapi": 16, "conductor": 16,
                                           "consoleauth": 2, "scheduler": 2, "novncproxy": 2, "server": 16}}}})
}

#[test]
fn multi_layer_replacement() {
    check_layers(
        &values(THREE_TIER),
        &[nova_site()],
        &[],
        &[json!({"values": {"pod": {"replicas": {"server": 16}}}})],
    );
}

#[test]
fn multi_layer_replacement_with_intermediate_replacement() {
    let mut docs = values(THREE_TIER);
    docs[1]["metadata"]["name"] = json!("nova-replace");
    docs[2]["metadata"]["name"] = json!("nova-replace");
    docs[2]["metadata"]["replacement"] = json!(true);
    docs[3]["metadata"]["replacement"] = json!(false);
    check_layers(
        &docs,
        &[nova_site()],
        &[json!({"values": {"pod": {"replicas": {"server": 16}}}})],
        &[],
    );
}

fn reason(error: &RenderError) -> String {
    match error {
        RenderError::InvalidDocumentReplacement { reason, .. } => reason.clone(),
        other => panic!("not a replacement error: {other}"),
    }
}

#[test]
fn replacement_with_incompatible_name_or_schema_raises_exc() {
    let mut docs = Factory::new(&[1, 1]).gen(json!({}));
    docs[1]["metadata"]["name"] = json!("foo");
    docs[2]["metadata"]["replacement"] = json!(true);
    docs[2]["metadata"]["name"] = json!("bar");
    assert!(reason(&error_of(&docs)).contains("same schema and metadata.name as its parent"));
    docs[2]["metadata"]["name"] = json!("foo");
    docs[2]["schema"] = json!("example/Other/v1");
    // Another schema is not a parent at all: the selector selects a document of another schema.
    assert!(matches!(
        error_of(&docs),
        RenderError::InvalidDocumentParent { .. }
    ));
}

#[test]
fn non_replacement_same_name_and_schema_as_parent_raises_exc() {
    let mut docs = Factory::new(&[1, 1]).gen(json!({}));
    docs[1]["metadata"]["name"] = json!("foo");
    docs[2]["metadata"]["replacement"] = json!(false);
    docs[2]["metadata"]["name"] = json!("foo");
    assert!(reason(&error_of(&docs)).contains("but not `replacement: true`"));
}

#[test]
fn replacement_without_parent_raises_exc() {
    let mut docs = Factory::new(&[1, 1]).gen(json!({}));
    docs[2]["metadata"]["replacement"] = json!(true);
    docs[2]["metadata"]["layeringDefinition"]
        .as_object_mut()
        .unwrap()
        .remove("parentSelector");
    assert!(reason(&error_of(&docs)).contains("must have a parent"));
}

#[test]
fn replacement_with_parent_replace_true_raises_exc() {
    let mut docs = Factory::new(&[1, 1]).gen(json!({}));
    docs[1]["metadata"]["replacement"] = json!(true);
    assert!(reason(&error_of(&docs)).contains("must have a parent"));
}

#[test]
fn replacement_that_is_replaced_raises_exc() {
    let mut factory = Factory::new(&[1, 1, 1]).concrete_site();
    factory.region_abstract = false;
    let mut docs = factory.gen(json!({}));
    for doc in &mut docs[1..] {
        doc["metadata"]["name"] = json!("foo");
    }
    docs[2]["metadata"]["replacement"] = json!(true);
    docs[3]["metadata"]["replacement"] = json!(true);
    assert!(reason(&error_of(&docs)).contains("a replacement cannot itself be replaced"));
}

#[test]
fn replacement_true_with_parent_replacement_true_raises_exc() {
    let mut docs = Factory::new(&[1, 1]).gen(json!({}));
    for doc in &mut docs[1..] {
        doc["metadata"]["name"] = json!("foo");
        doc["metadata"]["replacement"] = json!(false);
        doc["metadata"]["layeringDefinition"]
            .as_object_mut()
            .unwrap()
            .remove("parentSelector");
    }
    assert!(reason(&error_of(&docs)).contains("neither has `replacement: true`"));
}
