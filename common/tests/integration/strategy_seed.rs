//! The seed's five-group example and its three processing scenarios, run through the sequencer, with the
//! outcome of every group and every node checked.

use plinth_common::strategy::{
    parse_strategy, simulate, Action, Criterion, DeploymentEvent, DeploymentStatus, FailureReason,
    GroupStatus, InventoryNode, NodeOutcome, NodeStatus, PhaseOutcome, SimulatedFailure, SkipCause,
    Strategy,
};

/// The seed's example strategy, written in Plinth's plain form (labels as mappings).
const FIVE_GROUPS: &str = r#"
name: five-groups
groups:
  - name: control-nodes
    critical: true
    depends_on: [ntp-node]
    selectors:
      - node_tags: [control]
        rack_names: [rack03]
        node_labels: {}
    success_criteria:
      percent_successful_nodes: 90
      minimum_successful_nodes: 3
      maximum_failed_nodes: 1
  - name: compute-nodes-1
    critical: false
    depends_on: [control-nodes]
    selectors:
      - rack_names: [rack01]
        node_tags: [compute]
    success_criteria:
      percent_successful_nodes: 50
  - name: compute-nodes-2
    critical: false
    depends_on: [control-nodes]
    selectors:
      - rack_names: [rack02]
        node_tags: [compute]
    success_criteria:
      percent_successful_nodes: 50
  - name: monitoring-nodes
    critical: false
    depends_on: []
    selectors:
      - node_tags: [monitoring]
        rack_names: [rack03, rack02, rack01]
  - name: ntp-node
    critical: true
    depends_on: []
    selectors:
      - node_names: [ntp01]
    success_criteria:
      minimum_successful_nodes: 1
"#;

/// Racks 01 to 03. `mon02` is also a compute node in rack02, so compute-nodes-2 and monitoring-nodes
/// overlap on it. `ctl04` is a control node outside rack03: no group selects it.
fn inventory() -> Vec<InventoryNode> {
    let mut nodes = vec![InventoryNode::new("ntp01")
        .with_tag("ntp")
        .in_rack("rack01")];
    for i in 1..=3 {
        nodes.push(
            InventoryNode::new(format!("ctl0{i}"))
                .with_tag("control")
                .in_rack("rack03"),
        );
    }
    nodes.push(
        InventoryNode::new("ctl04")
            .with_tag("control")
            .in_rack("rack01"),
    );
    for rack in 1..=2 {
        for i in 1..=4 {
            nodes.push(
                InventoryNode::new(format!("cmp{rack}0{i}"))
                    .with_tag("compute")
                    .in_rack(format!("rack0{rack}")),
            );
        }
    }
    nodes.push(
        InventoryNode::new("mon01")
            .with_tag("monitoring")
            .in_rack("rack01"),
    );
    nodes.push(
        InventoryNode::new("mon02")
            .with_tag("monitoring")
            .with_tag("compute")
            .in_rack("rack02"),
    );
    nodes.push(
        InventoryNode::new("mon03")
            .with_tag("monitoring")
            .in_rack("rack03"),
    );
    nodes
}

fn strategy() -> Strategy {
    parse_strategy(FIVE_GROUPS).expect("the seed's example is valid")
}

fn fail(spec: &str) -> SimulatedFailure {
    spec.parse().unwrap()
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

const COMPUTE_1: [&str; 4] = ["cmp101", "cmp102", "cmp103", "cmp104"];
const COMPUTE_2: [&str; 4] = ["cmp201", "cmp202", "cmp203", "cmp204"];

#[test]
fn groups_select_what_the_seed_says() {
    let check = plinth_common::strategy::check(&strategy(), &inventory()).unwrap();
    let nodes_of = |group: &str| {
        check
            .groups
            .iter()
            .find(|g| g.name == group)
            .unwrap()
            .nodes
            .clone()
    };
    assert_eq!(
        nodes_of("control-nodes"),
        names(&["ctl01", "ctl02", "ctl03"])
    );
    assert_eq!(nodes_of("compute-nodes-1"), names(&COMPUTE_1));
    assert_eq!(
        nodes_of("compute-nodes-2"),
        names(&["cmp201", "cmp202", "cmp203", "cmp204", "mon02"])
    );
    assert_eq!(
        nodes_of("monitoring-nodes"),
        names(&["mon01", "mon02", "mon03"])
    );
    assert_eq!(nodes_of("ntp-node"), names(&["ntp01"]));
    // Document order among ready groups: monitoring-nodes is listed before ntp-node.
    assert_eq!(
        check.order,
        names(&[
            "monitoring-nodes",
            "ntp-node",
            "control-nodes",
            "compute-nodes-1",
            "compute-nodes-2"
        ])
    );
    assert_eq!(check.unselected_nodes, names(&["ctl04"]));
    let text = check.to_text();
    assert!(
        text.contains("Order: monitoring-nodes > ntp-node > control-nodes"),
        "{text}"
    );
    assert!(
        text.contains("warning: 1 node selected by no group will not be deployed: ctl04"),
        "{text}"
    );
}

#[test]
fn scenario_all_succeed() {
    let sim = simulate(&strategy(), &inventory(), &[]).unwrap();
    let report = &sim.report;
    assert_eq!(report.status, DeploymentStatus::Success);
    for group in &report.groups {
        assert_eq!(group.state, GroupStatus::Succeeded, "{}", group.name);
        assert!(group.reason.is_none());
        assert!(group
            .phases
            .iter()
            .all(|p| matches!(p.outcome, PhaseOutcome::Succeeded { .. })));
    }
    for node in &report.nodes {
        assert_eq!(node.status, NodeStatus::Success, "{}", node.name);
        assert_eq!(node.phases_passed, names(&["prepare", "deploy"]));
    }
    assert_eq!(report.succeeded_nodes.len(), 15);
    assert!(!report.succeeded_nodes.contains(&"ctl04".to_string()));
    // One group at a time, each prepared then deployed: 10 phases, then Finished.
    let starts: Vec<(String, String, Vec<String>)> = sim
        .actions
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
        .collect();
    assert_eq!(starts.len(), 10);
    assert_eq!(
        sim.actions.last(),
        Some(&Action::Finished {
            status: DeploymentStatus::Success
        })
    );
    let order: Vec<(&str, &str)> = starts
        .iter()
        .map(|(g, p, _)| (g.as_str(), p.as_str()))
        .collect();
    assert_eq!(
        order,
        [
            ("monitoring-nodes", "prepare"),
            ("monitoring-nodes", "deploy"),
            ("ntp-node", "prepare"),
            ("ntp-node", "deploy"),
            ("control-nodes", "prepare"),
            ("control-nodes", "deploy"),
            ("compute-nodes-1", "prepare"),
            ("compute-nodes-1", "deploy"),
            ("compute-nodes-2", "prepare"),
            ("compute-nodes-2", "deploy"),
        ]
    );
    // mon02 was deployed with monitoring-nodes and is not sent again with compute-nodes-2.
    for (group, _, nodes) in &starts {
        if group == "compute-nodes-2" {
            assert_eq!(nodes, &names(&COMPUTE_2));
        }
    }
    assert_eq!(
        report.node("mon02").unwrap().sent_by.as_deref(),
        Some("monitoring-nodes")
    );
    let text = report.to_text();
    assert!(text.contains("Finish (success)"), "{text}");
    assert!(text.contains("| prepare ntp-node"), "{text}");
}

#[test]
fn scenario_ntp_node_fails_prepare() {
    let sim = simulate(&strategy(), &inventory(), &[fail("ntp01:prepare")]).unwrap();
    let report = &sim.report;
    assert_eq!(report.status, DeploymentStatus::Failed);
    assert_eq!(
        report.failed_critical_groups,
        names(&["control-nodes", "ntp-node"])
    );

    // prepare ntp-node <FAILED>; deploy ntp-node <FAILED, due to prepare failure>
    let ntp = report.group("ntp-node").unwrap();
    assert_eq!(ntp.state, GroupStatus::Failed);
    match &ntp.reason {
        Some(FailureReason::Criteria { phase, failures }) => {
            assert_eq!(phase, "prepare");
            assert_eq!(failures.len(), 1);
            assert_eq!(failures[0].criterion, Criterion::MinimumSuccessfulNodes);
            assert_eq!((failures[0].needed, failures[0].actual), (1, 0));
        }
        other => panic!("unexpected reason {other:?}"),
    }
    assert!(matches!(
        ntp.phases[0].outcome,
        PhaseOutcome::Failed {
            succeeded: 0,
            total: 1,
            ..
        }
    ));
    assert_eq!(
        ntp.phases[1].outcome,
        PhaseOutcome::Skipped {
            cause: SkipCause::EarlierPhaseFailed {
                phase: "prepare".into()
            }
        }
    );
    assert_eq!(ntp.failed, names(&["ntp01"]));

    // control-nodes and both compute groups <FAILED, due to dependency>, never attempted.
    let control = report.group("control-nodes").unwrap();
    assert_eq!(control.state, GroupStatus::Failed);
    assert_eq!(
        control.reason,
        Some(FailureReason::Dependency {
            dependency: "ntp-node".into(),
            root: "ntp-node".into()
        })
    );
    assert_eq!(control.not_started, names(&["ctl01", "ctl02", "ctl03"]));
    for compute in ["compute-nodes-1", "compute-nodes-2"] {
        let group = report.group(compute).unwrap();
        assert_eq!(group.state, GroupStatus::Failed, "{compute}");
        assert_eq!(
            group.reason,
            Some(FailureReason::Dependency {
                dependency: "control-nodes".into(),
                root: "ntp-node".into()
            })
        );
        for phase in &group.phases {
            assert_eq!(
                phase.outcome,
                PhaseOutcome::Skipped {
                    cause: SkipCause::DependencyFailed {
                        dependency: "control-nodes".into()
                    }
                }
            );
        }
    }
    assert_eq!(
        report.group("compute-nodes-1").unwrap().not_started,
        names(&COMPUTE_1)
    );
    // mon02 was deployed by monitoring-nodes, so compute-nodes-2 lists it as succeeded.
    let compute2 = report.group("compute-nodes-2").unwrap();
    assert_eq!(compute2.not_started, names(&COMPUTE_2));
    assert_eq!(compute2.succeeded, names(&["mon02"]));

    // monitoring-nodes <SUCCESS>
    assert_eq!(
        report.group("monitoring-nodes").unwrap().state,
        GroupStatus::Succeeded
    );

    // Nodes.
    let ntp01 = report.node("ntp01").unwrap();
    assert_eq!(ntp01.status, NodeStatus::Failure);
    assert_eq!(ntp01.failed_phase.as_deref(), Some("prepare"));
    assert_eq!(ntp01.failure, Some(NodeOutcome::Failed));
    for node in ["ctl01", "ctl02", "ctl03"]
        .iter()
        .chain(&COMPUTE_1)
        .chain(&COMPUTE_2)
    {
        assert_eq!(
            report.node(node).unwrap().status,
            NodeStatus::NotStarted,
            "{node}"
        );
    }
    assert_eq!(report.succeeded_nodes, names(&["mon01", "mon02", "mon03"]));

    // Only monitoring-nodes' two phases and ntp-node's prepare were sent.
    let sent: Vec<(&str, &str)> = sim
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::StartPhase { group, phase, .. } => Some((group.as_str(), phase.as_str())),
            Action::Finished { .. } => None,
        })
        .collect();
    assert_eq!(
        sent,
        [
            ("monitoring-nodes", "prepare"),
            ("monitoring-nodes", "deploy"),
            ("ntp-node", "prepare")
        ]
    );

    let text = report.to_text();
    assert!(text.contains("<FAILED, due to prepare failure>"), "{text}");
    assert!(
        text.contains("<FAILED, due to dependency (ntp-node)>"),
        "{text}"
    );
    assert!(
        text.contains("<FAILED, due to dependency (control-nodes)>"),
        "{text}"
    );
    assert!(
        text.contains("Finish (failed due to critical group failed: control-nodes, ntp-node)"),
        "{text}"
    );
    assert!(
        text.contains("minimum_successful_nodes: needed 1, got 0"),
        "{text}"
    );
}

#[test]
fn scenario_compute_nodes_2_fails_deploy() {
    let failures: Vec<SimulatedFailure> = COMPUTE_2
        .iter()
        .map(|n| fail(&format!("{n}:deploy")))
        .collect();
    let sim = simulate(&strategy(), &inventory(), &failures).unwrap();
    let report = &sim.report;
    assert_eq!(report.status, DeploymentStatus::SuccessWithFailures);
    assert!(report.failed_critical_groups.is_empty());
    for group in [
        "ntp-node",
        "control-nodes",
        "monitoring-nodes",
        "compute-nodes-1",
    ] {
        assert_eq!(
            report.group(group).unwrap().state,
            GroupStatus::Succeeded,
            "{group}"
        );
    }
    // prepare compute-nodes-2 <SUCCESS>; deploy compute-nodes-2 <FAILED>
    let compute2 = report.group("compute-nodes-2").unwrap();
    assert_eq!(compute2.state, GroupStatus::Failed);
    assert!(matches!(
        compute2.phases[0].outcome,
        PhaseOutcome::Succeeded {
            succeeded: 5,
            total: 5,
            ..
        }
    ));
    match &compute2.reason {
        Some(FailureReason::Criteria { phase, failures }) => {
            assert_eq!(phase, "deploy");
            assert_eq!(failures[0].criterion, Criterion::PercentSuccessfulNodes);
            // Only mon02 (deployed with monitoring-nodes) counts: 1 of 5.
            assert_eq!((failures[0].needed, failures[0].actual), (50, 20));
            assert_eq!((failures[0].succeeded, failures[0].total), (1, 5));
        }
        other => panic!("unexpected reason {other:?}"),
    }
    assert_eq!(compute2.failed, names(&COMPUTE_2));
    assert_eq!(compute2.succeeded, names(&["mon02"]));
    for node in COMPUTE_2 {
        let node = report.node(node).unwrap();
        assert_eq!(node.status, NodeStatus::Failure);
        assert_eq!(node.failed_phase.as_deref(), Some("deploy"));
        assert_eq!(node.phases_passed, names(&["prepare"]));
    }
    for node in COMPUTE_1.iter().chain(&["ntp01", "ctl01", "mon02"]) {
        assert_eq!(
            report.node(node).unwrap().status,
            NodeStatus::Success,
            "{node}"
        );
    }
    assert_eq!(report.succeeded_nodes.len(), 11);
    assert!(report
        .to_text()
        .contains("Finish (success with some nodes/groups failed)"));
}

#[test]
fn critical_group_survives_one_failure_within_its_criteria() {
    // control-nodes allow 1 failure out of 3 only if 90% succeed: 2 of 3 is 66%, so one failure fails it.
    let sim = simulate(&strategy(), &inventory(), &[fail("ctl02:deploy")]).unwrap();
    let control = sim.report.group("control-nodes").unwrap();
    assert_eq!(control.state, GroupStatus::Failed);
    let Some(FailureReason::Criteria { failures, .. }) = &control.reason else {
        panic!("{:?}", control.reason)
    };
    let missed: Vec<Criterion> = failures.iter().map(|f| f.criterion).collect();
    assert_eq!(
        missed,
        [
            Criterion::PercentSuccessfulNodes,
            Criterion::MinimumSuccessfulNodes
        ]
    );
    assert_eq!(sim.report.status, DeploymentStatus::Failed);
}

#[test]
fn events_tell_the_story() {
    let sim = simulate(&strategy(), &inventory(), &[fail("ntp01:prepare")]).unwrap();
    let events = &sim.events;
    assert_eq!(
        events.first(),
        Some(&DeploymentEvent::GroupStarted {
            group: "monitoring-nodes".into()
        })
    );
    assert!(events.contains(&DeploymentEvent::NodeStatusChanged {
        node: "ntp01".into(),
        group: "ntp-node".into(),
        phase: "prepare".into(),
        outcome: NodeOutcome::Failed,
        from: NodeStatus::NotStarted,
        to: NodeStatus::Failure,
    }));
    assert!(events.contains(&DeploymentEvent::NodeStatusChanged {
        node: "mon01".into(),
        group: "monitoring-nodes".into(),
        phase: "deploy".into(),
        outcome: NodeOutcome::Succeeded,
        from: NodeStatus::Prepared,
        to: NodeStatus::Success,
    }));
    let failed: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            DeploymentEvent::GroupFailed { group, .. } => Some(group.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        failed,
        names(&[
            "ntp-node",
            "control-nodes",
            "compute-nodes-1",
            "compute-nodes-2"
        ])
    );
    assert_eq!(
        events.last(),
        Some(&DeploymentEvent::DeploymentFinished {
            status: DeploymentStatus::Failed
        })
    );
    // Events are a tagged serde enum.
    let json = serde_json::to_value(
        events
            .iter()
            .find(|e| matches!(e, DeploymentEvent::GroupFailed { group, .. } if group == "control-nodes"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "event": "group_failed",
            "group": "control-nodes",
            "critical": true,
            "reason": {"kind": "dependency", "dependency": "ntp-node", "root": "ntp-node"}
        })
    );
}

#[test]
fn report_serializes_and_reads_back() {
    let sim = simulate(&strategy(), &inventory(), &[fail("cmp101:prepare:timeout")]).unwrap();
    let json = serde_json::to_string(&sim.report).unwrap();
    let back: plinth_common::strategy::Report = serde_json::from_str(&json).unwrap();
    assert_eq!(back, sim.report);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["status"], "success_with_failures");
    assert_eq!(value["nodes"][4]["name"], "cmp101");
    assert_eq!(value["nodes"][4]["failure"], "timed_out");
    assert_eq!(value["groups"][1]["state"], "succeeded");
}
