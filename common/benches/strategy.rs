//! Benchmarks of deployment strategies: a whole simulated deployment of 10,000 nodes in 200 groups, the
//! sequencer's own time from a phase's last result to the next phase's actions (the seed's five groups
//! scaled to 1,000 nodes), and loading the 200-group strategy as a Shipyard YAML document (as PyYAML reads
//! it, beside the YAML 1.2 reader it replaced, for reference).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use plinth_common::strategy::{
    load_strategy, parse_strategy, simulate, strategy_from_value, Action, Group, InventoryNode,
    Label, NodeOutcome, NodeResult, Selector, Sequencer, SimulatedFailure, Source, Strategy,
    SuccessCriteria,
};

/// 10,000 nodes in 200 racks of 50; every node has a role tag and a zone label.
fn large_inventory() -> Vec<InventoryNode> {
    (0..10_000)
        .map(|i| {
            let role = ["control", "compute", "compute", "storage"][i % 4];
            InventoryNode::new(format!("node{i:05}"))
                .with_tag(role)
                .with_label("zone", format!("z{}", i % 7))
                .in_rack(format!("rack{:03}", i / 50))
        })
        .collect()
}

/// 200 groups, one per rack, as a binary tree of dependencies (depth 8); a third select by rack and tag, a
/// third by rack and label plus 20 named nodes of the next rack, the rest by rack only.
fn large_strategy() -> Strategy {
    let groups = (0..200)
        .map(|i| {
            let rack = vec![format!("rack{i:03}")];
            let selectors = match i % 3 {
                0 => vec![Selector {
                    rack_names: rack,
                    node_tags: vec!["compute".into(), "storage".into(), "control".into()],
                    ..Selector::default()
                }],
                1 => vec![
                    Selector {
                        rack_names: rack,
                        node_labels: (0..7)
                            .map(|z| Label::new("zone", format!("z{z}")))
                            .collect(),
                        ..Selector::default()
                    },
                    Selector {
                        node_names: (0..20)
                            .map(|n| format!("node{:05}", ((i + 1) % 200) * 50 + n))
                            .collect(),
                        ..Selector::default()
                    },
                ],
                _ => vec![Selector {
                    rack_names: rack,
                    ..Selector::default()
                }],
            };
            Group {
                name: format!("group{i:03}"),
                critical: i < 10,
                depends_on: if i == 0 {
                    vec![]
                } else {
                    vec![format!("group{:03}", (i - 1) / 2)]
                },
                selectors,
                success_criteria: Some(SuccessCriteria {
                    percent_successful_nodes: Some(90),
                    maximum_failed_nodes: (i % 5 == 0).then_some(3),
                    ..SuccessCriteria::default()
                }),
            }
        })
        .collect();
    Strategy::from_groups(groups)
}

/// One node in a hundred fails, alternating between prepare and deploy.
fn large_failures() -> Vec<SimulatedFailure> {
    (0..10_000)
        .step_by(100)
        .enumerate()
        .map(|(k, i)| SimulatedFailure {
            node: format!("node{i:05}"),
            phase: if k % 2 == 0 { "prepare" } else { "deploy" }.to_string(),
            outcome: NodeOutcome::Failed,
        })
        .collect()
}

const FIVE_GROUPS: &str = r#"
groups:
  - {name: control-nodes, critical: true, depends_on: [ntp-node],
     selectors: [{node_tags: [control], rack_names: [rack03]}],
     success_criteria: {percent_successful_nodes: 90, minimum_successful_nodes: 3, maximum_failed_nodes: 1}}
  - {name: compute-nodes-1, critical: false, depends_on: [control-nodes],
     selectors: [{rack_names: [rack01], node_tags: [compute]}], success_criteria: {percent_successful_nodes: 50}}
  - {name: compute-nodes-2, critical: false, depends_on: [control-nodes],
     selectors: [{rack_names: [rack02], node_tags: [compute]}], success_criteria: {percent_successful_nodes: 50}}
  - {name: monitoring-nodes, critical: false, depends_on: [],
     selectors: [{node_tags: [monitoring], rack_names: [rack03, rack02, rack01]}]}
  - {name: ntp-node, critical: true, depends_on: [], selectors: [{node_names: [ntp01]}],
     success_criteria: {minimum_successful_nodes: 1}}
"#;

/// 1,000 nodes for the five groups: 1 ntp, 30 control, 450 compute per rack, 69 monitoring.
fn five_group_inventory() -> Vec<InventoryNode> {
    let mut nodes = vec![InventoryNode::new("ntp01").in_rack("rack01")];
    nodes.extend((0..30).map(|i| {
        InventoryNode::new(format!("ctl{i:03}"))
            .with_tag("control")
            .in_rack("rack03")
    }));
    for rack in 1..=2 {
        nodes.extend((0..450).map(|i| {
            InventoryNode::new(format!("cmp{rack}{i:03}"))
                .with_tag("compute")
                .in_rack(format!("rack0{rack}"))
        }));
    }
    nodes.extend((0..69).map(|i| {
        InventoryNode::new(format!("mon{i:03}"))
            .with_tag("monitoring")
            .in_rack(format!("rack0{}", i % 3 + 1))
    }));
    nodes
}

/// The five-group sequencer with compute-nodes-1's prepare phase running and all its results in but one.
fn one_result_left() -> (Sequencer, String, String, String) {
    let strategy = parse_strategy(FIVE_GROUPS).expect("valid strategy");
    let mut seq = Sequencer::new(&strategy, &five_group_inventory()).expect("valid inventory");
    loop {
        let actions = seq.next_actions();
        for action in actions {
            let Action::StartPhase {
                group,
                phase,
                nodes,
                ..
            } = action
            else {
                panic!("finished before compute-nodes-1 ran")
            };
            if group == "compute-nodes-1" {
                let (last, rest) = nodes.split_last().expect("nodes to send");
                for node in rest {
                    seq.record_result(&group, &phase, node, NodeOutcome::Succeeded)
                        .expect("sent node");
                }
                seq.take_events();
                return (seq, group, phase, last.clone());
            }
            let results: Vec<NodeResult> = nodes
                .iter()
                .map(|n| NodeResult::new(n.clone(), NodeOutcome::Succeeded))
                .collect();
            seq.phase_result(&group, &phase, &results)
                .expect("running phase");
        }
    }
}

fn benches(c: &mut Criterion) {
    let strategy = large_strategy();
    let inventory = large_inventory();
    let failures = large_failures();
    // The deployment being timed does real work: every node takes part and most groups run both phases.
    let once = simulate(&strategy, &inventory, &failures).expect("simulation");
    let phases_run = once
        .actions
        .iter()
        .filter(|a| matches!(a, Action::StartPhase { .. }))
        .count();
    assert_eq!(once.report.nodes.len(), 10_000);
    assert!(phases_run > 300, "only {phases_run} phases ran");
    println!(
        "simulated deployment: {phases_run} phases run, {} nodes succeeded, status {}",
        once.report.succeeded_nodes.len(),
        once.report.status
    );
    c.bench_function("strategy_simulate_10k_nodes_200_groups", |b| {
        b.iter(|| {
            simulate(
                black_box(&strategy),
                black_box(&inventory),
                black_box(&failures),
            )
            .expect("simulation")
        })
    });

    // The 200-group strategy as Shipyard's document, in YAML.
    let plain = serde_json::to_value(&strategy).expect("serializes");
    let shipyard = serde_json::json!({
        "schema": "shipyard/DeploymentStrategy/v1",
        "metadata": {"schema": "metadata/Document/v1", "name": "large",
                     "layeringDefinition": {"abstract": false, "layer": "global"}},
        "data": plain,
    });
    let yaml = serde_yaml_ng::to_string(&shipyard).expect("YAML");
    let loaded = load_strategy(&[Source::new("large.yaml", &yaml)]).expect("loads");
    assert_eq!(loaded.strategy.groups.len(), strategy.groups.len());
    c.bench_function("strategy_load_shipyard_yaml_200_groups", |b| {
        b.iter(|| load_strategy(&[Source::new("large.yaml", black_box(&yaml))]).expect("loads"))
    });
    c.bench_function("strategy_load_yaml_1_2_reference_200_groups", |b| {
        b.iter(|| {
            let value: serde_json::Value = serde_yaml_ng::from_str(black_box(&yaml)).expect("YAML");
            strategy_from_value(&value).expect("valid")
        })
    });

    let (seq, group, phase, last) = one_result_left();
    c.bench_function("strategy_last_result_to_next_actions_1k_nodes", |b| {
        b.iter_batched(
            || seq.clone(),
            |mut seq| {
                seq.record_result(&group, &phase, &last, NodeOutcome::Succeeded)
                    .expect("sent node");
                let actions = seq.next_actions();
                assert!(matches!(actions.as_slice(), [Action::StartPhase { .. }]));
                seq
            },
            BatchSize::LargeInput,
        )
    });
}

criterion_group!(strategy_benches, benches);
criterion_main!(strategy_benches);
