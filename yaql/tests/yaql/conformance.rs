//! YAQL's own test suite (re-run on YAQL 3.2.0) as a conformance check: every case must pass
//! (date and time included); the count of passing cases may never drop.

use plinth_yaql::json::Json;
use plinth_yaql::{Context, Engine, Expression, Limits};
use serde_json::Value as J;

/// Cases passing when this was last raised; the test fails if fewer pass.
const BASELINE: usize = 625;

fn corpus() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/corpus/yaql/yaql_cases.jsonl"
    )
    .to_string()
}

/// Python's `==` on JSON results: numbers by value, lists in order, objects by key.
fn same(a: &J, b: &J, approx: bool) -> bool {
    match (a, b) {
        (J::Number(x), J::Number(y)) => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            if approx {
                (x - y).abs() <= 1e-7
            } else {
                x == y
            }
        }
        (J::Array(x), J::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y, approx))
        }
        (J::Object(x), J::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same(v, w, approx)))
        }
        _ => a == b,
    }
}

/// Compares lists as multisets.
fn same_unordered(a: &J, b: &J, approx: bool) -> bool {
    let (J::Array(x), J::Array(y)) = (a, b) else {
        return same(a, b, approx);
    };
    if x.len() != y.len() {
        return false;
    }
    let mut used = vec![false; y.len()];
    x.iter().all(|v| {
        let found = y
            .iter()
            .enumerate()
            .position(|(i, w)| !used[i] && same(v, w, approx));
        match found {
            Some(i) => {
                used[i] = true;
                true
            }
            None => false,
        }
    })
}

#[test]
fn yaql_test_suite() {
    let text = match std::fs::read_to_string(corpus()) {
        Ok(t) => t,
        Err(e) => panic!("cannot read {}: {e}", corpus()),
    };
    let mut engine = Engine::new();
    engine.set_limits(Limits::YAQL_TESTS);
    let (mut passed, mut failures) = (0usize, Vec::new());
    let mut total = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        total += 1;
        let case: J = serde_json::from_str(line).expect("each line is a JSON object");
        let test = case["test"].as_str().unwrap_or_default();
        let expr = case["expr"].as_str().unwrap_or_default();
        let data = &Json::from(&case["data"]);
        let want_error = case["error"].as_bool().unwrap_or(false);
        let approx = case["approx"].as_bool().unwrap_or(false);
        let unordered = case["unordered"].as_bool().unwrap_or(false);
        let got = Expression::parse(expr)
            .map_err(|e| e.to_string())
            .and_then(|e| {
                engine
                    .evaluate_in(&e, &Context::new(data))
                    .map_err(|e| e.to_string())
            });
        let ok = match (&got, want_error) {
            (Err(_), true) => true,
            (Ok(v), false) => {
                if unordered {
                    same_unordered(v, &case["expected"], approx)
                } else {
                    same(v, &case["expected"], approx)
                }
            }
            _ => false,
        };
        if ok {
            passed += 1;
        } else {
            failures.push(format!(
                "{test}: {expr}\n    data {data}\n    want {}{}\n    got  {got:?}",
                if want_error { "an error " } else { "" },
                case["expected"]
            ));
        }
    }
    for f in &failures {
        println!("FAIL {f}");
    }
    println!(
        "yaql conformance: {passed} passed, {} failed of {total}",
        failures.len()
    );
    assert!(
        passed >= BASELINE,
        "conformance dropped: {passed} < {BASELINE}"
    );
}
