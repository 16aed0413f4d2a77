//! The engine on its own: parsing, and evaluating standard YAQL over a generated document of 1,000
//! records (no deployment helper, no Plinth data). Plinth's own expressions over its deployment data
//! are `plinth-common`'s `expr` benchmark.
//!
//! Run: `cargo bench -p plinth-yaql --bench yaql`

use criterion::{criterion_group, criterion_main, Criterion};
use plinth_yaql::json::Json;
use plinth_yaql::{Context, Engine, ExprCache};
use serde_json::json;

/// Standard YAQL, by name: a filter with a count, a projection sorted, a grouping, string work.
const EXPRESSIONS: [(&str, &str); 4] = [
    (
        "where_len",
        "$.items.where($.size > 500 and 'b' in $.tags).len()",
    ),
    (
        "select_order",
        "$.items.where($.size < 100).orderBy($.name).select($.name).take(10)",
    ),
    (
        "group_count",
        "$.items.groupBy($.kind).select([$[0], $[1].len()])",
    ),
    (
        "strings",
        "$.items.select($.name.toUpper()).where($.startsWith('ITEM-9')).join(',').len()",
    ),
];

fn document() -> serde_json::Value {
    let items: Vec<serde_json::Value> = (0..1_000)
        .map(|i| {
            let kind = ["a", "b", "c"][i % 3];
            json!({
                "name": format!("item-{i}"),
                "size": (i * 7919) % 1_000,
                "kind": kind,
                "tags": if i % 2 == 0 { vec!["a", "b"] } else { vec!["c"] },
            })
        })
        .collect();
    json!({ "items": items })
}

fn bench(c: &mut Criterion) {
    let engine = Engine::new();
    let data = Json::from(document());
    let ctx = Context::new(&data);
    for (name, text) in EXPRESSIONS {
        c.bench_function(&format!("parse/{name}"), |b| {
            b.iter(|| ExprCache::new().get_or_parse(text).expect("parses"))
        });
        let expr = ExprCache::new().get_or_parse(text).expect("parses");
        // Evaluated once outside the timing, so a broken expression fails here, not silently.
        engine.evaluate_in(&expr, &ctx).expect("evaluates");
        c.bench_function(&format!("evaluate/{name}"), |b| {
            b.iter(|| engine.evaluate_in(&expr, &ctx).expect("evaluates"))
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
