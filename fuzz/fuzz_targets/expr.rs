//! Fuzz target `expr`: parse any text; when it parses, its canonical text must parse back to the
//! same tree, and evaluating it (with tight limits, against a small fixed context, with an old
//! state for the deployment helpers) must return a value or an error, never panic or hang.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use plinth_yaql::{Context, Engine, Expression, Limits};
use plinth_yaql::json::Json;
use serde_json::json;

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let mut e = Engine::new();
        e.set_limits(Limits {
            max_collection: 1000,
            memory_quota: 100_000,
            max_steps: 100_000,
            max_depth: 64,
        });
        e
    })
}

fn states() -> &'static (Json, Json) {
    static STATES: OnceLock<(Json, Json)> = OnceLock::new();
    STATES.get_or_init(|| {
        let new = json!({
            "uid": "1", "roles": ["controller"],
            "nodes": [
                {"uid": "1", "status": "ready", "roles": ["controller"], "pending_addition": false},
                {"uid": "2", "status": "discover", "roles": ["compute"], "pending_addition": true}
            ],
            "cluster": {"status": "operational"}, "configs": {"nova": {"value": 1}}, "s": "abc", "n": 3
        });
        let old = json!({"uid": "1", "nodes": [{"uid": "1", "status": "ready", "roles": ["controller"]}], "configs": {"nova": {"value": 2}}});
        (Json::from(new), Json::from(old))
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(expr) = Expression::parse(text) else {
        return;
    };
    let canonical = expr.to_string();
    match Expression::parse(&canonical) {
        Ok(again) => assert!(
            again == expr,
            "canonical text {canonical:?} of {text:?} parses differently"
        ),
        Err(e) => panic!("canonical text {canonical:?} of {text:?} does not parse: {e}"),
    }
    let (new, old) = states();
    let _ = engine().evaluate_in(&expr, &Context::new(new).old(Some(old)));
});
