//! The public API: parsing, errors with carets, the cache, the registry, variables and limits.

use std::sync::Arc;

use plinth_yaql::json::Json;
use plinth_yaql::{Context, Engine, EvalErrorKind, ExprCache, Expression, Form, Limits, Spec};
use serde_json::json;

#[test]
fn parse_errors_show_the_expression_and_a_caret() {
    let err = Expression::parse("$.a and (1 2").expect_err("does not parse");
    let text = err.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[1].trim(), "$.a and (1 2");
    let caret = lines[2].find('^').expect("a caret");
    assert_eq!(&lines[1][caret..caret + 1], "2", "{text}");
}

#[test]
fn lexical_errors_point_at_the_character() {
    let err = Expression::parse("1 ? 2").expect_err("`?` alone is no token");
    assert_eq!(err.pos, 2);
    assert!(err.to_string().contains("lexical"));
}

#[test]
fn evaluation_errors_point_at_the_failing_operation() {
    let e = Expression::parse("$.nodes.where($.x > 1).missing").expect("parses");
    let err = Engine::new()
        .evaluate(&e, &json!({"nodes": [{"x": 2}]}))
        .expect_err("no key");
    assert!(matches!(err.kind, EvalErrorKind::KeyNotFound(_)));
    let text = err.to_string();
    assert!(text.contains("$.nodes.where($.x > 1).missing"), "{text}");
    let caret_line = text.lines().last().unwrap_or_default();
    assert_eq!(caret_line.find('^'), Some(4 + 22), "{text}");
}

#[test]
fn multi_line_expressions_show_the_failing_line() {
    let e = Expression::parse("let(a => 1)\n  -> $.b").expect("parses");
    let err = Engine::new()
        .evaluate(&e, &json!({}))
        .expect_err("no key b");
    let text = err.to_string();
    assert!(text.contains("\n      -> $.b\n"), "{text}");
}

#[test]
fn the_cache_parses_once_and_is_shared_across_threads() {
    let cache = Arc::new(ExprCache::new());
    let engine = Arc::new(Engine::new());
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let cache = cache.clone();
            let engine = engine.clone();
            std::thread::spawn(move || {
                let e = cache.get_or_parse("$.n * 2").expect("parses");
                engine.evaluate(&e, &json!({"n": i})).expect("evaluates")
            })
        })
        .collect();
    let results: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().expect("no panic"))
        .collect();
    assert_eq!(results, vec![json!(0), json!(2), json!(4), json!(6)]);
    assert_eq!(cache.len(), 1);
    let a = cache.get_or_parse("$.n * 2").expect("parses");
    let b = cache.get_or_parse("$.n * 2").expect("parses");
    assert!(Arc::ptr_eq(&a, &b));
    assert!(cache.get_or_parse("(").is_err());
    assert_eq!(cache.len(), 1);
}

#[test]
fn users_add_helpers_without_touching_the_core() {
    let mut engine = Engine::new();
    engine.register_json("double", Form::Both, |args| {
        let n = args
            .first()
            .and_then(|v| v.as_i64())
            .ok_or("double needs an integer")?;
        Ok(json!(n * 2))
    });
    engine.register(
        "firstOr",
        Form::Method,
        Spec::new(&["default"], 1),
        |it, c| {
            let items = it.seq(c.this()?, "firstOr")?;
            match items.into_iter().next() {
                Some(v) => Ok(v),
                None => Ok(it.value(c.slot(0))?.unwrap_or(plinth_yaql::Value::Null)),
            }
        },
    );
    let data = json!({"xs": [], "n": 4});
    let run = |text: &str| engine.evaluate(&Expression::parse(text).expect("parses"), &data);
    assert_eq!(run("double($.n)").expect("ok"), json!(8));
    assert_eq!(run("$.n.double()").expect("ok"), json!(8));
    assert_eq!(run("$.xs.firstOr(7)").expect("ok"), json!(7));
    let err = run("double(x)").expect_err("not an integer");
    assert!(err.to_string().contains("double needs an integer"));
}

#[test]
fn one_expression_follows_each_engine_and_each_change_of_its_registry() {
    // An expression remembers what its calls resolved to; each engine, and each change of an
    // engine's registry, must still get its own functions.
    let expr = Expression::parse("$.n.double() + len($.big.k20)").expect("parses");
    let big: serde_json::Map<String, serde_json::Value> =
        (0..40).map(|i| (format!("k{i}"), json!("ab"))).collect();
    let data = json!({"n": 4, "big": big});
    let mut a = Engine::new();
    a.register_json("double", Form::Method, |args| {
        Ok(json!(args[0].as_i64().unwrap_or(0) * 2))
    });
    let mut b = a.clone();
    b.register_json("double", Form::Method, |args| {
        Ok(json!(args[0].as_i64().unwrap_or(0) * 3))
    });
    for _ in 0..2 {
        assert_eq!(a.evaluate(&expr, &data).expect("ok"), json!(10));
        assert_eq!(b.evaluate(&expr, &data).expect("ok"), json!(14));
    }
    // A change after the expression was evaluated is seen at once.
    a.register_json("double", Form::Method, |args| {
        Ok(json!(args[0].as_i64().unwrap_or(0) * 10))
    });
    assert_eq!(a.evaluate(&expr, &data).expect("ok"), json!(42));
    // The same key in another object of the same size, elsewhere in it.
    let moved: serde_json::Map<String, serde_json::Value> = (0..40)
        .rev()
        .map(|i| (format!("k{i}"), json!(format!("{i}"))))
        .collect();
    let data = json!({"n": 1, "big": moved});
    assert_eq!(a.evaluate(&expr, &data).expect("ok"), json!(12));
    // An engine whose registry is laid out otherwise (its own two functions only).
    let mut c = Engine::empty();
    c.register_json("double", Form::Method, |args| {
        Ok(json!(args[0].as_i64().unwrap_or(0) * 100))
    });
    c.register_json("len", Form::Function, |args| {
        Ok(json!(args[0].as_str().map_or(0, str::len) + 1000))
    });
    assert_eq!(c.evaluate(&expr, &data).expect("ok"), json!(1102));
    assert_eq!(a.evaluate(&expr, &data).expect("ok"), json!(12));
    let empty = Engine::empty();
    let err = empty.evaluate(&expr, &data).expect_err("no such method");
    assert!(err.to_string().contains("double"), "{err}");
}

#[test]
fn named_variables_and_the_data_variable() {
    let data = json!({"uid": "3"});
    let node = json!({"uid": "3", "roles": ["controller"]});
    let common = json!({"debug": true});
    let (data, node, common) = (Json::from(data), Json::from(node), Json::from(common));
    let ctx = Context::new(&data)
        .var("node", &node)
        .var("common", &common);
    let e =
        Expression::parse("'controller' in $node.roles and $common.debug and $data.uid = $.uid")
            .expect("parses");
    assert_eq!(
        Engine::new().evaluate_in(&e, &ctx).expect("evaluates"),
        json!(true)
    );
}

#[test]
fn runaway_expressions_stop_at_the_limits() {
    let mut engine = Engine::new();
    engine.set_limits(Limits {
        max_collection: 1000,
        memory_quota: 10_000,
        max_steps: 100_000,
        max_depth: 100,
    });
    let run = |text: &str| engine.evaluate(&Expression::parse(text).expect("parses"), &json!(null));
    assert!(matches!(
        run("range(100000)").expect_err("too large").kind,
        EvalErrorKind::CollectionTooLarge(_)
    ));
    assert!(matches!(
        run("sequence().select($)").expect_err("infinite").kind,
        EvalErrorKind::CollectionTooLarge(_)
    ));
    assert!(matches!(
        run("x * 100000").expect_err("too big").kind,
        EvalErrorKind::MemoryQuota(_)
    ));
    assert!(matches!(
        run("def(f, f($)) -> f(1)").expect_err("endless").kind,
        EvalErrorKind::TooDeep(_)
    ));
    let steps = run("range(1000).select(range(1000).len()).len()").expect_err("too many steps");
    assert!(matches!(steps.kind, EvalErrorKind::StepLimit(_)));
}

#[test]
fn deep_nesting_is_refused_not_a_crash() {
    for open in ["(", "[", "abs(", "-", "not ", "[1].select("] {
        let deep = format!("{}1", open.repeat(5000));
        assert!(Expression::parse(&deep).is_err(), "{open}");
    }
    let long = vec!["$.a"; 100_000].join(" + ");
    assert!(
        Expression::parse(&long).is_err(),
        "operator chains are bounded too"
    );
    // A chain of constants folds as it is read: one constant, however long.
    let constants = vec!["1"; 100_000].join(" + ");
    let e = Expression::parse(&constants).expect("folds");
    assert_eq!(e.to_string(), "100000");
    let fine = vec!["$.a"; 100].join(" and ");
    let e = Expression::parse(&fine).expect("a 100-term chain parses");
    assert_eq!(e.to_string(), fine);
    assert_eq!(
        Engine::new()
            .evaluate(&e, &json!({"a": 1}))
            .expect("evaluates"),
        json!(1)
    );
    let ok = format!("{}1{}", "(".repeat(60), ")".repeat(60));
    assert!(Expression::parse(&ok).is_ok());
    let engine = Engine::new();
    for text in [
        "def(f, f($)) -> f(1)",
        "def(f, switch($ > 0 => f($ - 1) + 1, true => 0)) -> f(100000)",
        "def(f, [f($)]) -> f(1)",
    ] {
        let e = Expression::parse(text).expect("parses");
        let err = engine.evaluate(&e, &json!(null)).expect_err("too deep");
        assert!(
            matches!(err.kind, EvalErrorKind::TooDeep(_)),
            "{text}: {err}"
        );
    }
}

#[test]
fn values_nested_a_hundred_thousand_deep_are_errors_not_crashes() {
    let engine = Engine::new();
    let run = |text: &str| engine.evaluate(&Expression::parse(text).expect("parses"), &json!(null));
    assert!(
        run("range(100000).aggregate([$1], [])").is_err(),
        "no JSON form that deep"
    );
    assert_eq!(
        run("range(100000).aggregate([$1], []).len()").expect("len"),
        json!(1)
    );
    assert_eq!(
        run("let(x => range(20000).aggregate([$1], [])) -> $x = $x").expect("compares"),
        json!(false)
    );
    assert_eq!(
        run("[range(20000).aggregate({a => $1}, {})].distinct().len()").expect("hashes"),
        json!(1)
    );
    assert!(run("range(20000).aggregate([$1], []).flatten()").is_err());
    assert!(run("let(x => range(20000).aggregate({a => $1}, {})) -> $x.mergeWith($x)").is_err());
    assert!(run("str(range(20000).aggregate([$1], []))").is_ok());
}

#[test]
fn first_and_any_stop_at_the_first_match_as_yaql_does() {
    let engine = Engine::new();
    let run = |text: &str| engine.evaluate(&Expression::parse(text).expect("parses"), &json!(null));
    assert_eq!(
        run("[1, 0].where(1 / $ > 0).first()").expect("lazy"),
        json!(1)
    );
    assert!(run("[0, 1].where(1 / $ > 0).first()").is_err());
    assert_eq!(
        run("[1, 0].where(1 / $ > 0).any()").expect("lazy"),
        json!(true)
    );
    assert_eq!(
        run("[{a => 1}, 3].where($ != 2).a.first()").expect("lazy"),
        json!(1)
    );
    assert_eq!(run("[].where(true).first(7)").expect("default"), json!(7));
    assert_eq!(
        run("[1, 2, 3].where($ > 1).any($ > 2)").expect("predicate"),
        json!(true)
    );
    assert_eq!(
        run("[1, 2, 3].where($ > 5).any()").expect("none"),
        json!(false)
    );
    assert!(run("[].where(true).first()").is_err());
}

#[test]
fn extreme_integers_are_errors_or_results_never_panics() {
    let engine = Engine::new();
    let run = |text: &str| engine.evaluate(&Expression::parse(text).expect("parses"), &json!(null));
    assert!(run("range(9223372036854775807)").is_err());
    assert!(run("range(-9223372036854775807, 9223372036854775807, 4611686018427387904)").is_ok());
    assert_eq!(
        run("[1].enumerate(9223372036854775807)").expect("saturates"),
        json!([[i64::MAX, 1]])
    );
    assert_eq!(
        run("abcdef.substring(2, 9223372036854775807)").expect("to the end"),
        json!("cdef")
    );
    assert_eq!(
        run("abcdef.indexOf(c, 1, 9223372036854775807)").expect("found"),
        json!(2)
    );
    assert!(run("9223372036854775807 + 1").is_err());
    assert!(run("-9223372036854775807 - 2").is_err());
    assert!(run("abs(-9223372036854775807 - 1)").is_err());
    assert!(run("pow(2, 64)").is_err());
    assert!(run("shiftBitsLeft(1, 64)").is_err());
    assert!(run("(-9223372036854775807 - 1) / -1").is_err());
}

#[test]
fn display_is_canonical_and_parses_back() {
    for text in [
        "12 .5",
        "$.1.5",
        "$.1 .5",
        "x.y (1)",
        "$.nodes.where($.status = 'ready' and 'controller' in $.roles).len()",
        "a  +b*(c-1)",
        "let(x => 1) -> $x",
        "f(1,,3)",
    ] {
        let e = Expression::parse(text).expect("parses");
        let again = Expression::parse(&e.to_string()).expect("canonical text parses");
        assert_eq!(e, again, "{text} -> {e}");
        assert_eq!(e.to_string(), again.to_string());
    }
    assert_eq!(
        Expression::parse("a  +b*(c-1)")
            .expect("parses")
            .to_string(),
        "a + b * (c - 1)"
    );
}

#[test]
fn constants_fold_when_parsed_and_print_back() {
    for (text, folded) in [
        ("{}", "{}"),
        (
            "[1, 'a', {b => [2.5, null]}]",
            "[1, 'a', {'b' => [2.5, null]}]",
        ),
        ("-3", "-3"),
        ("2 * 60 + 1", "121"),
        ("'a' + 'b'", "'ab'"),
        ("not []", "true"),
        // Not constant, or not exact: left as written.
        ("[$.a, 1]", "[$.a, 1]"),
        ("{[1] => 2}", "{[1] => 2}"),
        ("1 / 0", "1 / 0"),
        ("9223372036854775807 + 1", "9223372036854775807 + 1"),
    ] {
        let e = Expression::parse(text).expect("parses");
        assert_eq!(e.to_string(), folded, "{text}");
        assert_eq!(Expression::parse(&e.to_string()).expect("reparses"), e);
    }
    let engine = Engine::new();
    let run = |t: &str| engine.evaluate(&Expression::parse(t).expect("parses"), &json!({"a": 1}));
    assert_eq!(run("{a => [1, 2]}.a.len()").expect("evaluates"), json!(2));
    assert_eq!(
        run("[[1, 2], [3]].selectMany($)").expect("evaluates"),
        json!([1, 2, 3])
    );
    assert!(run("1 / 0").is_err(), "errors are left to evaluation");
}
