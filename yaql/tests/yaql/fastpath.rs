//! The shortcut for simple `where` predicates on input data gives exactly what the general
//! evaluator gives, errors included (the general evaluator is made to run by wrapping the
//! predicate in an index the shortcut does not take: `[P][0]`).

use plinth_yaql::{Engine, Expression};
use serde_json::json;

#[test]
fn where_shortcut_matches_the_general_evaluator() {
    let data = json!([
        {"status": "ready", "roles": ["controller", "compute"], "n": 3, "f": 2.5, "b": true, "s": "abc"},
        {"status": "discover", "roles": [], "n": null, "f": 1, "b": false, "s": "xbz"},
        {"status": "ready", "roles": ["compute"], "n": 7, "f": -1.5, "b": null, "s": ""},
        {"status": null, "roles": "controller", "n": "7", "f": 0, "b": 1, "s": null},
        {"status": "error", "roles": ["controller"], "n": 1, "f": 1.0, "b": true, "s": "b"},
        [1, 2],
        "text",
        null
    ]);
    let predicates = [
        "$.status = 'ready'",
        "$.status = ready and 'controller' in $.roles",
        "not $.b or $.n > 2",
        "$.n >= 3 and $.n <= 7",
        "$.n < $.f",
        "$.f != 1",
        "b in $.s",
        "$.s in [abc, xbz]",
        "$.roles = []",
        "$.b = 1",
        "$.n = null or $.status != null",
        "($.b and $.n) or $.s",
        "$1.status = 'ready'",
        "'x' in $.n",
        "$.missing = 1",
        "$.roles.any($.matches('^contr'))",
        "$.roles.any($ = compute)",
        "$.roles.any($.matches('(primary-)?controller')) and $.n > 2",
        "$.s.matches('b')",
        "$.n.matches('7')",
        "$.roles.any($.matches('('))",
        "$.roles.any($.x)",
        "$.status.any($ = r)",
        "$ = 'text'",
        "$.roles.any($.matches(2))",
    ];
    let engine = Engine::new();
    let objects = json!(data.as_array().map(|a| a[..5].to_vec()).unwrap_or_default());
    let mut values = 0;
    for input in [&objects, &data] {
        for p in predicates {
            // Borrowed input and query results over it go through the shortcut; a predicate
            // inside an index does not.
            let slow = Expression::parse(&format!("$.where([{p}][0])")).expect("parses");
            let b = engine.evaluate(&slow, input).map_err(|e| e.kind);
            for fast in [format!("$.where({p})"), format!("$.select($).where({p})")] {
                let fast = Expression::parse(&fast).expect("parses");
                let a = engine.evaluate(&fast, input).map_err(|e| e.kind);
                assert_eq!(a, b, "{p}");
            }
            values += usize::from(b.is_ok());
        }
    }
    assert!(
        values >= 10,
        "most predicates give values on objects ({values})"
    );
}
