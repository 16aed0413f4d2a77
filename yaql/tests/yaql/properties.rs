//! Property tests: evaluation never panics on any input text, and the canonical text of a
//! parsed expression parses back to the same tree.

use plinth_yaql::{Engine, Expression, Limits};
use proptest::prelude::*;
use serde_json::json;

fn engine() -> Engine {
    let mut e = Engine::new();
    e.set_limits(Limits {
        max_collection: 200,
        memory_quota: 10_000,
        max_steps: 20_000,
        max_depth: 64,
    });
    e
}

fn context() -> serde_json::Value {
    json!({
        "nodes": [
            {"uid": "1", "status": "ready", "roles": ["controller"], "pending_addition": false},
            {"uid": "2", "status": "discover", "roles": ["compute"], "pending_addition": true}
        ],
        "cluster": {"status": "operational", "mode": "ha"},
        "n": 3, "s": "abc", "xs": [1, 2, 3]
    })
}

const KEYWORDS: [&str; 8] = ["and", "or", "not", "in", "mod", "true", "false", "null"];

fn word() -> impl Strategy<Value = String> {
    "[a-zA-Z][a-zA-Z0-9_]{0,5}".prop_filter("not a keyword", |w| !KEYWORDS.contains(&w.as_str()))
}

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u32>().prop_map(|i| i.to_string()),
        (0u32..1000, 0u32..1000).prop_map(|(a, b)| format!("{a}.{b}")),
        "[ -~]{0,6}".prop_map(|s| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))),
        "[a-z ]{0,6}".prop_map(|s| format!("`{s}`")),
        word(),
        Just("$".to_string()),
        word().prop_map(|w| format!("${w}")),
        (1u8..4).prop_map(|i| format!("${i}")),
        Just("true".to_string()),
        Just("null".to_string()),
    ]
}

const BINOPS: [&str; 17] = [
    "=~", "!~", "*", "/", "mod", "+", "-", ">", "<", ">=", "<=", "!=", "=", "in", "and", "or", "->",
];
const FUNCS: [&str; 8] = [
    "len", "list", "switch", "let", "max", "str", "range", "coalesce",
];
const METHODS: [&str; 8] = [
    "where", "select", "len", "first", "orderBy", "join", "get", "toUpper",
];

fn expr() -> impl Strategy<Value = String> {
    leaf().prop_recursive(5, 48, 4, |inner| {
        prop_oneof![
            (inner.clone(), 0..BINOPS.len(), inner.clone())
                .prop_map(|(l, op, r)| format!("{l} {} {r}", BINOPS[op])),
            (
                prop_oneof![Just("-"), Just("+"), Just("not ")],
                inner.clone()
            )
                .prop_map(|(op, e)| format!("{op}{e}")),
            inner.clone().prop_map(|e| format!("({e})")),
            (inner.clone(), word()).prop_map(|(e, w)| format!("({e}).{w}")),
            (inner.clone(), word()).prop_map(|(e, w)| format!("({e})?.{w}")),
            (
                inner.clone(),
                0..METHODS.len(),
                prop::collection::vec(inner.clone(), 0..3)
            )
                .prop_map(|(e, m, args)| format!(
                    "({e}).{}({})",
                    METHODS[m],
                    args.join(", ")
                )),
            (0..FUNCS.len(), prop::collection::vec(inner.clone(), 0..3))
                .prop_map(|(f, args)| format!("{}({})", FUNCS[f], args.join(", "))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("f({a},,{b})")),
            (word(), inner.clone(), inner.clone())
                .prop_map(|(w, a, b)| format!("f({a}, {w} => {b})")),
            (inner.clone(), inner.clone()).prop_map(|(e, i)| format!("({e})[{i}]")),
            prop::collection::vec(inner.clone(), 0..4)
                .prop_map(|xs| format!("[{}]", xs.join(", "))),
            prop::collection::vec((inner.clone(), inner.clone()), 0..3).prop_map(|kv| format!(
                "{{{}}}",
                kv.iter()
                    .map(|(k, v)| format!("{k} => {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            (inner.clone(), inner.clone()).prop_map(|(e, a)| format!("lambda({e})({a})")),
        ]
    })
}

const TOKENS: [&str; 40] = [
    "$", "$x", "$1", "1", "2.5", "'s'", "`v`", "a", "true", "null", "and", "or", "not", "in",
    "mod", ".", "?.", "+", "-", "*", "/", "=~", "!~", ">", "<=", "=", "!=", "->", "=>", "(", ")",
    "[", "]", "{", "}", ",", "len(", "where(", "select(", "let(",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,40}") {
        let engine = engine();
        if let Ok(e) = Expression::parse(&text) {
            let _ = engine.evaluate(&e, &context());
        }
    }

    #[test]
    fn token_soup_never_panics_and_round_trips(toks in prop::collection::vec(0..TOKENS.len(), 0..25)) {
        let text: Vec<&str> = toks.iter().map(|i| TOKENS[*i]).collect();
        let text = text.join(" ");
        if let Ok(e) = Expression::parse(&text) {
            let again = Expression::parse(&e.to_string());
            prop_assert!(again.as_ref().ok() == Some(&e), "{} -> {}", text, e);
            let _ = engine().evaluate(&e, &context());
        }
    }

    #[test]
    fn generated_expressions_parse_and_round_trip(text in expr()) {
        let e = Expression::parse(&text).map_err(|err| TestCaseError::fail(format!("{text}: {err}")))?;
        let canonical = e.to_string();
        let again = Expression::parse(&canonical).map_err(|err| TestCaseError::fail(format!("{canonical}: {err}")))?;
        prop_assert_eq!(&again, &e, "{} -> {}", text, canonical);
        prop_assert_eq!(again.to_string(), canonical);
        let _ = engine().evaluate(&e, &context());
    }
}
