//! Cycles and bad input, with their exact messages.

use plinth_common::graph::{merge, resolve, GraphSource, NoExpressions, Origin, ResolveRequest};
use plinth_common::model::{parse_tasks, Graph, Node, Release, RoleMeta};
use plinth_common::tags::Catalog;

fn release() -> Release {
    let mut r = Release::default();
    for role in ["controller", "compute"] {
        r.roles_metadata.insert(role.into(), RoleMeta::default());
    }
    r
}

fn nodes() -> Vec<Node> {
    vec![
        Node::new(1, "node-1", &["controller"]),
        Node::new(2, "node-2", &["controller"]),
        Node::new(3, "node-3", &["compute"]),
    ]
}

fn error(yaml: &str) -> String {
    error_on(yaml, &nodes(), None)
}

fn error_on(yaml: &str, nodes: &[Node], selection: Option<&[u64]>) -> String {
    let graph = Graph::with_tasks(parse_tasks(yaml, "t").expect("parses"));
    let origin = Origin::Release;
    let merged = match merge(&[GraphSource {
        origin: &origin,
        graph: &graph,
    }]) {
        Ok(m) => m,
        Err(e) => return e.to_string(),
    };
    let r = release();
    let catalog = Catalog::new(&r, &[], None);
    let all: Vec<u64> = nodes.iter().map(|n| n.id).collect();
    resolve(&ResolveRequest {
        graph_type: "default",
        graph: &merged,
        catalog: &catalog,
        nodes,
        selection: Some(selection.unwrap_or(&all)),
        evaluator: &NoExpressions,
    })
    .map(|_| "resolved".to_string())
    .unwrap_or_else(|e| e.to_string())
}

#[test]
fn a_cycle_on_one_node_names_its_tasks_and_nodes() {
    assert_eq!(
        error(
            "- {id: a, type: shell, role: [controller], requires: [c]}\n\
             - {id: b, type: shell, role: [controller], requires: [a]}\n\
             - {id: c, type: shell, role: [controller], requires: [b]}\n"
        ),
        "dependency cycle a -> b -> c -> a on node(s) node-1, node-2"
    );
    assert_eq!(
        error("- {id: a, type: shell, role: [compute], required_for: [a]}\n"),
        "dependency cycle a -> a on node(s) node-3"
    );
}

#[test]
fn a_cycle_through_a_task_not_on_the_node_still_counts() {
    // b is not on the compute, but a -> b -> c -> a holds through it.
    assert_eq!(
        error(
            "- {id: a, type: shell, role: [compute], requires: [c]}\n\
             - {id: b, type: shell, role: [controller], requires: [a]}\n\
             - {id: c, type: shell, role: [compute], requires: [b]}\n"
        ),
        "dependency cycle a -> b -> c -> a on node(s) node-1, node-2, node-3"
    );
}

#[test]
fn a_same_node_cross_dependency_cycle() {
    assert_eq!(
        error(
            "- {id: a, type: shell, role: [compute], requires: [b]}\n\
             - {id: b, type: shell, role: [compute], cross-depends: [{name: a, role: self}]}\n"
        ),
        "dependency cycle a -> b -> a on node(s) node-3"
    );
}

#[test]
fn a_deadlock_across_nodes_names_tasks_and_nodes() {
    // The controllers run x then y; the compute runs p then q. y waits for p; q... and p waits for y.
    assert_eq!(
        error(
            "- {id: x, type: shell, role: [controller]}\n\
             - {id: y, type: shell, role: [controller], requires: [x], cross-depends: [{name: p}]}\n\
             - {id: p, type: shell, role: [compute], cross-depends: [{name: y}]}\n"
        ),
        "dependency cycle p@node-3 -> y@node-1 -> p@node-3 on node(s) node-1, node-2, node-3"
    );
    // Every controller waiting for the same task on every other controller cannot start.
    assert_eq!(
        error("- {id: x, type: shell, role: [controller], cross-depends: [{name: x, role: [controller]}]}\n"),
        "dependency cycle x -> x on node(s) node-1, node-2"
    );
    // On one controller alone it waits for nothing.
    assert_eq!(
        error_on(
            "- {id: x, type: shell, role: [controller], cross-depends: [{name: x, role: [controller]}]}\n",
            &nodes(),
            Some(&[1, 3])
        ),
        "resolved"
    );
}

#[test]
fn orders_across_nodes_follow_waits_not_list_positions() {
    // Left alone, each list would run its own tasks first and deadlock; one global order avoids it.
    assert_eq!(
        error(
            "- {id: a1, type: shell, role: [controller]}\n\
             - {id: b1, type: shell, role: [compute]}\n\
             - {id: a2, type: shell, role: [controller], cross-depends: [{name: b1}]}\n\
             - {id: b2, type: shell, role: [compute], cross-depends: [{name: a1}]}\n"
        ),
        "resolved"
    );
}

#[test]
fn dependencies_on_unknown_tasks() {
    assert_eq!(
        error("- {id: a, type: shell, role: [compute], requires: [ghost]}\n"),
        "task \"a\": requires names \"ghost\", which is not a task of the merged graph"
    );
    // A `required_for` naming no task orders nothing: it is dropped, as Fuel does (the shape check warns).
    assert_eq!(
        error("- {id: a, type: shell, role: [compute], required_for: [ghost]}\n"),
        "resolved"
    );
    assert_eq!(
        error("- {id: a, type: shell, role: [compute], cross-depends: [{name: ghost}]}\n"),
        "task \"a\": cross_depends names \"ghost\", which is not a task of the merged graph"
    );
    assert_eq!(
        error("- {id: a, type: shell, role: [compute], cross-depended-by: [{name: '/^gh/'}]}\n"),
        "task \"a\": cross_depended_by names \"/^gh/\", which is not a task of the merged graph"
    );
    assert_eq!(
        error("- {id: g, type: group, role: [compute], tasks: [ghost]}\n"),
        "task \"g\": tasks names \"ghost\", which is not a task of the merged graph"
    );
    // A dependency on a task that exists but runs on no node concerned is satisfied.
    assert_eq!(
        error(
            "- {id: a, type: shell, role: [compute], requires: [b], cross-depends: [{name: b, role: [compute]}]}\n\
             - {id: b, type: shell, role: [ghost-role]}\n"
        ),
        "resolved"
    );
}

#[test]
fn bad_input() {
    assert_eq!(
        error("- {id: a, type: shell}\n- {id: a, type: puppet}\n"),
        "release: task \"a\" is defined twice"
    );
    assert_eq!(
        error("- {id: a, type: shell, tags: ['/(oops/']}\n"),
        "task \"a\", field tags: invalid regular expression /(oops/: regex parse error:\n    (oops\n    ^\nerror: unclosed group"
    );
    assert_eq!(
        error("- {id: a, type: shell, role: [compute], parameters: {strategy: {type: sometimes}}}\n"),
        "task \"a\", field parameters.strategy: parameters.strategy.type must be one_by_one or parallel, not \"sometimes\""
    );
    assert_eq!(
        error("- {id: a, type: shell, role: [compute], cross-depends: {yaql_exp: deps}}\n"),
        "task \"a\", field cross_depends, node node-3: task \"a\", field cross_depends: computed values are not available here (expression \"deps\")"
    );
    assert_eq!(
        error_on(
            "- {id: a, type: shell}\n",
            &[Node::new(0, "zero", &[])],
            None
        ),
        "node zero: id 0 is reserved for the controller's own host"
    );
    assert_eq!(
        error_on("- {id: a, type: shell}\n", &nodes(), Some(&[1, 9])),
        "node 9: is not in the cluster"
    );
}
