//! What the cases share: Deckhand's test document factory (a layering policy of one to three layers and
//! documents of `example/Kind/v1` per layer, each site document selecting the first document of the layer
//! above), rendering in both orders and comparing each layer's data.

use plinth_deckhand::{read_sources, render, Document, Options, Origin, RenderError, Rendering};
use serde_json::{json, Value};

/// Deckhand's `DocumentFactory`: `per_layer[i]` documents in layer `i` of `global`, (`region`,) `site`.
pub struct Factory {
    per_layer: Vec<usize>,
    pub site_abstract: bool,
    pub region_abstract: bool,
    pub global_abstract: bool,
    pub site_parent_selectors: Option<Vec<Value>>,
}

impl Factory {
    pub fn new(per_layer: &[usize]) -> Factory {
        Factory {
            per_layer: per_layer.to_vec(),
            site_abstract: true,
            region_abstract: true,
            global_abstract: true,
            site_parent_selectors: None,
        }
    }

    /// Concrete site documents.
    pub fn concrete_site(mut self) -> Factory {
        self.site_abstract = false;
        self
    }

    /// The documents, from a mapping of `_SITE_DATA_1_: {data: ...}`, `_SITE_ACTIONS_1_: {actions: ...}`,
    /// `_SITE_SUBSTITUTIONS_1_: [...]`, `_SITE_NAME_1_`, `_SITE_SCHEMA_1_` keys.
    pub fn gen(&self, mapping: Value) -> Vec<Value> {
        let layers: &[&str] = match self.per_layer.len() {
            1 => &["global"],
            2 => &["global", "site"],
            _ => &["global", "region", "site"],
        };
        let mut out = vec![json!({
            "schema": "deckhand/LayeringPolicy/v1",
            "metadata": {"schema": "metadata/Control/v1", "name": "layering-policy",
                         "layeringDefinition": {"abstract": false, "layer": layers[0]}},
            "data": {"layerOrder": layers},
        })];
        for (idx, layer) in layers.iter().enumerate() {
            for count in 1..=self.per_layer[idx] {
                let key = |what: &str| format!("_{}_{what}_{count}_", layer.to_uppercase());
                let name = mapping
                    .get(key("NAME"))
                    .cloned()
                    .unwrap_or_else(|| json!(format!("{layer}{count}")));
                let schema = mapping
                    .get(key("SCHEMA"))
                    .cloned()
                    .unwrap_or_else(|| json!("example/Kind/v1"));
                let is_abstract = match *layer {
                    "site" => self.site_abstract,
                    "region" => self.region_abstract,
                    _ => self.global_abstract,
                };
                let mut doc = json!({
                    "schema": schema,
                    "metadata": {
                        "schema": "metadata/Document/v1", "name": name, "storagePolicy": "cleartext",
                        "labels": {*layer: format!("{layer}{count}")},
                        "layeringDefinition": {"abstract": is_abstract, "layer": layer},
                    },
                    "data": {},
                });
                let selector = match (&self.site_parent_selectors, *layer) {
                    (Some(selectors), "site") => Some(selectors[count - 1].clone()),
                    _ if idx > 0 => Some(out[idx]["metadata"]["labels"].clone()),
                    _ => None,
                };
                if let Some(selector) = selector {
                    doc["metadata"]["layeringDefinition"]["parentSelector"] = selector;
                }
                if let Some(data) = mapping.get(key("DATA")).and_then(|d| d.get("data")) {
                    doc["data"] = data.clone();
                }
                if let Some(actions) = mapping.get(key("ACTIONS")).and_then(|d| d.get("actions")) {
                    doc["metadata"]["layeringDefinition"]["actions"] = actions.clone();
                }
                if let Some(subs) = mapping.get(key("SUBSTITUTIONS")) {
                    doc["metadata"]["substitutions"] = subs.clone();
                }
                out.push(doc);
            }
        }
        out
    }
}

/// Values as documents (origin: their position).
pub fn docs(values: &[Value]) -> Vec<Document> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            Document::new(
                v.clone(),
                Origin {
                    file: "case.yaml".into(),
                    index: i + 1,
                    line: 1,
                },
            )
        })
        .collect()
}

/// A YAML stream as documents.
pub fn yaml(text: &str) -> Vec<Document> {
    read_sources(&[("case.yaml", text)]).unwrap()
}

pub fn clear() -> Options {
    Options {
        cleartext_secrets: true,
    }
}

/// Renders in clear.
pub fn rendered(values: &[Value]) -> Result<Rendering, RenderError> {
    render(&docs(values), &clear())
}

/// The rendered data of each layer's documents (the layering policy left out).
fn by_layer(r: &Rendering, layer: &str) -> Vec<Value> {
    r.documents
        .iter()
        .filter(|d| {
            !d.value["schema"]
                .as_str()
                .unwrap_or("")
                .starts_with("deckhand/LayeringPolicy")
        })
        .filter(|d| d.value["metadata"]["layeringDefinition"]["layer"] == layer)
        .map(|d| d.value["data"].to_value())
        .collect()
}

fn same_multiset(mut actual: Vec<Value>, expected: &[Value], what: &str) {
    assert_eq!(
        actual.len(),
        expected.len(),
        "{what}: {actual:#?} vs {expected:#?}"
    );
    for e in expected {
        let at = actual
            .iter()
            .position(|a| a == e)
            .unwrap_or_else(|| panic!("{what}: {e} not in {actual:#?}"));
        actual.remove(at);
    }
}

/// Deckhand's `_test_layering`: renders the documents as given and reversed; each layer's concrete data
/// must be the expected ones (in any order).
pub fn check_layers(values: &[Value], site: &[Value], region: &[Value], global: &[Value]) {
    let mut reversed = values.to_vec();
    reversed.reverse();
    for (order, values) in [("given order", values.to_vec()), ("reversed", reversed)] {
        let r = rendered(&values).unwrap_or_else(|e| panic!("{order}: {e}"));
        same_multiset(by_layer(&r, "site"), site, &format!("site, {order}"));
        same_multiset(by_layer(&r, "region"), region, &format!("region, {order}"));
        same_multiset(by_layer(&r, "global"), global, &format!("global, {order}"));
    }
}

/// A YAML stream's layers, as [`check_layers`].
pub fn check_yaml_layers(text: &str, site: &[Value], region: &[Value], global: &[Value]) {
    let values: Vec<Value> = yaml(text).into_iter().map(|d| d.value.to_value()).collect();
    check_layers(&values, site, region, global);
}

/// The rendering's error, in both orders (the same kind of error).
pub fn error_of(values: &[Value]) -> RenderError {
    let error = rendered(values).expect_err("an error");
    let mut reversed = values.to_vec();
    reversed.reverse();
    let again = rendered(&reversed).expect_err("an error in reverse order too");
    assert_eq!(
        std::mem::discriminant(&error),
        std::mem::discriminant(&again),
        "{error} / {again}"
    );
    error
}

/// Deckhand's `DocumentSecretFactory`: a secret document of `deckhand/{kind}/v1` in the site layer.
pub fn secret(kind: &str, storage_policy: &str, data: Value, name: &str) -> Value {
    json!({
        "schema": format!("deckhand/{kind}/v1"),
        "metadata": {"schema": "metadata/Document/v1", "name": name, "storagePolicy": storage_policy,
                     "layeringDefinition": {"abstract": false, "layer": "site"}},
        "data": data,
    })
}

/// As Deckhand's `_test_layering` with `strict=False`: each expected data is among the layer's.
pub fn check_layers_include(values: &[Value], site: &[Value], global: &[Value]) {
    let mut reversed = values.to_vec();
    reversed.reverse();
    for (order, values) in [("given order", values.to_vec()), ("reversed", reversed)] {
        let r = rendered(&values).unwrap_or_else(|e| panic!("{order}: {e}"));
        for (layer, expected) in [("site", site), ("global", global)] {
            let actual = by_layer(&r, layer);
            for e in expected {
                assert!(
                    actual.contains(e),
                    "{layer}, {order}: {e} not in {actual:#?}"
                );
            }
        }
    }
}

/// The data of the one global document substituted from `sources` (Deckhand's `_test_doc_substitution`).
pub fn substituted(mapping: Value, sources: &[Value]) -> Result<Value, RenderError> {
    let mut factory = Factory::new(&[1, 0]);
    factory.global_abstract = false;
    let mut values = factory.gen(mapping);
    values.extend(sources.iter().cloned());
    let r = rendered(&values)?;
    Ok(r.documents
        .iter()
        .find(|d| d.value["metadata"]["name"] == "global1")
        .map(|d| d.value["data"].to_value())
        .unwrap_or(Value::Null))
}
