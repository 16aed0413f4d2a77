//! Shipyard's own fixtures, read from the corpus as they are: its document samples, its
//! DeploymentConfiguration samples, the group documents of its deployment-group unit tests, and a real
//! global + site pair of strategies; each with the outcome seed 004 gives.

use plinth_common::strategy::{
    load_configuration, load_strategy, parse_strategy, simulate, Criterion, DeploymentStatus,
    FailureReason, GroupStatus, InventoryNode, SimulatedFailure, Source, StrategyError,
};
use std::path::PathBuf;

/// The corpus beside the checkout.
fn corpus() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus"))
}

fn path(name: &str) -> PathBuf {
    corpus().join("shipyard").join(name)
}

fn read(name: &str) -> String {
    let p = path(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// A test file of group documents (a list of groups, or one group) made into a plain strategy (JSON),
/// with `extra` groups after the file's.
fn groups_with(name: &str, extra: &[serde_json::Value]) -> String {
    let value: serde_json::Value = serde_yaml_ng::from_str(&read(name)).unwrap();
    let mut groups = match value {
        serde_json::Value::Array(items) => items,
        one => vec![one],
    };
    groups.extend(extra.iter().cloned());
    serde_json::json!({ "groups": groups }).to_string()
}

fn groups_doc(name: &str) -> String {
    groups_with(name, &[])
}

/// The nodes the group tests select from: ntp on node3 (rack1); node1 and node2 in rack1; control nodes
/// node4..node6 (tag1, rack3); node7 with label1 in rack4; computes with `compute: true` in racks 2 to 4;
/// three monitoring nodes.
fn inventory() -> Vec<InventoryNode> {
    let mut nodes = vec![
        InventoryNode::new("node1").in_rack("rack1"),
        InventoryNode::new("node2").in_rack("rack1"),
        InventoryNode::new("node3").in_rack("rack1"),
    ];
    for i in 4..=6 {
        nodes.push(
            InventoryNode::new(format!("node{i}"))
                .with_tag("tag1")
                .in_rack("rack3"),
        );
    }
    nodes.push(
        InventoryNode::new("node7")
            .with_label("label1", "label1")
            .in_rack("rack4"),
    );
    for (name, rack) in [("cmp1", "rack2"), ("cmp2", "rack3"), ("cmp3", "rack4")] {
        nodes.push(
            InventoryNode::new(name)
                .with_label("compute", "true")
                .in_rack(rack),
        );
    }
    for i in 1..=3 {
        nodes.push(InventoryNode::new(format!("mon{i}")).with_tag("monitoring"));
    }
    nodes
}

fn fail(spec: &str) -> SimulatedFailure {
    spec.parse().unwrap()
}

#[test]
fn every_top_level_sample_has_the_outcome_shipyard_gives() {
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(corpus().join("shipyard")).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            continue;
        }
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&p).unwrap();
        let source = [Source::new(&name, &text)];
        match name.as_str() {
            "deploymentStrategy_full_valid.yaml"
            | "deploymentStrategy_minimal.yaml"
            | "deploymentStrategy_min_with_content.yaml" => {
                load_strategy(&source).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            n if n.starts_with("deploymentStrategy_bad_values_") => {
                let error = load_strategy(&source).expect_err(n);
                assert!(!error.findings().is_empty(), "{n}: {error}");
            }
            // Shipyard's schema for the document, a DataSchema: not a strategy.
            "deploymentStrategy.yaml" | "deploymentStrategy.schema.yaml" => {
                let error = load_strategy(&source).expect_err(&name);
                assert!(error.to_string().contains("schema"), "{error}");
            }
            "deploymentConfiguration_full_valid.yaml"
            | "deploymentConfiguration_minimal_valid.yaml" => {
                load_configuration(&source).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            "deploymentConfiguration_bad_manifest.yaml" => {
                let error = load_configuration(&source).expect_err(&name);
                assert_eq!(error.findings()[0].field, "data.armada.manifest");
            }
            "empty.yaml" => {
                let error = load_strategy(&source).expect_err(&name);
                assert!(error.to_string().contains("holds no document"), "{error}");
            }
            "total_garbage.yaml" => {
                let error = load_strategy(&source).expect_err(&name);
                assert!(matches!(error, StrategyError::Invalid(_)), "{error}");
                assert!(error.to_string().contains("expected a mapping"), "{error}");
            }
            other => panic!("a sample this test does not know: {other}"),
        }
        seen.push(name);
    }
    assert_eq!(seen.len(), 15, "{seen:?}");
}

#[test]
fn deployment_configuration_samples_give_the_strategy_name_and_timeouts() {
    let full = read("deploymentConfiguration_full_valid.yaml");
    let loaded = load_configuration(&[Source::new("full", &full)]).unwrap();
    let c = &loaded.configuration;
    assert_eq!(c.name, "deployment-configuration");
    assert_eq!(c.deployment_strategy.as_deref(), Some("all-at-once"));
    assert_eq!((c.prepare_node_timeout, c.deploy_timeout), (1800, 3600));
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    // Every section is kept as uploaded.
    assert_eq!(loaded.document["data"]["armada"]["manifest"], "full-site");
    assert_eq!(
        loaded.document["data"]["kubernetes_provisioner"]["drain_timeout"],
        3600
    );

    let minimal = read("deploymentConfiguration_minimal_valid.yaml");
    let c = load_configuration(&[Source::new("minimal", &minimal)])
        .unwrap()
        .configuration;
    // The seed: the strategy's name defaults to `deployment-strategy`.
    assert_eq!(c.strategy_name(), "deployment-strategy");
    assert_eq!((c.prepare_node_timeout, c.deploy_timeout), (1800, 3600));
}

#[test]
fn cycles_in_the_group_tests_are_rejected_naming_the_cycle_only() {
    for name in [
        "deployment_group_tests/CYCLE_doc.yaml",
        "deployment_group_tests/CYCLE_GROUPS_YAML.yaml",
    ] {
        let text = if name.ends_with("_doc.yaml") {
            read(name)
        } else {
            groups_doc(name)
        };
        let error = parse_strategy(&text).expect_err(name);
        let message = error.to_string();
        assert!(
            message.contains("circular dependency: group-a -> group-c -> group-d -> group-a"),
            "{name}: {message}"
        );
    }
}

#[test]
fn groups_missing_required_fields_are_rejected_naming_each() {
    for name in [
        "deployment_group_tests/missing_doc.yaml",
        "deployment_group_tests/GROUP_YAML_MISSING.yaml",
    ] {
        let text = if name.ends_with("_doc.yaml") {
            read(name)
        } else {
            groups_doc(name)
        };
        let error = parse_strategy(&text).expect_err(name);
        let fields: Vec<&str> = error.findings().iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, ["critical", "depends_on", "selectors"], "{name}");
        assert!(error
            .findings()
            .iter()
            .all(|f| f.group.as_deref() == Some("control-nodes")));
    }
}

#[test]
fn the_seven_group_document_runs_in_dependency_order_and_a_failed_ntp_node_fails_it() {
    for name in [
        "deployment_group_tests/GROUPS_doc.yaml",
        "deployment_group_tests/GROUPS_YAML.yaml",
    ] {
        let text = if name.ends_with("_doc.yaml") {
            read(name)
        } else {
            groups_doc(name)
        };
        let strategy = parse_strategy(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let sim = simulate(&strategy, &inventory(), &[]).unwrap();
        let order = &sim.report.order;
        let at = |g: &str| order.iter().position(|o| o == g).unwrap();
        assert!(at("ntp-node") < at("control-nodes"), "{order:?}");
        assert!(at("control-nodes") < at("compute-nodes-1"));
        assert!(at("control-nodes") < at("compute-nodes-2"));
        assert!(at("spare-compute-nodes") < at("all-compute-nodes"));
        assert_eq!(sim.report.status, DeploymentStatus::Success, "{name}");

        // The seed's second scenario: ntp-node's only node fails prepare; everything after it fails by
        // dependency and the deployment fails (ntp-node and control-nodes are critical); monitoring goes on.
        let sim = simulate(&strategy, &inventory(), &[fail("node3:prepare")]).unwrap();
        let r = &sim.report;
        assert_eq!(r.status, DeploymentStatus::Failed);
        assert_eq!(r.group("ntp-node").unwrap().state, GroupStatus::Failed);
        for dependant in [
            "control-nodes",
            "compute-nodes-1",
            "compute-nodes-2",
            "spare-compute-nodes",
            "all-compute-nodes",
        ] {
            let g = r.group(dependant).unwrap();
            assert!(
                matches!(
                    &g.reason,
                    Some(FailureReason::Dependency { root, .. }) if root == "ntp-node"
                ),
                "{dependant}: {:?}",
                g.reason
            );
            assert!(g.succeeded.is_empty() && g.prepared.is_empty());
        }
        assert_eq!(
            r.group("monitoring-nodes").unwrap().state,
            GroupStatus::Succeeded
        );
    }
}

#[test]
fn a_selector_with_only_empty_criteria_selects_every_node_united_with_the_others() {
    let strategy = parse_strategy(&read("deployment_group_tests/all2_doc.yaml")).unwrap();
    let sim = simulate(&strategy, &inventory(), &[]).unwrap();
    let control = sim.report.group("control-nodes").unwrap();
    assert_eq!(control.nodes.len(), inventory().len());
    // node3 was deployed by ntp-node; control-nodes counts it without sending it again.
    assert_eq!(
        sim.report.node("node3").unwrap().sent_by.as_deref(),
        Some("ntp-node")
    );
    assert_eq!(sim.report.status, DeploymentStatus::Success);
}

#[test]
fn percentages_are_exact_and_each_criterion_is_checked() {
    // control-nodes: tag1 in rack3 (node4..6) united with label1 in rack3 or rack4 (node7): 4 nodes.
    let multi = parse_strategy(&read("deployment_group_tests/multi_doc.yaml")).unwrap();
    let sim = simulate(&multi, &inventory(), &[]).unwrap();
    assert_eq!(
        sim.report.group("control-nodes").unwrap().nodes,
        ["node4", "node5", "node6", "node7"]
    );
    // One of four fails: 75% < 79% fails the group although at most one failure is allowed.
    let sim = simulate(&multi, &inventory(), &[fail("node4:deploy")]).unwrap();
    let control = sim.report.group("control-nodes").unwrap();
    let Some(FailureReason::Criteria { failures, .. }) = &control.reason else {
        panic!("{:?}", control.reason)
    };
    let missed: Vec<Criterion> = failures.iter().map(|f| f.criterion).collect();
    assert_eq!(missed, [Criterion::PercentSuccessfulNodes]);
    assert_eq!((failures[0].needed, failures[0].actual), (79, 75));
    assert_eq!(sim.report.status, DeploymentStatus::Failed);

    // The same nodes with only `maximum_failed_nodes: 1`: one failure passes, two fail.
    let minimal = parse_strategy(&read("deployment_group_tests/minimal_doc.yaml")).unwrap();
    let one = simulate(&minimal, &inventory(), &[fail("node4:deploy")]).unwrap();
    assert_eq!(
        one.report.group("control-nodes").unwrap().state,
        GroupStatus::Succeeded
    );
    let two = simulate(
        &minimal,
        &inventory(),
        &[fail("node4:deploy"), fail("node7:prepare")],
    )
    .unwrap();
    assert_eq!(
        two.report.group("control-nodes").unwrap().state,
        GroupStatus::Failed
    );
}

#[test]
fn a_group_selecting_no_node_fails_its_minimum() {
    // g1_doc's control-nodes group with the selector of GROUP_YAML_EXCLUDES_ALL (tag2 in rack4: no node).
    let mut text = read("deployment_group_tests/g1_doc.yaml");
    let excludes = read("deployment_group_tests/GROUP_YAML_EXCLUDES_ALL.yaml");
    assert!(excludes.contains("tag2") && excludes.contains("rack4"));
    text = text
        .replace("- tag1", "- tag2")
        .replace("- rack3", "- rack4");
    let strategy = parse_strategy(&text).unwrap();
    let sim = simulate(&strategy, &inventory(), &[]).unwrap();
    let control = sim.report.group("control-nodes").unwrap();
    assert!(control.nodes.is_empty());
    let Some(FailureReason::Criteria { failures, .. }) = &control.reason else {
        panic!("{:?}", control.reason)
    };
    // 100% of no node succeeded and no node failed, but 0 successes miss the minimum of 3.
    let missed: Vec<Criterion> = failures.iter().map(|f| f.criterion).collect();
    assert_eq!(missed, [Criterion::MinimumSuccessfulNodes]);
    assert_eq!(sim.report.status, DeploymentStatus::Failed);
}

/// Deckhand's layering policy of the treasuremap site.
const POLICY: &str = "---\nschema: deckhand/LayeringPolicy/v1\nmetadata: {schema: metadata/Control/v1, name: layering-policy}\ndata: {layerOrder: [global, type, site]}\n";

#[test]
fn the_treasuremap_site_strategy_replaces_the_global_one() {
    let global = read("treasuremap/global-deployment-strategy.yaml");
    let site = read("treasuremap/stl1-deployment-strategy.yaml");
    let loaded = load_strategy(&[
        Source::new("layering-policy.yaml", POLICY),
        Source::new("global-deployment-strategy.yaml", &global),
        Source::new("stl1-deployment-strategy.yaml", &site),
    ])
    .unwrap();
    let names: Vec<&str> = loaded
        .strategy
        .groups
        .iter()
        .map(|g| g.name.as_str())
        .collect();
    assert_eq!(names, ["masters", "worker_group_0", "workers"]);
    assert_eq!(loaded.strategy.name.as_deref(), Some("deployment-strategy"));
    let p = &loaded.provenance;
    assert!(
        p.starts_with("stl1-deployment-strategy.yaml document 1 (line 1) (site layer; replace .), replacing global-deployment-strategy.yaml document 1"),
        "{p}"
    );
    // `replacement: true` is written twice in the site document's metadata: PyYAML keeps the last, so do we,
    // with a warning naming the line.
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.message.contains("\"replacement\" appears twice")),
        "{:?}",
        loaded.warnings
    );
    // Without its layering policy, Deckhand renders nothing.
    let error = load_strategy(&[Source::new("g", &global), Source::new("s", &site)]).unwrap_err();
    assert!(error.to_string().contains("no layering policy"), "{error}");

    // Without its parent, the site document (`replacement: true`) is refused.
    let error =
        load_strategy(&[Source::new("p", POLICY), Source::new("stl1.yaml", &site)]).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`replacement: true` must have a parent"),
        "{error}"
    );
    // Shipyard's test input is the same kind of site document, with two worker groups.
    let input = read("deployment_group_tests/INPUT_YAML.yaml");
    let loaded = load_strategy(&[
        Source::new("p", POLICY),
        Source::new("g", &global),
        Source::new("i", &input),
    ])
    .unwrap();
    assert_eq!(loaded.strategy.groups.len(), 4);
    // The v4 global document is the global document again: the same document twice is one (Deckhand keeps
    // the first).
    let v4 = read("treasuremap/v4-global-deployment-strategy.yaml");
    assert_eq!(v4, global);
    let loaded = load_strategy(&[
        Source::new("p", POLICY),
        Source::new("g", &global),
        Source::new("v4", &v4),
        Source::new("s", &site),
    ])
    .unwrap();
    assert_eq!(loaded.strategy.groups.len(), 3);
    // Another document with the same schema, layer and name is refused, as Deckhand refuses to store it.
    let changed = v4.replace(
        "percent_successful_nodes: 60",
        "percent_successful_nodes: 50",
    );
    assert_ne!(changed, v4);
    let error = load_strategy(&[
        Source::new("p", POLICY),
        Source::new("g", &global),
        Source::new("v4", &changed),
        Source::new("s", &site),
    ])
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("the same schema, layer and name as [shipyard/DeploymentStrategy/v1] deployment-strategy (global layer, g document 1"),
        "{error}"
    );
    // Renamed, it is a second parent the site document's selector matches in the same layer.
    let v4_renamed = v4.replace("name: deployment-strategy\n", "name: v4-strategy\n");
    let error = load_strategy(&[
        Source::new("p", POLICY),
        Source::new("g", &global),
        Source::new("v4", &v4_renamed),
        Source::new("s", &site),
    ])
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("2 parent documents were found for it"),
        "{error}"
    );
    // Either global document alone is a strategy of its own.
    assert_eq!(parse_strategy(&v4).unwrap().groups.len(), 2);
}

#[test]
fn each_single_group_fixture_selects_and_ends_as_the_seed_says() {
    // (file, the group's nodes, a failure to inject, the group's state)
    let cases: &[(&str, &[&str], Option<&str>, GroupStatus)] = &[
        (
            "GROUP_YAML_1.yaml",
            &["node4", "node5", "node6"],
            None,
            GroupStatus::Succeeded,
        ),
        // 2 of 3 is 66%, below 90%; one failure is within `maximum_failed_nodes: 1`.
        (
            "GROUP_YAML_1.yaml",
            &["node4", "node5", "node6"],
            Some("node5:deploy"),
            GroupStatus::Failed,
        ),
        // No selectors, or a selector with only empty criteria: every node.
        (
            "GROUP_YAML_ALL_SELECTOR.yaml",
            &[],
            None,
            GroupStatus::Succeeded,
        ),
        (
            "GROUP_YAML_ALL_SELECTOR_2.yaml",
            &[],
            None,
            GroupStatus::Succeeded,
        ),
        // No node: 100% of nothing, but 0 successes miss the minimum of 3.
        (
            "GROUP_YAML_EXCLUDES_ALL.yaml",
            &[],
            None,
            GroupStatus::Failed,
        ),
        (
            "GROUP_YAML_MINIMAL_SUCC_CRITERIA.yaml",
            &["node4", "node5", "node6", "node7"],
            Some("node7:prepare"),
            GroupStatus::Succeeded,
        ),
        (
            "GROUP_YAML_MULTI_SELECTOR.yaml",
            &["node4", "node5", "node6", "node7"],
            Some("node7:prepare"),
            GroupStatus::Failed,
        ),
        // No criteria: processing continues as if nothing is wrong, even when its only node fails.
        (
            "GROUP_YAML_NO_SUCC_CRITERIA.yaml",
            &["node7"],
            Some("node7:deploy"),
            GroupStatus::Succeeded,
        ),
    ];
    for (file, members, failure, state) in cases {
        let ntp = serde_json::json!({"name": "ntp-node", "critical": true, "depends_on": [],
                                     "selectors": [{"node_names": ["node3"]}]});
        let text = groups_with(&format!("deployment_group_tests/{file}"), &[ntp]);
        let strategy = parse_strategy(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let failures: Vec<SimulatedFailure> = failure.iter().map(|f| fail(f)).collect();
        let sim = simulate(&strategy, &inventory(), &failures).unwrap();
        assert!(sim.unused_failures.is_empty(), "{file}");
        let control = sim.report.group("control-nodes").unwrap();
        let expected: Vec<String> = if members.is_empty() && file.contains("ALL_SELECTOR") {
            inventory().iter().map(|n| n.name.clone()).collect()
        } else {
            members.iter().map(|m| m.to_string()).collect()
        };
        assert_eq!(control.nodes, expected, "{file}");
        assert_eq!(
            control.state, *state,
            "{file} with {failure:?}: {:?}",
            control.reason
        );
    }
}

#[test]
fn substitutions_are_rendered_as_deckhand_renders_them() {
    let global = read("treasuremap/global-deployment-strategy.yaml");
    let chart = "---\nschema: armada/Chart/v1\nmetadata:\n  name: chart\n  layeringDefinition: {abstract: false, layer: global}\n  \
                 substitutions:\n    - {src: {schema: deckhand/Passphrase/v1, name: pw, path: .}, dest: {path: .values.pw}}\ndata: {}\n";
    // Another document's substitution source is missing: Deckhand refuses the site, naming both.
    let error = load_strategy(&[
        Source::new("p", POLICY),
        Source::new("g", &global),
        Source::new("chart.yaml", chart),
    ])
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("[armada/Chart/v1] chart (global layer, chart.yaml document 1")
            && error.contains("names the source [deckhand/Passphrase/v1] pw"),
        "{error}"
    );
    // With its source, the site renders and the strategy loads.
    let pw = "---\nschema: deckhand/Passphrase/v1\nmetadata: {name: pw, storagePolicy: cleartext, layeringDefinition: {layer: global}}\ndata: s3cret\n";
    let loaded = load_strategy(&[
        Source::new("p", POLICY),
        Source::new("g", &global),
        Source::new("chart.yaml", chart),
        Source::new("pw.yaml", pw),
    ])
    .unwrap();
    assert_eq!(loaded.strategy.groups[0].name, "masters");
    // The strategy itself takes a group's nodes from another document.
    let names = "---\nschema: pegleg/CommonAddresses/v1\nmetadata: {name: names, layeringDefinition: {layer: global}}\ndata: {masters: [m1, m2]}\n";
    let asking = global.replace(
        "  storagePolicy: cleartext",
        "  storagePolicy: cleartext\n  substitutions:\n    - {src: {schema: pegleg/CommonAddresses/v1, name: names, path: .masters}, dest: {path: '.groups[0].selectors[0].node_names'}}",
    );
    let loaded = load_strategy(&[
        Source::new("p", POLICY),
        Source::new("s.yaml", &asking),
        Source::new("n.yaml", names),
    ])
    .unwrap();
    assert_eq!(
        loaded.strategy.groups[0].selectors[0].node_names,
        ["m1", "m2"]
    );
    assert!(
        loaded
            .provenance
            .ends_with("substituted from [pegleg/CommonAddresses/v1] names"),
        "{}",
        loaded.provenance
    );
    // Alone, it cannot be rendered: its source is not there.
    let error = load_strategy(&[Source::new("s.yaml", &asking)]).unwrap_err();
    assert!(
        error.to_string().contains("asks for substitutions"),
        "{error}"
    );
}

/// Every YAML file of the treasuremap v1.9 site, in path order.
fn treasuremap_site() -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "yaml") {
                out.push(p);
            }
        }
    }
    let root = corpus().join("treasuremap-v1.9");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(&root).unwrap().display().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

#[test]
fn the_whole_treasuremap_site_gives_its_strategy_and_configuration() {
    let texts = treasuremap_site();
    assert!(texts.len() > 300);
    let sources: Vec<Source<'_>> = texts.iter().map(|(n, t)| Source::new(n, t)).collect();
    let loaded = load_strategy(&sources).unwrap();
    assert_eq!(loaded.strategy.name.as_deref(), Some("deployment-strategy"));
    let names: Vec<&str> = loaded
        .strategy
        .groups
        .iter()
        .map(|g| g.name.as_str())
        .collect();
    assert_eq!(names, ["masters", "workers"]);
    assert!(
        loaded
            .provenance
            .starts_with("global/deployment/deployment-strategy.yaml document 1 (line"),
        "{}",
        loaded.provenance
    );
    let configuration = load_configuration(&sources).unwrap().configuration;
    assert_eq!(configuration.name, "deployment-configuration");
    assert_eq!(
        configuration.deployment_strategy.as_deref(),
        Some("deployment-strategy")
    );
    assert_eq!(
        (
            configuration.prepare_node_timeout,
            configuration.deploy_timeout
        ),
        (1800, 3600)
    );
}
