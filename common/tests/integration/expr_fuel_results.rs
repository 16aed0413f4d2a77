//! Each of Fuel's 206 `yaql_exp`, evaluated for node 1 (a controller) of a 1,000-node Fuel
//! cluster whose last deployment had 900 nodes, gives the result recorded in
//! `tests/data/fuel_yaql_results.json`; `bench/fuel_yaql.py --check` compares the same record
//! with what Python YAQL and Nailgun's helpers give on the same data (`scripts/test.sh` runs it
//! when Python YAQL can be installed).
//!
//! Large results are recorded as the SHA-256 of their canonical JSON (keys sorted, no spaces);
//! YAML and JSON text (`toYaml()`, `toJson()`) as that of the data it reads back to, since the
//! writers lay out the same data differently (spaces, quotes, line breaks). Set `PLINTH_RECORD_FUEL_RESULTS=1` to write the record anew,
//! and `PLINTH_FUEL_CONTEXT=<file>` to write the data (`{"new": $, "old": $ before}`) for Python.

use plinth_common::expr::{Context, Engine, Expression};
use plinth_common::json::Json;
use serde_json::{json, Value as J};
use sha2::{Digest, Sha256};

use crate::support;

fn record_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuel_yaql_results.json")
}

/// JSON with sorted keys and no spaces (what Python's `json.dumps(sort_keys=True,
/// separators=(",", ":"), ensure_ascii=False)` writes).
fn canonical(v: &J, out: &mut String) {
    match v {
        J::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&J::String((*k).clone()).to_string());
                out.push(':');
                canonical(&m[k.as_str()], out);
            }
            out.push('}');
        }
        J::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn digest(v: &J) -> (String, usize) {
    let mut text = String::new();
    canonical(v, &mut text);
    (hex::encode(Sha256::digest(text.as_bytes())), text.len())
}

/// How a result is recorded.
fn outcome(text: &str, result: &Result<J, String>) -> J {
    match result {
        Err(_) => json!({"expr": text, "error": true}),
        Ok(J::String(s)) if text.contains("toYaml()") => {
            let data: J = serde_yaml_ng::from_str(s).unwrap_or(J::Null);
            json!({"expr": text, "yaml": digest(&data).0})
        }
        Ok(J::String(s)) if text.contains("toJson()") => {
            let data: J = serde_json::from_str(s).unwrap_or(J::Null);
            json!({"expr": text, "json": digest(&data).0})
        }
        Ok(v) => {
            let (sha, len) = digest(v);
            if len <= 200 {
                json!({"expr": text, "value": v})
            } else {
                json!({"expr": text, "sha256": sha, "len": len})
            }
        }
    }
}

#[test]
fn fuels_expressions_give_the_recorded_results() {
    let (new, old) = support::fuel_node_one_of_1000();
    if let Ok(path) = std::env::var("PLINTH_FUEL_CONTEXT") {
        let data = json!({"new": new, "old": old});
        std::fs::write(&path, data.to_string()).expect("the context file is writable");
    }
    let engine = Engine::new();
    let (new, old) = (Json::from(new), Json::from(old));
    let ctx = Context::new(&new).old(Some(&old));
    let exprs = support::fuel_yaql_exps();
    assert_eq!(exprs.len(), 206);
    let got: Vec<J> = exprs
        .iter()
        .map(|text| {
            let result = Expression::parse(text)
                .map_err(|e| e.to_string())
                .and_then(|e| engine.evaluate_in(&e, &ctx).map_err(|e| e.to_string()));
            outcome(text, &result)
        })
        .collect();
    if std::env::var("PLINTH_RECORD_FUEL_RESULTS").is_ok() {
        let text = serde_json::to_string_pretty(&got).expect("JSON");
        std::fs::write(record_path(), text + "\n").expect("the record is writable");
        return;
    }
    let recorded: Vec<J> = serde_json::from_str(
        &std::fs::read_to_string(record_path()).expect("the record is in the repository"),
    )
    .expect("the record is JSON");
    assert_eq!(recorded.len(), got.len(), "one record per expression");
    let differ: Vec<String> = recorded
        .iter()
        .zip(&got)
        .enumerate()
        .filter(|(_, (r, g))| r != g)
        .map(|(i, (r, g))| format!("#{i}: recorded {r}\n     now {g}"))
        .collect();
    let errors = got.iter().filter(|g| g.get("error").is_some()).count();
    println!("206 results as recorded ({errors} of them errors: sections the cluster lacks)");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
