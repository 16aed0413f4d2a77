//! Resolution: the seeds' examples, overrides, plugins, computed fields, conditions, waits, filters.

use plinth_common::graph::{
    merge, merge_for_cluster, resolve, EvalContext, FieldEvaluator, GraphSource, NoExpressions,
    Origin, Plan, ResolveError, ResolveRequest,
};
use plinth_common::model::{
    parse_tasks, Cluster, Concurrency, FaultTolerance, Graph, Node, NodeStatus, Plugin, Policy,
    Release, RoleMeta, StrategyKind, TaskType,
};
use plinth_common::tags::Catalog;
use plinth_common::wire::{CrossDependency, TaskKind};
use serde_json::{json, Value};

fn tasks(yaml: &str) -> Graph {
    Graph::with_tasks(parse_tasks(yaml, "test").expect("tasks parse"))
}

fn release(roles: &[(&str, &[&str])]) -> Release {
    let mut r = Release {
        name: "r".into(),
        ..Release::default()
    };
    for (name, tags) in roles {
        r.roles_metadata.insert(
            name.to_string(),
            RoleMeta {
                tags: tags.iter().map(|t| t.to_string()).collect(),
                ..RoleMeta::default()
            },
        );
        for t in *tags {
            r.tags_metadata.entry(t.to_string()).or_default();
        }
    }
    r
}

fn node(id: u64, roles: &[&str]) -> Node {
    let mut n = Node::new(id, format!("node-{id}"), roles);
    n.status = NodeStatus::Ready;
    n
}

fn run(
    graph: &Graph,
    catalog: &Catalog,
    nodes: &[Node],
    eval: &dyn FieldEvaluator,
) -> Result<Plan, ResolveError> {
    let origin = Origin::Release;
    let merged = merge(&[GraphSource {
        origin: &origin,
        graph,
    }])?;
    let ids: Vec<u64> = nodes.iter().map(|n| n.id).collect();
    resolve(&ResolveRequest {
        graph_type: "default",
        graph: &merged,
        catalog,
        nodes,
        selection: Some(&ids),
        evaluator: eval,
    })
}

fn ids(plan: &Plan, node: u64) -> Vec<String> {
    plan.node(node)
        .map(|n| n.tasks.iter().map(|t| t.id.to_string()).collect())
        .unwrap_or_default()
}

/// Answers expressions from a closure.
struct Eval<F>(F);

impl<F: Fn(&EvalContext<'_>, &str) -> Result<Value, String> + Sync> FieldEvaluator for Eval<F> {
    fn evaluate(&self, c: &EvalContext<'_>, e: &str) -> Result<Value, String> {
        (self.0)(c, e)
    }
    fn node_filter(&self, node: &Node, e: &str) -> Result<bool, String> {
        match e {
            "odd" => Ok(node.id % 2 == 1),
            _ => Err(format!("unknown filter {e}")),
        }
    }
    fn cluster_expression(&self, _: &str) -> Result<Value, String> {
        Ok(Value::Bool(false))
    }
}

#[test]
fn the_seed_resolver_example() {
    let graph = tasks(
        "- {id: mysql, type: puppet, tags: [controller, mysql]}\n\
         - {id: haproxy, type: puppet, role: [controller]}\n\
         - {id: globals, type: puppet, role: ['/.*/']}\n\
         - {id: compute-only, type: puppet, tags: [compute]}\n",
    );
    let r = release(&[("controller", &["controller"]), ("compute", &["compute"])]);
    let catalog = Catalog::new(&r, &[], None);
    let mut n1 = node(1, &["controller"]);
    n1.tags_added = vec!["mysql".into()];
    let plan = run(
        &graph,
        &catalog,
        &[n1, node(2, &["compute"])],
        &NoExpressions,
    )
    .unwrap();
    assert_eq!(ids(&plan, 1), ["mysql", "haproxy", "globals"]);
    assert_eq!(ids(&plan, 2), ["globals", "compute-only"]);
}

#[test]
fn override_chain_release_plugins_cluster() {
    let mut r = release(&[("controller", &["controller"])]);
    r.graphs.insert(
        "default".into(),
        tasks(
            "- {id: a, type: shell, tags: [controller], parameters: {cmd: release}}\n\
             - {id: b, type: shell, tags: [controller], parameters: {cmd: release-b}}\n",
        ),
    );
    let mut p = Plugin {
        name: "p1".into(),
        ..Plugin::default()
    };
    p.graphs.insert(
        "default".into(),
        tasks(
            "- {id: c, type: shell, tags: [controller], parameters: {cmd: plugin-c}}\n\
             - {id: a, type: puppet, tags: [controller], parameters: {cmd: plugin}}\n",
        ),
    );
    let mut cluster = Cluster {
        release: "r".into(),
        plugins: vec!["p1".into()],
        ..Cluster::default()
    };
    cluster.graphs.insert(
        "default".into(),
        tasks("- {id: b, type: shell, tags: [controller], parameters: {cmd: cluster}}\n"),
    );
    cluster.graphs.insert(
        "usecase1".into(),
        tasks("- {id: only, type: shell, tags: [controller]}\n"),
    );
    let merged = merge_for_cluster(&r, &[&p], &cluster, "default").unwrap();
    let order: Vec<_> = merged.tasks.iter().map(|t| t.task.id.as_str()).collect();
    assert_eq!(order, ["a", "b", "c"], "first appearance kept");
    assert_eq!(merged.tasks[0].task.parameters["cmd"], "plugin");
    assert_eq!(
        merged.tasks[0].task.task_type,
        TaskType::Puppet,
        "replaced whole"
    );
    assert_eq!(merged.tasks[0].origin, Origin::Plugin("p1".into()));
    assert_eq!(merged.tasks[0].replaced, [Origin::Release]);
    assert_eq!(merged.tasks[1].task.parameters["cmd"], "cluster");
    assert_eq!(merged.tasks[1].origin, Origin::Cluster);
    let custom = merge_for_cluster(&r, &[&p], &cluster, "usecase1").unwrap();
    assert_eq!(custom.tasks.len(), 1);
    assert!(merge_for_cluster(&r, &[&p], &cluster, "nothing")
        .unwrap()
        .tasks
        .is_empty());
}

fn plugin_with_role(name: &str, role: &str, graph: &str) -> Plugin {
    let mut p = Plugin {
        name: name.into(),
        ..Plugin::default()
    };
    p.roles_metadata.insert(role.into(), RoleMeta::default());
    p.graphs.insert("default".into(), tasks(graph));
    p
}

#[test]
fn two_plugins_overriding_one_task() {
    let mut r = release(&[("controller", &["controller"])]);
    r.graphs.insert(
        "default".into(),
        tasks("- {id: shared, type: shell, role: ['/.*/']}\n"),
    );
    let a = plugin_with_role(
        "alpha",
        "alpha-role",
        "- {id: shared, type: shell, role: [alpha-role]}\n",
    );
    let b = plugin_with_role(
        "beta",
        "beta-role",
        "- {id: shared, type: shell, role: [beta-role]}\n",
    );
    let cluster = Cluster {
        release: "r".into(),
        plugins: vec!["alpha".into(), "beta".into()],
        ..Cluster::default()
    };
    let merged = merge_for_cluster(&r, &[&a, &b], &cluster, "default").unwrap();
    assert_eq!(merged.plugin_overlaps.len(), 1);
    let catalog = Catalog::new(&r, &[&a, &b], Some(&cluster));
    let resolve_on = |nodes: &[Node]| {
        let ids: Vec<u64> = nodes.iter().map(|n| n.id).collect();
        resolve(&ResolveRequest {
            graph_type: "default",
            graph: &merged,
            catalog: &catalog,
            nodes,
            selection: Some(&ids),
            evaluator: &NoExpressions,
        })
    };
    // Roles of both plugins on one node: an error naming both plugins, the task and the node.
    let err = resolve_on(&[
        node(1, &["alpha-role", "beta-role"]),
        node(2, &["controller"]),
    ])
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "plugins \"alpha\" and \"beta\" both define task \"shared\", and node(s) node-1 carry roles of both"
    );
    // On different nodes: fine, and the later plugin's task wins.
    let plan = resolve_on(&[node(1, &["alpha-role"]), node(2, &["beta-role"])]).unwrap();
    assert!(ids(&plan, 1).is_empty());
    assert_eq!(ids(&plan, 2), ["shared"]);
}

#[test]
fn alike_nodes_share_one_copy_of_their_tasks_unless_a_task_computes_per_node() {
    let graph = tasks(
        "- id: plain\n  type: shell\n  tags: [web]\n  parameters: {cmd: 'echo web'}\n\
         - id: own\n  type: shell\n  tags: [db]\n  parameters: {cmd: {yaql_exp: 'cmd'}}\n",
    );
    let r = release(&[("web", &["web"]), ("db", &["db"])]);
    let catalog = Catalog::new(&r, &[], None);
    let eval = Eval(|c: &EvalContext<'_>, _: &str| -> Result<Value, String> {
        Ok(json!(format!("echo {}", c.node_id)))
    });
    let nodes = [
        node(1, &["web"]),
        node(2, &["web"]),
        node(3, &["db"]),
        node(4, &["db"]),
    ];
    let plan = run(&graph, &catalog, &nodes, &eval).unwrap();
    let tasks_of = |id: u64| plan.node(id).unwrap().tasks.clone();
    assert!(
        std::sync::Arc::ptr_eq(&tasks_of(1), &tasks_of(2)),
        "web nodes compute nothing of their own: one copy"
    );
    assert!(!std::sync::Arc::ptr_eq(&tasks_of(3), &tasks_of(4)));
    assert_eq!(tasks_of(3)[0].parameters["cmd"], "echo 3");
    assert_eq!(tasks_of(4)[0].parameters["cmd"], "echo 4");
    assert_eq!(tasks_of(2)[0].parameters["cmd"], "echo web");
}

#[test]
fn computed_fields_conditions_and_skips() {
    let graph = tasks(
        "- id: first\n  type: shell\n  tags: [web]\n  parameters: {cmd: {yaql_exp: 'cmd'}, nested: {list: [1, {yaql_exp: 'deep'}]}}\n\
         - id: maybe\n  type: puppet\n  tags: [web]\n  requires: [first]\n  condition: {yaql_exp: 'odd node'}\n  parameters: {manifest: {yaql_exp: 'never for skipped'}}\n\
         - id: last\n  type: shell\n  tags: [web]\n  requires: [maybe]\n  condition: true\n\
         - id: never\n  type: shell\n  tags: [web]\n  condition: false\n",
    );
    let r = release(&[("web", &["web"])]);
    let catalog = Catalog::new(&r, &[], None);
    let eval = Eval(|c: &EvalContext<'_>, e: &str| -> Result<Value, String> {
        match e {
            "cmd" => Ok(json!(format!("echo {} {}", c.node_id, c.field_path))),
            "deep" => Ok(json!({"at": c.field_path})),
            "odd node" => Ok(json!(c.node_id % 2 == 1)),
            // Only evaluated where the task runs: node 2 skips it.
            "never for skipped" if c.node_id == 1 => Ok(json!("site.pp")),
            other => Err(format!("unexpected {other} in {}", c.field_path)),
        }
    });
    let plan = run(
        &graph,
        &catalog,
        &[node(1, &["web"]), node(2, &["web"])],
        &eval,
    )
    .unwrap();
    let n1 = plan.node(1).unwrap();
    assert_eq!(n1.tasks[0].parameters["cmd"], "echo 1 parameters.cmd");
    assert_eq!(
        n1.tasks[0].parameters["nested"],
        json!({"list": [1, {"at": "parameters.nested.list[1]"}]})
    );
    assert_eq!(n1.tasks[1].task_type, TaskType::Puppet);
    let n2 = plan.node(2).unwrap();
    let kept: Vec<_> = n2
        .tasks
        .iter()
        .map(|t| (t.id.to_string(), t.task_type.clone()))
        .collect();
    assert_eq!(
        kept,
        [
            ("first".to_string(), TaskType::Shell),
            ("maybe".to_string(), TaskType::Skipped),
            ("last".to_string(), TaskType::Shell),
            ("never".to_string(), TaskType::Skipped),
        ],
        "skipped tasks stay in place so that edges hold"
    );
    assert_eq!(
        n2.tasks[1].skip_reason.as_deref(),
        Some("condition is false")
    );
    assert!(n2.tasks[1].parameters.is_empty());
    // Without an engine, a computed field is an error that says where.
    let err = run(&graph, &catalog, &[node(1, &["web"])], &NoExpressions).unwrap_err();
    assert_eq!(
        err.to_string(),
        "task \"first\", field parameters.cmd, node node-1: task \"first\", field parameters.cmd: computed values are not available here (expression \"cmd\")"
    );
}

#[test]
fn strategy_fault_tolerance_and_agent_specs() {
    let graph = tasks(
        "- {id: ctl, type: group, role: [controller], fault_tolerance: 1, parameters: {strategy: {type: one_by_one}}}\n\
         - {id: db, type: puppet, groups: [ctl], parameters: {strategy: {type: parallel, amount: {yaql_exp: amount}}}}\n\
         - {id: web, type: shell, tags: [compute], cross-depends: [{name: db}]}\n\
         - {id: poll, type: shell, tags: [compute], cross-depends: [{name: web, policy: any}]}\n",
    );
    let r = release(&[("controller", &["controller"]), ("compute", &["compute"])]);
    let catalog = Catalog::new(&r, &[], None);
    let eval = Eval(|_: &EvalContext<'_>, _: &str| -> Result<Value, String> { Ok(json!(2)) });
    let nodes = [
        node(1, &["controller"]),
        node(2, &["controller"]),
        node(3, &["compute"]),
        node(4, &["compute"]),
    ];
    let plan = run(&graph, &catalog, &nodes, &eval).unwrap();
    let db = &plan.node(1).unwrap().tasks[1];
    assert_eq!(&*db.id, "db");
    assert_eq!(
        db.strategy,
        Some(Concurrency {
            kind: StrategyKind::Parallel,
            amount: Some(2)
        })
    );
    assert_eq!(db.fault_tolerance, Some(FaultTolerance::Count(1)));
    assert_eq!(db.group.as_deref(), Some("ctl"));
    assert_eq!(plan.fault_tolerance_groups[0].node_ids, [1, 2]);

    let specs = plan.task_specs(plan.node(3).unwrap()).unwrap();
    assert_eq!(specs[0].id, "web");
    assert_eq!(specs[0].kind, TaskKind::Shell);
    assert_eq!(
        specs[0].waits_for,
        [
            CrossDependency {
                node_id: 1,
                task: "db".into()
            },
            CrossDependency {
                node_id: 2,
                task: "db".into()
            },
        ]
    );
    assert!(specs[0].gated);
    // `any`: no fixed list, the controller gates it; the node never waits for itself.
    assert!(specs[1].waits_for.is_empty() && specs[1].gated);
    let any = &plan.wait_sets[plan.node(3).unwrap().tasks[1].waits[0] as usize];
    assert_eq!(any.policy, Policy::Any);
    assert_eq!(any.targets[0].nodes, [3, 4]);
    assert_eq!(any.entries_for(3).collect::<Vec<_>>(), [(4, "web")]);
    // The controller answers gated tasks from the shared sets.
    let web = &plan.node(3).unwrap().tasks[0];
    assert!(!plan.waits_met(3, web, |n, t| n == 1 && t == "db"));
    assert!(plan.waits_met(3, web, |_, t| t == "db"));
    let poll = &plan.node(3).unwrap().tasks[1];
    assert!(
        !plan.waits_met(3, poll, |n, _| n == 3),
        "its own web does not count"
    );
    assert!(plan.waits_met(3, poll, |n, t| n == 4 && t == "web"));
    let ctl = plan.task_specs(plan.node(1).unwrap()).unwrap();
    assert_eq!(ctl[0].kind, TaskKind::Group);
    assert!(ctl[0].gated, "one_by_one is gated");
}

#[test]
fn compute_to_compute_any_waits_share_one_set() {
    let graph = tasks(
        "- {id: up, type: shell, tags: [compute]}\n\
         - {id: join, type: shell, tags: [compute], requires: [up], cross-depends: [{name: up, role: [compute], policy: any}]}\n",
    );
    let r = release(&[("compute", &["compute"])]);
    let catalog = Catalog::new(&r, &[], None);
    let nodes: Vec<Node> = (1..=500).map(|i| node(i, &["compute"])).collect();
    let plan = run(&graph, &catalog, &nodes, &NoExpressions).unwrap();
    assert_eq!(plan.wait_sets.len(), 1, "one shared set, not one per node");
    assert_eq!(plan.wait_sets[0].targets[0].nodes.len(), 500);
    assert!(plan.nodes.iter().all(|n| n.tasks[1].waits == [0]));
}

#[test]
fn node_filters_select_nodes() {
    let graph = tasks("- {id: t, type: shell, role: ['*']}\n");
    let r = release(&[("compute", &["compute"])]);
    let catalog = Catalog::new(&r, &[], None);
    let mut nodes: Vec<Node> = (1..=4).map(|i| node(i, &["compute"])).collect();
    nodes[1].pending_addition = true;
    nodes[2].status = NodeStatus::Error;
    nodes[2].error_type = Some("deploy".into());
    nodes[3].status = NodeStatus::Discover;
    let origin = Origin::Release;
    let mut merged = merge(&[GraphSource {
        origin: &origin,
        graph: &graph,
    }])
    .unwrap();
    let request = |merged: &plinth_common::graph::MergedGraph| {
        let eval =
            Eval(|_: &EvalContext<'_>, _: &str| -> Result<Value, String> { Ok(Value::Null) });
        resolve(&ResolveRequest {
            graph_type: "default",
            graph: merged,
            catalog: &catalog,
            nodes: &nodes,
            selection: None,
            evaluator: &eval,
        })
        .map(|p| p.nodes.iter().map(|n| n.node_id).collect::<Vec<_>>())
    };
    // Default: ready, or failed their last deployment; never pending addition.
    assert_eq!(request(&merged).unwrap(), [1, 3]);
    merged.node_filter = Some("odd".into());
    assert_eq!(request(&merged).unwrap(), [1, 3]);
    merged.node_filter = Some("bad".into());
    assert_eq!(
        request(&merged).unwrap_err().to_string(),
        "node filter on node node-1: unknown filter bad"
    );
}

#[test]
fn the_plan_serializes_for_serialized_tasks() {
    let graph = tasks("- {id: t, type: shell, tags: [web], parameters: {cmd: 'true'}}\n");
    let r = release(&[("web", &["web"])]);
    let catalog = Catalog::new(&r, &[], None);
    let plan = run(&graph, &catalog, &[node(1, &["web"])], &NoExpressions).unwrap();
    let value = serde_json::to_value(&plan).unwrap();
    assert_eq!(
        value,
        json!({
            "graph_type": "default",
            "nodes": [{"node_id": 1, "name": "node-1", "tags": ["web"],
                       "tasks": [{"id": "t", "type": "shell", "parameters": {"cmd": "true"}}]}],
            "wait_sets": [],
            "fault_tolerance_groups": [],
            "primaries": {}
        })
    );
}

/// Fuel's `hiera_default_route`: a computed `cross_depended_by` that differs by node changes the order
/// on those nodes only (nodes are split into classes by their computed dependencies).
#[test]
fn computed_dependencies_order_per_node() {
    let graph = tasks(
        "- {id: a, type: shell, tags: [web]}\n\
         - {id: b, type: shell, tags: [web]}\n\
         - {id: route, type: shell, tags: [web], requires: [a], cross-depended-by: {yaql_exp: deps}}\n",
    );
    let r = release(&[("web", &["web"])]);
    let catalog = Catalog::new(&r, &[], None);
    let eval = Eval(|c: &EvalContext<'_>, e: &str| -> Result<Value, String> {
        assert_eq!((e, c.field_path), ("deps", "cross_depended_by"));
        Ok(if c.node_id == 2 {
            json!([{"name": "b", "role": "self"}])
        } else {
            Value::Null
        })
    });
    let nodes = [node(1, &["web"]), node(2, &["web"]), node(3, &["web"])];
    let plan = run(&graph, &catalog, &nodes, &eval).unwrap();
    assert_eq!(ids(&plan, 1), ["a", "b", "route"]);
    assert_eq!(ids(&plan, 2), ["a", "route", "b"]);
    assert_eq!(ids(&plan, 3), ["a", "b", "route"]);
    // A computed dependency that is not a list of entries is an error naming task, field and node.
    let bad = Eval(|_: &EvalContext<'_>, _: &str| -> Result<Value, String> { Ok(json!(42)) });
    let err = run(&graph, &catalog, &nodes, &bad).unwrap_err().to_string();
    assert!(
        err.starts_with("task \"route\", field cross_depended_by, node node-1: expected a list of {name, role|tags, policy} entries"),
        "{err}"
    );
}

#[test]
fn resolution_is_deterministic() {
    let graph = tasks(
        "- {id: s, type: stage}\n\
         - {id: x, type: shell, role: ['*'], requires: [s], cross-depends: [{name: y, role: [controller]}]}\n\
         - {id: y, type: shell, role: [controller], requires: [s]}\n\
         - {id: z, type: shell, role: [compute], requires: [x], cross-depends: [{name: x, policy: any}]}\n",
    );
    let r = release(&[("controller", &["controller"]), ("compute", &["compute"])]);
    let catalog = Catalog::new(&r, &[], None);
    let nodes: Vec<Node> = (1..=40)
        .map(|i| node(i, &[if i % 4 == 0 { "controller" } else { "compute" }]))
        .collect();
    let first = run(&graph, &catalog, &nodes, &NoExpressions).unwrap();
    for _ in 0..5 {
        assert_eq!(
            run(&graph, &catalog, &nodes, &NoExpressions).unwrap(),
            first
        );
    }
    assert_eq!(ids(&first, 4), ["s", "y", "x"]);
    assert_eq!(ids(&first, 1), ["s", "x", "z"]);
}

#[test]
fn other_fields_are_computed_too() {
    let graph = tasks(
        "- id: t\n  type: shell\n  tags: [web]\n  test_post: {cmd: {yaql_exp: check}}\n  refresh_on: [a]\n",
    );
    let r = release(&[("web", &["web"])]);
    let catalog = Catalog::new(&r, &[], None);
    let eval = Eval(|c: &EvalContext<'_>, _: &str| -> Result<Value, String> {
        Ok(json!(format!("check {} at {}", c.node_id, c.field_path)))
    });
    let plan = run(&graph, &catalog, &[node(7, &["web"])], &eval).unwrap();
    let t = &plan.node(7).unwrap().tasks[0];
    assert_eq!(
        *t.extra,
        *json!({"test_post": {"cmd": "check 7 at test_post.cmd"}, "refresh_on": ["a"]})
            .as_object()
            .unwrap()
    );
}

/// A `master_shell` task runs on the controller's own host once for each node it is placed on, with
/// that node's parameters, after the node's task before it; the node's own entry waits for it.
#[test]
fn master_shell_runs_on_the_master_once_per_node_between_the_nodes_tasks() {
    let g = tasks(
        "- {id: a, type: shell, role: [compute], parameters: {cmd: 'true'}}\n\
         - {id: m, type: master_shell, role: [compute], requires: [a], parameters: {cmd: {yaql_exp: 'concat(\"echo \", $.node.name)'}}}\n\
         - {id: b, type: shell, role: [compute], requires: [m], parameters: {cmd: 'true'}}\n",
    );
    let r = release(&[("compute", &["compute"])]);
    let catalog = Catalog::new(&r, &[], None);
    let nodes = [node(1, &["compute"]), node(2, &["compute"])];
    struct NodeName;
    impl FieldEvaluator for NodeName {
        fn evaluate(&self, context: &EvalContext<'_>, _: &str) -> Result<Value, String> {
            Ok(json!(format!("echo node-{}", context.node_id)))
        }
        fn node_filter(&self, _: &Node, _: &str) -> Result<bool, String> {
            Ok(true)
        }
        fn cluster_expression(&self, _: &str) -> Result<Value, String> {
            Ok(Value::Null)
        }
    }
    let plan = run(&g, &catalog, &nodes, &NodeName).expect("resolves");
    let master = plan.node(0).expect("the master has the copies");
    let copies: Vec<(&str, &Value)> = master
        .tasks
        .iter()
        .map(|t| (&*t.id, &t.parameters["cmd"]))
        .collect();
    assert_eq!(
        copies,
        [
            ("m@node-1", &json!("echo node-1")),
            ("m@node-2", &json!("echo node-2"))
        ]
    );
    let specs = plan.task_specs(master).expect("specs");
    assert_eq!(specs[0].kind, TaskKind::Shell);
    assert_eq!(
        specs[0].waits_for,
        [CrossDependency {
            node_id: 1,
            task: "a".into()
        }]
    );
    let on_node = plan
        .task_specs(plan.node(1).expect("node 1"))
        .expect("specs");
    let m = on_node
        .iter()
        .find(|s| s.id == "m")
        .expect("the node's entry");
    assert_eq!(m.kind, TaskKind::Stage);
    assert_eq!(
        m.waits_for,
        [CrossDependency {
            node_id: 0,
            task: "m@node-1".into()
        }]
    );
}
