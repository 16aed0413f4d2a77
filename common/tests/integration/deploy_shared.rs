//! Node-independent parts of Fuel's expressions, evaluated once per class of nodes, give exactly
//! what evaluating each whole expression per node gives: every one of Fuel's 206 `yaql_exp`, for
//! every node of a cluster that grew since its last deployment (old states of the nodes deployed
//! then, sharing one old cluster part as the controller loads them), errors included.

use plinth_common::deploy::{DeployData, OldStates, YaqlFields};
use plinth_common::expr::{Context, Engine, ExprCache, Expression};
use plinth_common::graph::{EvalContext, FieldEvaluator};
use plinth_common::json::Json;
use plinth_common::model::Node;
use plinth_common::tags::{cluster_tags, Catalog};
use std::sync::Arc;

use crate::support;
use support::{fuel_nodes, fuel_release_and_cluster, fuel_yaql_exps};

fn data(nodes: &[Node]) -> DeployData {
    let (release, cluster) = fuel_release_and_cluster();
    let catalog = Catalog::new(&release, &[], Some(&cluster));
    let tags = cluster_tags(nodes, &catalog);
    DeployData::build(1, &cluster, &release, nodes, &tags)
}

/// Evaluates every Fuel expression for every node of `after`, with old states of `before`'s nodes,
/// through `YaqlFields` and whole per node; both must agree. Returns how many evaluations failed
/// on both sides.
fn compare(before: &[Node], after: &[Node]) -> usize {
    let old_data = data(before);
    let mut old = OldStates::new();
    for n in before {
        old.insert(n.id, "t", old_data.state(n.id).expect("deployed node"));
    }
    let new_data = data(after);
    let engine = Arc::new(Engine::new());
    let fields = YaqlFields::new(
        engine.clone(),
        Arc::new(ExprCache::new()),
        new_data.clone(),
        old.clone(),
        false,
    );
    let exprs = fuel_yaql_exps();
    assert_eq!(exprs.len(), 206);
    // Each node's states merged into one document each: the evaluation alone shares no code path
    // with the layered one.
    let merged: Vec<_> = after
        .iter()
        .map(|n| {
            let own = new_data.state(n.id).expect("a node of the cluster");
            let was = old.get(n.id, "t").map(|s| Json::from(s.merged()));
            (Json::from(own.merged()), own, was)
        })
        .collect();
    let (mut compared, mut errors) = (0, 0);
    for text in &exprs {
        let expr = Expression::parse(text).expect("Fuel's expressions parse");
        for (n, (now, own, was)) in after.iter().zip(&merged) {
            let at = EvalContext {
                node: Some(n),
                node_id: n.id,
                task_id: "t",
                field_path: "condition",
            };
            let shared = fields.evaluate(&at, text);
            // The whole expression, evaluated for this node alone on its merged states.
            let ctx = Context::new(now)
                .var("node", own.node())
                .var("common", &own.common)
                .old(was.as_ref());
            let alone = engine.evaluate_in(&expr, &ctx).map_err(|e| e.to_string());
            match (&shared, &alone) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}, node {}", n.id),
                (Err(a), Err(b)) => {
                    errors += 1;
                    assert!(a.ends_with(b.as_str()), "{text}, node {}: {a} / {b}", n.id)
                }
                _ => panic!("{text}, node {}: {shared:?} / {alone:?}", n.id),
            }
            compared += 1;
        }
    }
    assert_eq!(compared, 206 * after.len());
    errors
}

#[test]
fn shared_parts_change_no_result() {
    let before = fuel_nodes(1, &[("controller", 3), ("compute", 4), ("cinder", 2)]);
    let mut after = before.clone();
    after.extend(fuel_nodes(10, &[("compute", 2), ("mongo", 1)]));
    let errors = compare(&before, &after);
    println!(
        "grown cluster: {} evaluations compared, {errors} of them errors on both sides",
        206 * after.len()
    );
    // Deployed again unchanged: `changed($)` compares only the nodes' own keys.
    let errors = compare(&after, &after);
    println!("unchanged cluster: {errors} errors on both sides");

    let new_data = data(&after);
    let old_data = data(&before);
    let engine = Engine::new();
    let exprs = fuel_yaql_exps();
    // And the sharing is real: most of Fuel's expressions do not read the node at all.
    let common = new_data.common();
    let node_keys: Vec<String> = new_data
        .node_part(1)
        .and_then(|p| p.as_object())
        .map(|m| m.keys().map(str::to_string).collect())
        .unwrap_or_default();
    let was = old_data.state(1).expect("node 1 was deployed");
    let ctx = Context::new(common)
        .var("common", common)
        .old(Some(was.common.as_ref()));
    let (mut whole, mut partly) = (0, 0);
    for text in &exprs {
        let expr = Arc::new(Expression::parse(text).expect("parses"));
        let shared = engine.share(&expr, &ctx, &|k: &str| node_keys.iter().any(|n| n == k));
        if shared.whole().is_some() {
            whole += 1;
        } else if !shared.is_empty() {
            partly += 1;
        } else if std::env::var("SHOW_UNSHARED").is_ok() {
            println!("UNSHARED {}", text.replace('\n', " "));
        }
    }
    println!("{whole} of 206 evaluated once for all nodes, {partly} partly");
    assert!(whole >= 100, "{whole} whole");
    assert!(partly >= 5, "{partly} partly");
}

/// States bound by the deployment helpers are read from the layers without merging them, and
/// parts read in them are kept once per state: each expression gives on layered states, with and
/// without kept parts, what it gives on the merged documents.
#[test]
fn layered_states_read_as_merged_documents() {
    use serde_json::json;
    let common = json!({"a": {"x": 1}, "nodes": {"n1": {"uid": "1", "v": 1}, "n2": {"uid": "2", "v": 2}},
        "list": [{"uid": "1"}, {"uid": "2", "v": 1}, {"uid": "3"}]});
    let old_common = json!({"a": {"x": 2}, "nodes": {"n1": {"uid": "1", "v": 1}, "n2": {"uid": "2", "v": 3}},
        "list": [{"uid": "1"}, {"name": "x"}, {"uid": "2", "v": 2}]});
    let node = json!({"uid": "2", "name": "n2"});
    let old_node = json!({"uid": "2", "name": "old-n2"});
    let merge = |c: &serde_json::Value, n: &serde_json::Value| {
        let mut m = c.as_object().cloned().unwrap_or_default();
        m.extend(n.as_object().cloned().unwrap_or_default());
        serde_json::Value::Object(m)
    };
    let (now, was) = (merge(&common, &node), merge(&old_common, &old_node));
    let [common, old_common, node, old_node, now, was] =
        [common, old_common, node, old_node, now, was].map(Json::from);
    let engine = Engine::new();
    let general = general_engine();
    let per_node = |k: &str| matches!(k, "uid" | "name");
    for text in [
        "changed($.nodes.values().where($.uid = new($.uid)))",
        "old($.nodes.values().where($.uid = new($.uid))).first().v",
        "new($.nodes.values().where($.uid = $node.uid).select($.v))",
        "old(lambda($.a.x))()",
        "old(lambda($.name))()",
        "$.get('a').x + $.get('missing', 5) + $.get('uid', 0).len()",
        "old($).get('a', {}).x",
        "$.a.get('x') + $.a.get('y', 3) + $.a.get(y, 4)",
        "$.a.get('y')",
        "$.list.get(0)",
        "{x => 1}.get(x) + {x => 1}.get('y', 2)",
        "old($).get('name') + new($).get('name') + old($).get('missing', 'd')",
        "{k => old($).get('nodes', {})}.toYaml()",
        "old($.get('name'))",
        "len(old($)) + len(new($))",
        "changedAny($.a, $.name, $.nodes.values().where($.uid = '1'))",
        "old($.missing)",
        "$.uid in added($.nodes.values()).uid",
        "'2' in added($.nodes.values()).uid",
        "'2' in deleted($.nodes.values()).uid",
        "'2' in added($.nodes.values().toList()).uid",
        "$.uid in added($.list).uid",
        "$.uid in deleted($.list).uid",
        "'x' in added($.list).name",
        "$.uid in added($.missing.values()).uid",
        "$.uid in deleted($.missing).uid",
    ] {
        let expr = Arc::new(Expression::parse(text).expect("parses"));
        // Deployed before, never deployed, and forced.
        for (deployed, forced) in [(true, false), (false, false), (true, true)] {
            let case = format!("{text} (deployed before: {deployed}, forced: {forced})");
            let merged = Context::new(&now)
                .var("node", &node)
                .old(deployed.then_some(&was))
                .forced(forced);
            // The general path (no shortcut for `get`, `in added()`, `first()`) on merged
            // documents.
            let expected = general
                .evaluate_in(&expr, &merged)
                .map_err(|e| e.to_string());
            let got = engine
                .evaluate_in(&expr, &merged)
                .map_err(|e| e.to_string());
            assert_eq!(got, expected, "{case}, merged");
            let layered = Context::layered(&common, &node)
                .var("node", &node)
                .old_layered(deployed.then_some((&old_common, &old_node)))
                .forced(forced);
            let got = engine
                .evaluate_in(&expr, &layered)
                .map_err(|e| e.to_string());
            assert_eq!(got, expected, "{case}, layered");
            let cluster = Context::new(&common)
                .old(deployed.then_some(&old_common))
                .forced(forced);
            let shared = engine.share(&expr, &cluster, &per_node);
            if text.contains("where($.uid = new($.uid))") && deployed && !forced {
                assert!(
                    !shared.is_empty(),
                    "{case}: the list is kept for each state"
                );
            }
            let got = engine
                .evaluate_in(&expr, &layered.clone().shared(&shared))
                .map_err(|e| e.to_string());
            assert_eq!(got, expected, "{case}, layered with kept parts");
        }
    }
}

/// An engine whose `values`, `get` and `first` are registered again (the same functions): the
/// evaluator then takes none of its shortcuts for the built-in ones.
fn general_engine() -> Engine {
    use plinth_common::expr::engine::Imp;
    use plinth_common::expr::Form;
    let mut e = Engine::new();
    for name in ["values", "get", "first"] {
        let entry = e.method(name).cloned().expect("a built-in method");
        let Imp::Native(f) = entry.imp else {
            panic!("{name} is native")
        };
        e.register(name, Form::Method, entry.spec, f);
    }
    assert!(!e.plain_get() && !e.plain_diff() && !e.lazy_queries());
    e
}
