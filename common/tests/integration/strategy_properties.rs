//! Properties of the sequencer over random strategies, inventories, outcomes and ways of reporting: it
//! always terminates, never sends a node twice in one phase, respects dependencies and the concurrency
//! bound, and its report agrees with what happened. Also: the parser never panics, and strategies survive a
//! round trip through their serialized form.

use std::collections::{HashMap, HashSet};

use plinth_common::strategy::{
    parse_strategy, strategy_from_value, Action, DeploymentStatus, FailureReason, Group,
    GroupStatus, InventoryNode, Label, NodeOutcome, NodeResult, NodeStatus, Phase, Selector,
    Sequencer, Strategy, SuccessCriteria,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::Strategy as _;

const MAX_NODES: usize = 24;

#[derive(Debug, Clone)]
struct RawGroup {
    critical: bool,
    deps: u8,
    selectors: Vec<(u32, u8, u8, u8)>,
    criteria: (Option<u64>, Option<u64>, Option<u64>),
}

fn raw_group() -> impl proptest::strategy::Strategy<Value = RawGroup> {
    (
        any::<bool>(),
        any::<u8>(),
        vec((any::<u32>(), any::<u8>(), any::<u8>(), any::<u8>()), 0..3),
        (
            proptest::option::of(0u64..=100),
            proptest::option::of(0u64..6),
            proptest::option::of(0u64..6),
        ),
    )
        .prop_map(|(critical, deps, selectors, criteria)| RawGroup {
            critical,
            deps,
            selectors,
            criteria,
        })
}

/// A random, valid strategy and inventory. Groups depend only on groups created before them (so there is no
/// cycle), and are then listed in a shuffled order.
fn scenario() -> impl proptest::strategy::Strategy<Value = (Strategy, Vec<InventoryNode>)> {
    (
        vec((any::<u8>(), 0u8..4, 0u8..3), 0..MAX_NODES),
        vec(raw_group(), 0..8),
        1usize..=3,
        1u32..=3,
        any::<u64>(),
    )
        .prop_map(
            |(raw_nodes, raw_groups, phase_count, concurrency, shuffle)| {
                let inventory: Vec<InventoryNode> = raw_nodes
                    .iter()
                    .enumerate()
                    .map(|(i, &(tags, rack, zone))| {
                        let mut node = InventoryNode::new(format!("n{i}"));
                        for t in 0..3 {
                            if tags & (1 << t) != 0 {
                                node = node.with_tag(format!("t{t}"));
                            }
                        }
                        if rack < 3 {
                            node = node.in_rack(format!("r{rack}"));
                        }
                        if zone < 2 {
                            node = node.with_label("zone", format!("z{zone}"));
                        }
                        node
                    })
                    .collect();
                let mut groups: Vec<Group> = raw_groups
                    .iter()
                    .enumerate()
                    .map(|(i, raw)| Group {
                        name: format!("g{i}"),
                        critical: raw.critical,
                        depends_on: (0..i.min(8))
                            .filter(|j| raw.deps & (1 << j) != 0)
                            .map(|j| format!("g{j}"))
                            .collect(),
                        selectors: raw
                            .selectors
                            .iter()
                            .map(|&(names, tags, racks, zone)| Selector {
                                node_names: (0..MAX_NODES)
                                    .filter(|b| names & (1 << b) != 0)
                                    .map(|b| format!("n{b}"))
                                    .chain((names & (1 << 31) != 0).then(|| "ghost".to_string()))
                                    .collect(),
                                node_tags: (0..3)
                                    .filter(|b| tags & (1 << b) != 0)
                                    .map(|b| format!("t{b}"))
                                    .collect(),
                                node_labels: (zone < 2)
                                    .then(|| Label::new("zone", format!("z{zone}")))
                                    .into_iter()
                                    .collect(),
                                rack_names: (0..3)
                                    .filter(|b| racks & (1 << b) != 0)
                                    .map(|b| format!("r{b}"))
                                    .collect(),
                            })
                            .collect(),
                        success_criteria: {
                            let c = SuccessCriteria {
                                percent_successful_nodes: raw.criteria.0,
                                minimum_successful_nodes: raw.criteria.1,
                                maximum_failed_nodes: raw.criteria.2,
                            };
                            (!c.is_empty()).then_some(c)
                        },
                    })
                    .collect();
                // Shuffle the document order deterministically from the seed.
                let mut state = shuffle | 1;
                for i in (1..groups.len()).rev() {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    groups.swap(i, (state % (i as u64 + 1)) as usize);
                }
                let mut strategy = Strategy::from_groups(groups);
                strategy.phases = (0..phase_count)
                    .map(|k| Phase {
                        name: format!("p{k}"),
                        graph_type: format!("graph{k}"),
                        timeout: None,
                    })
                    .collect();
                strategy.max_concurrent_groups = concurrency;
                (strategy, inventory)
            },
        )
}

fn outcome_of(outcomes: &[u8], node: &str, phase: usize) -> NodeOutcome {
    let index: usize = node[1..].parse::<usize>().unwrap() * 3 + phase;
    match outcomes[index % outcomes.len()] % 12 {
        0 => NodeOutcome::Failed,
        1 => NodeOutcome::TimedOut,
        2 => NodeOutcome::NeverReported,
        _ => NodeOutcome::Succeeded,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    #[test]
    fn sequencing_terminates_and_sends_each_node_once_per_phase(
        (strategy, inventory) in scenario(),
        outcomes in vec(any::<u8>(), 1..80),
        driver in vec(any::<u8>(), 1..40),
    ) {
        prop_assert!(strategy.validate().is_ok());
        let phase_index: HashMap<String, usize> =
            strategy.phases.iter().enumerate().map(|(k, p)| (p.name.clone(), k)).collect();
        let last_phase = strategy.phases.len() - 1;
        let mut seq = Sequencer::new(&strategy, &inventory).unwrap();
        let mut sent: HashSet<(String, usize)> = HashSet::new();
        let mut passed: HashSet<(String, usize)> = HashSet::new();
        let mut step = 0usize;
        let bound = strategy.groups.len() * strategy.phases.len() + 2;
        let status = loop {
            prop_assert!(step <= bound, "no end after {} steps", step);
            let byte = driver[step % driver.len()];
            step += 1;
            if byte % 5 == 0 {
                // The controller restarts: the state goes through its stored form.
                let json = serde_json::to_string(&seq).unwrap();
                seq = serde_json::from_str(&json).unwrap();
            }
            let actions = seq.next_actions();
            if let [Action::Finished { status }] = actions.as_slice() {
                break *status;
            }
            for action in &actions {
                let Action::StartPhase { group, phase, nodes, .. } = action else {
                    prop_assert!(false, "Finished among other actions: {:?}", actions);
                    unreachable!()
                };
                prop_assert!(!nodes.is_empty());
                let k = phase_index[phase];
                let deps = &strategy.group(group).unwrap().depends_on;
                for dep in deps {
                    prop_assert_eq!(seq.group_state(dep), Some(GroupStatus::Succeeded));
                }
                for node in nodes {
                    prop_assert!(sent.insert((node.clone(), k)), "{} sent twice in {}", node, phase);
                    if k > 0 {
                        prop_assert!(passed.contains(&(node.clone(), k - 1)), "{} skipped a phase", node);
                    }
                    let status = seq.node_status(node).unwrap();
                    prop_assert!(status == NodeStatus::NotStarted || status == NodeStatus::Prepared);
                }
            }
            let in_flight = seq.in_flight();
            prop_assert!(!in_flight.is_empty());
            prop_assert!(in_flight.len() <= strategy.max_concurrent_groups as usize);
            let mut busy = HashSet::new();
            for phase in &in_flight {
                for node in &phase.nodes {
                    prop_assert!(busy.insert(node.clone()), "{} in two running phases", node);
                }
            }
            // Answer the first running phase, or all of them, in one of three ways.
            let answer = if byte & 1 == 0 { 1 } else { in_flight.len() };
            for phase in in_flight.into_iter().take(answer) {
                let k = phase_index[&phase.phase];
                let results: Vec<NodeResult> = phase
                    .awaiting
                    .iter()
                    .map(|node| NodeResult::new(node.clone(), outcome_of(&outcomes, node, k)))
                    .collect();
                for result in &results {
                    if result.outcome == NodeOutcome::Succeeded {
                        passed.insert((result.node.clone(), k));
                    }
                }
                match (byte >> 1) % 3 {
                    0 => {
                        let reported: Vec<NodeResult> =
                            results.into_iter().filter(|r| r.outcome != NodeOutcome::NeverReported).collect();
                        seq.phase_result(&phase.group, &phase.phase, &reported).unwrap();
                    }
                    1 => {
                        let mut all_reported = true;
                        for result in &results {
                            if result.outcome == NodeOutcome::NeverReported {
                                all_reported = false;
                            } else {
                                seq.record_result(&phase.group, &phase.phase, &result.node, result.outcome).unwrap();
                            }
                        }
                        if !all_reported {
                            seq.phase_timed_out(&phase.group, &phase.phase).unwrap();
                        }
                    }
                    _ => {
                        for result in results.iter().filter(|r| r.outcome.is_success()) {
                            seq.record_result(&phase.group, &phase.phase, &result.node, result.outcome).unwrap();
                        }
                        if results.iter().any(|r| !r.outcome.is_success()) {
                            seq.phase_timed_out(&phase.group, &phase.phase).unwrap();
                        }
                    }
                }
            }
        };

        // Finished is stable.
        prop_assert_eq!(seq.next_actions(), vec![Action::Finished { status }]);
        let report = seq.report();
        prop_assert_eq!(report.status, status);
        prop_assert!(seq.in_flight().is_empty());
        for group in &report.groups {
            prop_assert!(matches!(group.state, GroupStatus::Succeeded | GroupStatus::Failed));
            if let Some(FailureReason::Dependency { dependency, .. }) = &group.reason {
                prop_assert_eq!(report.group(dependency).unwrap().state, GroupStatus::Failed);
            }
        }
        let critical_failed = report.groups.iter().any(|g| g.critical && g.state == GroupStatus::Failed);
        prop_assert_eq!(status == DeploymentStatus::Failed, critical_failed);
        for node in &report.nodes {
            let was_sent = (0..strategy.phases.len()).any(|k| sent.contains(&(node.name.clone(), k)));
            prop_assert_eq!(node.status == NodeStatus::NotStarted, !was_sent, "{}", node.name);
            let succeeded = passed.contains(&(node.name.clone(), last_phase));
            prop_assert_eq!(node.status == NodeStatus::Success, succeeded, "{}", node.name);
        }
        let expected: Vec<&String> = report.nodes.iter().filter(|n| n.status == NodeStatus::Success).map(|n| &n.name).collect();
        prop_assert_eq!(report.succeeded_nodes.iter().collect::<Vec<_>>(), expected);
    }

    #[test]
    fn strategies_round_trip_through_their_serialized_form((strategy, _inventory) in scenario()) {
        let json = serde_json::to_string(&strategy).unwrap();
        prop_assert_eq!(&parse_strategy(&json).unwrap(), &strategy);
        let yaml = serde_yaml_ng::to_string(&strategy).unwrap();
        prop_assert_eq!(&parse_strategy(&yaml).unwrap(), &strategy);
    }

    #[test]
    fn the_parser_never_panics_on_text(text in "[ -~\n]{0,200}") {
        let _ = parse_strategy(&text);
    }

    #[test]
    fn the_parser_never_panics_on_documents(value in document()) {
        if let Ok(strategy) = strategy_from_value(&value) {
            prop_assert!(strategy.validate().is_ok());
        }
    }
}

/// Random JSON documents built from the strategy's own vocabulary, so that most of them get deep.
fn document() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    let keys = prop::sample::select(vec![
        "schema",
        "metadata",
        "data",
        "groups",
        "name",
        "critical",
        "depends_on",
        "selectors",
        "node_names",
        "node_tags",
        "node_labels",
        "rack_names",
        "success_criteria",
        "percent_successful_nodes",
        "minimum_successful_nodes",
        "maximum_failed_nodes",
        "phases",
        "graph_type",
        "timeout",
        "phase_timeout",
        "max_concurrent_groups",
    ]);
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        (0u64..120).prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        prop::sample::select(vec![
            "g",
            "h",
            "a:b",
            "shipyard/DeploymentStrategy/v1",
            "",
            "x:"
        ])
        .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            vec((keys.clone(), inner), 0..6).prop_map(|entries| {
                serde_json::Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect(),
                )
            }),
        ]
    })
}
