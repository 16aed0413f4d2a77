//! The whole treasuremap v1.9 site (global, type and site folders) rendered as it is.

use std::path::{Path, PathBuf};

use plinth_deckhand::{read_sources, render, Options, Rendering};
use serde_json::Value;

/// The corpus beside the checkout.
fn site_root() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/corpus/treasuremap-v1.9"
    ))
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
}

/// Every YAML file of the site, as (name relative to the site, text).
pub fn site_texts() -> Vec<(String, String)> {
    let root = site_root();
    let mut files = Vec::new();
    yaml_files(&root, &mut files);
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let name = p.strip_prefix(&root).unwrap().display().to_string();
            (name, text)
        })
        .collect()
}

fn rendered(cleartext: bool) -> Rendering {
    let texts = site_texts();
    let sources: Vec<(&str, &str)> = texts
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let docs = read_sources(&sources).unwrap();
    render(
        &docs,
        &Options {
            cleartext_secrets: cleartext,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn treasuremap_renders() {
    let r = rendered(false);
    eprintln!(
        "{} documents, {} warnings",
        r.documents.len(),
        r.warnings.len()
    );
    for w in &r.warnings {
        eprintln!("{}: {}", w.document, w.message);
    }
    let mut schemas = std::collections::BTreeMap::new();
    for d in &r.documents {
        *schemas
            .entry(d.value["schema"].as_str().unwrap_or("").to_string())
            .or_insert(0) += 1;
    }
    eprintln!("{schemas:#?}");
    let _ = Value::Null;
}
