//! `plinthctl graph ...` as task authors and operators run it: offline resolution and checks on files
//! (a small release and cluster, and Fuel's own graph from the corpus), bad input, and the online graph,
//! tag and plugin commands against a real controller.

use plinth_e2e::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

const RELEASE: &str = r#"
name: r1
version: "1"
roles_metadata:
  controller: {name: Controller, tags: [controller]}
  compute: {name: Compute}
tags_metadata:
  controller: {has_primary: true}
graphs:
  default:
    tasks:
      - {id: pre, type: shell, tags: ['*'], parameters: {cmd: "true"}}
      - {id: db, type: shell, tags: [controller, primary-controller], requires: [pre], parameters: {cmd: "true"}}
      - id: only-ceph
        type: shell
        tags: [compute]
        requires: [pre]
        condition: {yaql_exp: "$.settings.ceph"}
        parameters: {cmd: "true"}
      - id: nova
        type: shell
        tags: [compute]
        requires: [only-ceph]
        cross-depends: [{name: db, role: [primary-controller, controller]}]
        parameters: {cmd: {yaql_exp: "concat('start ', $.name)"}}
"#;

const CLUSTER: &str = r#"
name: c1
settings: {ceph: false}
nodes:
  - {id: 1, name: ctl-1, pending_roles: [controller], pending_addition: true}
  - {id: 2, name: cmp-1, pending_roles: [compute], pending_addition: true}
"#;

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

fn corpus() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus")).to_path_buf()
}

struct Files {
    _dir: tempfile::TempDir,
    release: String,
    cluster: String,
    root: PathBuf,
}

fn files(release: &str, cluster: &str) -> Files {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("release.yaml");
    let c = dir.path().join("cluster.yaml");
    std::fs::write(&r, release).unwrap();
    std::fs::write(&c, cluster).unwrap();
    Files {
        root: dir.path().to_path_buf(),
        release: r.to_str().unwrap().into(),
        cluster: c.to_str().unwrap().into(),
        _dir: dir,
    }
}

fn json_of(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn task_ids(node: &Value) -> Vec<&str> {
    node["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect()
}

#[test]
fn resolve_prints_each_nodes_ordered_tasks_and_the_findings() {
    let f = files(RELEASE, CLUSTER);
    let base = [
        "graph",
        "resolve",
        "--release",
        &f.release,
        "--cluster",
        &f.cluster,
    ];

    let (code, out, err) = plinthctl(&base);
    assert_eq!(code, 0, "{err}\n{out}");
    assert!(out.contains("Node ctl-1 (id 1)"), "{out}");
    assert!(out.contains("skipped: condition is false"), "{out}");
    assert!(out.contains("all: db@1"), "{out}");
    assert!(out.contains("No findings."), "{out}");

    let (code, out, err) = plinthctl(&[&base[..], &["-o", "json"]].concat());
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["graph_type"], "default");
    assert_eq!(v["findings"], json!([]));
    let nodes = v["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[0]["name"], "ctl-1");
    assert_eq!(nodes[0]["tags"], json!(["primary-controller"]));
    assert_eq!(task_ids(&nodes[0]), ["pre", "db"]);
    assert_eq!(task_ids(&nodes[1]), ["pre", "only-ceph", "nova"]);
    let skipped = &nodes[1]["tasks"][1];
    assert_eq!(skipped["type"], "skipped");
    assert_eq!(skipped["skip_reason"], "condition is false");
    // Computed parameters go through the controller's YAQL engine.
    assert_eq!(nodes[1]["tasks"][2]["parameters"]["cmd"], "start cmp-1");
    let wait = nodes[1]["tasks"][2]["waits"][0].as_u64().unwrap() as usize;
    assert_eq!(
        v["wait_sets"][wait]["targets"][0],
        json!({"task": "db", "nodes": [1]})
    );

    // `--nodes` names the nodes; the DOT drawing has the edges, cross-node ones dashed.
    let (code, out, err) = plinthctl(&[&base[..], &["--nodes", "2", "-o", "json"]].concat());
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["nodes"].as_array().unwrap().len(), 1);
    let (code, out, err) = plinthctl(&[&base[..], &["--dot"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("digraph \"default\""), "{out}");
    assert!(out.contains("\"pre\" -> \"db\";"), "{out}");
    assert!(out.contains("\"db\" -> \"nova\" [style=dashed];"), "{out}");
    let (_, out, _) = plinthctl(&[&base[..], &["--dot", "--parents-for", "db"]].concat());
    assert!(
        out.contains("\"pre\" -> \"db\"") && !out.contains("nova"),
        "{out}"
    );

    // A check with nothing wrong exits 0.
    let (code, out, _) = plinthctl(&[
        "graph",
        "check",
        "--release",
        &f.release,
        "--cluster",
        &f.cluster,
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("No findings."), "{out}");
}

#[test]
fn old_states_decide_changed_and_force_ignores_them() {
    let release = RELEASE.replace("$.settings.ceph", "changed($.settings)");
    let f = files(&release, CLUSTER);
    let old = f.root.join("old.json");
    std::fs::write(&old, r#"{"2": {"settings": {"ceph": false}}}"#).unwrap();
    let old = old.to_str().unwrap();
    let base = [
        "graph",
        "resolve",
        "--release",
        &f.release,
        "--cluster",
        &f.cluster,
        "-o",
        "json",
    ];
    let skip_of = |extra: &[&str]| -> Value {
        let (code, out, err) = plinthctl(&[&base[..], extra].concat());
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        v["nodes"][1]["tasks"][1]["type"].clone()
    };
    assert_eq!(skip_of(&[]), "shell", "no old state: everything changed");
    assert_eq!(
        skip_of(&["--old", old]),
        "skipped",
        "same settings as last time"
    );
    assert_eq!(skip_of(&["--old", old, "--force"]), "shell");
}

#[test]
fn findings_exit_1_and_bad_input_exits_2_naming_the_file_and_line() {
    // A task requiring one that does not exist, and a role with no node: errors and warnings.
    let bad_graph = RELEASE.replace("requires: [only-ceph]", "requires: [no-such-task]");
    let f = files(&bad_graph, CLUSTER);
    let (code, out, _) = plinthctl(&[
        "graph",
        "check",
        "--release",
        &f.release,
        "--cluster",
        &f.cluster,
        "-o",
        "json",
    ]);
    assert_eq!(code, 1, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok"], false);
    let findings = v["findings"].as_array().unwrap();
    assert!(
        findings
            .iter()
            .any(|f| f["severity"] == "error"
                && f["message"].as_str().unwrap().contains("no-such-task")),
        "{out}"
    );
    let (code, out, _) = plinthctl(&[
        "graph",
        "resolve",
        "--release",
        &f.release,
        "--cluster",
        &f.cluster,
    ]);
    assert_eq!(code, 1);
    assert!(
        out.contains("error") && out.contains("no-such-task"),
        "{out}"
    );

    // Only warnings: exit 0, the warning printed.
    let one_node = "name: c1\nsettings: {ceph: false}\nnodes:\n  - {id: 2, name: cmp-1, pending_roles: [compute], pending_addition: true}\n";
    let f = files(RELEASE, one_node);
    let (code, out, err) = plinthctl(&[
        "graph",
        "check",
        "--release",
        &f.release,
        "--cluster",
        &f.cluster,
    ]);
    assert_eq!(code, 0, "{err}\n{out}");
    assert!(out.contains("warning"), "{out}");

    // Missing file.
    let (code, _, err) = plinthctl(&[
        "graph",
        "resolve",
        "--release",
        "/nonexistent/release.yaml",
        "--cluster",
        &f.cluster,
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot read /nonexistent/release.yaml"),
        "{err}"
    );

    // Bad YAML: the file and the line.
    let f = files("name: r\nroles_metadata:\n  a: [\n", CLUSTER);
    let (code, _, err) = plinthctl(&[
        "graph",
        "resolve",
        "--release",
        &f.release,
        "--cluster",
        &f.cluster,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains(&format!("{}:4:", f.release)), "{err}");

    // A field of the wrong type: the file and the field.
    let f = files(RELEASE, "name: c\nnodes:\n  - {id: one, name: x}\n");
    let (code, _, err) = plinthctl(&[
        "graph",
        "resolve",
        "--release",
        &f.release,
        "--cluster",
        &f.cluster,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains(&f.cluster) && err.contains("line 3"), "{err}");

    // A tasks file with a bad task: the file, the line and the task.
    let tasks = f.root.join("tasks.yaml");
    std::fs::write(
        &tasks,
        "- id: a\n  type: shell\n- id: b\n  type: shell\n  requires: 7\n",
    )
    .unwrap();
    let f2 = files(RELEASE, CLUSTER);
    let (code, _, err) = plinthctl(&[
        "graph",
        "resolve",
        "--release",
        &f2.release,
        "--tasks",
        tasks.to_str().unwrap(),
        "--cluster",
        &f2.cluster,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("tasks.yaml:3") && err.contains("(b)"), "{err}");

    // An undefined graph type.
    let (code, _, err) = plinthctl(&[
        "graph",
        "resolve",
        "--release",
        &f2.release,
        "--cluster",
        &f2.cluster,
        "--graph-type",
        "nope",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("\"nope\""), "{err}");
}

#[test]
fn plugins_and_the_cluster_merge_over_the_release() {
    let f = files(RELEASE, &format!("{CLUSTER}plugins: [p1]\ngraphs:\n  default:\n    tasks:\n      - {{id: db, type: shell, tags: [primary-controller], requires: [pre], parameters: {{cmd: cluster-db}}}}\n"));
    let plugin = f.root.join("plugin.yaml");
    std::fs::write(
        &plugin,
        "name: p1\nversion: 1.0.0\ndeployment_tasks:\n  - {id: plug, type: shell, tags: [compute], requires: [pre], parameters: {cmd: plug}}\n",
    )
    .unwrap();
    let (code, out, err) = plinthctl(&[
        "graph",
        "resolve",
        "--release",
        &f.release,
        "--plugin",
        plugin.to_str().unwrap(),
        "--cluster",
        &f.cluster,
        "-o",
        "json",
    ]);
    assert_eq!(code, 0, "{err}\n{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["nodes"][0]["tasks"][1]["parameters"]["cmd"], "cluster-db");
    assert!(task_ids(&v["nodes"][1]).contains(&"plug"), "{out}");

    // The cluster names a plugin no file defines.
    let (code, _, err) = plinthctl(&[
        "graph",
        "resolve",
        "--release",
        &f.release,
        "--cluster",
        &f.cluster,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("\"p1\""), "{err}");
}

#[test]
fn fuels_own_graph_resolves_from_the_corpus() {
    let corpus = corpus();
    let fixture = corpus.join("fuel-web/openstack.yaml");
    let deployment = corpus.join("fuel-library/deployment");
    let mut nodes = Vec::new();
    for (role, count) in [
        ("controller", 3),
        ("compute", 3),
        ("cinder", 2),
        ("mongo", 1),
    ] {
        for _ in 0..count {
            let id = nodes.len() + 1;
            nodes.push(json!({"id": id, "name": format!("node-{id}"), "pending_roles": [role], "pending_addition": true}));
        }
    }
    // No settings but the one Fuel's mongo role needs: the cluster starts with the release's own
    // attributes, as Nailgun's does (ironic off, so its limits do not apply; osd_pool_size "3").
    let cluster = json!({
        "name": "fuel",
        "settings": {"additional_components": {"ceilometer": {"value": true}}},
        "nodes": nodes,
    });
    let f = files("", &cluster.to_string());
    let args = [
        "graph",
        "resolve",
        "--release",
        fixture.to_str().unwrap(),
        "--tasks",
        deployment.to_str().unwrap(),
        "--cluster",
        &f.cluster,
    ];
    let (code, out, err) = plinthctl(&[&args[..], &["-o", "json"]].concat());
    assert_eq!(code, 0, "{err}\n{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let errors: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let ids = task_ids(&v["nodes"][1]);
    assert!(
        ids.contains(&"openstack-controller") || ids.contains(&"primary-openstack-controller"),
        "{ids:?}"
    );
    // Without ceilometer, Fuel's own restriction refuses the mongo node with its message.
    let off = json!({"name": "fuel", "nodes": nodes});
    let g = files("", &off.to_string());
    let (code, out, _) =
        plinthctl(&[&args[..6], &["--cluster", g.cluster.as_str(), "-o", "json"]].concat());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Ceilometer should be enabled"), "{out}");
    // The drawing holds Fuel's tasks and their order.
    let (_, out, _) = plinthctl(
        &[
            &args[..],
            &["--dot", "--parents-for", "openstack-controller"],
        ]
        .concat(),
    );
    assert!(out.contains("\"keystone\" -> "), "{out}");
    assert!(out.contains("\"openstack-controller\""), "{out}");
}

#[test]
fn tags_and_plugins_through_plinthctl_against_a_controller() {
    let c = Controller::start();
    let _a = Agent::start(&c, "node-a", &[]);
    let _b = Agent::start(&c, "node-b", &[]);
    let mut nodes = c.api.wait_nodes(2);
    nodes.sort();
    let node = nodes[0].1.to_string();
    let both = format!("{},{}", nodes[0].1, nodes[1].1);
    let token = c.api.token.clone();
    let cert = c.cert_path();
    let ctl = |args: &[&str]| -> (i32, String, String) {
        plinthctl(
            &[
                &[
                    "--controller",
                    c.url.as_str(),
                    "--token",
                    token.as_str(),
                    "--ca-cert",
                    cert.to_str().unwrap(),
                ][..],
                args,
            ]
            .concat(),
        )
    };
    // Lists of ids: `nodes show A B` shows both.
    let (code, out, err) = ctl(&[
        "nodes",
        "show",
        &nodes[0].1.to_string(),
        &nodes[1].1.to_string(),
    ]);
    assert_eq!(code, 0, "{err}");
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        shown.as_array().map(|a| a.len()),
        Some(2),
        "two nodes shown: {out}"
    );
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({"name": "r", "version": "1",
            "roles_metadata": {"controller": {"name": "Controller", "tags": ["controller"]}, "compute": {"name": "Compute"}},
            "tags_metadata": {"controller": {"has_primary": true}},
            "graphs": {"default": {"tasks": [{"id": "pre", "type": "shell", "tags": ["*"], "parameters": {"cmd": "true"}}]}}})),
    );
    let rid = release["id"].as_u64().unwrap().to_string();
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "c", "release_id": release["id"]})),
    );
    let cid = cluster["id"].as_u64().unwrap().to_string();

    // Tags.
    let (code, out, err) = ctl(&[
        "tag",
        "create",
        "--release",
        &rid,
        "storage",
        "--has-primary",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("storage"), "{out}");
    let (code, out, _) = ctl(&["tag", "list", "--release", &rid, "-o", "json"]);
    assert_eq!(code, 0);
    let tags: Value = serde_json::from_str(&out).unwrap();
    let storage = tags
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "storage")
        .unwrap();
    assert_eq!(storage["has_primary"], true);
    let (code, _, err) = ctl(&[
        "tag",
        "update",
        "--release",
        &rid,
        "storage",
        "--has-primary",
        "false",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = ctl(&["tag", "create", "--env", &cid, "edge"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = ctl(&["tag", "list", "--env", &cid]);
    assert_eq!(code, 0);
    assert!(out.contains("edge") && out.contains("NAME"), "{out}");
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [{"id": nodes[0].1, "roles": ["compute"]}, {"id": nodes[1].1}]})),
    );
    let (code, out, err) = ctl(&["tag", "assign", "--node", &both, "edge", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let tagged = v.as_array().cloned().unwrap_or_default();
    assert_eq!(tagged.len(), 2, "both nodes tagged: {v}");
    for n in &tagged {
        assert!(
            n["tags"].as_array().unwrap().contains(&json!("edge")),
            "{v}"
        );
    }
    let (code, out, err) = ctl(&["tag", "unassign", "--node", &node, "edge", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(
        !v["tags"].as_array().unwrap().contains(&json!("edge")),
        "{v}"
    );
    let other = nodes[1].1.to_string();
    let (code, _, err) = ctl(&["tag", "unassign", "--node", &other, "edge"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = ctl(&["tag", "delete", "--env", &cid, "edge"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = ctl(&["tag", "delete", "--release", &rid, "no-such-tag"]);
    assert_ne!(code, 0);
    assert!(err.contains("404") || err.contains("no-such-tag"), "{err}");

    // Plugins.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plugin.yaml");
    std::fs::write(
        &file,
        "name: p1\nversion: 1.0.0\nnode_roles:\n  p1-role: {name: P1}\ndeployment_tasks:\n  - {id: p1-task, type: shell, tags: [p1-role], requires: [pre], parameters: {cmd: \"true\"}}\n",
    )
    .unwrap();
    let (code, out, err) = ctl(&[
        "plugin",
        "register",
        "--file",
        file.to_str().unwrap(),
        "-o",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let plugin: Value = serde_json::from_str(&out).unwrap();
    let pid = plugin["id"].as_u64().unwrap().to_string();
    let (code, out, _) = ctl(&["plugin", "list"]);
    assert_eq!(code, 0);
    assert!(out.contains("p1") && out.contains("1.0.0"), "{out}");
    let (code, _, err) = ctl(&["plugin", "enable", "--env", &cid, &pid]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = ctl(&["plugin", "show", &pid]);
    assert_eq!(code, 0);
    assert!(out.contains("p1"), "{out}");

    // Graphs: the cluster's list shows the release's and the plugin's; the merged download has both.
    let (code, out, err) = ctl(&["graph", "list", "--env", &cid]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("release") && out.contains("plugin"), "{out}");
    let tasks = dir.path().join("tasks.yaml");
    std::fs::write(
        &tasks,
        "- {id: post, type: shell, tags: ['*'], requires: [pre], parameters: {cmd: \"true\"}}\n",
    )
    .unwrap();
    let (code, out, err) = ctl(&[
        "graph",
        "upload",
        "--env",
        &cid,
        "--file",
        tasks.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("created"), "{out}");
    let (code, out, err) = ctl(&[
        "graph",
        "upload",
        "--env",
        &cid,
        "--file",
        tasks.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("replaced"), "{out}");
    let (code, out, err) = ctl(&["graph", "download", "--env", &cid, "--all"]);
    assert_eq!(code, 0, "{err}");
    let merged: Value = serde_yaml_ng::from_str(&out).unwrap();
    let ids: Vec<&str> = merged
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["pre", "p1-task", "post"]);
    let (code, out, _) = ctl(&[
        "graph",
        "download",
        "--env",
        &cid,
        "--cluster",
        "-o",
        "json",
    ]);
    assert_eq!(code, 0);
    let own: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(own.as_array().unwrap().len(), 1);
    let (code, out, _) = ctl(&[
        "graph",
        "download",
        "--env",
        &cid,
        "--plugins",
        "-o",
        "json",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("p1-task"), "{out}");
    let (code, out, err) = ctl(&["graph", "dot", "--env", &cid]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"pre\" -> \"post\""), "{out}");
    let (code, out, err) = ctl(&[
        "graph",
        "serialized",
        "--env",
        &cid,
        "--nodes",
        &node,
        "-o",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["plan"]["nodes"][0]["tasks"][0]["id"], "pre", "{v}");
    let (code, out, err) = ctl(&["cluster", "check", &cid]);
    assert!(code == 0 || code == 1, "{err}");
    assert!(out.contains("finding"), "{out}");
    let (code, out, err) = ctl(&[
        "graph",
        "execute",
        "--env",
        &cid,
        "--nodes",
        &node,
        "--dry-run",
        "-o",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let _: Value = serde_json::from_str(&out).unwrap();

    let (code, out, err) = ctl(&["graph", "list", "--plugin", &pid, "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json_of(&out)[0]["graph_type"], "default");

    // A real deployment: the id is printed, then followed to its end.
    let (code, out, err) = ctl(&["graph", "execute", "--env", &cid, "--nodes", &node]);
    assert_eq!(code, 0, "{err}");
    let id: u64 = out
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("an id: {out}"));
    let report = c
        .api
        .wait_deployment(id, std::time::Duration::from_secs(120));
    assert_eq!(report["status"], "success", "{report}");
    let (code, out, err) = ctl(&[
        "graph", "execute", "--env", &cid, "--nodes", &node, "--watch", "-o", "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let report = json_of(&out);
    assert_eq!(report["status"], "success", "{report}");
    assert!(task_line(&report, "node-a", "post").is_some(), "{report}");

    let (code, _, err) = ctl(&["plugin", "disable", "--env", &cid, &pid]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = ctl(&["plugin", "delete", &pid]);
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = ctl(&["plugin", "list", "-o", "json"]);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), json!([]));
}

/// The graph's shape is checked whether or not any node is selected: a cluster file that says
/// `roles:` where `pending_roles:` is read selects no node, and the cycle and the misspelled type are
/// still found, offline and at upload; an upload with errors is refused unless forced, and says so.
#[test]
fn a_cycle_and_a_misspelled_type_are_found_with_no_node_selected_and_refused_at_upload() {
    const BROKEN: &str = r#"
name: broken
version: "1"
roles_metadata: {web: {name: Web}}
graphs:
  default:
    tasks:
      - {id: a, type: shell, roles: [web], requires: [c], parameters: {cmd: "true"}}
      - {id: b, type: shell, roles: [web], requires: [a], parameters: {cmd: "true"}}
      - {id: c, type: shel, roles: [web], requires: [b], parameters: {cmd: "true"}}
"#;
    // `roles:` is not read (Nailgun's field is `pending_roles`): no node is selected.
    const NO_NODE: &str = "name: c\nnodes:\n  - {id: 1, name: web-1, roles: [web]}\n";
    let f = files(BROKEN, NO_NODE);
    let (code, out, err) = plinthctl(&[
        "graph",
        "check",
        "--release",
        &f.release,
        "--cluster",
        &f.cluster,
    ]);
    assert_eq!(code, 1, "a cycle fails the check: {out}{err}");
    assert!(out.contains("a -> b -> c -> a"), "{out}");
    assert!(out.contains("did you mean \"shell\""), "{out}");

    // The same graph mended has only a warning (a task of Fuel's type `cobbler_sync`, which no agent
    // runs): it passes, but not under --strict, which a task author's CI uses.
    let mended = BROKEN
        .replace("requires: [c], ", "")
        .replace("type: shel,", "type: cobbler_sync,");
    let f2 = files(&mended, NO_NODE);
    let check = |extra: &[&str]| {
        plinthctl(
            &[
                &[
                    "graph",
                    "check",
                    "--release",
                    &f2.release,
                    "--cluster",
                    &f2.cluster,
                ][..],
                extra,
            ]
            .concat(),
        )
    };
    let (code, out, err) = check(&[]);
    assert_eq!(code, 0, "warnings alone pass: {out}{err}");
    assert!(out.contains("warning"), "{out}");
    let (code, out, err) = check(&["--strict"]);
    assert_eq!(code, 1, "--strict fails on a warning: {out}{err}");
    assert!(err.contains("--strict"), "{err}");

    // Uploading the same graph to a controller: refused, then stored with force, saying so.
    let c = Controller::start();
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({"name": "r", "version": "1", "roles_metadata": {"web": {"name": "Web"}}})),
    );
    let rid = release["id"].as_u64().unwrap();
    let graph: Value =
        serde_yaml_ng::from_str::<Value>(BROKEN).unwrap()["graphs"]["default"].clone();
    let path = format!("/releases/{rid}/deployment_graphs/default/");
    let refused = c.api.send("POST", &path, Some(&graph));
    assert_eq!(refused.status, 422, "{}", refused.body);
    let message = refused.body["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("cycle") && message.contains("force=true"),
        "{}",
        refused.body
    );
    assert_eq!(
        refused.body["error"]["details"]["findings"][0]["code"], "cycle",
        "{}",
        refused.body
    );
    assert!(c.api.get(&path).is_err(), "a refused upload stores nothing");
    let file = f.root.join("graph.yaml");
    std::fs::write(&file, serde_yaml_ng::to_string(&graph).unwrap()).unwrap();
    let token = c.api.token.clone();
    let cert = c.cert_path();
    let upload = |extra: &[&str]| {
        plinthctl(
            &[
                &[
                    "--controller",
                    c.url.as_str(),
                    "--token",
                    token.as_str(),
                    "--ca-cert",
                    cert.to_str().unwrap(),
                    "graph",
                    "upload",
                    "--release",
                    &rid.to_string(),
                    "--file",
                    file.to_str().unwrap(),
                ][..],
                extra,
            ]
            .concat(),
        )
    };
    let (code, _, err) = upload(&[]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("--force") && err.contains("cycle"), "{err}");
    let (code, out, err) = upload(&["--force"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("as --force asks"), "{err}");
    // The controller's answer says it stored the graph despite its errors, and which.
    assert!(
        err.contains("the controller: graph \"default\" stored despite") && err.contains("cycle"),
        "{err}"
    );
    assert!(c.api.get(&path).is_ok(), "stored when forced");
    assert!(
        c.log().contains("storing a graph with errors"),
        "the controller says so"
    );
}

/// Misspelled keys are warnings that name the file, the line, the key's path and the nearest known
/// key: `requries:` in a task, `timout:` in its shell parameters, `pending_roels:` in a cluster file.
/// The check passes with them (exit 0) and fails under `--strict`; an upload of the tasks answers with
/// the same findings and stores the graph.
#[test]
fn misspelled_keys_are_warnings_naming_the_file_the_line_and_the_nearest_key() {
    const TASKS: &str = "\
- id: pre
  type: shell
  tags: ['*']
  parameters: {cmd: \"true\"}
- id: db
  type: shell
  tags: [controller, primary-controller]
  requries: [pre]
  parameters:
    cmd: \"true\"
    timout: 30
";
    const CLUSTER_TYPO: &str = "\
name: c1
settings: {ceph: false}
nodes:
  - {id: 1, name: ctl-1, pending_roles: [controller], pending_addition: true}
  - id: 2
    name: cmp-1
    pending_roels: [compute]
    pending_addition: true
";
    let f = files(RELEASE, CLUSTER_TYPO);
    let tasks = f.root.join("tasks.yaml");
    std::fs::write(&tasks, TASKS).unwrap();
    let tasks = tasks.to_str().unwrap().to_string();
    let check = |extra: &[&str]| {
        plinthctl(
            &[
                &[
                    "graph",
                    "check",
                    "--release",
                    &f.release,
                    "--tasks",
                    &tasks,
                    "--cluster",
                    &f.cluster,
                ][..],
                extra,
            ]
            .concat(),
        )
    };
    let (code, out, err) = check(&[]);
    assert_eq!(code, 0, "unknown keys are warnings: {out}{err}");
    for said in [
        format!(
            "{tasks}:8: tasks[1].requries: unknown key `requries` in task \"db\" (did you mean \
             `requires`?)"
        ),
        format!(
            "{tasks}:11: tasks[1].parameters.timout: unknown key `timout` in the parameters of shell \
             task \"db\" (did you mean `timeout`?)"
        ),
        format!(
            "{}:7: nodes[1].pending_roels: unknown key `pending_roels` in a node (did you mean \
             `pending_roles`?)",
            f.cluster
        ),
    ] {
        assert!(out.contains(&said), "{said}\n{out}");
    }
    let (code, out, err) = check(&["--strict"]);
    assert_eq!(code, 1, "--strict fails on them: {out}{err}");
    let (code, out, err) = check(&["-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let v = json_of(&out);
    let keys: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "unknown_key")
        .collect();
    assert_eq!(keys.len(), 3, "{v}");
    assert_eq!(keys[0]["severity"], "warning");
    assert_eq!(keys[0]["file"], tasks.as_str());
    assert_eq!(keys[0]["line"], 8);
    assert_eq!(keys[0]["path"], "tasks[1].requries");
    // `graph resolve` shows them with the plan.
    let (code, out, err) = plinthctl(&[
        "graph",
        "resolve",
        "--release",
        &f.release,
        "--tasks",
        &tasks,
        "--cluster",
        &f.cluster,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("Node ctl-1") && out.contains("did you mean `timeout`?"),
        "{out}"
    );

    // The controller answers an upload with the same findings, and stores it.
    let c = Controller::start();
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(
            &json!({"name": "r", "version": "1", "roles_metadata": {"controller": {"name": "C"}}}),
        ),
    );
    let path = format!(
        "/releases/{}/deployment_graphs/default/",
        release["id"].as_u64().unwrap()
    );
    let answer = c.api.raw(
        "POST",
        &path,
        Some(&c.api.token),
        Some(("application/yaml", TASKS.as_bytes().to_vec())),
    );
    assert_eq!(answer.status, 201, "{}", answer.body);
    let findings = answer.body["findings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(findings.len(), 2, "{}", answer.body);
    assert_eq!(findings[0]["line"], 8, "{}", answer.body);
    assert!(
        findings[1]["message"]
            .as_str()
            .unwrap_or("")
            .contains("upload:11: tasks[1].parameters.timout"),
        "{}",
        answer.body
    );
    assert!(answer.body.get("forced").is_none(), "{}", answer.body);
    assert!(c.api.get(&path).is_ok(), "stored");
}

#[test]
fn a_second_primary_is_refused_offline_as_the_controller_refuses_it() {
    let elected = "`primary-` tags are elected, not assigned";
    // Offline: a file that gives a second node primary-controller.
    let cluster = CLUSTER.replace(
        "{id: 2, name: cmp-1, pending_roles: [compute], pending_addition: true}",
        "{id: 2, name: ctl-2, pending_roles: [controller], pending_addition: true, tags_added: [primary-controller]}",
    );
    let f = files(RELEASE, &cluster);
    for command in ["resolve", "check"] {
        let (code, out, err) = plinthctl(&[
            "graph",
            command,
            "--release",
            &f.release,
            "--cluster",
            &f.cluster,
        ]);
        assert_eq!(code, 2, "{command}: {out}{err}");
        assert!(
            err.contains("cluster.yaml") && err.contains("node ctl-2") && err.contains(elected),
            "{err}"
        );
    }
    // The controller, asked the same for a real node.
    let c = Controller::start();
    let _agent = Agent::start(&c, "ctl-2", &[]);
    let id = c.api.wait_nodes(1)[0].1;
    let release: Value = serde_yaml_ng::from_str(RELEASE).unwrap();
    let release = c.api.ok("POST", "/releases", Some(&release));
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "c1", "release_id": release["id"]})),
    );
    c.api.ok(
        "PUT",
        &format!("/clusters/{}/nodes", cluster["id"]),
        Some(&json!({"nodes": [{"id": id, "roles": ["controller"]}]})),
    );
    let (ok, out, err) = c.plinthctl(&[
        "tag",
        "assign",
        "--node",
        &id.to_string(),
        "primary-controller",
    ]);
    assert!(!ok, "{out}");
    assert!(err.contains(elected), "{err}");
}
