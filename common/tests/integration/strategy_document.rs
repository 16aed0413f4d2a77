//! Reading and validating strategy documents: Shipyard's form and the plain form, YAML and JSON, every
//! validation rule with its message, Plinth's settings and their defaults, and the corpus' samples.

use std::path::PathBuf;

use plinth_common::strategy::{
    load_strategy, parse_strategy, Finding, Group, Label, Phase, Selector, Source, Strategy,
    StrategyError, SuccessCriteria, DEFAULT_PHASE_TIMEOUT_SECS,
};

fn corpus() -> PathBuf {
    match std::env::var_os("PLINTH_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus")),
    }
}

fn read_sample(name: &str) -> String {
    let path = corpus().join("shipyard").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The findings of a document that must be rejected.
fn findings(text: &str) -> Vec<Finding> {
    match parse_strategy(text) {
        Ok(strategy) => panic!("accepted: {strategy:?}"),
        Err(StrategyError::Invalid(findings)) => findings,
        Err(other) => panic!("not a validation error: {other}"),
    }
}

/// Asserts that some finding is in `group`, on `field`, with a message containing `words`.
fn assert_finding(findings: &[Finding], group: Option<&str>, field: &str, words: &str) {
    assert!(
        findings
            .iter()
            .any(|f| f.group.as_deref() == group && f.field == field && f.message.contains(words)),
        "no finding in {group:?} on {field:?} saying {words:?}; got:\n{}",
        findings
            .iter()
            .map(|f| format!("  {f}\n"))
            .collect::<String>()
    );
}

fn group(name: &str, depends_on: &[&str]) -> String {
    format!(
        "  - name: {name}\n    critical: false\n    depends_on: [{}]\n    selectors: []\n",
        depends_on.join(", ")
    )
}

// ----- the corpus -----

#[test]
fn every_valid_corpus_sample_is_accepted() {
    let full = parse_strategy(&read_sample("deploymentStrategy_full_valid.yaml")).unwrap();
    assert_eq!(full.name.as_deref(), Some("deployment-strategy"));
    let names: Vec<&str> = full.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "control-nodes",
            "compute-nodes-1",
            "compute-nodes-2",
            "monitoring-nodes",
            "ntp-node"
        ]
    );
    let control = &full.groups[0];
    assert!(control.critical);
    assert_eq!(control.depends_on, ["ntp-node"]);
    assert_eq!(
        control.selectors,
        [Selector {
            node_tags: vec!["control".into()],
            rack_names: vec!["rack03".into()],
            ..Selector::default()
        }]
    );
    assert_eq!(
        control.success_criteria,
        Some(SuccessCriteria {
            percent_successful_nodes: Some(90),
            minimum_successful_nodes: Some(3),
            maximum_failed_nodes: Some(1),
        })
    );
    assert_eq!(
        full.groups[3].selectors[0].rack_names,
        ["rack03", "rack02", "rack01"]
    );
    assert_eq!(full.groups[4].selectors[0].node_names, ["ntp01"]);
    // Shipyard's document says nothing of Plinth's settings: the defaults apply.
    assert_eq!(full.phases, Phase::defaults());
    assert_eq!(full.phase_timeout, DEFAULT_PHASE_TIMEOUT_SECS);
    assert_eq!(full.max_concurrent_groups, 1);

    let minimal = parse_strategy(&read_sample("deploymentStrategy_minimal.yaml")).unwrap();
    assert!(minimal.groups.is_empty());

    let content = parse_strategy(&read_sample("deploymentStrategy_min_with_content.yaml")).unwrap();
    assert_eq!(content.groups.len(), 1);
    assert_eq!(content.groups[0].name, "some-nodes");
    assert!(content.groups[0].selectors.is_empty());
    assert!(content.groups[0].success_criteria.is_none());
}

#[test]
fn every_invalid_corpus_sample_is_rejected_naming_the_problem() {
    let f = findings(&read_sample("deploymentStrategy_bad_values_1.yaml"));
    assert_eq!(
        f,
        [Finding::new(
            Some("data.groups[0]"),
            "name",
            "must not be empty"
        )]
    );

    let f = findings(&read_sample("deploymentStrategy_bad_values_2.yaml"));
    assert_eq!(
        f,
        [Finding::new(
            Some("a_group"),
            "critical",
            "expected true or false, found the string \"cheese sandwich\""
        )]
    );

    let f = findings(&read_sample("deploymentStrategy_bad_values_3.yaml"));
    assert_eq!(f.len(), 1, "{f:?}");
    assert_finding(
        &f,
        Some("some_group"),
        "depends_on",
        "missing required field",
    );

    let f = findings(&read_sample("deploymentStrategy_bad_values_4.yaml"));
    assert_eq!(f.len(), 3, "{f:?}");
    assert_finding(
        &f,
        Some("my_name_is"),
        "selectors[0].node_names[0]",
        "expected a string, found the boolean false",
    );
    assert_finding(
        &f,
        Some("my_name_is"),
        "selectors[0].node_names[1]",
        "found the boolean true",
    );
    assert_finding(
        &f,
        Some("my_name_is"),
        "selectors[0].node_names[2]",
        "found the boolean false",
    );

    let f = findings(&read_sample("deploymentStrategy_bad_values_5.yaml"));
    assert_eq!(
        f,
        [Finding::new(
            Some("my_group"),
            "success_criteria.percent_successful_nodes",
            "must be between 0 and 100, found 190"
        )]
    );
}

#[test]
fn fields_follow_shipyards_schema() {
    // Read the schema from the corpus and check each required group field is required here too, and every
    // property it allows is accepted.
    let schema: serde_json::Value =
        serde_yaml_ng::from_str(&read_sample("deploymentStrategy.yaml")).unwrap();
    let group_schema = &schema["data"]["properties"]["groups"]["items"];
    let required: Vec<&str> = group_schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(required, ["name", "critical", "depends_on", "selectors"]);
    let full = "schema: shipyard/DeploymentStrategy/v1\nmetadata: {name: s}\ndata:\n  groups:\n";
    for field in &required {
        let mut group =
            serde_json::json!({"name": "g", "critical": true, "depends_on": [], "selectors": []});
        group.as_object_mut().unwrap().remove(*field);
        let doc = serde_json::json!({"groups": [group]});
        let f = findings(&doc.to_string());
        let label = if *field == "name" { "groups[0]" } else { "g" };
        assert_finding(&f, Some(label), field, "missing required field");
    }
    let selector_props = group_schema["properties"]["selectors"]["items"]["properties"]
        .as_object()
        .unwrap();
    let criteria_props = group_schema["properties"]["success_criteria"]["properties"]
        .as_object()
        .unwrap();
    let mut text = String::from(full);
    text.push_str(
        "    - name: g\n      critical: true\n      depends_on: []\n      selectors:\n        - ",
    );
    let selector: Vec<String> = selector_props
        .keys()
        .map(|k| {
            if k == "node_labels" {
                format!("{k}: [\"a:b\"]")
            } else {
                format!("{k}: [x]")
            }
        })
        .collect();
    text.push_str(&format!("{{{}}}\n", selector.join(", ")));
    let criteria: Vec<String> = criteria_props.keys().map(|k| format!("{k}: 1")).collect();
    text.push_str(&format!(
        "      success_criteria: {{{}}}\n",
        criteria.join(", ")
    ));
    let strategy = parse_strategy(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let selector = &strategy.groups[0].selectors[0];
    assert_eq!(selector.node_labels, [Label::new("a", "b")]);
    assert_eq!(selector.node_names, ["x"]);
    assert_eq!(selector.rack_names, ["x"]);
    assert_eq!(selector.node_tags, ["x"]);
}

// ----- forms -----

#[test]
fn plain_form_in_yaml_and_json_with_settings() {
    let yaml = r#"
name: rolling
phases:
  - {name: provision, graph_type: provision, timeout: 900}
  - {name: deploy, graph_type: default}
phase_timeout: 1200
max_concurrent_groups: 3
groups:
  - name: a
    critical: true
    depends_on: []
    selectors:
      - node_labels: {zone: east, tier: "1"}
"#;
    let strategy = parse_strategy(yaml).unwrap();
    assert_eq!(strategy.name.as_deref(), Some("rolling"));
    assert_eq!(strategy.phase_timeout, 1200);
    assert_eq!(strategy.max_concurrent_groups, 3);
    assert_eq!(strategy.phases.len(), 2);
    assert_eq!(strategy.phases[0].graph_type, "provision");
    assert_eq!(strategy.timeout_of(&strategy.phases[0]), 900);
    assert_eq!(strategy.timeout_of(&strategy.phases[1]), 1200);
    assert_eq!(
        strategy.groups[0].selectors[0].node_labels,
        [Label::new("zone", "east"), Label::new("tier", "1")]
    );

    let json = serde_json::to_string(&strategy).unwrap();
    assert!(json.starts_with("{\"name\":\"rolling\""), "{json}");
    assert_eq!(parse_strategy(&json).unwrap(), strategy);
    // Deserializing goes through the same validation.
    let back: Strategy = serde_json::from_str(&json).unwrap();
    assert_eq!(back, strategy);
    let invalid = json.replace("\"max_concurrent_groups\":3", "\"max_concurrent_groups\":0");
    let error = serde_json::from_str::<Strategy>(&invalid).unwrap_err();
    assert!(
        error.to_string().contains("max_concurrent_groups"),
        "{error}"
    );
}

#[test]
fn settings_are_tolerated_inside_shipyard_data() {
    let text = "schema: shipyard/DeploymentStrategy/v1\nmetadata: {name: s}\ndata:\n  max_concurrent_groups: 2\n  \
                phase_timeout: 60\n  phases: [{name: deploy, graph_type: deploy}]\n  groups: []\n";
    let strategy = parse_strategy(text).unwrap();
    assert_eq!(strategy.max_concurrent_groups, 2);
    assert_eq!(strategy.phase_timeout, 60);
    assert_eq!(strategy.phases.len(), 1);
}

#[test]
fn labels_in_every_accepted_form() {
    let text = r#"{"groups": [{"name": "g", "critical": false, "depends_on": [], "selectors": [
        {"node_labels": ["ucp_control_plane:enabled", {"rack_zone": "a"}, " spaced : out "]}
    ]}]}"#;
    let strategy = parse_strategy(text).unwrap();
    assert_eq!(
        strategy.groups[0].selectors[0].node_labels,
        [
            Label::new("ucp_control_plane", "enabled"),
            Label::new("rack_zone", "a"),
            Label::new("spaced", "out")
        ]
    );
    // The seed's own example writes labels as a list of mappings.
    let seed_style = "groups:\n  - name: g\n    critical: false\n    depends_on: []\n    selectors:\n      - node_names: [node04]\n        node_labels:\n          - ucp_control_plane: enabled\n";
    let strategy = parse_strategy(seed_style).unwrap();
    assert_eq!(
        strategy.groups[0].selectors[0].node_labels,
        [Label::new("ucp_control_plane", "enabled")]
    );

    let bad = r#"{"groups": [{"name": "g", "critical": false, "depends_on": [], "selectors": [
        {"node_labels": ["nocolon", "a:b:c", ":x", 7, {"k": true}]}
    ]}]}"#;
    let f = findings(bad);
    assert_eq!(f.len(), 5, "{f:?}");
    assert_finding(
        &f,
        Some("g"),
        "selectors[0].node_labels[0]",
        "expected \"key:value\"",
    );
    assert_finding(&f, Some("g"), "selectors[0].node_labels[1]", "one colon");
    assert_finding(
        &f,
        Some("g"),
        "selectors[0].node_labels[2]",
        "text on both sides",
    );
    assert_finding(
        &f,
        Some("g"),
        "selectors[0].node_labels[3]",
        "found the number 7",
    );
    assert_finding(
        &f,
        Some("g"),
        "selectors[0].node_labels[4].k",
        "found the boolean true (quote it)",
    );
}

#[test]
fn empty_selectors_and_nulls() {
    let text = "groups:\n  - name: g\n    critical: true\n    depends_on: []\n    selectors:\n      - {}\n      - node_names: ~\n    success_criteria: ~\n";
    let strategy = parse_strategy(text).unwrap();
    assert!(strategy.groups[0].selectors.iter().all(Selector::is_all));
    assert!(strategy.groups[0].success_criteria.is_none());
}

/// Deckhand's layering policy, as a site holds it.
const POLICY: &str = "---\nschema: deckhand/LayeringPolicy/v1\nmetadata: {schema: metadata/Control/v1, name: layering-policy}\ndata: {layerOrder: [global, site]}\n";

#[test]
fn a_shipyard_site_design_stream_yields_its_strategy() {
    let text = format!(
        "---\nschema: drydock/Region/v1\nmetadata: {{name: site}}\ndata: {{}}\n---\n\
         schema: shipyard/DeploymentStrategy/v1\nmetadata: {{name: ds}}\ndata:\n  groups: []\n...\n{POLICY}"
    );
    assert_eq!(parse_strategy(&text).unwrap().name.as_deref(), Some("ds"));
    let two = format!("{text}---\nschema: shipyard/DeploymentStrategy/v1\nmetadata: {{name: other}}\ndata: {{groups: []}}\n");
    let error = parse_strategy(&two).unwrap_err();
    assert!(matches!(error, StrategyError::Syntax(_)));
    assert!(
        error.to_string().contains("ds at document 2 (line 5)")
            && error.to_string().contains("other at document 4 (line 15)"),
        "{error}"
    );
    // Deckhand renders nothing without a layering policy.
    let none = "---\na: 1\n---\nb: 2\n";
    let error = parse_strategy(none).unwrap_err().to_string();
    assert!(error.contains("no layering policy"), "{error}");
    let none = format!("---\nschema: x/A/v1\nmetadata: {{name: a}}\n---\nschema: x/B/v1\nmetadata: {{name: b}}\n{POLICY}");
    assert!(parse_strategy(&none)
        .unwrap_err()
        .to_string()
        .contains("no concrete one has schema"));
}

#[test]
fn syntax_errors_say_where() {
    let error = parse_strategy("groups:\n  - name: a\n   critical: true\n").unwrap_err();
    assert!(matches!(error, StrategyError::Syntax(_)));
    assert!(error.to_string().contains("line 3"), "{error}");
    let error = parse_strategy("{\"groups\": [}").unwrap_err();
    assert!(error.to_string().contains("line 1"), "{error}");
    assert!(parse_strategy("")
        .unwrap_err()
        .to_string()
        .contains("no document"));
    let f = findings("- a\n- b\n");
    assert_finding(&f, None, "", "expected a mapping holding a strategy");
}

#[test]
fn default_strategy_is_one_critical_group_needing_every_node() {
    let strategy = Strategy::all_nodes();
    assert_eq!(strategy.groups.len(), 1);
    let group = &strategy.groups[0];
    assert_eq!(group.name, "default");
    assert!(group.critical);
    assert!(group.depends_on.is_empty());
    assert!(group.selectors.is_empty());
    assert_eq!(
        group.success_criteria,
        Some(SuccessCriteria {
            percent_successful_nodes: Some(100),
            ..SuccessCriteria::default()
        })
    );
    assert_eq!(strategy.phases, Phase::defaults());
    assert_eq!(
        strategy
            .phases
            .iter()
            .map(|p| (p.name.as_str(), p.graph_type.as_str()))
            .collect::<Vec<_>>(),
        [("prepare", "prepare"), ("deploy", "deploy")]
    );
    assert!(strategy.validate().is_ok());
}

// ----- validation rules -----

#[test]
fn unknown_fields_strict_where_shipyards_schema_is_else_kept_with_a_warning() {
    let text = r#"
schema: shipyard/DeploymentStrategy/v1
metadata: {name: s}
extra: 1
data:
  groupz: []
  groups:
    - name: g
      critical: true
      depend_on: []
      depends_on: []
      selectors:
        - node_name: [a]
      success_criteria:
        minimum_succesful_nodes: 1
"#;
    // Shipyard's schema forbids other fields in a selector and in success criteria: errors.
    let f = findings(text);
    assert_finding(
        &f,
        Some("g"),
        "selectors[0].node_name",
        "did you mean \"node_names\"?",
    );
    assert_finding(
        &f,
        Some("g"),
        "success_criteria.minimum_succesful_nodes",
        "did you mean \"minimum_successful_nodes\"?",
    );
    assert_eq!(f.len(), 2, "{f:?}");
    // Elsewhere the schema is open: the fields load, are kept in the document, and each is named in a warning.
    let open = text
        .replace("        - node_name: [a]\n", "        - node_names: [a]\n")
        .replace("minimum_succesful_nodes", "minimum_successful_nodes");
    let loaded = load_strategy(&[Source::new("s.yaml", &open)]).unwrap();
    let warned: Vec<(Option<&str>, &str)> = loaded
        .warnings
        .iter()
        .map(|w| (w.group.as_deref(), w.field.as_str()))
        .collect();
    assert_eq!(
        warned,
        [
            (None, "extra"),
            (None, "data.groupz"),
            (Some("g"), "depend_on")
        ]
    );
    let message = &loaded.warnings[2].message;
    assert!(
        message.contains("did you mean \"depends_on\"?"),
        "{message}"
    );
    assert!(
        message.ends_with("; kept, and not used by Plinth"),
        "{message}"
    );
    assert_eq!(loaded.document["extra"], 1);
    assert_eq!(
        loaded.document["data"]["groups"][0]["depend_on"],
        serde_json::json!([])
    );
    // Plinth's own plain form stays strict.
    let plain = findings("groups: []\nphase: []\n");
    assert_finding(&plain, None, "phase", "did you mean \"phases\"?");
}

#[test]
fn yaml_as_pyyaml_reads_it() {
    let text = r#"
schema: shipyard/DeploymentStrategy/v1
metadata: {name: s}
data:
  groups:
    - &base
      name: a
      critical: yes
      depends_on: []
      selectors: []
    - <<: *base
      name: b
      critical: off
      success_criteria: {minimum_successful_nodes: 0x2}
"#;
    let loaded = load_strategy(&[Source::new("", text)]).unwrap();
    let g = &loaded.strategy.groups;
    assert_eq!((g[0].critical, g[1].critical), (true, false));
    assert_eq!(
        g[1].success_criteria
            .as_ref()
            .unwrap()
            .minimum_successful_nodes,
        Some(2)
    );
    assert!(g[1].selectors.is_empty());
    // Quoted, "on" is text, and `critical` must be true or false.
    let quoted = format!("{text}    - <<: *base\n      name: c\n      critical: \"on\"\n");
    let f = findings(&quoted);
    assert_finding(&f, Some("c"), "critical", "found the string \"on\"");
}

#[test]
fn wrong_schema_and_missing_envelope_parts() {
    let f = findings(
        "schema: shipyard/DeploymentConfiguration/v1\nmetadata: {name: x}\ndata: {groups: []}\n",
    );
    assert_finding(
        &f,
        None,
        "schema",
        "expected \"shipyard/DeploymentStrategy/v1\", found the string",
    );
    let f = findings("schema: shipyard/DeploymentStrategy/v1\nmetadata: {name: x}\n");
    assert_finding(&f, None, "data", "missing required field");
    let f = findings("schema: shipyard/DeploymentStrategy/v1\ndata: {}\n");
    assert_finding(&f, None, "data.groups", "missing required field");
    let f = findings("name: x\n");
    assert_finding(&f, None, "groups", "missing required field");
}

#[test]
fn duplicate_names_unknown_dependencies_and_cycles() {
    let text = format!(
        "groups:\n{}{}{}{}{}{}{}",
        group("a", &["b"]),
        group("b", &["c"]),
        group("c", &["a"]),
        group("d", &["d"]),
        group("e", &["ghost"]),
        group("a", &[]),
        group("f", &["e"]),
    );
    let f = findings(&text);
    assert_finding(
        &f,
        Some("a"),
        "name",
        "duplicate group name; groups[0] has the same name",
    );
    assert_finding(
        &f,
        Some("e"),
        "depends_on[0]",
        "depends on \"ghost\", which is not a group of this strategy",
    );
    assert_finding(
        &f,
        Some("a"),
        "depends_on",
        "circular dependency: a -> b -> c -> a",
    );
    assert_finding(&f, Some("d"), "depends_on", "circular dependency: d -> d");
    assert_eq!(f.len(), 4, "{f:?}");
}

#[test]
fn the_shortest_cycle_is_listed_from_the_first_group() {
    // x -> y -> z -> x and y -> x: one cycle set, listed as x -> y -> x.
    let text = format!(
        "groups:\n{}{}{}",
        group("x", &["y"]),
        group("y", &["z", "x"]),
        group("z", &["x"])
    );
    let f = findings(&text);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].to_string(), "group \"x\", field \"depends_on\": circular dependency: x -> y -> x (each group depends on the next)");
}

#[test]
fn criteria_out_of_range_and_wrong_types() {
    let text = r#"
groups:
  - name: g
    critical: "yes"
    depends_on: ntp
    selectors: {node_names: [a]}
    success_criteria:
      percent_successful_nodes: 101
      minimum_successful_nodes: -1
      maximum_failed_nodes: 1.5
  - name: h
    critical: false
    depends_on: [1]
    selectors: [node01]
    success_criteria: 50
  - 42
  - critical: true
    name: 7
    depends_on: []
    selectors: []
"#;
    let f = findings(text);
    assert_finding(
        &f,
        Some("g"),
        "critical",
        "expected true or false, found the string \"yes\"",
    );
    assert_finding(
        &f,
        Some("g"),
        "depends_on",
        "expected a list of strings, found the string \"ntp\"",
    );
    assert_finding(
        &f,
        Some("g"),
        "selectors",
        "expected a list of selectors, found a mapping",
    );
    assert_finding(
        &f,
        Some("g"),
        "success_criteria.percent_successful_nodes",
        "must be between 0 and 100, found 101",
    );
    assert_finding(
        &f,
        Some("g"),
        "success_criteria.minimum_successful_nodes",
        "must be 0 or more, found -1",
    );
    assert_finding(
        &f,
        Some("g"),
        "success_criteria.maximum_failed_nodes",
        "expected a whole number, found 1.5",
    );
    assert_finding(
        &f,
        Some("h"),
        "depends_on[0]",
        "expected a string, found the number 1",
    );
    assert_finding(
        &f,
        Some("h"),
        "selectors[0]",
        "expected a mapping (a selector), found the string \"node01\"",
    );
    assert_finding(
        &f,
        Some("h"),
        "success_criteria",
        "expected a mapping, found the number 50",
    );
    assert_finding(
        &f,
        Some("groups[2]"),
        "",
        "expected a mapping (a group), found the number 42",
    );
    assert_finding(
        &f,
        Some("groups[3]"),
        "name",
        "expected a string, found the number 7",
    );
    assert_eq!(f.len(), 11, "{f:?}");
}

#[test]
fn phases_and_settings_are_checked() {
    let text = r#"
groups: []
phases:
  - {name: prepare, graph_type: prepare, timeout: 0}
  - {name: prepare, graph_type: ""}
  - {graph_type: deploy}
  - deploy
phase_timeout: 0
max_concurrent_groups: 0
"#;
    let f = findings(text);
    assert_finding(&f, None, "phases[0].timeout", "must be at least 1 second");
    assert_finding(
        &f,
        None,
        "phases[1].name",
        "duplicate phase name \"prepare\"; phases[0] has the same name",
    );
    assert_finding(&f, None, "phases[1].graph_type", "must not be empty");
    assert_finding(&f, None, "phases[2].name", "missing required field");
    assert_finding(
        &f,
        None,
        "phases[3]",
        "expected a mapping with `name` and `graph_type`",
    );
    assert_finding(&f, None, "phase_timeout", "must be at least 1 second");
    assert_finding(&f, None, "max_concurrent_groups", "must be at least 1");
    assert_eq!(f.len(), 7, "{f:?}");
    assert_finding(
        &findings("groups: []\nphases: []\n"),
        None,
        "phases",
        "must list at least one phase",
    );
    let f =
        findings("schema: shipyard/DeploymentStrategy/v1\ndata: {groups: [], phase_timeout: -5}\n");
    assert_finding(
        &f,
        None,
        "data.phase_timeout",
        "must be 0 or more, found -5",
    );
}

#[test]
fn the_error_lists_every_problem() {
    let error = parse_strategy(&read_sample("deploymentStrategy_bad_values_4.yaml")).unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with("the strategy document has 3 problems:"),
        "{text}"
    );
    assert!(
        text.contains("\n  - group \"my_name_is\", field \"selectors[0].node_names[0]\": expected a string, found the boolean false"),
        "{text}"
    );
}

#[test]
fn programmatic_strategies_are_validated_too() {
    let mut strategy = Strategy::from_groups(vec![Group {
        name: String::new(),
        critical: false,
        depends_on: vec!["nope".into()],
        selectors: vec![],
        success_criteria: Some(SuccessCriteria {
            percent_successful_nodes: Some(200),
            ..SuccessCriteria::default()
        }),
    }]);
    strategy.phases.clear();
    let f = strategy.validate().unwrap_err();
    assert_finding(&f, Some("groups[0]"), "name", "must not be empty");
    assert_finding(&f, Some("groups[0]"), "depends_on[0]", "\"nope\"");
    assert_finding(
        &f,
        Some("groups[0]"),
        "success_criteria.percent_successful_nodes",
        "found 200",
    );
    assert_finding(&f, None, "phases", "at least one phase");
}
