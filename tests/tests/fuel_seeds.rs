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

/// Loads Fuel's release through `plinthctl release create openstack.yaml`; its id.
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
