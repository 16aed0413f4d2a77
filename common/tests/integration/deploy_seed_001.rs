//! Every expression seed 001 prints, as printed (typographic quotes and line breaks included),
//! evaluated as a deployment evaluates a computed field: through `deploy::YaqlFields`, on a new
//! cluster of Fuel's own release (one controller, two computes being added), for a compute node.
//!
//! The seed is Fuel's, so Plinth does what Nailgun's Python YAQL (3.2.0, with Nailgun's deployment
//! helpers) does with the same text: the expressions that run give the same value, and the four that
//! do not run fail the same way there (a parse error, a missing key, a function nobody defines).
//! `docs/FUEL.md` lists each with both outcomes.

use plinth_common::deploy::{OldStates, YaqlFields};
use plinth_common::expr::{Engine, ExprCache};
use plinth_common::graph::{EvalContext, FieldEvaluator};
use serde_json::{json, Value};
use std::sync::Arc;

use crate::support;
use support::{fuel_deploy_data, fuel_nodes};

/// What an expression gives: a value, or an error whose message holds this text.
enum Outcome {
    Value(Value),
    Error(&'static str),
}
use Outcome::{Error, Value as Gives};

/// (the seed's text, Plinth's outcome, what Python YAQL with Nailgun's helpers does).
fn printed() -> Vec<(&'static str, Outcome, &'static str)> {
    vec![
        (
            "changed($.nodes.where($.status = 'ready' and 'controller' in $.roles))\nand changed($.nodes.where($.status = 'discover' and 'controller' in\n$.roles and $.pending_addition = true))",
            Gives(json!(true)),
            "true (no old state: everything changed)",
        ),
        (
            "$.cluster.status in [operational, new, partially_deployed]",
            Gives(json!(true)),
            "true",
        ),
        (
            "changed($.nodes.where($.role = ‘compute’))",
            Gives(json!(true)),
            "true",
        ),
        ("changed($.configs.nova)", Gives(json!(true)), "true"),
        (
            "changed($.nodes.where($.attribute = ‘r1’).network_scheme(‘routes’))",
            Error("key not found: attribute"),
            "NoMethodRegisteredException: Unknown method \"network_scheme\" (its lazy `where` never reads `attribute`)",
        ),
        (
            "changed($.nodes.where($.label = ‘testing’)",
            Error("syntax error"),
            "YaqlGrammarException: unexpected end of statement",
        ),
        (
            "new($.configs.nova.parameter.value) = False old($.configs.nova.parameter.value) = True",
            Error("syntax error"),
            "YaqlGrammarException: unexpected 'old'",
        ),
        (
            "new($.settings.additional_components.murano.value) = True",
            Gives(json!(false)),
            "false (`True` is the text \"True\", never equal to a boolean)",
        ),
        ("changed($.nodes)", Gives(json!(true)), "true"),
    ]
}

#[test]
fn seed_001s_printed_expressions_do_what_nailgun_does_with_them() {
    let nodes = fuel_nodes(1, &[("controller", 1), ("compute", 2)]);
    let fields = YaqlFields::new(
        Arc::new(Engine::new()),
        Arc::new(ExprCache::new()),
        fuel_deploy_data(&nodes),
        OldStates::new(),
        false,
    );
    let at = EvalContext {
        node: Some(&nodes[1]),
        node_id: nodes[1].id,
        task_id: "seed-001",
        field_path: "condition",
    };
    let mut wrong = Vec::new();
    for (text, want, python) in printed() {
        let got = fields.evaluate(&at, text);
        let ok = match (&want, &got) {
            (Gives(v), Ok(g)) => v == g,
            (Error(part), Err(e)) => e.contains(part),
            _ => false,
        };
        if !ok {
            wrong.push(format!("{text:?}: got {got:?} (Python: {python})"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The two halves of the seed's one-line `new(...) = False old(...) = True`, each alone: a missing
/// key is an error, as in Python (`KeyError`), not null; where the key exists they run, and compare
/// with the text "False", as in Python.
#[test]
fn the_halves_of_the_one_line_pair_fail_on_a_missing_key_and_compare_with_text() {
    let nodes = fuel_nodes(1, &[("compute", 1)]);
    let data = fuel_deploy_data(&nodes);
    let fields = YaqlFields::new(
        Arc::new(Engine::new()),
        Arc::new(ExprCache::new()),
        data,
        OldStates::new(),
        false,
    );
    let at = EvalContext {
        node: Some(&nodes[0]),
        node_id: nodes[0].id,
        task_id: "t",
        field_path: "condition",
    };
    let err = fields
        .evaluate(&at, "new($.configs.nova.parameter.value) = False")
        .unwrap_err();
    assert!(err.contains("key not found: parameter"), "{err}");
    // With no old state `old()` is undefined, whatever the key.
    assert_eq!(
        fields
            .evaluate(&at, "isUndef(old($.configs.nova.parameter.value))")
            .unwrap(),
        json!(true)
    );

    // A cluster whose nova section has the parameter: the first half runs as printed.
    let (release, mut cluster) = support::fuel_release_and_cluster();
    cluster.settings["nova"] = json!({"parameter": {"value": {"value": false}}});
    let catalog = plinth_common::tags::Catalog::new(&release, &[], Some(&cluster));
    let tags = plinth_common::tags::cluster_tags(&nodes, &catalog);
    let data = plinth_common::deploy::DeployData::build(1, &cluster, &release, &nodes, &tags);
    let fields = YaqlFields::new(
        Arc::new(Engine::new()),
        Arc::new(ExprCache::new()),
        data,
        OldStates::new(),
        false,
    );
    // The first half runs as printed, and is false: `False` is not YAQL's `false` but a bare word,
    // the text "False" (Python YAQL gives the same), so it never equals a boolean.
    let eval = |e: &str| fields.evaluate(&at, e).unwrap();
    assert_eq!(eval("$.configs.nova.parameter.value"), json!(false));
    assert_eq!(
        eval("new($.configs.nova.parameter.value) = False"),
        json!(false)
    );
    assert_eq!(eval("False"), json!("False"));
    assert_eq!(
        eval("new($.configs.nova.parameter.value) = false"),
        json!(true)
    );
}

/// The seed's task template, as printed.
const SEED_001_TEMPLATE: &str = "- id: task-id
  condition: yaql_exp: {some yaql expression}
  parameters:
    data: yaql_exp: {some yaql expression}
";

/// The seed's template is not YAML as printed (PyYAML refuses it too: "mapping values are not allowed
/// here", line 2, column 22): the error names the line. Laid out as Fuel's library writes computed
/// fields (`yaql_exp` on its own line), with expressions in place of the placeholders, it loads.
#[test]
fn seed_001s_task_template_as_printed_and_as_fuels_library_lays_it_out() {
    use plinth_common::model::{parse_tasks, Condition};
    let err = parse_tasks(SEED_001_TEMPLATE, "tasks.yaml").unwrap_err();
    assert_eq!(err.line, Some(2), "{err}");
    assert!(
        err.to_string().contains("mapping values are not allowed"),
        "{err}"
    );
    let laid_out = "- id: task-id
  condition:
    yaql_exp: changed($.nodes)
  parameters:
    data:
      yaql_exp: $.uid
";
    let tasks = parse_tasks(laid_out, "tasks.yaml").expect("loads");
    assert_eq!(
        tasks[0].condition,
        Some(Condition::Yaql("changed($.nodes)".into()))
    );
    assert_eq!(tasks[0].parameters["data"], json!({"yaql_exp": "$.uid"}));
}
