//! Deckhand's layering cases (`test_document_layering.py`), each test named after Deckhand's.

use serde_json::{json, Value};

use crate::support::{check_layers, check_yaml_layers, rendered, Factory};

fn two_layers(mapping: Value) -> Vec<Value> {
    Factory::new(&[1, 1]).concrete_site().gen(mapping)
}

fn site_merge_global(global: Value, site: Value, method: &str, path: &str) -> Vec<Value> {
    two_layers(json!({
        "_GLOBAL_DATA_1_": {"data": global},
        "_SITE_DATA_1_": {"data": site},
        "_SITE_ACTIONS_1_": {"actions": [{"method": method, "path": path}]},
    }))
}

#[test]
fn layering_2_layers_default_scenario() {
    let docs = site_merge_global(
        json!({"a": {"x": 1, "y": 2}}),
        json!({"b": 4}),
        "merge",
        ".",
    );
    check_layers(&docs, &[json!({"a": {"x": 1, "y": 2}, "b": 4})], &[], &[]);
}

#[test]
fn layering_default_scenario_merge_with_numeric_in_path() {
    let cases = [
        (
            json!({"a": [{"x": 1, "y": 2}]}),
            json!({"a": [{"z": 3}]}),
            ".data.a[0]",
            json!({"a": [{"x": 1, "y": 2, "z": 3}]}),
        ),
        (
            json!({"a": [{"x": 1, "y": 2}, {"z": 3}]}),
            json!({"a": [{}]}),
            ".data.a[0]",
            json!({"a": [{"x": 1, "y": 2}, {"z": 3}]}),
        ),
        (
            json!({"a": [{"x": 1, "y": 2}]}),
            json!({"a": [{"x": 3}]}),
            ".data.a[0]",
            json!({"a": [{"x": 3, "y": 2}]}),
        ),
        (
            json!({"a": ["test", {"x": 1, "y": 2}]}),
            json!({"a": [{}, {"z": 3}]}),
            ".data.a[1]",
            json!({"a": ["test", {"x": 1, "y": 2, "z": 3}]}),
        ),
        (
            json!({"a": ["test", {"x": {"b": 5}}]}),
            json!({"a": [{}, {"x": {"a": 8}}]}),
            ".data.a[1].x",
            json!({"a": ["test", {"x": {"a": 8, "b": 5}}]}),
        ),
    ];
    for (global, site, path, expected) in cases {
        check_layers(
            &site_merge_global(global, site, "merge", path),
            &[expected],
            &[],
            &[],
        );
    }
}

#[test]
fn layering_default_scenario_replace_with_numeric_in_path() {
    let cases = [
        (
            json!({"a": [{"x": 1, "y": 2}]}),
            json!({"a": [{"z": 3}]}),
            ".data.a[0]",
            json!({"a": [{"z": 3}]}),
        ),
        (
            json!({"a": [{"x": 1}, {"y": 2}]}),
            json!({"a": [{}, {"y": 3}]}),
            ".data.a[1]",
            json!({"a": [{"x": 1}, {"y": 3}]}),
        ),
        (
            json!({"a": [{}, {"x": 1, "y": 2}]}),
            json!({"a": [{}, {"y": 3}]}),
            ".data.a[1].y",
            json!({"a": [{}, {"x": 1, "y": 3}]}),
        ),
    ];
    for (global, site, path, expected) in cases {
        check_layers(
            &site_merge_global(global, site, "replace", path),
            &[expected],
            &[],
            &[],
        );
    }
}

#[test]
fn layering_default_scenario_delete_with_numeric_in_path() {
    let cases = [
        (
            json!({"a": [{"x": 1, "y": 2}]}),
            ".data.a[0]",
            json!({"a": []}),
        ),
        (
            json!({"a": [{"x": 1}, {"y": 2}]}),
            ".data.a[0]",
            json!({"a": [{"y": 2}]}),
        ),
        (
            json!({"a": [{"x": 1, "y": 2}]}),
            ".data.a[0].x",
            json!({"a": [{"y": 2}]}),
        ),
    ];
    for (global, path, expected) in cases {
        check_layers(
            &site_merge_global(global, json!({}), "delete", path),
            &[expected],
            &[],
            &[],
        );
    }
}

#[test]
fn layering_default_scenario_multi_parentselector() {
    let mut docs = site_merge_global(
        json!({"a": {"x": 1, "y": 2}}),
        json!({"b": 4}),
        "merge",
        ".",
    );
    let labels = json!({"foo": "bar", "baz": "qux"});
    docs[1]["metadata"]["labels"] = labels.clone();
    for selector in [labels, json!({"foo": "bar"}), json!({"baz": "qux"})] {
        docs[2]["metadata"]["layeringDefinition"]["parentSelector"] = selector;
        check_layers(&docs, &[json!({"a": {"x": 1, "y": 2}, "b": 4})], &[], &[]);
    }
}

#[test]
fn layering_default_scenario_multi_parentselector_no_match() {
    let mut docs = two_layers(json!({
        "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}}},
        "_SITE_DATA_1_": {},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
    }));
    docs[1]["metadata"]["labels"] = json!({"a": "b", "c": "d"});
    for selector in [
        json!({"w": "x", "y": "z"}),
        json!({"a": "b", "c": "d", "e": "f"}),
        json!({"a": "x", "c": "y"}),
        json!({"x": "b", "y": "d"}),
    ] {
        docs[2]["metadata"]["layeringDefinition"]["parentSelector"] = selector;
        check_layers(&docs, &[json!({})], &[], &[]);
        let r = rendered(&docs).unwrap();
        assert!(
            r.warnings
                .iter()
                .any(|w| w.message.contains("matches no document")),
            "{:?}",
            r.warnings
        );
    }
}

#[test]
fn layering_method_delete() {
    let expected = [json!({}), json!({"c": 9}), json!({"a": {"x": 1, "y": 2}})];
    for (path, expected) in [".", ".a", ".c"].iter().zip(expected) {
        let docs = site_merge_global(
            json!({"a": {"x": 1, "y": 2}, "c": 9}),
            json!({"a": {"x": 7, "z": 3}, "b": 4}),
            "delete",
            path,
        );
        check_layers(&docs, &[expected], &[], &[]);
    }
}

#[test]
fn layering_method_merge() {
    let expected = [
        json!({"a": {"x": 7, "y": 2, "z": 3}, "b": 4, "c": 9}),
        json!({"a": {"x": 7, "y": 2, "z": 3}, "c": 9}),
        json!({"a": {"x": 1, "y": 2}, "b": 4, "c": 9}),
    ];
    for (path, expected) in [".", ".a", ".b"].iter().zip(expected) {
        let docs = site_merge_global(
            json!({"a": {"x": 1, "y": 2}, "c": 9}),
            json!({"a": {"x": 7, "z": 3}, "b": 4}),
            "merge",
            path,
        );
        check_layers(&docs, &[expected], &[], &[]);
    }
}

#[test]
fn layering_method_replace() {
    let expected = [
        json!({"a": {"x": 7, "z": 3}, "b": 4}),
        json!({"a": {"x": 7, "z": 3}, "c": 9}),
        json!({"a": {"x": 1, "y": 2}, "b": 4, "c": 9}),
    ];
    for (path, expected) in [".", ".a", ".b"].iter().zip(expected) {
        let docs = site_merge_global(
            json!({"a": {"x": 1, "y": 2}, "c": 9}),
            json!({"a": {"x": 7, "z": 3}, "b": 4}),
            "replace",
            path,
        );
        check_layers(&docs, &[expected], &[], &[]);
    }
}

#[test]
fn layering_with_primitives() {
    for (global, site) in [
        (json!("global"), json!("site")),
        (json!(2), json!(1)),
        (json!(false), json!("a")),
    ] {
        let docs = site_merge_global(global, site.clone(), "merge", ".");
        check_layers(&docs, &[site], &[], &[]);
    }
}

#[test]
fn layering_with_incompatible_types() {
    let docs = site_merge_global(json!({"foo": "bar"}), json!("site"), "merge", ".");
    check_layers(&docs, &[json!("site")], &[], &[]);
}

#[test]
fn layering_document_with_parent_but_no_actions_skips_layering() {
    let mut docs = two_layers(json!({"_SITE_DATA_1_": {"data": "should not change"}}));
    docs[2]["metadata"]["layeringDefinition"]["actions"] = json!([]);
    check_layers(&docs, &[json!("should not change")], &[], &[]);
}

#[test]
fn layering_site_and_global_concrete() {
    let mut factory = Factory::new(&[1, 1]).concrete_site();
    factory.global_abstract = false;
    let docs = factory.gen(json!({
        "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}, "c": 9}},
        "_SITE_DATA_1_": {"data": {"a": {"x": 7, "z": 3}, "b": 4}},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "delete", "path": ".a"}]},
    }));
    check_layers(
        &docs,
        &[json!({"c": 9})],
        &[],
        &[json!({"a": {"x": 1, "y": 2}, "c": 9})],
    );
}

#[test]
fn layering_site_and_global_abstract() {
    let docs = Factory::new(&[1, 1]).gen(json!({
        "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}, "c": 9}},
        "_SITE_DATA_1_": {"data": {"a": {"x": 7, "z": 3}, "b": 4}},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "delete", "path": ".a"}]},
    }));
    check_layers(&docs, &[], &[], &[]);
    // Only the layering policy is left.
    assert_eq!(rendered(&docs).unwrap().documents.len(), 1);
}

#[test]
fn layering_2_layers_2_sites_alternate_scenario() {
    let docs = Factory::new(&[1, 2]).concrete_site().gen(json!({
        "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}}},
        "_SITE_DATA_1_": {"data": {"b": 4}},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
        "_SITE_DATA_2_": {"data": {"b": 3}},
        "_SITE_ACTIONS_2_": {"actions": [{"method": "merge", "path": "."},
                                         {"method": "delete", "path": ".a"},
                                         {"method": "merge", "path": ".b"}]},
    }));
    check_layers(
        &docs,
        &[json!({"a": {"x": 1, "y": 2}, "b": 4}), json!({"b": 3})],
        &[],
        &[],
    );
}

#[test]
fn layering_two_parents_one_child_each_2() {
    let mut factory = Factory::new(&[2, 2]).concrete_site();
    factory.site_parent_selectors = Some(vec![
        json!({"global": "global1"}),
        json!({"global": "global2"}),
    ]);
    let docs = factory.gen(json!({
        "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}}},
        "_GLOBAL_DATA_2_": {"data": {"b": {"f": -9, "g": 71}}},
        "_SITE_DATA_1_": {"data": {"b": 4}},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
        "_SITE_DATA_2_": {"data": {"c": 3}},
        "_SITE_ACTIONS_2_": {"actions": [{"method": "merge", "path": "."}, {"method": "delete", "path": ".c"}]},
    }));
    check_layers(
        &docs,
        &[
            json!({"b": {"f": -9, "g": 71}}),
            json!({"a": {"x": 1, "y": 2}, "b": 4}),
        ],
        &[],
        &[],
    );
}

fn three_layers(mapping: Value) -> Vec<Value> {
    Factory::new(&[1, 1, 1]).concrete_site().gen(mapping)
}

#[test]
fn layering_3_layers_default_scenario() {
    let docs = three_layers(json!({
        "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}}},
        "_REGION_DATA_1_": {"data": {"a": {"z": 3}}},
        "_SITE_DATA_1_": {"data": {"b": 4}},
        "_REGION_ACTIONS_1_": {"actions": [{"method": "replace", "path": ".a"}]},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
    }));
    check_layers(&docs, &[json!({"a": {"z": 3}, "b": 4})], &[], &[]);
}

#[test]
fn layering_delete_everything() {
    let docs = three_layers(json!({
        "_GLOBAL_DATA_1_": {"data": {"a": {"x": 3, "y": 4}, "b": 99}},
        "_REGION_DATA_1_": {"data": {"a": {"x": 1, "y": 2}}},
        "_SITE_DATA_1_": {"data": {"b": 4}},
        "_REGION_ACTIONS_1_": {"actions": [{"path": ".a", "method": "delete"}]},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "delete", "path": ".b"}]},
    }));
    check_layers(&docs, &[json!({})], &[], &[]);
}

#[test]
fn layering_double_merge() {
    let docs = three_layers(json!({
        "_GLOBAL_DATA_1_": {"data": {"c": {"e": 55}}},
        "_REGION_DATA_1_": {"data": {"a": {"x": 1, "y": 2}, "b": {"v": 3, "w": 4}}},
        "_SITE_DATA_1_": {"data": {"a": {"z": 5}}},
        "_REGION_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
    }));
    check_layers(
        &docs,
        &[json!({"a": {"x": 1, "y": 2, "z": 5}, "b": {"v": 3, "w": 4}, "c": {"e": 55}})],
        &[],
        &[],
    );
}

#[test]
fn layering_site_and_region_concrete() {
    let mut factory = Factory::new(&[1, 1, 1]).concrete_site();
    factory.region_abstract = false;
    let docs = factory.gen(json!({
        "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}}},
        "_REGION_DATA_1_": {"data": {"a": {"z": 3}, "b": 5, "c": 11}},
        "_SITE_DATA_1_": {"data": {"b": 4}},
        "_REGION_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}, {"method": "delete", "path": ".c"}]},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "replace", "path": ".b"}]},
    }));
    check_layers(
        &docs,
        &[json!({"a": {"x": 1, "y": 2, "z": 3}, "b": 4})],
        &[json!({"a": {"x": 1, "y": 2, "z": 3}, "b": 5})],
        &[],
    );
}

#[test]
fn layering_multiple_replace_4() {
    let docs = three_layers(json!({
        "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}, "b": {"v": 3, "w": 4}, "c": [123]}},
        "_REGION_DATA_1_": {"data": {"a": {"z": 5}, "b": -2, "c": "_"}},
        "_SITE_DATA_1_": {"data": {"b": 4}},
        "_REGION_ACTIONS_1_": {"actions": [{"path": ".a", "method": "replace"},
                                           {"path": ".b", "method": "replace"},
                                           {"path": ".c", "method": "replace"}]},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
    }));
    check_layers(&docs, &[json!({"a": {"z": 5}, "b": 4, "c": "_"})], &[], &[]);
}

#[test]
fn layering_multiple_delete_replace() {
    let docs = three_layers(json!({
        "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}, "b": {"v": 3, "w": 4}}},
        "_REGION_DATA_1_": {"data": {"b": {"z": 3}}},
        "_SITE_DATA_1_": {"data": {"b": 4}},
        "_REGION_ACTIONS_1_": {"actions": [{"path": ".a", "method": "delete"},
                                           {"path": ".b", "method": "replace"},
                                           {"path": ".b", "method": "delete"}]},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
    }));
    check_layers(&docs, &[json!({"b": 4})], &[], &[]);
}

#[test]
fn layering_using_grandparent_as_parent() {
    let text = "
metadata:
  labels: {name: kubernetes-etcd-global}
  layeringDefinition: {abstract: false, layer: global}
  name: kubernetes-etcd-global
  schema: metadata/Document/v1
schema: armada/Chart/v1
data: {chart_name: global-etcd}
---
metadata:
  layeringDefinition: {abstract: false, layer: region, actions: [{method: merge, path: .}]}
  name: kubernetes-etcd-region
  schema: metadata/Document/v1
schema: armada/Chart/v1
data: {}
---
metadata:
  layeringDefinition:
    abstract: false
    layer: site
    parentSelector: {name: kubernetes-etcd-global}
    actions: [{method: merge, path: .}]
  name: kubernetes-etcd
  schema: metadata/Document/v1
schema: armada/Chart/v1
data: {}
---
schema: deckhand/LayeringPolicy/v1
metadata: {schema: metadata/Control/v1, name: layering-policy}
data: {layerOrder: [global, region, site]}
";
    check_yaml_layers(
        text,
        &[json!({"chart_name": "global-etcd"})],
        &[json!({})],
        &[json!({"chart_name": "global-etcd"})],
    );
}

/// Paths as Deckhand reads them in actions: `.data.a`, `$.a`, `a` and `.a` are the same path.
#[test]
fn layering_paths_in_every_form() {
    for path in [".a", "a", "$.a", ".data.a", "$.data.a"] {
        let docs = site_merge_global(
            json!({"a": {"x": 1}, "c": 9}),
            json!({"a": {"y": 2}}),
            "merge",
            path,
        );
        check_layers(&docs, &[json!({"a": {"x": 1, "y": 2}, "c": 9})], &[], &[]);
    }
    for path in [".data", "$.data", "."] {
        let docs = site_merge_global(json!({"a": {"x": 1}}), json!({"b": 2}), "replace", path);
        check_layers(&docs, &[json!({"b": 2})], &[], &[]);
    }
}

/// The nearest layer's match is the parent: a global and a region document both match.
#[test]
fn layering_nearest_parent_wins() {
    let mut docs = three_layers(json!({
        "_GLOBAL_DATA_1_": {"data": {"from": "global"}},
        "_REGION_DATA_1_": {"data": {"from": "region"}},
        "_SITE_DATA_1_": {"data": {"b": 4}},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
    }));
    docs[1]["metadata"]["labels"] = json!({"k": "v"});
    docs[2]["metadata"]["labels"] = json!({"k": "v"});
    docs[2]["metadata"]["layeringDefinition"]["parentSelector"] = json!({"k": "v"});
    docs[2]["metadata"]["layeringDefinition"]["actions"] =
        json!([{"method": "replace", "path": "."}]);
    docs[3]["metadata"]["layeringDefinition"]["parentSelector"] = json!({"k": "v"});
    check_layers(&docs, &[json!({"from": "region", "b": 4})], &[], &[]);
}

/// Deckhand's delete removes the first value equal to the one at the path, searching from the top.
#[test]
fn layering_delete_removes_the_first_equal_value() {
    let docs = site_merge_global(
        json!({"a": 1, "b": 1, "c": {"d": [5, 1]}}),
        json!({}),
        "delete",
        ".b",
    );
    check_layers(&docs, &[json!({"b": 1, "c": {"d": [5, 1]}})], &[], &[]);
    let docs = site_merge_global(
        json!({"c": {"d": [5, 1]}, "e": 1}),
        json!({}),
        "delete",
        ".e",
    );
    check_layers(&docs, &[json!({"c": {"d": [5]}, "e": 1})], &[], &[]);
}

/// A leading `.data` is dropped from an action's path even when it starts a longer key.
#[test]
fn layering_path_starting_with_data_is_cut_as_deckhand_cuts_it() {
    let docs = site_merge_global(
        json!({"database": 1, "base": 2}),
        json!({}),
        "delete",
        ".database",
    );
    check_layers(&docs, &[json!({"database": 1})], &[], &[]);
}
