//! `snapshot::resolve`, the one resolution the controller's engine and `plinthctl graph resolve` call:
//! what it resolves from a snapshot, and its own errors.

use plinth_common::deploy::{NodeState, OldStates};
use plinth_common::graph::Severity;
use plinth_common::model::{parse_tasks, Graph, Node, NodeStatus, Release, RoleMeta};
use plinth_common::snapshot::{resolve, resolve_owned, Expressions, ResolutionError, Snapshot};
use serde_json::json;
use std::sync::Arc;

fn snapshot(tasks: &str) -> Snapshot {
    let mut release = Release {
        name: "r".into(),
        ..Release::default()
    };
    for role in ["controller", "compute"] {
        release
            .roles_metadata
            .insert(role.into(), RoleMeta::default());
    }
    release.graphs.insert(
        "default".into(),
        Graph::with_tasks(parse_tasks(tasks, "tasks.yaml").expect("parses")),
    );
    let ready = |mut n: Node| {
        n.status = NodeStatus::Ready;
        n
    };
    Snapshot {
        cluster_id: 1,
        release,
        plugins: Vec::new(),
        cluster: Default::default(),
        nodes: vec![
            ready(Node::new(1, "node-1", &["controller"])),
            ready(Node::new(2, "node-2", &["compute"])),
        ],
        named: None,
        forced: false,
        old: OldStates::new(),
    }
}

const TWO: &str = "- {id: a, type: shell, role: [controller], parameters: {cmd: 'true'}}\n\
                   - {id: b, type: shell, role: [compute], requires: [a], cross-depends: [{name: a}], parameters: {cmd: 'true'}}\n";

fn types(t: &[&str]) -> Vec<String> {
    t.iter().map(|s| s.to_string()).collect()
}

#[test]
fn every_node_gets_its_list_once_per_graph_type() {
    let s = snapshot(TWO);
    let r = resolve(
        &s,
        &types(&["default", "default"]),
        &Expressions::standard(),
    )
    .unwrap();
    assert_eq!(r.phases.len(), 1, "a graph type named twice resolves once");
    let phase = &r.phases["default"];
    let ids = |node: u64| -> Vec<String> {
        phase.specs[&node]
            .iter()
            .map(|t| t.id.to_string())
            .collect()
    };
    assert_eq!(ids(1), ["a"]);
    assert_eq!(ids(2), ["b"]);
    assert_eq!(r.plans["default"].nodes.len(), 2);
    assert!(r.states.contains_key(&1) && r.states.contains_key(&2));
    assert!(r.findings.iter().all(|f| f.severity == Severity::Warning));
}

#[test]
fn named_nodes_alone_are_resolved() {
    let mut s = snapshot(TWO);
    s.named = Some(vec![2]);
    let r = resolve(&s, &types(&["default"]), &Expressions::standard()).unwrap();
    let nodes: Vec<u64> = r.phases["default"].specs.keys().copied().collect();
    assert_eq!(nodes, [2]);
}

#[test]
fn an_undefined_graph_type_is_named() {
    let e = resolve(
        &snapshot(TWO),
        &types(&["maintenance"]),
        &Expressions::standard(),
    )
    .unwrap_err();
    assert!(matches!(e, ResolutionError::UndefinedGraphType(ref t) if t == "maintenance"));
    assert_eq!(
        e.to_string(),
        "graph type \"maintenance\" is defined by neither the release, an enabled plugin, nor the cluster"
    );
}

#[test]
fn a_node_filter_that_does_not_evaluate_is_its_own_error() {
    let mut s = snapshot(TWO);
    s.release.graphs["default"].node_filter = Some("$.nodes.where(".into());
    let e = resolve(&s, &types(&["default"]), &Expressions::standard()).unwrap_err();
    assert!(matches!(e, ResolutionError::NodeFilter(_)), "{e:?}");
}

#[test]
fn failed_checks_carry_their_findings_and_why_it_does_not_resolve() {
    let s = snapshot(
        "- {id: a, type: shell, role: [controller], requires: [b]}\n\
         - {id: b, type: shell, role: [controller], requires: [a]}\n",
    );
    let e = resolve(&s, &types(&["default"]), &Expressions::standard()).unwrap_err();
    let ResolutionError::Checks {
        findings,
        plan,
        unresolved,
    } = &e
    else {
        panic!("expected failed checks, got {e:?}");
    };
    assert!(findings.iter().any(|f| f.severity == Severity::Error));
    assert!(plan.is_none());
    assert!(unresolved
        .as_ref()
        .is_some_and(|u| u.to_string().contains("cycle")));
    assert!(
        e.to_string()
            .starts_with("the pre-deployment checks failed: "),
        "{e}"
    );
}

#[test]
fn the_stored_form_leaves_old_states_out_and_reads_back() {
    let mut s = snapshot(TWO);
    s.old.insert(
        1,
        "a",
        NodeState::new(Arc::new(json!({}).into()), Arc::new(json!({"x": 1}).into())),
    );
    let stored = serde_json::to_value(&s).unwrap();
    assert!(
        stored.get("old").is_none(),
        "old states are read anew, not stored"
    );
    let back: Snapshot = serde_json::from_value(stored.clone()).unwrap();
    assert!(back.old.is_empty());
    assert_eq!(serde_json::to_value(&back).unwrap(), stored);
}

/// The controller resolves a snapshot it drops afterwards, moving each node's facts into the deployment
/// data instead of copying them: the lists, states and findings are the same as when the snapshot is
/// borrowed, also where a task reads a node's facts or every node's.
#[test]
fn a_snapshot_resolved_owned_gives_what_it_gives_borrowed() {
    let tasks = "- {id: a, type: shell, role: [controller, compute], \
                    condition: {yaql_exp: '$.facts.disks.len() > 0'}, \
                    parameters: {cmd: {yaql_exp: 'concat(\"echo \", $.facts.hostname)'}, \
                                 all: {yaql_exp: '$.nodes.select($.facts.hostname)'}}}\n";
    let mut s = snapshot(tasks);
    s.nodes[0].facts = json!({"hostname": "one", "disks": [{"name": "sda"}]}).into();
    s.nodes[1].facts = json!({"hostname": "two", "disks": []}).into();
    let exprs = Expressions::standard();
    let borrowed = resolve(&s, &types(&["default"]), &exprs).unwrap();
    let owned = resolve_owned(s.clone(), &types(&["default"]), &exprs).unwrap();
    assert_eq!(owned.plans, borrowed.plans);
    assert_eq!(owned.states, borrowed.states);
    assert_eq!(owned.findings, borrowed.findings);
    assert_eq!(owned.tags, borrowed.tags);
    let specs = &owned.phases["default"].specs;
    assert_eq!(specs[&1][0].skip_reason, None, "node 1 has a disk");
    assert_eq!(
        specs[&2][0].skip_reason.as_deref(),
        Some("condition is false"),
        "node 2 has none"
    );
    assert_eq!(specs[&1][0].parameters["cmd"], json!("echo one"));
    assert_eq!(specs[&1][0].parameters["all"], json!(["one", "two"]));
    assert_eq!(owned.states[&2].node()["facts"]["hostname"], json!("two"));
}

/// Each agent reports how long collecting its facts took, which differs at every start. Every node's
/// record (facts and all) is in the cluster part, so that value made `changed($)` true on every node
/// whenever any one agent restarted: Fuel's tasks guarded by `changed($)` then ran again cluster-wide.
/// It is not a fact of the node and stays out of the deployment data; a real change still counts.
#[test]
fn an_agent_restarting_changes_nothing_a_task_sees() {
    let tasks = "- {id: a, type: shell, role: [controller, compute], \
                    condition: {yaql_exp: 'changed($)'}, parameters: {cmd: 'true'}}\n";
    let mut s = snapshot(tasks);
    let facts = |host: &str, took: u64| json!({"hostname": host, "collected_in_us": took});
    s.nodes[0].facts = facts("one", 6_780).into();
    s.nodes[1].facts = facts("two", 7_125).into();
    let exprs = Expressions::standard();
    let first = resolve(&s, &types(&["default"]), &exprs).unwrap();
    assert!(first.states[&1].node()["facts"]
        .get("collected_in_us")
        .is_none());
    for (id, state) in &first.states {
        s.old.insert(*id, "a", state.clone());
    }
    let skipped = |s: &Snapshot, node: u64| {
        let r = resolve(s, &types(&["default"]), &exprs).unwrap();
        r.phases["default"].specs[&node][0].skip_reason.clone()
    };
    let unchanged = Some("condition is false".to_string());
    // Node 2's agent restarts: its facts are read again, the same but for the time they took.
    s.nodes[1].facts = facts("two", 9_012).into();
    assert_eq!(skipped(&s, 1), unchanged, "node 1 sees no change");
    assert_eq!(skipped(&s, 2), unchanged, "nor does node 2");
    // A real change of node 2 is a change of the cluster's data, on every node.
    s.nodes[1].facts = facts("two-renamed", 9_012).into();
    assert_eq!(skipped(&s, 1), None);
    assert_eq!(skipped(&s, 2), None);
}
