//! Pre-deployment checks and the DOT output.

use plinth_common::graph::{
    check_deployment, merge, to_dot, DotOptions, EvalContext, FieldEvaluator, GraphSource,
    MergedGraph, Origin, ResolveRequest, Severity,
};
use plinth_common::model::{parse_release_fixture, parse_tasks, Graph, Node, Release};
use plinth_common::tags::Catalog;
use serde_json::Value;

fn release() -> Release {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/corpus/fuel-web/openstack.yaml"
    ))
    .expect("fixture");
    parse_release_fixture(&text, "openstack.yaml").expect("release")
}

fn merged(yaml: &str) -> MergedGraph {
    let graph = Graph::with_tasks(parse_tasks(yaml, "t").expect("parses"));
    let origin = Origin::Release;
    merge(&[GraphSource {
        origin: &origin,
        graph: &graph,
    }])
    .expect("merges")
}

/// Cluster expressions: mode is HA, ceilometer, ironic and ceph are off; everything else false.
struct Settings;

impl FieldEvaluator for Settings {
    fn evaluate(&self, _: &EvalContext<'_>, _: &str) -> Result<Value, String> {
        Ok(Value::Bool(true))
    }
    fn node_filter(&self, _: &Node, _: &str) -> Result<bool, String> {
        Ok(true)
    }
    fn cluster_expression(&self, e: &str) -> Result<Value, String> {
        Ok(Value::Bool(
            e == "cluster:mode == 'ha_compact'"
                || e == "settings:additional_components.ceilometer.value == false"
                || e == "settings:additional_components.ironic.value == false"
                || e.starts_with("settings:storage.volumes_ceph.value == false and"),
        ))
    }
}

fn check(nodes: &[Node], graph: &MergedGraph) -> Vec<String> {
    let r = release();
    let catalog = Catalog::new(&r, &[], None);
    let ids: Vec<u64> = nodes.iter().map(|n| n.id).collect();
    check_deployment(&ResolveRequest {
        graph_type: "default",
        graph,
        catalog: &catalog,
        nodes,
        selection: Some(&ids),
        evaluator: &Settings,
    })
    .iter()
    .map(ToString::to_string)
    .collect()
}

#[test]
fn findings_name_roles_nodes_tags_and_tasks() {
    let mut both = Node::new(2, "node-2", &["controller"]);
    both.pending_roles = vec!["compute".into()];
    let mut mongo = Node::new(3, "node-3", &[]);
    mongo.pending_roles = vec!["mongo".into()];
    let nodes = vec![Node::new(1, "node-1", &["controller"]), both, mongo];
    let graph = merged(
        "- {id: a, type: shell, role: [controller], requires: [b]}\n\
         - {id: b, type: shell, role: [controller], requires: [a]}\n",
    );
    let findings = check(&nodes, &graph);
    let expected_errors = [
        "error: role \"controller\" conflicts with role \"compute\" on node node-2",
        "error: role \"mongo\" on node node-3: Ceilometer should be enabled in the environment settings.",
        // node-1 is the primary controller: `controller` tasks run on node-2 only.
        "error: dependency cycle a -> b -> a on node(s) node-2",
    ];
    for e in expected_errors {
        assert!(findings.contains(&e.to_string()), "{e}\n{findings:#?}");
    }
    for w in [
        "warning: role \"mongo\": 3 node(s) recommended, 1 assigned: At least 3 MongoDB nodes are recommended for HA deployment.",
        "warning: tag \"cinder\" of the release is assigned to no node",
        "warning: role \"controller\": 3 node(s) recommended, 2 assigned",
    ] {
        assert!(findings.contains(&w.to_string()), "{w}\n{findings:#?}");
    }
    // Tags carried (or carried as primary) are not reported.
    assert!(!findings.iter().any(|f| f.contains("tag \"controller\"")));
    assert!(!findings.iter().any(|f| f.contains("tag \"rabbitmq\"")));
    // Errors first.
    let first_warning = findings
        .iter()
        .position(|f| f.starts_with("warning"))
        .unwrap();
    assert!(findings[first_warning..]
        .iter()
        .all(|f| f.starts_with("warning")));
}

#[test]
fn a_clean_cluster_has_only_warnings() {
    let nodes: Vec<Node> = (1..=3)
        .map(|i| Node::new(i, format!("node-{i}"), &["controller"]))
        .chain((4..=5).map(|i| Node::new(i, format!("node-{i}"), &["compute"])))
        .collect();
    let graph = merged(
        "- {id: a, type: shell, role: ['*']}\n- {id: m, type: cobbler_sync, role: ['/.*/']}\n",
    );
    let r = release();
    let catalog = Catalog::new(&r, &[], None);
    let ids: Vec<u64> = nodes.iter().map(|n| n.id).collect();
    let findings = check_deployment(&ResolveRequest {
        graph_type: "default",
        graph: &graph,
        catalog: &catalog,
        nodes: &nodes,
        selection: Some(&ids),
        evaluator: &Settings,
    });
    assert!(
        findings.iter().all(|f| f.severity == Severity::Warning),
        "{findings:#?}"
    );
    assert!(findings.iter().any(|f| f.code == "task_type"
        && f.message == "task \"m\" of type \"cobbler_sync\" is placed on node node-1, whose agent does not run that type"));
}

const GRAPH: &str = "\
- {id: start, type: stage}
- {id: a, type: shell, role: [x], requires: [start]}
- {id: b, type: puppet, role: [x], requires: [a]}
- {id: g, type: group, role: [x], requires: [start]}
- {id: c, type: shell, role: [y], requires: [b], cross-depends: [{name: a}]}
- {id: d, type: skipped, role: [y], requires: [c]}
- {id: e, type: shell, role: [y], requires: [d]}
";

#[test]
fn dot_draws_the_whole_graph() {
    let dot = to_dot(&merged(GRAPH), "default", &DotOptions::default()).unwrap();
    assert!(dot.starts_with("digraph \"default\" {\n"), "{dot}");
    assert!(
        dot.contains("  \"start\" [label=\"start\\nstage\", shape=ellipse"),
        "{dot}"
    );
    assert!(
        dot.contains("  \"g\" [label=\"g\\ngroup\", shape=box3d"),
        "{dot}"
    );
    assert!(dot.contains("  \"a\" -> \"b\";\n"), "{dot}");
    assert!(dot.contains("  \"a\" -> \"c\" [style=dashed];\n"), "{dot}");
    assert!(dot.ends_with("}\n"));
}

#[test]
fn dot_filters() {
    let g = merged(GRAPH);
    let only = to_dot(
        &g,
        "default",
        &DotOptions {
            tasks: vec!["a".into(), "b".into()],
            ..DotOptions::default()
        },
    )
    .unwrap();
    assert_eq!(
        only,
        "digraph \"default\" {\n  node [shape=box, style=\"filled, rounded\", fillcolor=\"#ffffff\"];\n  \"a\" [label=\"a\\nshell\"];\n  \"b\" [label=\"b\\npuppet\"];\n  \"a\" -> \"b\";\n}\n"
    );
    let parents = to_dot(
        &g,
        "default",
        &DotOptions {
            parents_for: Some("c".into()),
            ..DotOptions::default()
        },
    )
    .unwrap();
    for t in ["start", "a", "b", "c"] {
        assert!(
            parents.contains(&format!("  \"{t}\" [label")),
            "{t}: {parents}"
        );
    }
    for t in ["g", "d", "e"] {
        assert!(
            !parents.contains(&format!("  \"{t}\" [label")),
            "{t}: {parents}"
        );
    }
    let removed = to_dot(
        &g,
        "default",
        &DotOptions {
            remove: vec!["skipped".into(), "stage".into(), "g".into()],
            ..DotOptions::default()
        },
    )
    .unwrap();
    assert!(
        !removed.contains("\"d\" [label")
            && !removed.contains("\"start\"")
            && !removed.contains("\"g\"")
    );
    assert!(
        removed.contains("  \"c\" -> \"e\";\n"),
        "order through removed tasks kept: {removed}"
    );
    let err = to_dot(
        &g,
        "default",
        &DotOptions {
            parents_for: Some("ghost".into()),
            ..DotOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "task \"graph.gv\": parents_for names \"ghost\", which is not a task of the merged graph"
    );
}
