//! Computed structure (seed 001: "any task field except for id"): placement, `requires`,
//! `required_for`, a group's `tasks`, `groups`, `type`, `version` and `fault_tolerance` written as
//! `{yaql_exp: ...}`, computed per node with the real expression engine before placing and ordering.
//!
//! Each case is a graph and what a task author sees: every node's list in order (`id`, or `id:type`
//! when the type is not `shell`), or the exact error. The cluster: node-1 a controller, node-2 and
//! node-3 computes.

use plinth_common::deploy::{DeployData, OldStates, YaqlFields};
use plinth_common::expr::{Engine, ExprCache};
use plinth_common::graph::{
    check_deployment, merge, resolve, GraphSource, Origin, Plan, ResolveRequest, Severity,
};
use plinth_common::model::{parse_tasks, Cluster, Graph, Node, Release, RoleMeta, TaskType};
use plinth_common::tags::{cluster_tags, Catalog};
use std::sync::Arc;

fn release() -> Release {
    let mut r = Release {
        name: "r".into(),
        ..Release::default()
    };
    for role in ["controller", "compute"] {
        r.roles_metadata.insert(role.into(), RoleMeta::default());
    }
    r
}

fn nodes() -> Vec<Node> {
    vec![
        Node::new(1, "node-1", &["controller"]),
        Node::new(2, "node-2", &["compute"]),
        Node::new(3, "node-3", &["compute"]),
    ]
}

/// Resolves `sources` (merged in order: release, then cluster) with YAQL; the plan or the error.
fn run(sources: &[(&Origin, &str)], check: bool) -> (Result<Plan, String>, Vec<String>) {
    let graphs: Vec<Graph> = sources
        .iter()
        .map(|(_, yaml)| Graph::with_tasks(parse_tasks(yaml, "tasks.yaml").expect("parses")))
        .collect();
    let merged = merge(
        &sources
            .iter()
            .zip(&graphs)
            .map(|((origin, _), graph)| GraphSource { origin, graph })
            .collect::<Vec<_>>(),
    )
    .expect("merges");
    let release = release();
    let cluster = Cluster {
        name: "c".into(),
        release: "r".into(),
        ..Cluster::default()
    };
    let nodes = nodes();
    let catalog = Catalog::new(&release, &[], Some(&cluster));
    let tags = cluster_tags(&nodes, &catalog);
    let evaluator = YaqlFields::new(
        Arc::new(Engine::new()),
        Arc::new(ExprCache::new()),
        DeployData::build(1, &cluster, &release, &nodes, &tags),
        OldStates::new(),
        false,
    );
    let ids: Vec<u64> = nodes.iter().map(|n| n.id).collect();
    let request = ResolveRequest {
        graph_type: "default",
        graph: &merged,
        catalog: &catalog,
        nodes: &nodes,
        selection: Some(&ids),
        evaluator: &evaluator,
    };
    let findings = if check {
        check_deployment(&request)
            .into_iter()
            .filter(|f| f.code != "unassigned_tag")
            .map(|f| {
                let s = if f.severity == Severity::Error {
                    "error"
                } else {
                    "warning"
                };
                format!("{s} {}: {}", f.code, f.message)
            })
            .collect()
    } else {
        Vec::new()
    };
    (resolve(&request).map_err(|e| e.to_string()), findings)
}

/// Every node's list, one line per node: `node-1: a b:skipped`.
fn lists(plan: &Plan) -> String {
    plan.nodes
        .iter()
        .map(|n| {
            let tasks: Vec<String> = n
                .tasks
                .iter()
                .map(|t| match t.task_type {
                    TaskType::Shell => t.id.to_string(),
                    ref other => format!("{}:{other}", t.id),
                })
                .collect();
            format!("{}: {}", n.name, tasks.join(" "))
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn outcome(yaml: &str) -> String {
    match run(&[(&Origin::Release, yaml)], false).0 {
        Ok(plan) => lists(&plan),
        Err(e) => format!("error: {e}"),
    }
}

/// (what the case shows, the graph, every node's list or the error).
const CASES: &[(&str, &str, &str)] = &[
    (
        "computed requires give each node its own order",
        r#"
- {id: a, type: shell, role: ['*'], requires: {yaql_exp: "switch($.name = 'node-1' => ['b'], true => [])"}}
- {id: b, type: shell, role: ['*']}
"#,
        "node-1: b a\nnode-2: a b\nnode-3: a b",
    ),
    (
        "computed required_for, null is the field left out",
        r#"
- {id: a, type: shell, role: ['*']}
- {id: b, type: shell, role: ['*'], required_for: {yaql_exp: "switch('compute' in $.roles => 'a', true => null)"}}
"#,
        "node-1: a b\nnode-2: b a\nnode-3: b a",
    ),
    (
        "one entry of a list computed, the others as written",
        r#"
- {id: c, type: shell, role: ['*']}
- {id: a, type: shell, role: ['*'], requires: [c, {yaql_exp: "switch($.uid = '3' => ['b'], true => null)"}]}
- {id: b, type: shell, role: ['*']}
"#,
        "node-1: c a b\nnode-2: c a b\nnode-3: c b a",
    ),
    (
        "a cycle that only one node's computed requires close is named with that node",
        r#"
- {id: a, type: shell, role: ['*'], requires: {yaql_exp: "switch($.name = 'node-2' => ['b'], true => [])"}}
- {id: b, type: shell, role: ['*'], requires: [a]}
"#,
        "error: dependency cycle a -> b -> a on node(s) node-2",
    ),
    (
        "a computed name that is no task names the task, the field and the nodes",
        r#"
- {id: a, type: shell, role: ['*'], requires: {yaql_exp: "switch('compute' in $.roles => ['nope'], true => [])"}}
"#,
        "error: task \"a\", field requires, node node-2, node-3: names \"nope\", which is not a task of the merged graph",
    ),
    (
        "computed roles and tags decide placement on each node",
        r#"
- {id: a, type: shell, roles: {yaql_exp: "switch($.name = 'node-3' => ['compute'], true => [])"}}
- {id: b, type: shell, tags: {yaql_exp: "$.roles"}}
- {id: c, type: shell, role: {yaql_exp: "'controller'"}}
"#,
        "node-1: b c\nnode-2: b\nnode-3: a b",
    ),
    (
        "computed groups place a task through the group's roles",
        r#"
- {id: controllers, type: group, role: [controller]}
- {id: computes, type: group, role: [compute]}
- {id: x, type: shell, groups: {yaql_exp: "switch($.name = 'node-3' => ['computes'], true => ['controllers'])"}}
"#,
        "node-1: controllers:group x\nnode-2: computes:group\nnode-3: computes:group x",
    ),
    (
        "a group's computed tasks take in a member on some nodes",
        r#"
- {id: g, type: group, role: [compute], tasks: {yaql_exp: "switch($.name = 'node-2' => ['x'], true => [])"}}
- {id: x, type: shell}
"#,
        "node-1:\nnode-2: g:group x\nnode-3: g:group",
    ),
    (
        "a group's computed tasks naming no task",
        r#"
- {id: g, type: group, role: [compute], tasks: {yaql_exp: "['nope']"}}
"#,
        "error: task \"g\", field tasks, node node-1, node-2, node-3: names \"nope\", which is not a task of the merged graph",
    ),
    (
        "a computed type per node",
        r#"
- {id: a, role: ['*'], type: {yaql_exp: "switch('controller' in $.roles => 'shell', true => 'skipped')"}, parameters: {cmd: 'true'}}
"#,
        "node-1: a\nnode-2: a:skipped\nnode-3: a:skipped",
    ),
    (
        "a computed type that is no task type",
        r#"
- {id: a, role: ['*'], type: {yaql_exp: "switch('controller' in $.roles => 'shell', true => 'shel')"}}
"#,
        "error: task \"a\", field type, node node-2: computes to \"shel\", which is not a task type (one of puppet, shell, upload_file, copy_files, sync, reboot, group, stage, skipped)",
    ),
    (
        "a computed list that is no list of names",
        r#"
- {id: a, type: shell, role: ['*'], requires: {yaql_exp: "1"}}
"#,
        "error: task \"a\", field requires, node node-1: must compute to a string or a list of strings, not 1",
    ),
    (
        "a computed version must be text",
        r#"
- {id: a, type: shell, role: ['*'], version: {yaql_exp: "2"}}
"#,
        "error: task \"a\", field version, node node-1: must compute to a string, not 2",
    ),
    (
        "computed fields that agree with the written ones change nothing",
        r#"
- {id: a, type: shell, role: ['*'], version: {yaql_exp: "'2.1.0'"}, requires: {yaql_exp: "null"}}
- {id: b, type: shell, role: ['*'], requires: [a]}
"#,
        "node-1: a b\nnode-2: a b\nnode-3: a b",
    ),
    (
        "the controller's host: placed by written placement only, its tasks' other fields computed",
        r#"
- {id: m, type: shell, role: [master], requires: {yaql_exp: "['first']"}}
- {id: first, type: shell, role: [master]}
- {id: c, type: shell, tags: {yaql_exp: "['master']"}}
"#,
        "master: first m\nnode-1:\nnode-2:\nnode-3:",
    ),
];

#[test]
fn computed_structure_per_node() {
    let mut failures = Vec::new();
    for (what, yaml, want) in CASES {
        let got = outcome(yaml);
        if got != *want {
            failures.push(format!("{what}:\n  want {want:?}\n  got  {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_expression_that_fails_names_the_task_the_field_and_the_node() {
    let got = outcome("- {id: a, type: shell, role: ['*'], tags: {yaql_exp: '$.nope'}}\n");
    assert!(
        got.starts_with("error: task \"a\", field tags, node node-1: ")
            && got.contains("key not found: nope"),
        "{got}"
    );
}

#[test]
fn a_groups_computed_fault_tolerance_is_one_value_for_its_nodes() {
    let yaml = r#"
- {id: computes, type: group, role: [compute], fault_tolerance: {yaql_exp: "'50%'"}}
- {id: x, type: shell, groups: [computes]}
"#;
    let plan = run(&[(&Origin::Release, yaml)], false).0.expect("resolves");
    let group = &plan.fault_tolerance_groups[0];
    assert_eq!(
        (group.name.as_str(), group.node_ids.as_slice()),
        ("computes", &[2, 3][..])
    );
    assert_eq!(
        group.fault_tolerance.map(|f| f.to_string()).as_deref(),
        Some("50%")
    );
    let x = plan
        .node(2)
        .unwrap()
        .tasks
        .iter()
        .find(|t| &*t.id == "x")
        .unwrap();
    assert_eq!(
        x.fault_tolerance.map(|f| f.to_string()).as_deref(),
        Some("50%")
    );

    let split = r#"
- {id: computes, type: group, role: [compute], fault_tolerance: {yaql_exp: "switch($.name = 'node-2' => 1, true => 2)"}}
"#;
    assert_eq!(
        outcome(split),
        "error: task \"computes\", field fault_tolerance, node node-2, node-3: computes to 1 on \
         node-2, 2 on node-3; a group's fault tolerance is one value for all its nodes"
    );
}

#[test]
fn checks_report_computed_results_and_see_computed_placement() {
    // The cluster's override keeps a placement, computed: no "runs on no node" warning.
    let release_tasks = "- {id: a, type: shell, role: [controller]}\n";
    let cluster_tasks = "- {id: a, type: shell, tags: {yaql_exp: \"$.roles\"}}\n";
    let (plan, findings) = run(
        &[
            (&Origin::Release, release_tasks),
            (&Origin::Cluster, cluster_tasks),
        ],
        true,
    );
    assert_eq!(findings, Vec::<String>::new());
    assert_eq!(
        lists(&plan.expect("resolves")),
        "node-1: a\nnode-2: a\nnode-3: a"
    );

    // A cycle closed by computed requires is a pre-deployment error naming the node.
    let cyclic = r#"
- {id: a, type: shell, role: ['*'], requires: {yaql_exp: "switch($.name = 'node-3' => ['b'], true => [])"}}
- {id: b, type: shell, role: ['*'], requires: [a]}
"#;
    let (_, findings) = run(&[(&Origin::Release, cyclic)], true);
    assert_eq!(
        findings,
        ["error cycle: dependency cycle a -> b -> a on node(s) node-3"]
    );
}
