//! The public API: reading texts, origins, errors naming documents, `find`.

use plinth_deckhand::{read_sources, read_sources_noting, render, Options, Origin, RenderError};
use serde_json::json;

const POLICY: &str = "schema: deckhand/LayeringPolicy/v1\nmetadata: {schema: metadata/Control/v1, name: lp}\ndata: {layerOrder: [global, site]}\n";

#[test]
fn every_document_of_every_text_with_its_origin() {
    let yaml = format!("---\n{POLICY}---\n# a comment\nschema: a/B/v1\nmetadata: {{name: b, layeringDefinition: {{layer: global}}}}\ndata: {{on: yes}}\n---\n");
    let json = r#"{"schema": "a/C/v1", "metadata": {"name": "c"}, "data": [1]}"#;
    let docs = read_sources(&[("site.yaml", &yaml), ("c.json", json)]).unwrap();
    assert_eq!(docs.len(), 3, "the empty document at the end is not one");
    assert_eq!(
        docs[1].origin,
        Origin {
            file: "site.yaml".into(),
            index: 2,
            line: 5
        }
    );
    assert_eq!(docs[1].origin.to_string(), "site.yaml document 2 (line 5)");
    assert_eq!(
        docs[1].value["data"],
        json!({"on": true}),
        "YAML 1.1: `yes` is true"
    );
    assert_eq!(docs[2].origin.to_string(), "c.json document 1 (line 1)");
    let r = render(&docs, &Options::default()).unwrap();
    assert_eq!(r.documents.len(), 3);
    assert_eq!(r.find("a/").count(), 2);
    assert_eq!(r.find("a/C/v1").next().unwrap().value["data"], json!([1]));
    assert_eq!(
        r.find("deckhand/LayeringPolicy").next().unwrap().value["data"]["layerOrder"],
        json!(["global", "site"])
    );
}

#[test]
fn repeated_keys_are_noted_and_bad_yaml_is_an_error_naming_the_text() {
    let (docs, notes) = read_sources_noting(&[("r.yaml", "a: 1\na: 2\n")]).unwrap();
    assert_eq!(docs[0].value, json!({"a": 2}));
    assert!(
        notes.iter().any(|n| n.starts_with("r.yaml: line 2")),
        "{notes:?}"
    );
    let error = read_sources(&[("bad.yaml", "a: [1\n")]).unwrap_err();
    assert!(matches!(error, RenderError::Syntax { .. }));
    assert!(
        error
            .to_string()
            .starts_with("bad.yaml: invalid YAML at line"),
        "{error}"
    );
}

#[test]
fn errors_name_schema_name_layer_file_index_line_and_path() {
    let text = format!("---\n{POLICY}---\nschema: a/B/v1\nmetadata:\n  name: base\n  labels: {{k: v}}\n  layeringDefinition: {{layer: global}}\ndata: {{}}\n---\nschema: a/B/v1\nmetadata:\n  name: child\n  layeringDefinition:\n    layer: site\n    parentSelector: {{k: v}}\n    actions: [{{method: merge, path: .missing.key}}]\ndata: {{}}\n");
    let docs = read_sources(&[("site.yaml", &text)]).unwrap();
    let error = render(&docs, &Options::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "[a/B/v1] child (site layer, site.yaml document 3 (line 12)): layering action merge .missing.key: the child's \
         data has nothing at this path (parent [a/B/v1] base (global layer, site.yaml document 2 (line 5)))"
    );
}

/// Each rendered document says where its data came from: its own document, the parent it was layered
/// onto or replaced (and that parent's own story), a parent without actions, the documents values were
/// substituted from. The words are the same whether the documents were borrowed or taken.
#[test]
fn provenance_tells_each_documents_story() {
    let site = format!(
        "{POLICY}---
schema: a/Pw/v1
metadata: {{schema: metadata/Document/v1, name: pw, layeringDefinition: {{layer: site}}}}
data: s3cret
---
schema: a/K/v1
metadata:
  schema: metadata/Document/v1
  name: base
  labels: {{role: base}}
  layeringDefinition: {{abstract: false, layer: global}}
data: {{a: 1}}
---
schema: a/K/v1
metadata:
  schema: metadata/Document/v1
  name: base
  replacement: true
  layeringDefinition: {{layer: site, parentSelector: {{role: base}}, actions: [{{method: merge, path: .}}]}}
  substitutions:
    - {{src: {{schema: a/Pw/v1, name: pw, path: .}}, dest: {{path: .pw}}}}
data: {{b: 2}}
---
schema: a/K/v1
metadata:
  schema: metadata/Document/v1
  name: lazy
  layeringDefinition: {{layer: site, parentSelector: {{role: base}}}}
data: {{c: 3}}
"
    );
    let docs = read_sources(&[("s.yaml", &site)]).unwrap();
    let words = |r: &plinth_deckhand::Rendering, name: &str| {
        r.documents
            .iter()
            .find(|d| d.value["metadata"]["name"] == name && d.value["schema"] != "a/Pw/v1")
            .map(|d| d.provenance.to_string())
            .unwrap_or_default()
    };
    for owned in [false, true] {
        let options = Options::default();
        let r = if owned {
            plinth_deckhand::render_owned(docs.clone(), &options).unwrap()
        } else {
            render(&docs, &options).unwrap()
        };
        assert_eq!(
            words(&r, "base"),
            "s.yaml document 4 (line 16) (site layer; merge .), replacing s.yaml document 3 (line 8) \
             (global layer); substituted from [a/Pw/v1] pw",
            "owned: {owned}"
        );
        assert_eq!(
            words(&r, "lazy"),
            "s.yaml document 5 (line 26) (site layer; no actions: its own data, not its parent's [a/K/v1] \
             base (global layer, s.yaml document 3 (line 8)))",
            "owned: {owned}"
        );
        let pw = r.find("a/Pw/v1").next().unwrap();
        assert_eq!(
            pw.provenance.to_string(),
            "s.yaml document 2 (line 4) (site layer)"
        );
    }
}
