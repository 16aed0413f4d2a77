//! Deckhand's negative layering cases (`test_document_layering_negative.py`), each test named after
//! Deckhand's: the error Deckhand raises, or the document Deckhand keeps as it is.

use plinth_deckhand::RenderError;
use serde_json::json;

use crate::support::{check_layers, error_of, rendered, Factory};

fn site_action(method: &str, path: &str) -> Vec<serde_json::Value> {
    Factory::new(&[1, 1]).concrete_site().gen(json!({
        "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}, "c": 9}},
        "_SITE_DATA_1_": {"data": {"a": {"x": 7, "z": 3}, "b": 4}},
        "_SITE_ACTIONS_1_": {"actions": [{"method": method, "path": path}]},
    }))
}

#[test]
fn layering_method_merge_key_not_in_child() {
    let error = error_of(&site_action("merge", ".c"));
    assert!(
        matches!(error, RenderError::MissingDocumentKey { .. }),
        "{error}"
    );
    let text = error.to_string();
    assert!(
        text.contains("[example/Kind/v1] site1 (site layer")
            && text.contains("parent [example/Kind/v1] global1"),
        "{text}"
    );
}

#[test]
fn layering_method_delete_key_not_in_child() {
    let error = error_of(&site_action("delete", ".b"));
    assert!(
        matches!(error, RenderError::MissingDocumentKey { .. }),
        "{error}"
    );
}

#[test]
fn layering_method_replace_key_not_in_child() {
    let error = error_of(&site_action("replace", ".c"));
    assert!(
        matches!(error, RenderError::MissingDocumentKey { ref method, ref path, .. } if method == "replace" && path == ".c"),
        "{error}"
    );
}

#[test]
fn layering_unsupported_action_method() {
    let error = error_of(&site_action("patch", ".a"));
    assert!(
        matches!(error, RenderError::UnsupportedActionMethod { ref method, .. } if method == "patch"),
        "{error}"
    );
}

#[test]
fn layering_delete_everything_missing_path() {
    let docs = Factory::new(&[1, 1, 1]).concrete_site().gen(json!({
        "_GLOBAL_DATA_1_": {"data": {"a": {"x": 3, "y": 4}, "b": 99}},
        "_REGION_DATA_1_": {"data": {"a": {"x": 1, "y": 2}}},
        "_SITE_DATA_1_": {"data": {"b": 4}},
        "_REGION_ACTIONS_1_": {"actions": [{"path": ".", "method": "delete"}]},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "delete", "path": ".b"}]},
    }));
    assert!(matches!(
        error_of(&docs),
        RenderError::MissingDocumentKey { .. }
    ));
}

#[test]
fn layering_with_empty_layer() {
    let mut docs = Factory::new(&[1]).gen(json!({}));
    docs[0]["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("layeringDefinition");
    let r = rendered(&docs[..1]).unwrap();
    assert_eq!(r.documents.len(), 1, "the layering policy is returned");
    check_layers(&docs[..1], &[], &[], &[]);
}

#[test]
fn layering_document_with_invalid_layer_raises_exc() {
    let mut docs = Factory::new(&[1]).gen(json!({}));
    docs[1]["metadata"]["layeringDefinition"]["layer"] = json!("invalid");
    let error = error_of(&docs);
    assert!(
        matches!(error, RenderError::InvalidDocumentLayer { ref layer, .. } if layer == "invalid"),
        "{error}"
    );
}

#[test]
fn layering_child_with_invalid_parent_selector() {
    let mut docs = Factory::new(&[1, 1])
        .concrete_site()
        .gen(json!({"_SITE_DATA_1_": {"data": {"own": 1}}}));
    for selector in [json!({"key2": "value2"}), json!({"key1": "value2"})] {
        docs[2]["metadata"]["layeringDefinition"]["parentSelector"] = selector;
        let r = rendered(&docs).unwrap();
        assert!(r
            .warnings
            .iter()
            .any(|w| w.document.contains("site1") && w.message.contains("matches no document")));
        check_layers(&docs, &[json!({"own": 1})], &[], &[]);
    }
}

#[test]
fn layering_unreferenced_parent_label() {
    let mut docs = Factory::new(&[1, 1]).concrete_site().gen(json!({}));
    for labels in [json!({"key2": "value2"}), json!({"key1": "value2"})] {
        docs[1]["metadata"]["labels"] = labels;
        let r = rendered(&docs).unwrap();
        assert!(r
            .warnings
            .iter()
            .any(|w| w.message.contains("matches no document")));
    }
}

#[test]
fn layering_duplicate_parent_selector_2_layer() {
    let mut docs = Factory::new(&[2, 1]).concrete_site().gen(json!({}));
    docs[2]["metadata"]["labels"] = docs[1]["metadata"]["labels"].clone();
    let error = error_of(&docs);
    assert!(
        matches!(
            error,
            RenderError::IndeterminateDocumentParent { found: 2, .. }
        ),
        "{error}"
    );
}

#[test]
fn layering_duplicate_parent_selector_3_layer() {
    let mut docs = Factory::new(&[1, 2, 1]).concrete_site().gen(json!({}));
    docs[3]["metadata"]["labels"] = docs[2]["metadata"]["labels"].clone();
    let error = error_of(&docs);
    assert!(
        matches!(error, RenderError::IndeterminateDocumentParent { .. }),
        "{error}"
    );
}

#[test]
fn layering_document_references_itself() {
    let mut docs = Factory::new(&[1, 1, 1]).concrete_site().gen(json!({}));
    docs[2]["metadata"]["labels"] = json!({"self": "self"});
    docs[2]["metadata"]["layeringDefinition"]["parentSelector"] = json!({"self": "self"});
    let r = rendered(&docs).unwrap();
    assert!(r
        .warnings
        .iter()
        .any(|w| w.document.contains("region1") && w.message.contains("matches no document")));
}

#[test]
fn layering_without_layering_policy_raises_exc() {
    let docs = Factory::new(&[1]).concrete_site().gen(json!({}));
    assert_eq!(error_of(&docs[1..]), RenderError::LayeringPolicyNotFound);
}

#[test]
fn multiple_layering_policy_logs_warning() {
    let mut factory = Factory::new(&[1]);
    factory.global_abstract = false;
    let mut docs = factory.gen(json!({}));
    let mut second = docs[0].clone();
    second["metadata"]["name"] = json!("second-policy");
    second["data"]["layerOrder"] = json!(["other"]);
    docs.push(second);
    let r = rendered(&docs).unwrap();
    assert!(
        r.warnings.iter().any(|w| w.document.contains("second-policy")
            && w.message.contains("more than one layering policy: the first one, [deckhand/LayeringPolicy/v1] layering-policy")),
        "{:?}",
        r.warnings
    );
    check_layers(&docs[..2], &[], &[], &[json!({})]);
}

#[test]
fn layering_documents_with_different_schemas_raises_exc() {
    for idx in 1..3 {
        let mut docs = Factory::new(&[1, 1, 1]).gen(json!({}));
        docs[idx]["schema"] = json!("other/Schema/v1");
        let error = error_of(&docs);
        assert!(
            matches!(error, RenderError::InvalidDocumentParent { .. }),
            "{error}"
        );
        assert!(error.to_string().contains("schemas differ"), "{error}");
    }
}

#[test]
fn layering_parent_and_child_with_same_layer_raises_exc() {
    let mut docs = Factory::new(&[1, 1]).gen(json!({}));
    for doc in &mut docs[1..3] {
        doc["metadata"]["layeringDefinition"]["layer"] = json!("global");
    }
    let error = error_of(&docs);
    assert!(
        matches!(error, RenderError::InvalidDocumentParent { .. }),
        "{error}"
    );
}

#[test]
fn layering_empty_layer_order_raises_exc() {
    let mut factory = Factory::new(&[1]);
    factory.global_abstract = false;
    let mut docs = factory.gen(json!({}));
    docs[0]["data"]["layerOrder"] = json!([]);
    let error = error_of(&docs);
    assert!(
        matches!(error, RenderError::InvalidDocumentLayer { ref layer, .. } if layer == "global"),
        "{error}"
    );
}

#[test]
fn layering_invalid_substitution_format_raises_exc() {
    let mut factory = Factory::new(&[1]);
    factory.global_abstract = false;
    let template = factory.gen(json!({"_GLOBAL_SUBSTITUTIONS_1_": [{
        "dest": {"path": ".c"},
        "src": {"schema": "deckhand/Certificate/v1", "name": "global-cert", "path": "."}}]}));
    for pointer in [
        "/src",
        "/dest",
        "/src/schema",
        "/src/name",
        "/src/path",
        "/dest/path",
    ] {
        let mut docs = template.clone();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        docs[1]["metadata"]["substitutions"][0]
            .pointer_mut(if parent.is_empty() { "" } else { parent })
            .and_then(|v| v.as_object_mut())
            .unwrap()
            .remove(key);
        let error = error_of(&docs);
        assert!(
            matches!(error, RenderError::InvalidField { .. }),
            "{pointer}: {error}"
        );
    }
}

#[test]
fn documents_that_are_not_mappings_are_refused() {
    let docs = vec![json!([1, 2])];
    assert!(matches!(error_of(&docs), RenderError::NotAMapping { .. }));
}
