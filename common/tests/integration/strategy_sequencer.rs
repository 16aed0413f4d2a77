//! The sequencer driven by hand, as the controller drives it: overlapping groups, empty groups, timeouts,
//! opt-in concurrency, resuming from a stored state, and refused calls.

use plinth_common::strategy::{
    check, parse_strategy, simulate, Action, Criterion, DeploymentEvent, DeploymentStatus,
    FailureReason, GroupStatus, InventoryNode, NodeOutcome, NodeResult, NodeStatus, PhaseOutcome,
    SequenceError, Sequencer, SimulatedFailure, Strategy, Warning,
};

fn strategy(yaml: &str) -> Strategy {
    parse_strategy(yaml).unwrap_or_else(|e| panic!("{e}"))
}

fn nodes(names: &[&str]) -> Vec<InventoryNode> {
    names.iter().map(|n| InventoryNode::new(*n)).collect()
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The `StartPhase` actions among `actions`, as (group, phase, nodes).
fn starts(actions: &[Action]) -> Vec<(String, String, Vec<String>)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::StartPhase {
                group,
                phase,
                nodes,
                ..
            } => Some((group.clone(), phase.clone(), nodes.clone())),
            Action::Finished { .. } => None,
        })
        .collect()
}

fn all_succeed(nodes: &[String]) -> Vec<NodeResult> {
    nodes
        .iter()
        .map(|n| NodeResult::new(n.clone(), NodeOutcome::Succeeded))
        .collect()
}

/// Two groups selecting n2: `first` runs before `second`.
const OVERLAP: &str = r#"
groups:
  - name: first
    critical: false
    depends_on: []
    selectors: [{node_names: [n1, n2]}]
  - name: second
    critical: false
    depends_on: [first-dep]
    selectors: [{node_names: [n2, n3]}]
    success_criteria: {minimum_successful_nodes: 2}
  - name: first-dep
    critical: false
    depends_on: [first]
    selectors: [{node_names: [n9]}]
"#;

#[test]
fn a_node_failed_by_an_earlier_group_is_not_sent_again_but_counts() {
    let inv = nodes(&["n1", "n2", "n3", "n9"]);
    let failure: SimulatedFailure = "n2:prepare".parse().unwrap();
    let sim = simulate(&strategy(OVERLAP), &inv, &[failure]).unwrap();
    let sent = starts(&sim.actions);
    assert_eq!(
        sent[0],
        ("first".into(), "prepare".into(), names(&["n1", "n2"]))
    );
    assert_eq!(sent[1], ("first".into(), "deploy".into(), names(&["n1"])));
    // second: n2 failed in first, so only n3 is sent; 1 success of the 2 needed.
    assert!(sent.contains(&("second".into(), "prepare".into(), names(&["n3"]))));
    let second = sim.report.group("second").unwrap();
    assert_eq!(second.state, GroupStatus::Failed);
    let Some(FailureReason::Criteria { phase, failures }) = &second.reason else {
        panic!("{:?}", second.reason)
    };
    assert_eq!(phase, "prepare");
    assert_eq!(failures[0].criterion, Criterion::MinimumSuccessfulNodes);
    assert_eq!((failures[0].needed, failures[0].actual), (2, 1));
    // n3 passed prepare and stays prepared: the deploy phase was skipped.
    assert_eq!(sim.report.node("n3").unwrap().status, NodeStatus::Prepared);
    assert_eq!(second.prepared, names(&["n3"]));
    assert_eq!(second.failed, names(&["n2"]));
}

#[test]
fn a_node_succeeded_by_an_earlier_group_is_not_sent_again_but_counts() {
    let inv = nodes(&["n1", "n2", "n3", "n9"]);
    let sim = simulate(&strategy(OVERLAP), &inv, &[]).unwrap();
    let sent = starts(&sim.actions);
    assert!(sent.contains(&("second".into(), "prepare".into(), names(&["n3"]))));
    assert!(sent.contains(&("second".into(), "deploy".into(), names(&["n3"]))));
    let second = sim.report.group("second").unwrap();
    assert_eq!(second.state, GroupStatus::Succeeded);
    assert_eq!(
        second.phases[0].outcome,
        PhaseOutcome::Succeeded {
            succeeded: 2,
            failed: 0,
            total: 2
        }
    );
    assert_eq!(
        sim.report.node("n2").unwrap().sent_by.as_deref(),
        Some("first")
    );
}

#[test]
fn nodes_of_a_group_failed_by_dependency_are_attempted_by_the_next_group_selecting_them() {
    let text = r#"
groups:
  - name: root
    critical: false
    depends_on: []
    selectors: [{node_names: [r1]}]
    success_criteria: {percent_successful_nodes: 100}
  - name: child
    critical: false
    depends_on: [root]
    selectors: [{node_names: [c1, shared]}]
  - name: other
    critical: false
    depends_on: []
    selectors: [{node_names: [shared, o1]}]
"#;
    let inv = nodes(&["r1", "c1", "shared", "o1"]);
    let sim = simulate(&strategy(text), &inv, &["r1:deploy".parse().unwrap()]).unwrap();
    let report = &sim.report;
    assert_eq!(report.group("child").unwrap().state, GroupStatus::Failed);
    assert_eq!(report.group("other").unwrap().state, GroupStatus::Succeeded);
    assert!(starts(&sim.actions).contains(&(
        "other".into(),
        "prepare".into(),
        names(&["shared", "o1"])
    )));
    assert_eq!(report.node("shared").unwrap().status, NodeStatus::Success);
    assert_eq!(
        report.node("shared").unwrap().sent_by.as_deref(),
        Some("other")
    );
    assert_eq!(report.node("c1").unwrap().status, NodeStatus::NotStarted);
    // r1 passed prepare, then failed deploy.
    let r1 = report.node("r1").unwrap();
    assert_eq!(
        (r1.status, r1.failed_phase.as_deref()),
        (NodeStatus::Failure, Some("deploy"))
    );
    assert_eq!(report.status, DeploymentStatus::SuccessWithFailures);
}

#[test]
fn a_node_left_prepared_by_a_failed_group_is_deployed_by_the_next_group() {
    let text = r#"
groups:
  - name: strict
    critical: false
    depends_on: []
    selectors: [{node_names: [a, b]}]
    success_criteria: {percent_successful_nodes: 100}
  - name: loose
    critical: false
    depends_on: []
    selectors: [{node_names: [b]}]
"#;
    let sim = simulate(
        &strategy(text),
        &nodes(&["a", "b"]),
        &["a:prepare".parse().unwrap()],
    )
    .unwrap();
    let sent = starts(&sim.actions);
    assert_eq!(
        sent,
        [
            ("strict".into(), "prepare".into(), names(&["a", "b"])),
            // b is prepared already: loose skips its prepare and deploys it.
            ("loose".into(), "deploy".into(), names(&["b"])),
        ]
    );
    assert_eq!(sim.report.node("b").unwrap().status, NodeStatus::Success);
    assert!(matches!(
        sim.report.group("loose").unwrap().phases[0].outcome,
        PhaseOutcome::Succeeded {
            succeeded: 1,
            total: 1,
            ..
        }
    ));
}

#[test]
fn groups_that_select_no_node() {
    let text = r#"
groups:
  - name: empty-no-criteria
    critical: true
    depends_on: []
    selectors: [{node_tags: [nothing]}]
  - name: empty-percent
    critical: true
    depends_on: []
    selectors: [{rack_names: [nowhere]}]
    success_criteria: {percent_successful_nodes: 100, maximum_failed_nodes: 0}
  - name: empty-minimum
    critical: false
    depends_on: []
    selectors: [{node_names: [ghost]}]
    success_criteria: {minimum_successful_nodes: 1}
  - name: after-minimum
    critical: false
    depends_on: [empty-minimum]
    selectors: []
"#;
    let inv = nodes(&["n1"]);
    let sim = simulate(&strategy(text), &inv, &[]).unwrap();
    let report = &sim.report;
    assert_eq!(
        report.group("empty-no-criteria").unwrap().state,
        GroupStatus::Succeeded
    );
    assert_eq!(
        report.group("empty-percent").unwrap().state,
        GroupStatus::Succeeded
    );
    let minimum = report.group("empty-minimum").unwrap();
    assert_eq!(minimum.state, GroupStatus::Failed);
    let Some(FailureReason::Criteria { failures, .. }) = &minimum.reason else {
        panic!("{:?}", minimum.reason)
    };
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].criterion, Criterion::MinimumSuccessfulNodes);
    assert_eq!(
        (failures[0].needed, failures[0].actual, failures[0].total),
        (1, 0, 0)
    );
    assert_eq!(
        report.group("after-minimum").unwrap().state,
        GroupStatus::Failed
    );
    assert_eq!(report.node("n1").unwrap().status, NodeStatus::NotStarted);
    // No phase had a node to send: nothing was asked of the controller.
    assert!(starts(&sim.actions).is_empty());
    assert_eq!(report.status, DeploymentStatus::SuccessWithFailures);

    let checked = check(&strategy(text), &inv).unwrap();
    assert!(checked.warnings.contains(&Warning::EmptyGroup {
        group: "empty-minimum".into()
    }));
    assert!(checked.warnings.contains(&Warning::UnknownNodeName {
        group: "empty-minimum".into(),
        node: "ghost".into()
    }));
    assert!(checked.warnings.iter().any(
        |w| matches!(w, Warning::UnreachableCriteria { group, .. } if group == "empty-minimum")
    ));
}

#[test]
fn no_strategy_means_one_group_needing_every_node() {
    let inv = nodes(&["a", "b", "c"]);
    let sim = simulate(&Strategy::all_nodes(), &inv, &[]).unwrap();
    assert_eq!(sim.report.status, DeploymentStatus::Success);
    assert_eq!(
        sim.report.group("default").unwrap().nodes,
        names(&["a", "b", "c"])
    );
    let sim = simulate(&Strategy::all_nodes(), &inv, &["b:deploy".parse().unwrap()]).unwrap();
    assert_eq!(sim.report.status, DeploymentStatus::Failed);
    assert_eq!(sim.report.succeeded_nodes, names(&["a", "c"]));
}

#[test]
fn timeouts_fail_unfinished_nodes() {
    let text = r#"
phase_timeout: 600
phases:
  - {name: prepare, graph_type: prepare, timeout: 120}
  - {name: deploy, graph_type: deploy}
groups:
  - name: g
    critical: true
    depends_on: []
    selectors: []
    success_criteria: {maximum_failed_nodes: 1}
"#;
    let inv = nodes(&["a", "b", "c"]);
    let mut seq = Sequencer::new(&strategy(text), &inv).unwrap();
    let actions = seq.next_actions();
    let Action::StartPhase { timeout_secs, .. } = &actions[0] else {
        panic!()
    };
    assert_eq!(*timeout_secs, 120);
    // a reports; b and c do not before the timeout.
    seq.record_result("g", "prepare", "a", NodeOutcome::Succeeded)
        .unwrap();
    assert_eq!(seq.in_flight()[0].awaiting, names(&["b", "c"]));
    seq.phase_timed_out("g", "prepare").unwrap();
    assert_eq!(seq.node_status("b"), Some(NodeStatus::Failure));
    assert_eq!(seq.group_state("g"), Some(GroupStatus::Failed));
    let report = seq.report();
    let Some(FailureReason::Timeout {
        phase,
        nodes,
        failures,
        after_secs,
    }) = &report.group("g").unwrap().reason
    else {
        panic!("{:?}", report.group("g").unwrap().reason)
    };
    assert_eq!(phase, "prepare");
    assert_eq!(nodes, &names(&["b", "c"]));
    assert_eq!(failures[0].criterion, Criterion::MaximumFailedNodes);
    assert_eq!(*after_secs, 120);
    assert_eq!(
        report.node("c").unwrap().failure,
        Some(NodeOutcome::TimedOut)
    );
    assert_eq!(
        report.node("c").unwrap().failure_detail.as_deref(),
        Some("timed out after 120 s")
    );
    assert_eq!(
        seq.next_actions(),
        [Action::Finished {
            status: DeploymentStatus::Failed
        }]
    );
    assert!(report.to_text().contains("timed out after 120 s on b, c"));
    assert!(report.to_text().contains("prepare: timed out after 120 s"));
}

#[test]
fn a_timeout_fails_the_group_even_when_its_criteria_are_met() {
    // The seed: "A failure based on these values will be treated as a failure for the group."
    let text = "phases: [{name: deploy, graph_type: deploy, timeout: 30}]\ngroups:\n  \
                - {name: g, critical: false, depends_on: [], selectors: [], success_criteria: {percent_successful_nodes: 50}}\n  \
                - {name: h, critical: false, depends_on: [g], selectors: [{node_names: [c]}]}\n";
    let inv = nodes(&["a", "b", "c"]);
    let mut seq = Sequencer::new(&strategy(text), &inv).unwrap();
    seq.next_actions();
    seq.record_result("g", "deploy", "a", NodeOutcome::Succeeded)
        .unwrap();
    seq.record_result("g", "deploy", "b", NodeOutcome::Succeeded)
        .unwrap();
    // Two of three passed (67% >= 50%), but c is still running at the timeout.
    seq.phase_timed_out("g", "deploy").unwrap();
    assert_eq!(seq.group_state("g"), Some(GroupStatus::Failed));
    let report = seq.report();
    let g = report.group("g").unwrap();
    assert_eq!(
        g.reason.as_ref().unwrap().to_string(),
        "deploy timed out after 30 s with 1 node unfinished (c)"
    );
    // Its dependant fails by dependency; the unfinished node is a failure, not left prepared.
    assert_eq!(report.group("h").unwrap().state, GroupStatus::Failed);
    assert_eq!(seq.node_status("c"), Some(NodeStatus::Failure));
    assert_eq!(
        seq.next_actions(),
        [Action::Finished {
            status: DeploymentStatus::SuccessWithFailures
        }]
    );
}

#[test]
fn never_reported_nodes_fail_the_phase_and_a_group_without_criteria_still_succeeds() {
    let text = "phases: [{name: deploy, graph_type: deploy}]\ngroups:\n  - {name: g, critical: true, depends_on: [], selectors: []}\n";
    let inv = nodes(&["a", "b"]);
    let mut seq = Sequencer::new(&strategy(text), &inv).unwrap();
    let actions = seq.next_actions();
    assert_eq!(starts(&actions)[0].2, names(&["a", "b"]));
    seq.phase_result(
        "g",
        "deploy",
        &[NodeResult::new("a", NodeOutcome::Succeeded)],
    )
    .unwrap();
    let report = seq.report();
    assert_eq!(
        report.node("b").unwrap().failure,
        Some(NodeOutcome::NeverReported)
    );
    assert_eq!(report.group("g").unwrap().state, GroupStatus::Succeeded);
    assert_eq!(
        seq.next_actions(),
        [Action::Finished {
            status: DeploymentStatus::SuccessWithFailures
        }]
    );
    assert_eq!(seq.report().succeeded_nodes, names(&["a"]));
}

const INDEPENDENT: &str = r#"
groups:
  - {name: a, critical: false, depends_on: [], selectors: [{node_names: [a1, a2]}]}
  - {name: b, critical: false, depends_on: [], selectors: [{node_names: [b1]}]}
  - {name: c, critical: false, depends_on: [a], selectors: [{node_names: [c1]}]}
"#;

#[test]
fn independent_groups_run_together_only_when_allowed() {
    let inv = nodes(&["a1", "a2", "b1", "c1"]);
    let mut serial = Sequencer::new(&strategy(INDEPENDENT), &inv).unwrap();
    let first = starts(&serial.next_actions());
    assert_eq!(
        first,
        [("a".into(), "prepare".into(), names(&["a1", "a2"]))]
    );

    let mut parallel = strategy(INDEPENDENT);
    parallel.max_concurrent_groups = 2;
    let mut seq = Sequencer::new(&parallel, &inv).unwrap();
    let first = starts(&seq.next_actions());
    assert_eq!(
        first,
        [
            ("a".into(), "prepare".into(), names(&["a1", "a2"])),
            ("b".into(), "prepare".into(), names(&["b1"])),
        ]
    );
    // Nothing more while both run.
    assert!(seq.next_actions().is_empty());
    seq.phase_result("b", "prepare", &all_succeed(&names(&["b1"])))
        .unwrap();
    assert_eq!(
        starts(&seq.next_actions()),
        [("b".into(), "deploy".into(), names(&["b1"]))]
    );
    seq.phase_result("a", "prepare", &all_succeed(&names(&["a1", "a2"])))
        .unwrap();
    seq.phase_result("b", "deploy", &all_succeed(&names(&["b1"])))
        .unwrap();
    // a moves to deploy; c waits for a to succeed, though a slot is free.
    assert_eq!(
        starts(&seq.next_actions()),
        [("a".into(), "deploy".into(), names(&["a1", "a2"]))]
    );
    seq.phase_result("a", "deploy", &all_succeed(&names(&["a1", "a2"])))
        .unwrap();
    assert_eq!(
        starts(&seq.next_actions()),
        [("c".into(), "prepare".into(), names(&["c1"]))]
    );
    seq.phase_result("c", "prepare", &all_succeed(&names(&["c1"])))
        .unwrap();
    seq.next_actions();
    seq.phase_result("c", "deploy", &all_succeed(&names(&["c1"])))
        .unwrap();
    assert_eq!(
        seq.next_actions(),
        [Action::Finished {
            status: DeploymentStatus::Success
        }]
    );
}

#[test]
fn groups_sharing_an_unfinished_node_never_run_together() {
    let text = r#"
max_concurrent_groups: 3
groups:
  - {name: a, critical: false, depends_on: [], selectors: [{node_names: [x, shared]}]}
  - {name: b, critical: false, depends_on: [], selectors: [{node_names: [shared, y]}]}
  - {name: c, critical: false, depends_on: [], selectors: [{node_names: [z]}]}
"#;
    let inv = nodes(&["x", "shared", "y", "z"]);
    let mut seq = Sequencer::new(&strategy(text), &inv).unwrap();
    let groups: Vec<String> = starts(&seq.next_actions())
        .into_iter()
        .map(|s| s.0)
        .collect();
    assert_eq!(groups, ["a", "c"]);
    for phase in ["prepare", "deploy"] {
        seq.phase_result("a", phase, &all_succeed(&names(&["x", "shared"])))
            .unwrap();
        seq.phase_result("c", phase, &all_succeed(&names(&["z"])))
            .unwrap();
        let next = starts(&seq.next_actions());
        if phase == "prepare" {
            assert_eq!(next.len(), 2);
        } else {
            // shared is done now: b starts and sends only y.
            assert_eq!(next, [("b".into(), "prepare".into(), names(&["y"]))]);
        }
    }
}

#[test]
fn a_stored_state_resumes_exactly() {
    let text = r#"
max_concurrent_groups: 2
groups:
  - {name: a, critical: true, depends_on: [], selectors: [{node_tags: [a]}], success_criteria: {percent_successful_nodes: 50}}
  - {name: b, critical: false, depends_on: [], selectors: [{node_tags: [b]}]}
  - {name: c, critical: false, depends_on: [a, b], selectors: [{node_tags: [c]}]}
"#;
    let inv: Vec<InventoryNode> = (0..12)
        .map(|i| InventoryNode::new(format!("n{i:02}")).with_tag(["a", "b", "c"][i % 3]))
        .collect();
    let strategy = strategy(text);
    let outcome = |node: &str, phase: &str| {
        if (node == "n03" && phase == "prepare") || (node == "n05" && phase == "deploy") {
            NodeOutcome::Failed
        } else {
            NodeOutcome::Succeeded
        }
    };
    // Drive to the end, storing and reloading the state after every call.
    let mut seq = Sequencer::new(&strategy, &inv).unwrap();
    let mut events = Vec::new();
    let mut steps = 0;
    loop {
        let json = serde_json::to_string(&seq).unwrap();
        seq = serde_json::from_str(&json).unwrap();
        let actions = seq.next_actions();
        if matches!(actions.as_slice(), [Action::Finished { .. }]) {
            break;
        }
        // After a restart the controller learns the running phases from in_flight.
        let json = serde_json::to_string(&seq).unwrap();
        seq = serde_json::from_str(&json).unwrap();
        let in_flight = seq.in_flight();
        let started: Vec<(String, String)> =
            starts(&actions).into_iter().map(|s| (s.0, s.1)).collect();
        let running: Vec<(String, String)> = in_flight
            .iter()
            .map(|p| (p.group.clone(), p.phase.clone()))
            .collect();
        assert_eq!(running, started);
        for phase in in_flight {
            for node in &phase.awaiting {
                seq.record_result(
                    &phase.group,
                    &phase.phase,
                    node,
                    outcome(node, &phase.phase),
                )
                .unwrap();
                let json = serde_json::to_vec(&seq).unwrap();
                seq = serde_json::from_slice(&json).unwrap();
            }
        }
        events.extend(seq.take_events());
        steps += 1;
        assert!(steps < 50);
    }
    events.extend(seq.take_events());
    // The same deployment without interruptions.
    let failures: Vec<SimulatedFailure> = vec![
        "n03:prepare".parse().unwrap(),
        "n05:deploy".parse().unwrap(),
    ];
    let sim = simulate(&strategy, &inv, &failures).unwrap();
    assert_eq!(seq.report(), sim.report);
    assert_eq!(sim.report.status, DeploymentStatus::SuccessWithFailures);
    let mut a: Vec<&DeploymentEvent> = events.iter().collect();
    let mut b: Vec<&DeploymentEvent> = sim.events.iter().collect();
    a.sort_by_key(|e| serde_json::to_string(e).unwrap());
    b.sort_by_key(|e| serde_json::to_string(e).unwrap());
    assert_eq!(a, b);
}

#[test]
fn a_damaged_state_is_refused() {
    let inv = nodes(&["a", "b"]);
    let mut seq = Sequencer::new(&Strategy::all_nodes(), &inv).unwrap();
    seq.next_actions();
    let good = serde_json::to_value(&seq).unwrap();

    let mut bad = good.clone();
    bad["groups"][0]["members"][0] = serde_json::json!(7);
    let error = serde_json::from_value::<Sequencer>(bad).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("group \"default\" has an unknown node"),
        "{error}"
    );

    let mut bad = good.clone();
    bad["nodes"][1]["name"] = serde_json::json!("a");
    assert!(serde_json::from_value::<Sequencer>(bad)
        .unwrap_err()
        .to_string()
        .contains("twice"));

    let mut bad = good.clone();
    bad["groups"][0]["results"] = serde_json::json!([null]);
    assert!(serde_json::from_value::<Sequencer>(bad).is_err());

    let mut bad = good.clone();
    bad["strategy"]["groups"][0]["critical"] = serde_json::json!("maybe");
    assert!(serde_json::from_value::<Sequencer>(bad)
        .unwrap_err()
        .to_string()
        .contains("critical"));

    let mut bad = good;
    bad["nodes"][0]["phases_done"] = serde_json::json!(9);
    assert!(serde_json::from_value::<Sequencer>(bad).is_err());
}

#[test]
fn refused_calls_change_nothing() {
    let inv = nodes(&["a", "b"]);
    let mut seq = Sequencer::new(&Strategy::all_nodes(), &inv).unwrap();
    assert!(matches!(
        seq.phase_result("default", "prepare", &[]),
        Err(SequenceError::PhaseNotRunning { .. })
    ));
    seq.next_actions();
    let before = serde_json::to_string(&seq).unwrap();
    assert_eq!(
        seq.phase_result("nope", "prepare", &[]),
        Err(SequenceError::UnknownGroup("nope".into()))
    );
    assert_eq!(
        seq.phase_result("default", "bogus", &[]),
        Err(SequenceError::UnknownPhase("bogus".into()))
    );
    assert!(matches!(
        seq.phase_result("default", "deploy", &[]),
        Err(SequenceError::PhaseNotRunning { .. })
    ));
    assert_eq!(
        seq.record_result("default", "prepare", "zz", NodeOutcome::Failed),
        Err(SequenceError::UnknownNode("zz".into()))
    );
    // A conflicting pair in one call records neither.
    let error = seq
        .phase_result(
            "default",
            "prepare",
            &[
                NodeResult::new("a", NodeOutcome::Succeeded),
                NodeResult::new("a", NodeOutcome::Failed),
            ],
        )
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "node \"a\" already reported succeeded in phase \"prepare\" of group \"default\", not failed"
    );
    assert_eq!(serde_json::to_string(&seq).unwrap(), before);
    // Repeating a result is harmless; contradicting it is refused.
    seq.record_result("default", "prepare", "a", NodeOutcome::Succeeded)
        .unwrap();
    seq.record_result("default", "prepare", "a", NodeOutcome::Succeeded)
        .unwrap();
    assert!(matches!(
        seq.record_result("default", "prepare", "a", NodeOutcome::TimedOut),
        Err(SequenceError::ConflictingResult { .. })
    ));
    // The last node's result ends the phase.
    seq.record_result("default", "prepare", "b", NodeOutcome::Succeeded)
        .unwrap();
    assert!(matches!(
        seq.record_result("default", "prepare", "b", NodeOutcome::Succeeded),
        Err(SequenceError::PhaseNotRunning { .. })
    ));
    let next = starts(&seq.next_actions());
    assert_eq!(
        next,
        [("default".into(), "deploy".into(), names(&["a", "b"]))]
    );
    // A node of the deployment that was not sent in this phase.
    let text = "groups:\n  - {name: g, critical: false, depends_on: [], selectors: [{node_names: [a]}]}\n  - {name: h, critical: false, depends_on: [], selectors: [{node_names: [b]}]}\n";
    let mut seq = Sequencer::new(&parse_strategy(text).unwrap(), &inv).unwrap();
    seq.next_actions();
    assert!(matches!(
        seq.record_result("g", "prepare", "b", NodeOutcome::Succeeded),
        Err(SequenceError::NodeNotSent { .. })
    ));
}

#[test]
fn bad_inputs_to_new_and_simulate_are_errors() {
    let dup = vec![InventoryNode::new("a"), InventoryNode::new("a")];
    assert!(matches!(
        Sequencer::new(&Strategy::all_nodes(), &dup),
        Err(SequenceError::Inventory(_))
    ));
    let mut invalid = Strategy::all_nodes();
    invalid.groups[0].depends_on.push("default".into());
    let error = Sequencer::new(&invalid, &nodes(&["a"])).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("circular dependency: default -> default"),
        "{error}"
    );
    let inv = nodes(&["a"]);
    assert_eq!(
        simulate(
            &Strategy::all_nodes(),
            &inv,
            &["b:prepare".parse().unwrap()]
        )
        .unwrap_err(),
        SequenceError::UnknownNode("b".into())
    );
    assert_eq!(
        simulate(
            &Strategy::all_nodes(),
            &inv,
            &["a:install".parse().unwrap()]
        )
        .unwrap_err(),
        SequenceError::UnknownPhase("install".into())
    );
    // A failure that never applies is reported back.
    let sim = simulate(
        &Strategy::all_nodes(),
        &inv,
        &["a:prepare".parse().unwrap(), "a:deploy".parse().unwrap()],
    )
    .unwrap();
    assert_eq!(sim.unused_failures.len(), 1);
    assert_eq!(sim.unused_failures[0].phase, "deploy");
}

#[test]
fn failure_specifications_parse() {
    let f: SimulatedFailure = "ntp01:prepare".parse().unwrap();
    assert_eq!(
        (f.node.as_str(), f.phase.as_str(), f.outcome),
        ("ntp01", "prepare", NodeOutcome::Failed)
    );
    let f: SimulatedFailure = "n:deploy:timeout".parse().unwrap();
    assert_eq!(f.outcome, NodeOutcome::TimedOut);
    let f: SimulatedFailure = "n:deploy:never_reported".parse().unwrap();
    assert_eq!(f.outcome, NodeOutcome::NeverReported);
    for bad in ["n", "n:", ":p", "n:p:maybe", "a:b:c:d"] {
        let error = bad.parse::<SimulatedFailure>().unwrap_err();
        assert!(error.to_string().contains("expected NODE:PHASE"), "{error}");
    }
}

#[test]
fn an_empty_strategy_deploys_nothing() {
    let strategy = parse_strategy("groups: []").unwrap();
    let inv = nodes(&["a"]);
    let sim = simulate(&strategy, &inv, &[]).unwrap();
    assert_eq!(sim.report.status, DeploymentStatus::Success);
    assert_eq!(sim.report.unselected_nodes, names(&["a"]));
    assert!(sim.report.nodes.is_empty());
    let checked = check(&strategy, &inv).unwrap();
    assert_eq!(checked.warnings[0], Warning::NoGroups);
}
