//! Nailgun's deployment helpers (`new`, `old`, `changed`, `changedAll`, `changedAny`, `added`,
//! `deleted`, `isUndef`) against the cases of Nailgun's own tests.

use plinth_common::expr::{Context, Engine, Expression};
use plinth_common::json::Json;
use serde_json::{json, Value as J};

fn corpus() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/corpus/yaql/fuel_yaql_ext_cases.jsonl"
    )
    .to_string()
}

#[test]
fn nailgun_helper_cases_all_pass() {
    let text = std::fs::read_to_string(corpus())
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", corpus()));
    let engine = Engine::new();
    let mut failures = Vec::new();
    let mut total = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        total += 1;
        let case: J = serde_json::from_str(line).expect("each line is a JSON object");
        let expr = case["expr"].as_str().unwrap_or_default();
        let (new, old) = (Json::from(&case["new"]), Json::from(&case["old"]));
        let ctx = Context::new(&new).old(Some(&old));
        let got = Expression::parse(expr)
            .map_err(|e| e.to_string())
            .and_then(|e| engine.evaluate_in(&e, &ctx).map_err(|e| e.to_string()));
        let ok = match &got {
            Err(_) => case["error"].as_bool().unwrap_or(false),
            Ok(v) => !case["error"].as_bool().unwrap_or(false) && *v == case["expected"],
        };
        if !ok {
            failures.push(format!("{expr}: want {} got {got:?}", case["expected"]));
        }
    }
    assert_eq!(total, 29, "the corpus has 29 cases");
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}

fn eval(expr: &str, new: &J, old: Option<&J>, forced: bool) -> J {
    let e = Expression::parse(expr).expect("parses");
    let (new, old) = (Json::from(new), old.map(Json::from));
    Engine::new()
        .evaluate_in(&e, &Context::new(&new).old(old.as_ref()).forced(forced))
        .expect("evaluates")
}

#[test]
fn with_no_old_state_everything_changed() {
    let new = json!({"a": 1, "nodes": [{"uid": "1"}]});
    assert_eq!(eval("changed($.a)", &new, None, false), json!(true));
    assert_eq!(eval("old($.a).isUndef()", &new, None, false), json!(true));
    assert_eq!(eval("added($.nodes.uid)", &new, None, false), json!(["1"]));
    assert_eq!(eval("deleted($.nodes.uid)", &new, None, false), json!(null));
}

#[test]
fn a_forced_deployment_changes_everything() {
    let state = json!({"a": 1});
    assert_eq!(
        eval("changed($.a)", &state, Some(&state), false),
        json!(false)
    );
    assert_eq!(
        eval("changed($.a)", &state, Some(&state), true),
        json!(true)
    );
    assert_eq!(
        eval("changedAll($.a, $)", &state, Some(&state), true),
        json!(true)
    );
    assert_eq!(
        eval("old($.a).isUndef()", &state, Some(&state), true),
        json!(true)
    );
}

#[test]
fn to_json_and_to_yaml_serialise() {
    let state = json!({"a": [1, 2]});
    assert_eq!(eval("$.a.toJson()", &state, None, false), json!("[1,2]"));
    assert_eq!(
        eval("toYaml($)", &state, None, false),
        json!("a:\n- 1\n- 2\n")
    );
}
