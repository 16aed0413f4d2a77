//! The treasuremap site against Deckhand's own rendering of it: `fixtures/treasuremap_deckhand_digests.txt`
//! holds, for each concrete document Deckhand's engine rendered (in clear), the SHA-256 of its data as
//! compact JSON with sorted keys (written by `bench/deckhand/render_with_deckhand.py --cleartext
//! --digests`). Every document must be there with the same data, but those Deckhand changes through
//! mappings it shares between a substitution's source and destination (the crate's README, "Where it
//! differs").

use std::collections::BTreeMap;

use plinth_deckhand::{read_sources, render, secrets, Options, Tree};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::treasuremap::site_texts;

/// Deckhand changes these through shared mappings: `ucp-drydock` writes into what it took from
/// `ucp_endpoints`, the keystone chart into what it took from `ucp_service_accounts`, and the maas charts
/// take the changed `ucp_endpoints`.
const SHARED_MAPPINGS: &[&str] = &[
    "armada/Chart/v1|type|ucp-maas",
    "armada/Chart/v1|type|ucp-maas-scaled",
    "pegleg/AccountCatalogue/v1|site|ucp_service_accounts",
    "pegleg/EndpointCatalogue/v1|site|ucp_endpoints",
];

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let ordered: BTreeMap<&String, Value> =
                map.iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(
                ordered
                    .into_iter()
                    .map(|(k, v)| (k.clone(), v))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn digest(value: &Value) -> String {
    let text = sorted(value).to_string();
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A fixture's lines, `schema|layer|name digest`, by document.
fn fixture(text: &str) -> BTreeMap<&str, &str> {
    text.lines().filter_map(|l| l.rsplit_once(' ')).collect()
}

/// The treasuremap site rendered in clear: `of` each document's data, by `schema|layer|name`.
fn rendered_site(of: impl Fn(&Tree) -> String) -> BTreeMap<String, String> {
    let texts = site_texts();
    let sources: Vec<(&str, &str)> = texts
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let docs = read_sources(&sources).unwrap();
    let r = render(
        &docs,
        &Options {
            cleartext_secrets: true,
        },
    )
    .unwrap();
    let mut ours = BTreeMap::new();
    for d in &r.documents {
        let v = &d.value;
        let key = format!(
            "{}|{}|{}",
            v["schema"].as_str().unwrap_or(""),
            v["metadata"]["layeringDefinition"]["layer"]
                .as_str()
                .unwrap_or(""),
            v["metadata"]["name"].as_str().unwrap_or("")
        );
        ours.insert(key, of(&v["data"]));
    }
    ours
}

/// Every document Deckhand gave is there, and the same but for those it changes through shared mappings.
fn assert_same_but_shared_mappings(
    ours: &BTreeMap<String, String>,
    expected: &BTreeMap<&str, &str>,
) {
    assert_eq!(expected.len(), 404);
    assert_eq!(
        ours.keys().map(String::as_str).collect::<Vec<_>>(),
        expected.keys().copied().collect::<Vec<_>>(),
        "the same concrete documents"
    );
    let differing: Vec<&str> = expected
        .iter()
        .filter(|(k, d)| ours.get(**k).map(String::as_str) != Some(**d))
        .map(|(k, _)| *k)
        .collect();
    assert_eq!(differing, SHARED_MAPPINGS);
}

#[test]
fn treasuremap_matches_deckhands_own_rendering() {
    let expected = fixture(include_str!("fixtures/treasuremap_deckhand_digests.txt"));
    let ours = rendered_site(|data| digest(&data.to_value()));
    assert_same_but_shared_mappings(&ours, &expected);
}

/// `fixtures/treasuremap_deckhand_redactions.txt` holds what Deckhand puts in place of each rendered
/// document's data when it redacts it (`DocumentDict.redact`, written by `render_with_deckhand.py
/// --cleartext --redaction-digests`): certificates, keys and whole charts, long texts with escapes.
#[test]
fn treasuremap_redacts_as_deckhands_own_redaction() {
    let expected = fixture(include_str!("fixtures/treasuremap_deckhand_redactions.txt"));
    let ours = rendered_site(|data| {
        secrets::redact(data)
            .as_str()
            .unwrap_or_default()
            .to_string()
    });
    assert_same_but_shared_mappings(&ours, &expected);
}
