//! Loading Fuel's files unchanged: every `tasks.yaml` of the corpus, and the release fixture.

use plinth_common::model::{
    parse_graph, parse_release_fixture, parse_tasks, Condition, Conflicts, Dependencies,
    FaultTolerance, LimitValue, Policy, StringList, Task, TaskType,
};
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus")).to_path_buf()
}

fn tasks_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            tasks_files(&path, out);
        } else if path.file_name().is_some_and(|n| n == "tasks.yaml") {
            out.push(path);
        }
    }
}

#[test]
fn every_fuel_tasks_yaml_loads() {
    let mut files = Vec::new();
    tasks_files(&corpus().join("fuel-library"), &mut files);
    assert_eq!(files.len(), 47, "the corpus has 47 tasks.yaml files");
    let mut total = 0;
    let mut hyphenated = 0;
    let mut computed = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("corpus file is readable");
        let tasks =
            parse_tasks(&text, &file.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
        total += tasks.len();
        hyphenated += tasks
            .iter()
            .filter(|t| t.cross_depends.is_some() || t.cross_depended_by.is_some())
            .count();
        computed += tasks.iter().filter(|t| t.has_computed_fields()).count();
        // What was read writes back and reads again to the same tasks.
        let json = serde_json::to_string(&tasks).expect("tasks serialize");
        let again: Vec<Task> = serde_json::from_str(&json).expect("tasks read back");
        assert_eq!(again, tasks, "{} round-trips", file.display());
    }
    assert_eq!(total, 233);
    assert_eq!(hyphenated, 121);
    assert!(computed >= 180, "{computed}");
}

#[test]
fn fuel_fields_load_as_written() {
    let text = std::fs::read_to_string(
        corpus().join("fuel-library/deployment/puppet/osnailyfacter/modular/database/tasks.yaml"),
    )
    .expect("database tasks");
    let tasks = parse_tasks(&text, "database/tasks.yaml").expect("loads");
    let db = &tasks[0];
    assert_eq!(db.id, "database");
    assert_eq!(db.task_type, TaskType::Puppet);
    assert_eq!(db.tags, Some(StringList(vec!["database".into()])));
    assert!(matches!(db.condition, Some(Condition::Yaql(ref e)) if e.contains("changedAny")));
    let Some(Dependencies::Static(deps)) = &db.cross_depends else {
        panic!("static cross-depends")
    };
    assert_eq!(deps.len(), 3);
    assert_eq!(deps[1].name, "/^(primary-)?cluster$/");
    assert!(deps[1].is_self());
    assert_eq!(deps[0].policy, Policy::All);
    assert!(db.extra.contains_key("test_pre") && db.extra.contains_key("test_post"));
    assert!(db.parameters["strategy"]["amount"]["yaql_exp"].is_string());

    let groups = std::fs::read_to_string(
        corpus().join("fuel-library/deployment/puppet/deployment_groups/tasks.yaml"),
    )
    .expect("groups");
    let groups = parse_tasks(&groups, "deployment_groups/tasks.yaml").expect("loads");
    let ft: Vec<_> = groups.iter().filter_map(|t| t.fault_tolerance).collect();
    assert!(ft.contains(&FaultTolerance::Count(0)));
    assert!(ft.contains(&FaultTolerance::Percent(2)));
    let base_os = groups.iter().find(|t| t.id == "base-os").expect("base-os");
    assert_eq!(base_os.task_type, TaskType::Group);
    assert_eq!(
        base_os.tasks.as_ref().map(|t| t.0.clone()),
        Some(vec!["hiera".into(), "globals".into(), "logging".into()])
    );
}

#[test]
fn computed_cross_depends_and_other_types_load() {
    let text = std::fs::read_to_string(
        corpus().join("fuel-library/deployment/puppet/osnailyfacter/modular/netconfig/tasks.yaml"),
    )
    .expect("netconfig");
    let tasks = parse_tasks(&text, "netconfig").expect("loads");
    assert!(matches!(
        tasks[0].cross_depends,
        Some(Dependencies::Computed(_))
    ));
    let text = std::fs::read_to_string(corpus().join("fuel-library/graphs/deletion/tasks.yaml"))
        .expect("deletion");
    let tasks = parse_tasks(&text, "deletion").expect("loads");
    assert!(tasks.iter().any(|t| t.task_type == TaskType::EraseNode));
}

#[test]
fn the_release_fixture_loads() {
    let text = std::fs::read_to_string(corpus().join("fuel-web/openstack.yaml")).expect("fixture");
    let release = parse_release_fixture(&text, "openstack.yaml").expect("loads");
    assert_eq!(release.roles_metadata.len(), 9);
    let controller = &release.roles_metadata["controller"];
    assert_eq!(
        controller.tags,
        ["controller", "rabbitmq", "database", "keystone", "neutron"]
    );
    assert_eq!(
        controller.conflicts,
        Conflicts::Roles(vec!["compute".into()])
    );
    let limits = controller.limits.as_ref().expect("limits");
    assert_eq!(limits.min, Some(LimitValue::Number(1)));
    assert_eq!(limits.recommended, Some(LimitValue::Number(3)));
    assert_eq!(limits.overrides.len(), 1);
    assert_eq!(
        release.roles_metadata["ceph-osd"]
            .limits
            .as_ref()
            .and_then(|l| l.min.clone()),
        Some(LimitValue::Expression(
            "settings:storage.osd_pool_size.value".into()
        ))
    );
    assert_eq!(release.roles_metadata["cinder"].restrictions.len(), 2);
    assert!(release.tags_metadata["controller"].has_primary);
    assert!(!release.tags_metadata["compute"].has_primary);
    assert_eq!(release.version.as_deref(), Some("newton-10.0"));
    assert!(release
        .volumes_metadata
        .get("volumes_roles_mapping")
        .is_some());
}

#[test]
fn bad_input_names_the_file_and_line() {
    let err = parse_tasks(
        "- id: a\n  type: puppet\n- id: b\n  type: [x]\n",
        "x/tasks.yaml",
    )
    .unwrap_err();
    assert_eq!(err.source_name, "x/tasks.yaml");
    assert!(
        err.to_string().starts_with("x/tasks.yaml:3: task 1 (b)"),
        "{err}"
    );
    assert!(err.message.contains("type"), "{err}");
    // Written without a type, as the seeds' examples are: kept for ordering only.
    let tasks = parse_tasks("- id: a\n- id: b\n  type: puppet\n", "x/tasks.yaml").unwrap();
    assert_eq!(tasks[0].task_type.as_str(), "skipped");
    let err = parse_tasks(
        "- id: a\n  type: puppet\n  cross-depends:\n    - nam: x\n",
        "y.yaml",
    )
    .unwrap_err();
    assert!(err.to_string().contains("nam"), "{err}");
    let err = parse_tasks(
        "- id: a\n  type: group\n  fault_tolerance: lots\n",
        "z.yaml",
    )
    .unwrap_err();
    assert!(err.to_string().contains("lots"), "{err}");
    let graph = parse_graph(
        "name: g\nnode_filter: \"$.status = 'ready'\"\ntasks:\n  - id: a\n    type: shell\n",
        "g.yaml",
    )
    .expect("graph");
    assert_eq!(graph.tasks.len(), 1);
    assert!(graph.node_filter.is_some());
}

#[test]
fn every_field_but_id_may_be_computed_and_is_written_back_as_read() {
    let text = "- id: a\n  type: {yaql_exp: \"'shell'\"}\n  version: {yaql_exp: \"'2.1.0'\"}\n  \
                tags: {yaql_exp: '$.roles'}\n  requires: [b, {yaql_exp: \"['c']\"}]\n  \
                required_for: {yaql_exp: '[]'}\n  fault_tolerance: {yaql_exp: '1'}\n  \
                parameters: {cmd: 'true'}\n";
    let tasks = parse_tasks(text, "c.yaml").expect("computed fields load");
    let t = &tasks[0];
    assert_eq!(
        t.computed.keys().collect::<Vec<_>>(),
        [
            "type",
            "version",
            "tags",
            "requires",
            "required_for",
            "fault_tolerance"
        ]
    );
    assert!(
        t.requires.is_empty() && t.tags.is_none(),
        "typed fields stay at their defaults"
    );
    assert!(t.has_computed_fields() && t.has_computed_placement());
    let written = serde_json::to_value(t).expect("serializes");
    assert_eq!(
        written["requires"],
        serde_json::json!(["b", {"yaql_exp": "['c']"}])
    );
    assert_eq!(written["type"], serde_json::json!({"yaql_exp": "'shell'"}));
    let again: plinth_common::model::Task = serde_json::from_value(written).expect("reads back");
    assert_eq!(&again, t);

    let err = parse_tasks("- id: {yaql_exp: 'x'}\n  type: shell\n", "c.yaml").unwrap_err();
    assert!(err.to_string().contains("id is never computed"), "{err}");
    let err = parse_tasks("- id: a\n  type: shell\n  requires: {b: c}\n", "c.yaml").unwrap_err();
    assert_eq!(
        err.to_string(),
        "c.yaml:1: task 0 (a): expected a string or a list of strings, not a mapping"
    );
}
