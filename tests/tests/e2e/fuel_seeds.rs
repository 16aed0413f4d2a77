//! Fuel as Fuel's users have it: Fuel's own release (`openstack.yaml` from the corpus) loaded with
//! `plinthctl release create`, a cluster that starts with the release's attributes as Nailgun's does,
//! and the examples of seeds 000–003 fed as written, against a real controller and offline.

use plinth_e2e::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus")).to_path_buf()
}

fn plinthctl(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin("plinthctl"))
        .args(args)
        .output()
        .expect("plinthctl runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// `plinthctl` against the controller, as an operator runs it.
fn ctl(c: &Controller, args: &[&str]) -> (i32, String, String) {
    let cert = c.cert_path();
    plinthctl(
        &[
            &[
                "--controller",
                c.url.as_str(),
                "--token",
                c.api.token.as_str(),
                "--ca-cert",
                cert.to_str().expect("a UTF-8 path"),
            ][..],
            args,
        ]
        .concat(),
    )
}

/// Loads Fuel's release through `plinthctl release create openstack.yaml --name ...`; its id.
fn fuel_release(c: &Controller) -> u64 {
    let fixture = corpus().join("fuel-web/openstack.yaml");
    let (code, out, err) = ctl(
        c,
        &[
            "-o",
            "json",
            "release",
            "create",
            fixture.to_str().expect("a UTF-8 path"),
            "--name",
            "Newton on Ubuntu 16.04",
        ],
    );
    assert_eq!(code, 0, "release create: {out}{err}");
    let created: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(created["name"], "Newton on Ubuntu 16.04", "{created}");
    created["id"].as_u64().expect("an id")
}

#[test]
fn fuels_release_loads_online_and_a_new_cluster_starts_with_its_attributes() {
    let c = Controller::start();
    let release = fuel_release(&c);
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "fuel", "release_id": release})),
    );
    let id = cluster["id"].as_u64().expect("an id");
    // The editable defaults, exactly as the release writes them.
    let settings = &cluster["settings"];
    assert_eq!(settings["access"]["user"]["value"], "admin");
    assert_eq!(settings["storage"]["osd_pool_size"]["value"], "3");
    assert_eq!(settings["additional_components"]["ironic"]["value"], false);
    assert!(
        cluster.get("generated").is_none(),
        "secrets stay out of the cluster's record"
    );
    // Generated once: passwords, keys, and paths formatted with the cluster's id.
    let generated = c.api.ok("GET", &format!("/clusters/{id}/generated"), None);
    let password = generated["mysql"]["root_password"]
        .as_str()
        .expect("a password");
    assert_eq!(password.len(), 24);
    assert_eq!(
        generated["cinder"]["fixed_key"].as_str().map(str::len),
        Some(64)
    );
    let image = generated["provision"]["image_data"]["/"]["uri"]
        .as_str()
        .expect("an image uri");
    assert!(image.contains(&format!("env_{id}_ubuntu")), "{image}");
    let again = c.api.ok("GET", &format!("/clusters/{id}/generated"), None);
    assert_eq!(again, generated, "generated once, not per read");
    let other = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "fuel-2", "release_id": release})),
    );
    let other_gen = c
        .api
        .ok("GET", &format!("/clusters/{}/generated", other["id"]), None);
    assert_ne!(
        other_gen["mysql"]["root_password"], generated["mysql"]["root_password"],
        "each cluster its own passwords"
    );

    // Restrictions read the defaults: mongo needs ceilometer, off by default, and says so.
    let _a = Agent::start(&c, "node-a", &[]);
    let node = c.api.wait_nodes(1)[0].1;
    let refused = c.api.send(
        "PUT",
        &format!("/clusters/{id}/nodes"),
        Some(&json!({"nodes": [{"id": node, "roles": ["mongo"]}]})),
    );
    assert_eq!(refused.status, 409, "{:?}", refused.body);
    assert!(
        refused
            .body
            .to_string()
            .contains("Ceilometer should be enabled"),
        "{:?}",
        refused.body
    );
}

const LONG: std::time::Duration = std::time::Duration::from_secs(60);

/// The status of `task` on `node` in a deployment's report.
fn status_of(report: &Value, node: &str, task: &str) -> String {
    task_line(report, node, task)
        .map(|t| t["status"].as_str().unwrap_or("?").to_string())
        .unwrap_or_else(|| panic!("{task} on {node}: {report:#}"))
}

#[test]
fn settings_change_through_plinthctl_and_feed_the_next_deployments_changed() {
    let c = Controller::start();
    let release = fuel_release(&c);
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "fuel", "release_id": release})),
    );
    let cid = cluster["id"].as_u64().expect("an id");
    let id = cid.to_string();

    // Read: `get` prints YAML, a section alone when named.
    let (code, out, err) = ctl(&c, &["cluster", "settings", "get", &id, "access"]);
    assert_eq!(code, 0, "{err}");
    let access: Value = serde_yaml_ng::from_str(&out).expect("YAML");
    assert_eq!(access["user"]["value"], "admin");

    // Set: text stays text, booleans are booleans; bad values are refused whole with the release's
    // message, nothing changed.
    let (code, _, err) = ctl(
        &c,
        &[
            "cluster",
            "settings",
            "set",
            &id,
            "storage.osd_pool_size=zero",
            "access.email=ops@example.com",
        ],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("storage.osd_pool_size: Invalid number"),
        "{err}"
    );
    let now = c
        .api
        .ok("GET", &format!("/clusters/{cid}/attributes"), None);
    assert_eq!(
        now["editable"]["access"]["email"]["value"],
        "admin@localhost"
    );
    let wrong_type = c.api.send(
        "PATCH",
        &format!("/clusters/{cid}/attributes"),
        Some(&json!({"editable": {"storage": {"volumes_lvm": {"value": "yes"}}}})),
    );
    assert_eq!(wrong_type.status, 422, "{:?}", wrong_type.body);
    let generated = c.api.send(
        "PUT",
        &format!("/clusters/{cid}/attributes"),
        Some(&json!({"editable": {}, "generated": {}})),
    );
    assert_eq!(
        generated.status, 422,
        "generated attributes are not the operator's to write"
    );

    // A task per setting, run when its setting changed.
    let _a = Agent::start(&c, "node-1", &[]);
    let node = c.api.wait_nodes(1)[0].1;
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/deployment_graphs/default"),
        Some(&json!({"tasks": [
            {"id": "pool-size", "type": "shell", "tags": ["/.*/"],
             "condition": {"yaql_exp": "changed($.storage.osd_pool_size)"},
             "parameters": {"cmd": "true", "timeout": 60}},
            {"id": "access", "type": "shell", "tags": ["/.*/"],
             "condition": {"yaql_exp": "changed($.access)"},
             "parameters": {"cmd": "true", "timeout": 60}},
        ]})),
    );
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [{"id": node, "roles": ["controller"]}]})),
    );
    let first = c.api.wait_deployment(c.api.deploy(cid, ""), LONG);
    assert_eq!(first["status"], "success", "{first:#}");
    assert_eq!(status_of(&first, "node-1", "pool-size"), "succeeded");
    assert_eq!(status_of(&first, "node-1", "access"), "succeeded");

    let (code, _, err) = ctl(
        &c,
        &["cluster", "settings", "set", &id, "storage.osd_pool_size=2"],
    );
    assert_eq!(code, 0, "{err}");
    let now = c
        .api
        .ok("GET", &format!("/clusters/{cid}/attributes"), None);
    assert_eq!(now["editable"]["storage"]["osd_pool_size"]["value"], "2");
    let second = c.api.wait_deployment(c.api.deploy(cid, ""), LONG);
    assert_eq!(second["status"], "success", "{second:#}");
    assert_eq!(
        status_of(&second, "node-1", "pool-size"),
        "succeeded",
        "it changed"
    );
    assert_eq!(
        status_of(&second, "node-1", "access"),
        "skipped",
        "it did not"
    );

    // Edit: the editor changes the text; the settings are replaced; defaults stay the release's.
    let (code, _, err) = ctl_env(
        &c,
        &[("EDITOR", "sed -i s/admin@localhost/ops@example.com/")],
        &["cluster", "settings", "edit", &id],
    );
    assert_eq!(code, 0, "{err}");
    let now = c
        .api
        .ok("GET", &format!("/clusters/{cid}/attributes"), None);
    assert_eq!(
        now["editable"]["access"]["email"]["value"],
        "ops@example.com"
    );
    assert_eq!(now["editable"]["storage"]["osd_pool_size"]["value"], "2");
    let defaults = c
        .api
        .ok("GET", &format!("/clusters/{cid}/attributes/defaults"), None);
    assert_eq!(
        defaults["editable"]["access"]["email"]["value"],
        "admin@localhost"
    );
    let third = c.api.wait_deployment(c.api.deploy(cid, ""), LONG);
    assert_eq!(status_of(&third, "node-1", "pool-size"), "skipped");
    assert_eq!(status_of(&third, "node-1", "access"), "succeeded");
}

/// `plinthctl` against the controller with extra environment variables.
fn ctl_env(c: &Controller, env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let cert = c.cert_path();
    let out = Command::new(bin("plinthctl"))
        .args([
            "--controller",
            c.url.as_str(),
            "--token",
            c.api.token.as_str(),
            "--ca-cert",
            cert.to_str().expect("a UTF-8 path"),
        ])
        .args(args)
        .envs(env.iter().copied())
        .env_remove("VISUAL")
        .output()
        .expect("plinthctl runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Writes `text` to `name` in `dir`; its path as text.
fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.to_str().expect("a UTF-8 path").to_string()
}

// ---- Seed 000 (role decomposition), as written ------------------------------------------------

const SEED_000_RELEASE: &str = r#"roles_metadata:
  controller:
    name: "Controller"
    tags:
      - controller
      - mysql
tags_metadata:
  controller:
    name: "controller"
    has_primary: true
  mysql:
    name: "mysql"
    has_primary: true
"#;

const SEED_000_TASKS: &str = r#"- id: mysql
  tags: [controller, mysql]
- id: haproxy
  role: [controller]
- id: globals
  role: ['/.*/']
"#;

/// Seed 000's node, `- id: node-1, roles: [controller], tags: [mysql]`, with a second controller.
const SEED_000_CLUSTER: &str = r#"name: seed-000
nodes:
- id: 1
  name: node-1
  roles: [controller]
  tags: [mysql]
- id: 2
  name: node-2
  roles: [controller]
"#;

#[test]
fn seed_000s_example_resolves_offline_and_says_why_the_primary_misses_tasks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let release = write(dir.path(), "release.yaml", SEED_000_RELEASE);
    let tasks = write(dir.path(), "tasks.yaml", SEED_000_TASKS);
    let cluster = write(dir.path(), "cluster.yaml", SEED_000_CLUSTER);
    let (code, out, err) = plinthctl(&[
        "graph",
        "resolve",
        "--release",
        &release,
        "--tasks",
        &tasks,
        "--cluster",
        &cluster,
        "--nodes",
        "1,2",
        "-o",
        "json",
    ]);
    assert_eq!(code, 0, "{err}{out}");
    let v: Value = serde_json::from_str(&out).expect("JSON");
    let ids = |name: &str| -> Vec<String> {
        v["nodes"]
            .as_array()
            .and_then(|ns| ns.iter().find(|n| n["name"] == name))
            .map(|n| {
                n["tasks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|t| t["id"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    // The controller that is not primary: tasks by tag, by role as a tag, and by regular expression.
    assert_eq!(ids("node-2"), ["mysql", "haproxy", "globals"]);
    // The primary holds primary-controller and primary-mysql in place of controller and mysql.
    assert_eq!(ids("node-1"), ["globals"]);
    let findings = v["findings"].to_string();
    assert!(
        findings.contains("task \\\"mysql\\\" does not run on node node-1")
            && findings.contains("add primary-controller to the task's tags"),
        "{findings}"
    );
    assert!(
        findings.contains("task \\\"haproxy\\\" does not run on node node-1"),
        "{findings}"
    );
}

// ---- Seed 001 (computed fields), its expressions as written ---------------------------------

/// Each expression of seed 001, as the seed prints it (typographic quotes included).
const SEED_001_EXPRESSIONS: &[&str] = &[
    "changed($.nodes.where($.status = 'ready' and 'controller' in $.roles))\nand changed($.nodes.where($.status = 'discover' and 'controller' in\n$.roles and $.pending_addition = true))",
    "$.cluster.status in [operational, new, partially_deployed]",
    "changed($.nodes.where($.role = ‘compute’))",
    "changed($.configs.nova)",
    "new($.settings.additional_components.murano.value) = True",
    "changed($.nodes)",
];

fn seed_001_tasks() -> String {
    let mut text = String::new();
    for (i, e) in SEED_001_EXPRESSIONS.iter().enumerate() {
        let expr = serde_json::to_string(e).expect("JSON string");
        text.push_str(&format!(
            "- id: seed-001-{i}\n  type: shell\n  role: ['/.*/']\n  condition: {{yaql_exp: {expr}}}\n  parameters: {{cmd: 'true'}}\n"
        ));
    }
    text
}

const FUEL_CLUSTER: &str = r#"name: fuel
nodes:
- {id: 1, name: node-1, pending_roles: [controller], pending_addition: true}
- {id: 2, name: node-2, pending_roles: [compute], pending_addition: true}
"#;

#[test]
fn seed_001s_expressions_evaluate_offline_on_fuels_release() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = corpus().join("fuel-web/openstack.yaml");
    let tasks = write(dir.path(), "tasks.yaml", &seed_001_tasks());
    let cluster = write(dir.path(), "cluster.yaml", FUEL_CLUSTER);
    let (code, out, err) = plinthctl(&[
        "graph",
        "resolve",
        "--release",
        fixture.to_str().expect("a UTF-8 path"),
        "--tasks",
        &tasks,
        "--cluster",
        &cluster,
        "-o",
        "json",
    ]);
    assert_eq!(code, 0, "every expression evaluates: {err}{out}");
    let v: Value = serde_json::from_str(&out).expect("JSON");
    let compute = v["nodes"]
        .as_array()
        .and_then(|ns| ns.iter().find(|n| n["name"] == "node-2"))
        .expect("node-2 resolved");
    let status = |i: usize| -> String {
        compute["tasks"]
            .as_array()
            .and_then(|ts| ts.iter().find(|t| t["id"] == format!("seed-001-{i}")))
            .map(|t| {
                if t["skip_reason"].is_null() {
                    "runs"
                } else {
                    "skipped"
                }
                .to_string()
            })
            .unwrap_or_else(|| panic!("seed-001-{i} on node-2: {compute}"))
    };
    // A new cluster has no old state: everything changed, as Nailgun reads `changed()` against `{}`.
    assert_eq!(status(0), "runs");
    assert_eq!(status(1), "runs", "a new cluster's status is in the list");
    assert_eq!(status(2), "runs", "compute nodes were added");
    assert_eq!(status(3), "runs", "nova's settings are new");
    assert_eq!(
        status(4),
        "skipped",
        "`True` is the text \"True\" in YAQL (as in Python's), never equal to a setting's boolean"
    );
    assert_eq!(status(5), "runs");
}

// ---- Seed 003 (roles from plugins), its files as written ------------------------------------

const SEED_003_NODE_ROLES: &str = r#"role_name:
  metadata:
    name: "Some plugin role"
    description: "Some description"
    conflicts:
      - some_not_compatible_role
    limits:
      min: 1
    restrictions:
      - condition: "some logic condition"
        message: "Some message for restriction warning"
  volumes_mapping:
    - {allocate_size: "min", id: "os"}
    - {allocate_size: "all", id: "role_volume_name"}
"#;

const SEED_003_VOLUMES: &str = r#"volumes:
  - id: "role_volume_name"
    type: "vg"
    min_size: {generator: "calc_min_os_size"}
    label: "Role specific volume"
    items:
      - mount: "/"
        type: "lv"
        name: "root"
        size: {generator: "calc_total_root_vg"}
        file_system: "ext4"
      - mount: "swap"
        type: "lv"
        name: "swap"
        size: {generator: "calc_swap_size"}
        file_system: "swap"
"#;

const SEED_003_TASKS: &str = r#"- id: role-name
  type: group
  role: [role-name]
  requires: [controller]
  required_for: [deploy_end]
  parameters:
    strategy:
      type: parallel
"#;

/// A plugin file holding seed 003's three files as written, each under its key.
fn seed_003_plugin(volumes: &str) -> String {
    let indent = |t: &str| -> String { t.lines().map(|l| format!("  {l}\n")).collect() };
    format!(
        "{SEED_003_METADATA}node_roles:\n{}volumes:\n{}deployment_tasks:\n{}tasks:\n{}",
        indent(SEED_003_NODE_ROLES),
        indent(volumes),
        indent(SEED_003_TASKS),
        indent(OLD_FORMAT_TASKS)
    )
}

/// A Fuel plugin's `metadata.yaml` (plugin version 3.0.0, as seed 003 asks).
const SEED_003_METADATA: &str = r#"name: seed-003
title: Seed 003 role plugin
version: 1.0.0
package_version: 3.0.0
fuel_version: ['9.0']
releases:
  - os: ubuntu
    version: mitaka-9.0
    mode: ['ha']
    deployment_scripts_path: deployment_scripts/
    repository_path: repositories/ubuntu
"#;

/// Old-format tasks (`tasks.yaml`: no ids, `stage`), as plugins before task-based deployment wrote them.
const OLD_FORMAT_TASKS: &str = r#"- role: ['role_name']
  stage: post_deployment/100
  type: shell
  parameters:
    cmd: echo done
    timeout: 42
"#;

#[test]
fn seed_003s_plugin_files_load_with_their_rules_enforced() {
    let c = Controller::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let plugin = write(
        dir.path(),
        "plugin.yaml",
        &seed_003_plugin(SEED_003_VOLUMES),
    );
    let (code, out, err) = ctl(&c, &["-o", "json", "plugin", "register", "--file", &plugin]);
    assert_eq!(code, 0, "{out}{err}");
    let registered: Value = serde_json::from_str(&out).expect("JSON");
    let plugin_id = registered["id"].as_u64().expect("an id");
    assert_eq!(registered["version"], "1.0.0");
    let shown = c.api.ok("GET", &format!("/plugins/{plugin_id}"), None);
    assert_eq!(
        shown["data"]["metadata"]["package_version"], "3.0.0",
        "{shown}"
    );
    assert_eq!(
        shown["data"]["metadata"]["releases"][0]["os"], "ubuntu",
        "{shown}"
    );
    let graph = c.api.ok(
        "GET",
        &format!("/plugins/{plugin_id}/deployment_graphs/default"),
        None,
    );
    let ids: Vec<&str> = graph["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        ["role-name", "seed-003-post_deployment-100-0"],
        "{graph}"
    );

    // A volumes_mapping naming a volume nobody defines is refused, naming it.
    let broken = SEED_003_VOLUMES.replace("role_volume_name", "another_volume");
    let bad = write(dir.path(), "bad.yaml", &seed_003_plugin(&broken));
    let (code, _, err) = ctl(&c, &["plugin", "register", "--file", &bad]);
    assert_ne!(code, 0);
    assert!(err.contains("names volume \"role_volume_name\""), "{err}");

    // The nested metadata's conflicts are enforced on assignment.
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({"name": "r", "version": "1",
            "roles_metadata": {"some_not_compatible_role": {"name": "Other"}}})),
    );
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "c", "release_id": release["id"]})),
    );
    let cid = cluster["id"].as_u64().expect("an id");
    c.api
        .ok("PUT", &format!("/clusters/{cid}/plugins/{plugin_id}"), None);
    let _a = Agent::start(&c, "node-a", &[]);
    let node = c.api.wait_nodes(1)[0].1;
    let refused = c.api.send(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [{"id": node, "roles": ["some_not_compatible_role", "role_name"]}]})),
    );
    assert_eq!(refused.status, 409, "{:?}", refused.body);
    assert!(
        refused.body.to_string().contains("conflict"),
        "{:?}",
        refused.body
    );
}

/// A plugin of the old format only: its metadata and a `tasks.yaml` with no ids, placed by stage.
const OLD_FORMAT_PLUGIN: &str = r#"name: legacy
title: An old-format plugin
version: 1.0.0
package_version: 2.0.0
fuel_version: ['6.1']
releases:
  - {os: ubuntu, version: 2014.2-6.1, mode: ['ha'], deployment_scripts_path: deployment_scripts/, repository_path: repositories/ubuntu}
tasks:
  - role: '*'
    stage: post_deployment/200
    type: shell
    parameters: {cmd: "echo post-200 >> order", timeout: 42}
  - role: '*'
    stage: post_deployment/100
    type: shell
    parameters: {cmd: "echo post-100 >> order", timeout: 42}
  - role: '*'
    stage: pre_deployment
    type: shell
    parameters: {cmd: "echo pre >> order", timeout: 42}
"#;

#[test]
fn an_old_format_plugin_deploys_as_it_is_on_a_release_without_stages() {
    let c = Controller::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let plugin = write(dir.path(), "legacy.yaml", OLD_FORMAT_PLUGIN);
    let (code, out, err) = ctl(&c, &["-o", "json", "plugin", "register", "--file", &plugin]);
    assert_eq!(code, 0, "{out}{err}");
    let plugin_id = serde_json::from_str::<Value>(&out).expect("JSON")["id"]
        .as_u64()
        .expect("an id");
    // The release's own task, with no stage anchor anywhere.
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({"name": "plain", "version": "1", "graphs": {"default": {"tasks": [
            {"id": "main", "type": "shell", "tags": ["*"], "parameters": {"cmd": "echo main >> order"}}]}}})),
    );
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "legacy", "release_id": release["id"]})),
    );
    let cid = cluster["id"].as_u64().expect("an id");
    c.api
        .ok("PUT", &format!("/clusters/{cid}/plugins/{plugin_id}"), None);
    let agent = Agent::start(&c, "old-plugin-node", &[]);
    let node = c.api.wait_nodes(1)[0].1;
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [{"id": node}]})),
    );
    let dep = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success", "{report:#}");
    // Pre-deployment before the release's tasks, post-deployment after, by priority.
    assert_eq!(
        std::fs::read_to_string(agent.work().join("order")).unwrap_or_default(),
        "pre\nmain\npost-100\npost-200\n",
        "{report:#}"
    );
}

#[test]
fn seed_000s_example_online_with_the_nodes_effective_tags() {
    let c = Controller::start_with(&["--auto-accept", "--nailgun-listen", "127.0.0.1:0"]);
    let port = c.nailgun_port();
    let mut release: Value = serde_yaml_ng::from_str(SEED_000_RELEASE).expect("YAML");
    release["name"] = json!("seed-000");
    release["version"] = json!("1");
    let rid = c.api.ok("POST", "/releases", Some(&release))["id"]
        .as_u64()
        .expect("an id");
    let answer = c.api.raw(
        "PUT",
        &format!("/releases/{rid}/deployment_graphs/default"),
        Some(&c.api.token),
        Some(("application/yaml", SEED_000_TASKS.as_bytes().to_vec())),
    );
    assert!(answer.status < 300, "{answer:?}");
    let cid = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "seed-000", "release_id": rid})),
    )["id"]
        .as_u64()
        .expect("an id");
    let _a = Agent::start(&c, "node-1", &[]);
    let _b = Agent::start(&c, "node-2", &[]);
    let nodes = c.api.wait_nodes(2);
    let id = |name: &str| nodes.iter().find(|(n, _)| n == name).expect("node").1;
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(
            &json!({"nodes": [{"id": id("node-1"), "roles": ["controller"]},
                               {"id": id("node-2"), "roles": ["controller"]}]}),
        ),
    );
    // The primary is the lowest id of the new controllers.
    let (primary, other) = if id("node-1") < id("node-2") {
        ("node-1", "node-2")
    } else {
        ("node-2", "node-1")
    };
    let first = c
        .api
        .ok("GET", &format!("/nodes/{}/tags", id(primary)), None);
    assert_eq!(
        first["tags"],
        json!(["primary-controller", "primary-mysql"]),
        "{first}"
    );
    assert_eq!(
        first["primary_for"],
        json!(["controller", "mysql"]),
        "{first}"
    );
    let second = c.api.ok("GET", &format!("/nodes/{}/tags", id(other)), None);
    assert_eq!(second["tags"], json!(["controller", "mysql"]), "{second}");
    // Nailgun's node records (what `fuel2 node list` reads) show the same tags as Plinth's own API.
    let records: Value = reqwest::blocking::Client::new()
        .get(format!(
            "http://127.0.0.1:{port}/api/v1/nodes/?cluster_id={cid}"
        ))
        .header("X-Auth-Token", &c.api.token)
        .send()
        .expect("the Nailgun port answers")
        .json()
        .expect("JSON");
    for (name, tags) in [(primary, &first["tags"]), (other, &second["tags"])] {
        let record = records
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["id"] == id(name))
            .unwrap_or_else(|| panic!("{name} in {records}"));
        assert_eq!(&record["tags"], tags, "{name}: {record}");
        let listed = c.api.ok("GET", &format!("/nodes?cluster_id={cid}"), None);
        let view = listed
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["id"] == id(name))
            .unwrap_or_else(|| panic!("{name} in {listed}"));
        assert_eq!(&view["effective_tags"], tags, "{name}: {view}");
    }
    let dry = c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/deploy/?dry_run=true"),
        None,
    );
    let ids = |name: &str| -> Vec<String> {
        dry["nodes"]["default"][name]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| t["id"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(ids(other), ["mysql", "haproxy", "globals"], "{dry}");
    assert_eq!(ids(primary), ["globals"], "{dry}");
    assert!(
        dry.to_string().contains("primary_tag"),
        "the dry run says why: {dry}"
    );

    // Nodes show shows them apart from what the agent reported.
    let shown = c.api.ok("GET", &format!("/nodes/{}", id(primary)), None);
    assert_eq!(
        shown["effective_tags"],
        json!(["primary-controller", "primary-mysql"]),
        "{shown}"
    );
    assert_eq!(shown["tags"], json!([]), "the agent reported none: {shown}");
    // A role's tag list is editable: controllers no longer carry mysql.
    let role = c.api.ok(
        "PUT",
        &format!("/releases/{rid}/roles/controller"),
        Some(
            &json!({"name": "controller", "meta": {"name": "Controller", "tags": ["controller"]}}),
        ),
    );
    assert_eq!(role["meta"]["tags"], json!(["controller"]), "{role}");
    let now = c.api.ok("GET", &format!("/nodes/{}/tags", id(other)), None);
    assert_eq!(now["tags"], json!(["controller"]), "{now}");
    let bad = c.api.send(
        "PUT",
        &format!("/releases/{rid}/roles/controller"),
        Some(&json!({"tags": "not a list"})),
    );
    assert_eq!(bad.status, 422, "{:?}", bad.body);
    let kept = c.api.ok("GET", &format!("/nodes/{}/tags", id(other)), None);
    assert_eq!(
        kept["tags"],
        json!(["controller"]),
        "a refused change changes nothing"
    );
    // And per cluster: this cluster's controllers carry mysql again; the release keeps its change.
    let role = c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/roles/controller"),
        Some(&json!({"name": "Controller", "tags": ["controller", "mysql"]})),
    );
    assert_eq!(
        role["meta"]["tags"],
        json!(["controller", "mysql"]),
        "{role}"
    );
    let now = c.api.ok("GET", &format!("/nodes/{}/tags", id(other)), None);
    assert_eq!(now["tags"], json!(["controller", "mysql"]), "{now}");
    let release = c.api.ok("GET", &format!("/releases/{rid}"), None);
    assert_eq!(
        release["data"]["roles_metadata"]["controller"]["tags"],
        json!(["controller"])
    );
}

#[test]
fn an_override_that_drops_placement_is_reported_not_silent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let release = write(
        dir.path(),
        "release.yaml",
        "name: r\nroles_metadata: {compute: {name: Compute}}\ngraphs:\n  default:\n    tasks:\n      - {id: a, type: shell, tags: [compute], parameters: {cmd: 'true'}}\n",
    );
    let cluster = write(
        dir.path(),
        "cluster.yaml",
        "name: c\ngraphs:\n  default:\n    tasks:\n      - {id: a, type: shell, parameters: {cmd: 'false'}}\nnodes:\n- {id: 1, name: n1, pending_roles: [compute], pending_addition: true}\n",
    );
    let (code, out, err) = plinthctl(&[
        "graph",
        "resolve",
        "--release",
        &release,
        "--cluster",
        &cluster,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("task \"a\" from the cluster graph replaces the release's and names no tags"),
        "{out}"
    );
    assert!(!out.contains("No findings"), "{out}");
}

// ---- Seed 002 (custom graphs), its command lines with plinthctl for fuel2 --------------------

#[test]
fn seed_002s_commands_upload_merge_download_and_execute_a_custom_graph() {
    let c = Controller::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let task = |cmd: &str| {
        format!("- id: fix\n  type: shell\n  tags: ['/.*/']\n  parameters: {{cmd: '{cmd}', timeout: 60}}\n")
    };
    let release_file = write(dir.path(), "release.yaml", &task("echo release > fix.txt"));
    let plugin_file = write(dir.path(), "plugin.yaml", &task("echo plugin > fix.txt"));
    let cluster_file = write(dir.path(), "tasks.yaml", &task("echo cluster > fix.txt"));
    let rid = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({"name": "r", "version": "1", "roles_metadata": {"compute": {"name": "Compute"}}})),
    )["id"]
        .to_string();
    let pid = c.api.ok(
        "POST",
        "/plugins",
        Some(&json!({"name": "p", "version": "1"})),
    )["id"]
        .to_string();
    let cid = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "env", "release_id": rid.parse::<u64>().expect("an id")})),
    )["id"]
        .to_string();
    c.api
        .ok("PUT", &format!("/clusters/{cid}/plugins/{pid}"), None);
    let _a = Agent::start(&c, "node-1", &[]);
    let node = c.api.wait_nodes(1)[0].1;
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [{"id": node, "roles": ["compute"]}]})),
    );
    let run = |line: &str| {
        let args: Vec<&str> = line.split_whitespace().collect();
        let (code, out, err) = ctl(&c, &args);
        assert_eq!(code, 0, "{line}: {out}{err}");
        out
    };
    // "fuel2 graph upload --release release_id [--type graph_type] --file tasks.yaml", and the others.
    run(&format!(
        "graph upload --release {rid} --type usecase1 --file {release_file}"
    ));
    run(&format!(
        "graph upload --plugin {pid} --type usecase1 --file {plugin_file}"
    ));
    run(&format!(
        "graph upload --env {cid} --type usecase1 --file {cluster_file}"
    ));
    let listed = run(&format!("graph list --env {cid}"));
    assert!(listed.contains("usecase1"), "{listed}");
    // Downloads at all four levels: each class's own, and the merge where the cluster's wins.
    for (level, want) in [
        ("--all", "echo cluster"),
        ("--cluster", "echo cluster"),
        ("--plugins", "echo plugin"),
        ("--release", "echo release"),
    ] {
        let file = dir
            .path()
            .join(format!("{}.yaml", level.trim_start_matches('-')));
        run(&format!(
            "graph download --env {cid} {level} --type usecase1 --file {}",
            file.display()
        ));
        let text = std::fs::read_to_string(&file).expect("downloaded");
        assert!(text.contains(want), "{level}: {text}");
    }
    // "fuel2 graph execute --env env_id [--type graph_type] [--node node_ids]"
    let out = run(&format!(
        "graph execute --env {cid} --type usecase1 --node {node}"
    ));
    let dep: u64 = out
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("a deployment id in {out:?}"));
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(status_of(&report, "node-1", "fix"), "succeeded");
    // A one-shot graph deploys nothing: the node keeps its pending role, the cluster stays new.
    let shown = c.api.ok("GET", &format!("/nodes/{node}"), None);
    assert_eq!(shown["pending_roles"], json!(["compute"]), "{shown}");
    assert_ne!(shown["status"], "ready", "{shown}");
    let cluster = c.api.ok("GET", &format!("/clusters/{cid}"), None);
    assert_eq!(cluster["status"], "new", "{cluster}");
}

/// A deployment refused because the cluster already runs one changes nothing: not even the primaries it
/// would have elected (they are written with the deployment, in its transaction).
#[test]
fn a_refused_second_deployment_leaves_the_primaries_as_they_were() {
    let c = Controller::start();
    let mut release: Value = serde_yaml_ng::from_str(SEED_000_RELEASE).expect("YAML");
    release["name"] = json!("seed-000");
    release["version"] = json!("1");
    let rid = c.api.ok("POST", "/releases", Some(&release))["id"]
        .as_u64()
        .expect("an id");
    // The first deployment runs until it is cancelled.
    let graph = json!([shell(
        "hold",
        &["primary-controller", "controller"],
        "sleep 600"
    )]);
    c.api.ok(
        "PUT",
        &format!("/releases/{rid}/deployment_graphs/default"),
        Some(&graph),
    );
    let cid = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "primaries", "release_id": rid})),
    )["id"]
        .as_u64()
        .expect("an id");
    let _a = Agent::start(&c, "node-1", &[]);
    let _b = Agent::start(&c, "node-2", &[]);
    let nodes = c.api.wait_nodes(2);
    let id = |name: &str| nodes.iter().find(|(n, _)| n == name).expect("node").1;
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [{"id": id("node-1"), "roles": ["controller"]}]})),
    );
    let first = c.api.deploy(cid, "");
    let primaries =
        |name: &str| c.api.ok("GET", &format!("/nodes/{}", id(name)), None)["primary_tags"].clone();
    assert_eq!(primaries("node-1"), json!(["controller", "mysql"]));
    // node-1 stops being a controller and node-2 becomes one: a deployment now would elect node-2.
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [{"id": id("node-1"), "roles": []},
                               {"id": id("node-2"), "roles": ["controller"]}]})),
    );
    let running = c.api.ok("GET", &format!("/deployments/{first}"), None);
    assert_eq!(running["status"], "running", "{running:#}");
    let refused = c.api.send("PUT", &format!("/clusters/{cid}/deploy/"), None);
    assert_eq!(refused.status, 409, "{:?}", refused.body);
    assert_eq!(primaries("node-1"), json!(["controller", "mysql"]));
    assert_eq!(primaries("node-2"), json!([]));
    c.api
        .ok("POST", &format!("/deployments/{first}/cancel"), None);
    let report = c
        .api
        .wait_deployment(first, std::time::Duration::from_secs(60));
    assert_eq!(report["status"], "cancelled", "{report:#}");
}

/// On the Nailgun port, a cluster's attributes are read in Nailgun's shape and changed with the same
/// checks as on the operator API (the port once answered only `GET` there, so `PUT`/`PATCH` were 405).
#[test]
fn the_nailgun_port_changes_attributes_with_the_same_checks() {
    let c = Controller::start_with(&["--nailgun-listen", "127.0.0.1:0"]);
    let port = c.nailgun_port();
    let release = fuel_release(&c);
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "fuel", "release_id": release})),
    );
    let cid = cluster["id"].as_u64().expect("an id");
    let plain = reqwest::blocking::Client::new();
    let url = |path: &str| format!("http://127.0.0.1:{port}/api/v1/clusters/{cid}/{path}");
    let send = |method: reqwest::Method, path: &str, body: Option<Value>| {
        let mut req = plain
            .request(method, url(path))
            .header("X-Auth-Token", &c.api.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().expect("the Nailgun port answers");
        let status = resp.status().as_u16();
        (status, resp.json::<Value>().unwrap_or(Value::Null))
    };
    let (status, body) = send(
        reqwest::Method::PATCH,
        "attributes/",
        Some(json!({"editable": {"access": {"email": {"value": "ops@example.com"}}}})),
    );
    assert_eq!(status, 200, "{body}");
    let (status, now) = send(reqwest::Method::GET, "attributes/", None);
    assert_eq!(status, 200, "{now}");
    assert_eq!(
        now["editable"]["access"]["email"]["value"],
        "ops@example.com"
    );
    // The operator API sees the same change.
    let tls = c
        .api
        .ok("GET", &format!("/clusters/{cid}/attributes"), None);
    assert_eq!(
        tls["editable"]["access"]["email"]["value"],
        "ops@example.com"
    );
    // A bad value is refused naming the setting, and nothing changes.
    let (status, body) = send(
        reqwest::Method::PUT,
        "attributes/",
        Some(json!({"editable": {"storage": {"osd_pool_size": {"value": "three"}}}})),
    );
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("storage.osd_pool_size"), "{body}");
    let (_, after) = send(reqwest::Method::GET, "attributes/", None);
    assert_eq!(after["editable"]["storage"]["osd_pool_size"]["value"], "3");
    let (status, defaults) = send(reqwest::Method::GET, "attributes/defaults/", None);
    assert_eq!(status, 200, "{defaults}");
    assert_eq!(
        defaults["editable"]["access"]["email"]["value"],
        "admin@localhost"
    );
}
