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
