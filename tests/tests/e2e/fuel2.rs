//! Fuel's own client, unmodified: python-fuelclient 11.0.0's `fuel2` (Python 3.8, PyYAML < 6) against a
//! real controller serving Nailgun's API on its `--nailgun-listen` port, with real agents as the nodes.
//! Each command's output is checked as an operator reads it, and what the controller did is checked
//! through Plinth's own API.
//!
//! The virtual environment is made once under the target directory, with the Python 3.8 that
//! `plinth_e2e::needs::python38` finds.

use plinth_e2e::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const FUELCLIENT: &str = "python-fuelclient==11.0.0";

/// `fuel2` in a virtual environment under the target directory, made when missing. The tests of this
/// file run in parallel and share the environment, so it is made by one of them while the others wait:
/// two `python -m venv` on one directory fail with "File exists".
fn fuel2() -> PathBuf {
    static MAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A test that panicked while making it leaves the directory half made; the next one starts over.
    let _one_at_a_time = MAKING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/fuel2-venv");
    let fuel2 = venv.join("bin/fuel2");
    let marker = venv.join("installed");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(FUELCLIENT) && fuel2.exists() {
        return fuel2;
    }
    let python = plinth_e2e::needs::python38();
    let _ = std::fs::remove_dir_all(&venv);
    let made = Command::new(&python)
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .expect("python runs");
    assert!(made.success(), "cannot make a virtual environment");
    let pip = Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", FUELCLIENT, "PyYAML<6"])
        .output()
        .expect("pip runs");
    assert!(
        pip.status.success(),
        "pip install {FUELCLIENT} failed: {}",
        String::from_utf8_lossy(&pip.stderr)
    );
    std::fs::write(&marker, FUELCLIENT).expect("marker");
    fuel2
}

/// Runs `fuel2` against a controller's Nailgun port.
struct Fuel2 {
    bin: PathBuf,
    home: tempfile::TempDir,
}

impl Fuel2 {
    /// `fuel2` configured as a Fuel operator does it: `~/.config/fuel/fuel_client.yaml`.
    fn new(bin: PathBuf, port: u16, user: &str, token: &str) -> Fuel2 {
        let home = tempfile::tempdir().expect("a home");
        let dir = home.path().join(".config/fuel");
        std::fs::create_dir_all(&dir).expect("config dir");
        std::fs::write(
            dir.join("fuel_client.yaml"),
            format!(
                "SERVER_ADDRESS: \"127.0.0.1\"\nSERVER_PORT: \"{port}\"\nOS_USERNAME: \"{user}\"\n\
                 OS_PASSWORD: \"{token}\"\nOS_TENANT_NAME: \"admin\"\n"
            ),
        )
        .expect("fuel_client.yaml");
        Fuel2 { bin, home }
    }

    /// Runs a command (words split on spaces); returns (success, stdout, stderr).
    fn run(&self, args: &str) -> (bool, String, String) {
        let out = Command::new(&self.bin)
            .args(args.split_whitespace())
            .current_dir(self.home.path())
            .env("HOME", self.home.path())
            .output()
            .expect("fuel2 runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// A command that must succeed; returns its standard output.
    fn ok(&self, args: &str) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "fuel2 {args} failed:\n{out}\n{err}");
        out
    }

    /// A listing command with `-f json`, parsed.
    fn json(&self, args: &str) -> Value {
        let out = self.ok(&format!("{args} -f json"));
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("fuel2 {args}: {e}: {out}"))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.home.path().join(name)
    }
}

fn sorted(ids: &[u64]) -> Vec<u64> {
    let mut v = ids.to_vec();
    v.sort();
    v
}

fn ids(rows: &Value) -> Vec<u64> {
    let mut v: Vec<u64> = rows
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["id"].as_u64().expect("id"))
        .collect();
    v.sort();
    v
}

#[test]
fn fuel2_unmodified_drives_plinth_through_nailgun_api() {
    let bin = fuel2();
    let c = Controller::start_with(&["--auto-accept", "--nailgun-listen", "127.0.0.1:0"]);
    let port = c.nailgun_port();
    let listen = format!("127.0.0.1:{port}");
    let a = Agent::start(&c, "node-a", &[]);
    let b = Agent::start(&c, "node-b", &[]);
    let nodes = c.api.wait_nodes(2);
    let id_of = |name: &str| nodes.iter().find(|(n, _)| n == name).expect(name).1;
    let (na, nb) = (id_of("node-a"), id_of("node-b"));

    // The model, made with Plinth's own API: a release with roles, tags and a default graph, a plugin
    // (Fuel's metadata.yaml fields) and a cluster with it enabled.
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({
            "name": "fuel-like", "version": "1",
            "roles_metadata": {
                "controller": {"name": "Controller", "description": "The control plane",
                               "tags": ["controller"], "conflicts": ["compute"]},
                "compute": {"name": "Compute", "description": "Runs instances"}
            },
            "tags_metadata": {"controller": {"has_primary": true}},
            "graphs": {"default": {"tasks": [
                shell("release-marker", &["primary-controller", "controller", "compute"], "touch release-default-ran")
            ]}}
        })),
    );
    let rid = release["id"].as_u64().unwrap();
    let plugin = c.api.ok(
        "POST",
        "/plugins",
        Some(&json!({
            "name": "fw", "version": "1.0.0",
            "node_roles": {"firewall": {"name": "Firewall", "description": "Filters traffic"}},
            "metadata": {"title": "Firewall", "package_version": "4.0.0",
                         "releases": [{"os": "ubuntu", "version": "1", "mode": ["ha"]}]},
            "graphs": {"custom": {"tasks": [shell("plugin-step", &["compute"], "touch plugin-ran")]}}
        })),
    );
    let pid = plugin["id"].as_u64().unwrap();
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "env-one", "release_id": rid})),
    );
    let cid = cluster["id"].as_u64().unwrap();
    c.api
        .ok("PUT", &format!("/clusters/{cid}/plugins/{pid}"), None);

    let f = Fuel2::new(bin, port, "admin", &c.api.token);

    // The plain port serves the version unauthenticated, Nailgun's API with a token, never agents.
    let plain = reqwest::blocking::Client::new();
    let base = format!("http://{listen}");
    let version: Value = plain
        .get(format!("{base}/api/v1/version"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(version["auth_required"], true);
    let anon = plain
        .get(format!("{base}/api/v1/clusters/"))
        .send()
        .unwrap();
    assert_eq!(anon.status().as_u16(), 401);
    let body: Value = anon.json().unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("token"),
        "{body}"
    );
    let agent = plain.get(format!("{base}/agent/v1/tasks")).send().unwrap();
    assert_eq!(agent.status().as_u16(), 404);
    let wrong = plain
        .post(format!("{base}/keystone/v2.0/tokens"))
        .json(&json!({"auth": {"passwordCredentials": {"username": "admin", "password": "plt_nope"}}}))
        .send()
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    // Keystone's token body answers with a token of Keystone's lifetime, which works as X-Auth-Token.
    let access: Value = plain
        .post(format!("{base}/keystone/v2.0/tokens"))
        .json(&json!({"auth": {"token": {"id": c.api.token}, "tenantName": "admin"}}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let keystone = access["access"]["token"]["id"].as_str().unwrap();
    assert!(keystone.starts_with("plinth-ks1."), "{access}");
    let listed = plain
        .get(format!("{base}/api/v1/clusters/"))
        .header("X-Auth-Token", keystone)
        .send()
        .unwrap();
    assert_eq!(listed.status().as_u16(), 200);

    // env list / show.
    let envs = f.json("env list");
    assert_eq!(envs[0]["name"], "env-one");
    assert_eq!(envs[0]["status"], "new");
    assert_eq!(envs[0]["release_id"], rid);
    let shown = f.ok(&format!("env show {cid}"));
    assert!(
        shown.contains("env-one") && shown.contains("release_id"),
        "{shown}"
    );

    // release list, plugins list.
    let releases = f.json("release list");
    assert_eq!(releases[0]["name"], "fuel-like");
    assert_eq!(releases[0]["state"], "available");
    let plugins = f.json("plugins list");
    assert_eq!(plugins[0]["name"], "fw");
    assert_eq!(plugins[0]["package_version"], "4.0.0");
    assert!(
        plugins[0]["releases"].to_string().contains("ubuntu"),
        "{plugins}"
    );

    // node list, node show (meta from facts).
    assert_eq!(ids(&f.json("node list")), sorted(&[na, nb]));
    assert_eq!(
        ids(&f.json(&format!("node list --env {cid}"))),
        Vec::<u64>::new()
    );
    let show = f.json(&format!("node show {na}"));
    assert_eq!(show["name"], "node-a");
    assert_eq!(show["online"], true);
    assert!(
        show["hostname"].as_str().is_some_and(|h| !h.is_empty()),
        "{show}"
    );
    // The whole record (as `fuel2` reads it) carries `meta` from the agent's facts.
    let record: Value = plain
        .get(format!("{base}/api/v1/nodes/{na}/"))
        .header("X-Auth-Token", &c.api.token)
        .send()
        .unwrap()
        .json()
        .unwrap();
    let facts = c.api.get(&format!("/nodes/{na}")).unwrap()["facts"].clone();
    assert_eq!(
        record["meta"]["system"]["fqdn"], facts["hostname"],
        "{record}"
    );
    assert_eq!(record["meta"]["disks"], facts["disks"], "{record}");

    // env add nodes: pending roles on the controller.
    let out = f.ok(&format!("env add nodes -e {cid} -n {na} -r controller"));
    assert!(out.contains(&na.to_string()), "{out}");
    f.ok(&format!("env add nodes -e {cid} -n {nb} -r compute"));
    let listed = f.json(&format!("node list --env {cid}"));
    assert_eq!(ids(&listed), sorted(&[na, nb]));
    let node_a = c.api.get(&format!("/nodes/{na}")).unwrap();
    assert_eq!(node_a["cluster_id"], cid);
    assert_eq!(node_a["pending_roles"], json!(["controller"]));
    // Conflicting roles are refused, with the controller's reason in fuel2's message, and nothing changes.
    let (ok, _, err) = f.run(&format!(
        "env add nodes -e {cid} -n {na} -r controller compute"
    ));
    assert!(
        !ok && (err.contains("400") || err.contains("409") || err.contains("422")),
        "{err}"
    );
    assert!(err.contains("conflict"), "{err}");
    let node_a = c.api.get(&format!("/nodes/{na}")).unwrap();
    assert_eq!(node_a["pending_roles"], json!(["controller"]));

    // role list / download.
    let roles = f.json(&format!("role list --release {rid}"));
    let names: Vec<&str> = roles
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["controller", "compute"], "the release's order");
    assert!(roles.to_string().contains("The control plane"), "{roles}");
    f.ok(&format!(
        "role download --release {rid} -n controller -f yaml -d {}",
        f.path("roles").display()
    ));
    let role_file =
        std::fs::read_to_string(f.path(&format!("roles/releases_{rid}/controller.yaml")))
            .expect("the downloaded role");
    assert!(role_file.contains("The control plane"), "{role_file}");

    // A cluster's roles and tags: its release's, then its enabled plugins'.
    let env_roles = f.json(&format!("role list --env {cid}"));
    let env_names: Vec<&str> = env_roles
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(env_names, vec!["controller", "compute", "firewall"]);
    let env_tags = f.json(&format!("tag list --env {cid}"));
    assert!(
        env_tags.to_string().contains("controller") && env_tags.to_string().contains("firewall"),
        "{env_tags}"
    );

    // tag list / create / update / download / delete.
    let tags = f.json(&format!("tag list --release {rid}"));
    assert!(tags.to_string().contains("controller"), "{tags}");
    let tag_dir = f.path("tags");
    std::fs::create_dir_all(tag_dir.join(format!("releases_{rid}"))).unwrap();
    std::fs::write(
        tag_dir.join(format!("releases_{rid}/storage.yaml")),
        "name: storage\nmeta:\n  has_primary: false\n",
    )
    .unwrap();
    let out = f.ok(&format!(
        "tag create --release {rid} -n storage -f yaml -d {}",
        tag_dir.display()
    ));
    assert!(out.contains("created"), "{out}");
    std::fs::write(
        tag_dir.join(format!("releases_{rid}/storage.yaml")),
        "name: storage\nmeta:\n  has_primary: true\n",
    )
    .unwrap();
    f.ok(&format!(
        "tag update --release {rid} -n storage -f yaml -d {}",
        tag_dir.display()
    ));
    let stored = c.api.get(&format!("/releases/{rid}/tags")).unwrap();
    let storage = stored
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "storage")
        .unwrap();
    assert_eq!(storage["has_primary"], true, "{stored}");
    let dl = f.path("dl");
    f.ok(&format!(
        "tag download --release {rid} -n storage -f json -d {}",
        dl.display()
    ));
    let downloaded: Value = serde_json::from_str(
        &std::fs::read_to_string(dl.join(format!("releases_{rid}/storage.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(downloaded["meta"]["has_primary"], true);
    f.ok(&format!("tag delete --release {rid} -n storage"));
    let stored = c.api.get(&format!("/releases/{rid}/tags")).unwrap();
    assert!(!stored.to_string().contains("storage"), "{stored}");

    // graph upload (seed 002's form), list at every level, download at all four levels.
    std::fs::write(
        f.path("tasks.yaml"),
        "- id: custom-step\n  type: shell\n  tags: [primary-controller, controller, compute]\n  parameters:\n    cmd: touch custom-ran\n    timeout: 60\n",
    )
    .unwrap();
    let out = f.ok(&format!(
        "graph upload --env {cid} -t custom --file tasks.yaml"
    ));
    assert!(out.contains("successfully uploaded"), "{out}");
    let graph = c
        .api
        .get(&format!("/clusters/{cid}/deployment_graphs/custom"))
        .unwrap();
    assert_eq!(graph["tasks"][0]["id"], "custom-step");
    let listed = f.ok(&format!("graph list --env {cid}"));
    assert!(
        listed.contains(&format!("as \"custom\" to cluster(ID={cid})"))
            && listed.contains(&format!("as \"custom\" to plugin(ID={pid})"))
            && listed.contains(&format!("as \"default\" to release(ID={rid})")),
        "{listed}"
    );
    let only_cluster = f.ok(&format!("graph list --env {cid} --cluster"));
    assert!(
        only_cluster.contains("custom-step") && !only_cluster.contains("release-marker"),
        "{only_cluster}"
    );
    let plugin_graphs = f.ok(&format!("graph list --env {cid} --plugins"));
    assert!(
        plugin_graphs.contains("plugin-step") && !plugin_graphs.contains("custom-step"),
        "{plugin_graphs}"
    );
    let release_graphs = f.ok("graph list --release");
    assert!(
        release_graphs.contains("release-marker") && !release_graphs.contains("plugin-step"),
        "{release_graphs}"
    );
    // Uploads at the release and plugin levels (seed 002's other two forms), then deleted again.
    std::fs::write(
        f.path("extra.yaml"),
        "tasks:\n- id: extra-step\n  type: shell\n  tags: [compute]\n  parameters: {cmd: 'true'}\n",
    )
    .unwrap();
    f.ok(&format!(
        "graph upload --release {rid} -t extra --file extra.yaml"
    ));
    f.ok(&format!(
        "graph upload --plugin {pid} -t extra --file extra.yaml"
    ));
    assert_eq!(
        c.api
            .get(&format!("/releases/{rid}/deployment_graphs/extra"))
            .unwrap()["tasks"][0]["id"],
        "extra-step"
    );
    assert_eq!(
        c.api
            .get(&format!("/plugins/{pid}/deployment_graphs/extra"))
            .unwrap()["tasks"][0]["id"],
        "extra-step"
    );
    // A second upload replaces (Nailgun's PUT after the GET finds it).
    std::fs::write(
        f.path("extra.yaml"),
        "tasks:\n- id: extra-two\n  type: shell\n  tags: [compute]\n  parameters: {cmd: 'true'}\n",
    )
    .unwrap();
    f.ok(&format!(
        "graph upload --release {rid} -t extra --file extra.yaml"
    ));
    let replaced = c
        .api
        .get(&format!("/releases/{rid}/deployment_graphs/extra"))
        .unwrap();
    assert_eq!(replaced["tasks"].as_array().unwrap().len(), 1, "{replaced}");
    assert_eq!(replaced["tasks"][0]["id"], "extra-two");
    f.ok(&format!("graph delete --release {rid} -t extra"));
    f.ok(&format!("graph delete --plugin {pid} -t extra"));
    assert_eq!(
        c.api
            .send(
                "GET",
                &format!("/plugins/{pid}/deployment_graphs/extra"),
                None
            )
            .status,
        404
    );
    let everything = f.ok("graph list");
    assert!(
        everything.contains("plugin-step") && everything.contains("release-marker"),
        "{everything}"
    );
    for (level, want, unwanted) in [
        ("--all", "custom-step", None),
        ("--cluster", "custom-step", Some("plugin-step")),
        ("--plugins", "plugin-step", Some("custom-step")),
        ("--release", "[]", Some("custom-step")),
    ] {
        let file = f.path(&format!("dl{level}.yaml"));
        let out = f.ok(&format!(
            "graph download --env {cid} {level} -t custom --file {}",
            file.display()
        ));
        assert!(out.contains("downloaded"), "{out}");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains(want), "{level}: {text}");
        if let Some(u) = unwanted {
            assert!(!text.contains(u), "{level}: {text}");
        }
    }
    let merged = std::fs::read_to_string(f.path("dl--all.yaml")).unwrap();
    assert!(
        merged.contains("plugin-step"),
        "merged tasks hold the plugin's: {merged}"
    );

    // env deploy --dry-run resolves and checks, and starts nothing.
    let out = f.ok(&format!("env deploy {cid} --dry-run"));
    assert!(out.starts_with("Deployment task with id 1000000"), "{out}");
    assert!(c
        .api
        .get("/deployments")
        .unwrap()
        .as_array()
        .unwrap()
        .is_empty());
    assert!(!a.work().join("release-default-ran").exists());

    // env deploy: the default graph; pending roles become roles.
    let out = f.ok(&format!("env deploy {cid}"));
    let deploy_id = c
        .api
        .get("/deployments")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_u64().unwrap())
        .max()
        .unwrap();
    assert_eq!(
        out,
        format!(
            "Deployment task with id {deploy_id} for the environment {cid} has been started.\n"
        )
    );
    let report = c.api.wait_deployment(deploy_id, Duration::from_secs(120));
    assert_eq!(report["status"], "success", "{report:#}");
    assert!(a.work().join("release-default-ran").exists(), "{report:#}");
    let node_a = f.json(&format!("node show {na}"));
    assert_eq!(node_a["roles"], json!(["controller"]));
    assert_eq!(node_a["pending_roles"], json!([]));
    assert_eq!(node_a["status"], "ready");
    let env = f.json(&format!("env show {cid}"));
    assert_eq!(env["status"], "operational");

    // graph execute: a dry run stores nothing; a run deploys on the named node only.
    let out = f.ok(&format!("graph execute --env {cid} -t custom --dry-run"));
    let dry: u64 = out
        .strip_prefix("Deployment task with id ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(
        c.api.get("/deployments").unwrap().as_array().unwrap().len(),
        1,
        "only env deploy's"
    );
    let shown = f.json(&format!("task show {dry}"));
    assert_eq!(shown["dry_run"], true);
    assert_eq!(shown["status"], "ready");
    let out = f.ok(&format!(
        "graph execute --env {cid} -t custom --node {nb} --force"
    ));
    let dep = c
        .api
        .get("/deployments")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_u64().unwrap())
        .max()
        .unwrap();
    assert_eq!(
        out,
        format!("Deployment task with id {dep} for the environment {cid} has been started.\n")
    );
    let report = c.api.wait_deployment(dep, Duration::from_secs(120));
    assert_eq!(report["status"], "success", "{report:#}");
    assert!(b.work().join("custom-ran").exists() && b.work().join("plugin-ran").exists());
    assert!(
        !a.work().join("custom-ran").exists(),
        "node-a was not named"
    );

    // task list / show.
    let tasks = f.json(&format!("task list --env {cid}"));
    let listed = tasks
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == dep)
        .unwrap_or_else(|| panic!("{tasks}"));
    assert_eq!(listed["status"], "ready");
    assert_eq!(listed["graph_type"], "custom");
    assert!(tasks
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["id"] == dry && t["dry_run"] == true));
    let shown = f.json(&format!("task show {dep}"));
    assert_eq!(shown["status"], "ready");
    assert_eq!(shown["progress"], 100);

    // graph execute --noop: a no-op deployment on every node.
    let out = f.ok(&format!("graph execute --env {cid} -t custom --noop"));
    let noop = c.api.get("/deployments").unwrap();
    let noop_id = noop
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_u64().unwrap())
        .max()
        .unwrap();
    assert!(out.contains(&format!("id {noop_id} ")), "{out}");
    let noop_dep = c.api.wait_deployment(noop_id, Duration::from_secs(120));
    assert_eq!(noop_dep["status"], "success", "{noop_dep:#}");
    assert!(
        !a.work().join("custom-ran").exists(),
        "a no-op run runs no shell task"
    );

    // graph delete; env remove nodes.
    f.ok(&format!("graph delete --environment {cid} -t custom"));
    let gone = c.api.send(
        "GET",
        &format!("/clusters/{cid}/deployment_graphs/custom"),
        None,
    );
    assert_eq!(gone.status, 404);
    f.ok(&format!("env remove nodes -e {cid} -n {nb}"));
    assert_eq!(ids(&f.json(&format!("node list --env {cid}"))), vec![na]);
    assert!(c.api.get(&format!("/nodes/{nb}")).unwrap()["cluster_id"].is_null());

    f.ok(&format!("env remove nodes -e {cid} --nodes-all"));
    assert!(f
        .json(&format!("node list --env {cid}"))
        .as_array()
        .unwrap()
        .is_empty());

    // Errors reach the operator with the controller's message.
    let (ok, _, err) = f.run("env show 999");
    assert!(!ok && err.contains("404") && err.contains("999"), "{err}");

    // A read-only token (user name: the token's name) reads and cannot write.
    let (made, viewer, _) = c.command(&["token", "create", "--name", "viewer", "--read-only"]);
    assert!(made);
    let ro = Fuel2::new(f.bin.clone(), port, "viewer", viewer.trim());
    assert_eq!(ids(&ro.json("node list")), sorted(&[na, nb]));
    let (ok, _, err) = ro.run(&format!("env add nodes -e {cid} -n {na} -r compute"));
    assert!(
        !ok && err.contains("403") && err.contains("read-only"),
        "{err}"
    );
    assert!(c.api.get(&format!("/nodes/{na}")).unwrap()["cluster_id"].is_null());
    // The user name must be the token's.
    let wrong_user = Fuel2::new(f.bin.clone(), port, "admin", viewer.trim());
    let (ok, _, err) = wrong_user.run("env list");
    assert!(!ok && err.contains("401"), "{err}");
}

/// The Nailgun port off loopback warns at start; `X-Auth-Token` works on the TLS port too.
#[test]
fn the_nailgun_port_warns_off_loopback_and_x_auth_token_works_everywhere() {
    let c = Controller::start_with(&["--nailgun-listen", "0.0.0.0:0"]);
    let port = c.nailgun_port();
    assert!(
        c.log().contains("beyond this machine"),
        "no warning in:\n{}",
        c.log()
    );
    let version: Value = reqwest::blocking::get(format!("http://127.0.0.1:{port}/api/v1/version"))
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(version["auth_required"], true);
    let tls = c
        .api
        .http()
        .get(format!("{}/api/v1/clusters", c.url))
        .header("X-Auth-Token", &c.api.token)
        .send()
        .unwrap();
    assert_eq!(tls.status().as_u16(), 200);
    let bad = c
        .api
        .http()
        .get(format!("{}/api/v1/clusters", c.url))
        .header("X-Auth-Token", "plt_wrong")
        .send()
        .unwrap();
    assert_eq!(bad.status().as_u16(), 401);
}

/// Fuel's client at the controller that does not sequence, of two sharing one PostgreSQL database: its
/// `env add nodes` and `env deploy` are served there, the other controller sequences the deployment, and
/// `fuel2` reads the outcome back where it asked.
#[test]
fn fuel2_deploys_through_a_controller_that_does_not_sequence() {
    let bin = fuel2();
    let pg = plinth_e2e::needs::postgres();
    let url = pg.fresh_database().expect("a database");
    // The first controller takes the sequencing lease as it starts, before the second exists.
    let a = Controller::start_with(&["--auto-accept", "--database-url", &url]);
    let b = Controller::start_sharing(
        &a,
        &[
            "--auto-accept",
            "--database-url",
            &url,
            "--nailgun-listen",
            "127.0.0.1:0",
        ],
    );
    let port = b.nailgun_port();
    let status: Value = b.api.get("/cluster-status").expect("cluster status");
    let sequencer = status["lease"]["holder"].clone();
    assert_ne!(
        sequencer, status["answered_by"],
        "the controller fuel2 talks to does not sequence: {status:#}"
    );
    let agent = Agent::start(&b, "fuel-ha", &[]);
    let (_, node) = b.api.wait_nodes(1)[0].clone();
    let release = b.api.ok(
        "POST",
        "/releases",
        Some(&json!({
            "name": "fuel-like", "version": "1",
            "roles_metadata": {"controller": {"name": "Controller", "description": "The control plane"}},
            "graphs": {"default": {"tasks": [
                shell("release-marker", &["controller"], "sleep 1; touch release-default-ran")
            ]}}
        })),
    );
    let rid = release["id"].as_u64().unwrap();
    let cluster = b.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "env-ha", "release_id": rid})),
    );
    let cid = cluster["id"].as_u64().unwrap();
    let f = Fuel2::new(bin, port, "admin", &b.api.token);
    f.ok(&format!("env add nodes -e {cid} -n {node} -r controller"));
    let out = f.ok(&format!("env deploy {cid}"));
    let deploy_id = b.api.get("/deployments").unwrap()[0]["id"]
        .as_u64()
        .unwrap();
    assert_eq!(
        out,
        format!(
            "Deployment task with id {deploy_id} for the environment {cid} has been started.\n"
        )
    );
    // The sequencing controller runs it to the end.
    let report = a.api.wait_deployment(deploy_id, Duration::from_secs(120));
    assert_eq!(report["status"], "success", "{report:#}");
    assert!(agent.work().join("release-default-ran").exists());
    let shown = f.json(&format!("node show {node}"));
    assert_eq!(shown["roles"], json!(["controller"]), "{shown:#}");
    assert_eq!(shown["status"], "ready", "{shown:#}");
    assert_eq!(f.json(&format!("env show {cid}"))["status"], "operational");
}

/// A Fuel operator's environment commands: create, rename, deploy chosen nodes, redeploy; the
/// release's repositories and components; extensions; and the commands Plinth has no counterpart
/// for, each answered with what it offers instead.
#[test]
fn fuel2_creates_renames_and_deploys_environments_and_says_what_plinth_offers_instead() {
    let bin = fuel2();
    let c = Controller::start_with(&["--auto-accept", "--nailgun-listen", "127.0.0.1:0"]);
    let f = Fuel2::new(bin, c.nailgun_port(), "admin", &c.api.token);
    let a = Agent::start(&c, "env-a", &[]);
    let b = Agent::start(&c, "env-b", &[]);
    let nodes = c.api.wait_nodes(2);
    let id_of = |name: &str| nodes.iter().find(|(n, _)| n == name).expect(name).1;
    let (na, nb) = (id_of("env-a"), id_of("env-b"));
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({
            "name": "repos", "version": "1",
            "roles_metadata": {"compute": {"name": "Compute"}},
            "attributes_metadata": {"editable": {"repo_setup": {"repos": {"type": "custom_repo_configuration", "value": [
                {"name": "ubuntu", "type": "deb", "uri": "http://archive.ubuntu.com/ubuntu/", "suite": "xenial", "section": "main", "priority": null}
            ]}}}},
            "components_metadata": [{"name": "hypervisor:qemu", "default": true, "compatible": [{"name": "hypervisor:*"}]}],
            "graphs": {"default": {"tasks": [shell("mark", &["compute"], "echo ran >> marks")]}}
        })),
    );
    let rid = release["id"].as_u64().unwrap();

    // env create, as Fuel's operator types it; the answer shows the new environment.
    let created = f.json(&format!("env create -r {rid} first-env"));
    assert_eq!(created["name"], "first-env", "{created}");
    let cid = created["id"].as_u64().expect("an id");
    assert_eq!(
        c.api.ok("GET", &format!("/clusters/{cid}"), None)["release_id"],
        rid
    );
    let (ok, _, err) = f.run(&format!("env create -r {rid} first-env"));
    assert!(!ok && err.contains("exists already"), "{err}");

    // env update renames it; a name another environment holds is refused.
    let renamed = f.json(&format!("env update -n renamed-env {cid}"));
    assert_eq!(renamed["name"], "renamed-env", "{renamed}");
    assert_eq!(
        c.api.ok("GET", &format!("/clusters/{cid}"), None)["name"],
        "renamed-env"
    );

    // Deploy two chosen nodes (force=0 as the client sends it), then redeploy the whole environment.
    f.ok(&format!("env add nodes -e {cid} -n {na} {nb} -r compute"));
    let out = f.ok(&format!("env nodes deploy -e {cid} -n {na}"));
    let dep: u64 = out
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("a task id in {out:?}"));
    let report = c.api.wait_deployment(dep, Duration::from_secs(120));
    assert_eq!(report["status"], "success", "{report:#}");
    assert!(a.work().join("marks").exists() && !b.work().join("marks").exists());
    f.ok(&format!("env redeploy {cid}"));
    wait_until(
        "the redeploy to reach both nodes",
        Duration::from_secs(120),
        || {
            std::fs::read_to_string(b.work().join("marks")).is_ok()
                && std::fs::read_to_string(a.work().join("marks")).unwrap_or_default()
                    == "ran\nran\n"
        },
    );

    // The history of the chosen nodes' deployment, and what it ran with.
    let history = f.json(&format!("task history show {dep}"));
    let rows = history.as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{history}");
    assert_eq!(rows[0]["task_name"], "mark");
    assert_eq!(rows[0]["node_id"], na.to_string());
    assert_eq!(rows[0]["status"], "ready");
    assert!(
        rows[0]["time_start"]
            .as_str()
            .is_some_and(|t| t.contains('T')),
        "{history}"
    );
    let only_errors = f.json(&format!("task history show {dep} -t error"));
    assert_eq!(only_errors, json!([]));
    let info = f.path("info.yaml");
    f.ok(&format!(
        "task deployment-info download {dep} -f {}",
        info.display()
    ));
    let info: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&info).unwrap()).unwrap();
    assert_eq!(info[na.to_string()]["name"], "env-a", "{info}");
    let settings = f.path("settings.yaml");
    f.ok(&format!(
        "task settings download {dep} -f {}",
        settings.display()
    ));
    let settings: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert!(settings["editable"].is_object(), "{settings}");

    // Nodes: renamed, labelled, unlabelled; a name another node has is refused.
    let renamed = f.json(&format!("node update --name web-1 {na}"));
    assert_eq!(renamed["name"], "web-1", "{renamed}");
    let (ok, _, err) = f.run(&format!("node update --name web-1 {nb}"));
    assert!(!ok && err.contains("named \"web-1\" already"), "{err}");
    f.ok(&format!("node label set -l rack=r1 ssd -n {na} {nb}"));
    let labels = f.json("node label list");
    let pairs: Vec<(String, String)> = labels
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["node_id"].to_string(),
                l["label_name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert!(pairs.contains(&(na.to_string(), "rack".into())), "{labels}");
    f.ok(&format!("node label delete -l ssd -n {na}"));
    let node = c.api.ok("GET", &format!("/nodes/{na}"), None);
    assert_eq!(node["name"], "web-1", "{node}");
    assert_eq!(node["labels"], json!({"rack": "r1"}), "{node}");
    assert_eq!(
        c.api.ok("GET", &format!("/nodes/{nb}"), None)["labels"],
        json!({"rack": "r1", "ssd": ""})
    );

    // Roles: created, changed and deleted from files, as Fuel's operator keeps them; one in use is
    // not deleted.
    let roles = f.path("roles");
    std::fs::create_dir_all(roles.join(format!("releases_{rid}"))).unwrap();
    let role_file = roles.join(format!("releases_{rid}/storage.yaml"));
    std::fs::write(
        &role_file,
        "name: storage\nmeta: {name: Storage, description: Keeps volumes}\nvolumes_roles_mapping: []\n",
    )
    .unwrap();
    let dir = roles.display();
    f.ok(&format!("role create -r {rid} -n storage -f yaml -d {dir}"));
    let (ok, _, err) = f.run(&format!("role create -r {rid} -n storage -f yaml -d {dir}"));
    assert!(!ok && err.contains("exists already"), "{err}");
    std::fs::write(
        &role_file,
        "name: storage\nmeta: {name: Storage, description: Keeps volumes safe}\nvolumes_roles_mapping: []\n",
    )
    .unwrap();
    f.ok(&format!("role update -r {rid} -n storage -f yaml -d {dir}"));
    let stored = c.api.ok("GET", &format!("/releases/{rid}"), None);
    assert_eq!(
        stored["data"]["roles_metadata"]["storage"]["description"], "Keeps volumes safe",
        "{stored}"
    );
    let (ok, _, err) = f.run(&format!("role delete -r {rid} -n compute"));
    assert!(!ok && err.contains("held by node"), "{err}");
    f.ok(&format!("role delete -r {rid} -n storage"));
    let listed = f.json(&format!("role list -r {rid}"));
    assert!(!listed.to_string().contains("storage"), "{listed}");

    // The release's repositories and components; extensions (none).
    let repos = f.json(&format!("release repos list {rid}"));
    assert_eq!(repos[0]["name"], "ubuntu", "{repos}");
    let components = f.json(&format!("release component list {rid}"));
    assert_eq!(components[0]["name"], "hypervisor:qemu", "{components}");
    assert_eq!(f.json("extension list"), json!([]));
    let shown = f.ok(&format!("env extension show {cid}"));
    assert!(!shown.contains("volume_manager"), "{shown}");

    // No counterpart: one sentence naming what Plinth offers instead.
    for (command, offered) in [
        ("network-group list", "configures no networks"),
        (
            &format!("env network download -f yaml {cid}") as &str,
            "configures no networks",
        ),
        (
            &format!("node disks download -f yaml {na}") as &str,
            "lays out no disks",
        ),
        (
            &format!("health list -e {cid}") as &str,
            "no OSTF health checks",
        ),
        ("snapshot create", "no diagnostic snapshots"),
        (
            &format!("task network-configuration download {dep}") as &str,
            "configures no networks",
        ),
    ] {
        let (ok, out, err) = f.run(command);
        assert!(!ok, "fuel2 {command}: {out}");
        assert!(err.contains(offered), "fuel2 {command}: {err}");
    }
}

/// Waits, through `fuel2 task show`, for a task (a deployment) to end; returns its status.
fn task_end(f: &Fuel2, task: u64) -> String {
    let mut status = String::new();
    wait_until(
        &format!("task {task} to end"),
        Duration::from_secs(180),
        || {
            status = f.json(&format!("task show {task}"))["status"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            status == "ready" || status == "error"
        },
    );
    status
}

/// The number in a `fuel2` sentence ("Deployment task with id 7 ...").
fn number_in(text: &str) -> u64 {
    text.split(|c: char| !c.is_ascii_digit())
        .find_map(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("a number in {text:?}"))
}

/// Changes one setting of `section` as an operator does it: download, edit the file, upload.
fn set_setting(f: &Fuel2, env: u64, section: &str, key: &str, value: &str) {
    let dir = f.path("settings");
    f.ok(&format!(
        "env settings download -f yaml -d {} {env}",
        dir.display()
    ));
    let file = dir.join(format!("environment_{env}/settings.yaml"));
    let mut settings: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    settings["editable"][section][key]["value"] = json!(value);
    std::fs::write(&file, serde_yaml_ng::to_string(&settings).unwrap()).unwrap();
    f.ok(&format!(
        "env settings upload -f yaml -d {} {env}",
        dir.display()
    ));
}

/// A Fuel operator's whole day with `fuel2` as the only client once the release is installed (as a
/// Fuel master comes with its releases): create an environment, add nodes with roles, change
/// settings, deploy, read the history, change a setting a task's `changed()` watches and redeploy
/// (only that task runs again), deploy two chosen nodes, stop a running deployment, reset the
/// environment, delete it. Real agents run every task.
#[test]
fn a_fuel_operators_day_in_fuel2() {
    let bin = fuel2();
    let c = Controller::start_with(&["--auto-accept", "--nailgun-listen", "127.0.0.1:0"]);
    let agents = [
        Agent::start(&c, "day-1", &[]),
        Agent::start(&c, "day-2", &[]),
        Agent::start(&c, "day-3", &[]),
    ];
    let nodes = c.api.wait_nodes(3);
    let id_of = |name: &str| nodes.iter().find(|(n, _)| n == name).expect(name).1;
    let text = |value: &str| json!({"value": value, "type": "text", "label": "text"});
    let note = |task: &str| format!("echo {task} >> ran");
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({
            "name": "day", "version": "1",
            "roles_metadata": {"compute": {"name": "Compute"}},
            "attributes_metadata": {"editable": {"site": {
                "motd": text("hello"), "packages": text("base"), "hold": text("go on")}}},
            "graphs": {"default": {"tasks": [
                {"id": "packages", "type": "shell", "tags": ["compute"],
                 "condition": {"yaql_exp": "changed($.site.packages)"},
                 "parameters": {"cmd": note("packages")}},
                {"id": "motd", "type": "shell", "tags": ["compute"], "requires": ["packages"],
                 "condition": {"yaql_exp": "changed($.site.motd)"},
                 "parameters": {"cmd": note("motd")}},
                {"id": "hold", "type": "shell", "tags": ["compute"], "requires": ["motd"],
                 "condition": {"yaql_exp": "$.site.hold = 'hold'"},
                 "parameters": {"cmd": "sleep 600", "timeout": 900}},
            ]}}
        })),
    );
    let rid = release["id"].as_u64().unwrap();
    let f = Fuel2::new(bin, c.nailgun_port(), "admin", &c.api.token);
    let ran = |i: usize| std::fs::read_to_string(agents[i].work().join("ran")).unwrap_or_default();

    // Morning: a new environment with three compute nodes, its settings changed, deployed.
    let env = f.json(&format!("env create -r {rid} day-env"))["id"]
        .as_u64()
        .expect("an id");
    let (n1, n2, n3) = (id_of("day-1"), id_of("day-2"), id_of("day-3"));
    f.ok(&format!(
        "env add nodes -e {env} -n {n1} {n2} {n3} -r compute"
    ));
    set_setting(&f, env, "site", "motd", "welcome");
    let first = number_in(&f.ok(&format!("env deploy {env}")));
    assert_eq!(task_end(&f, first), "ready");
    for i in 0..3 {
        assert_eq!(ran(i), "packages\nmotd\n", "node {i}");
    }
    let history = f.json(&format!("task history show {first}"));
    assert_eq!(history.as_array().map(Vec::len), Some(9), "{history}");
    assert!(
        history
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "ready"
                || (r["task_name"] == "hold" && r["status"] == "skipped")),
        "{history}"
    );

    // Noon: the motd changes; a redeploy runs only the task that watches it.
    set_setting(&f, env, "site", "motd", "good afternoon");
    let second = number_in(&f.ok(&format!("env redeploy {env}")));
    assert_eq!(task_end(&f, second), "ready");
    for i in 0..3 {
        assert_eq!(ran(i), "packages\nmotd\nmotd\n", "node {i}");
    }
    let skipped = f.json(&format!(
        "task history show {second} -t skipped -d packages"
    ));
    assert_eq!(skipped.as_array().map(Vec::len), Some(3), "{skipped}");

    // Two chosen nodes, with everything forced to run.
    let third = number_in(&f.ok(&format!("env nodes deploy -e {env} -n {n1} {n2} --force")));
    assert_eq!(task_end(&f, third), "ready");
    assert_eq!(ran(0), "packages\nmotd\nmotd\npackages\nmotd\n");
    assert_eq!(
        ran(2),
        "packages\nmotd\nmotd\n",
        "the third node was not chosen"
    );

    // Afternoon: a deployment that holds is stopped.
    set_setting(&f, env, "site", "hold", "hold");
    let fourth = number_in(&f.ok(&format!("env redeploy {env}")));
    wait_until("the hold to start", Duration::from_secs(120), || {
        f.json(&format!("task history show {fourth} -d hold -t running"))
            .as_array()
            .is_some_and(|r| !r.is_empty())
    });
    f.ok(&format!("env stop-deployment {env}"));
    assert_eq!(task_end(&f, fourth), "error");

    // Evening: the environment is reset, then deleted; the nodes stay, unassigned.
    f.ok(&format!("env reset {env}"));
    let shown = f.json(&format!("node show {n1}"));
    assert_eq!(shown["pending_roles"], json!(["compute"]), "{shown}");
    f.ok(&format!("env delete {env}"));
    assert_eq!(f.json("env list"), json!([]));
    let listed = f.json("node list");
    assert_eq!(listed.as_array().map(Vec::len), Some(3), "{listed}");
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["cluster"].is_null()),
        "{listed}"
    );
}

/// Deployment facts as a Fuel operator edits them: the defaults downloaded, one node's changed and
/// uploaded, the next deployment's task reads the uploaded value; deleted, it reads the computed one.
#[test]
fn fuel2_deployment_facts_uploaded_feed_the_next_deployment() {
    let bin = fuel2();
    let c = Controller::start_with(&["--auto-accept", "--nailgun-listen", "127.0.0.1:0"]);
    let agent = Agent::start(&c, "facts-1", &[]);
    let node = c.api.wait_nodes(1)[0].1;
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({"name": "facts", "version": "1",
            "roles_metadata": {"compute": {"name": "Compute"}},
            "graphs": {"default": {"tasks": [
                {"id": "say", "type": "shell", "tags": ["compute"],
                 "parameters": {"cmd": {"yaql_exp": "concat('echo ', $.name, ' >> said')"}}}]}}})),
    );
    let f = Fuel2::new(bin, c.nailgun_port(), "admin", &c.api.token);
    let env = f.json(&format!("env create -r {} facts-env", release["id"]))["id"]
        .as_u64()
        .unwrap();
    f.ok(&format!("env add nodes -e {env} -n {node} -r compute"));
    let dir = f.path("facts");
    std::fs::create_dir_all(&dir).unwrap();
    f.ok(&format!(
        "env deployment-facts get-default -e {env} -d {} -f yaml",
        dir.display()
    ));
    let facts_dir = dir.join(format!("deployment_{env}"));
    let file = std::fs::read_dir(&facts_dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "yaml"))
        .expect("a facts file");
    let mut facts: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(facts["uid"], node.to_string(), "{facts}");
    assert_eq!(facts["name"], "facts-1");
    facts["name"] = json!("named-by-facts");
    std::fs::write(&file, serde_yaml_ng::to_string(&facts).unwrap()).unwrap();
    f.ok(&format!(
        "env deployment-facts upload -e {env} -d {} -f yaml",
        dir.display()
    ));
    let said = || std::fs::read_to_string(agent.work().join("said")).unwrap_or_default();
    let first = number_in(&f.ok(&format!("env deploy {env}")));
    assert_eq!(task_end(&f, first), "ready");
    assert_eq!(said(), "named-by-facts\n");
    f.ok(&format!("env deployment-facts delete {env}"));
    let second = number_in(&f.ok(&format!("env redeploy {env}")));
    assert_eq!(task_end(&f, second), "ready");
    assert_eq!(said(), "named-by-facts\nfacts-1\n");
}

/// `fuel2 env provisioning-facts`: the defaults are each node's `provision` task parameters as the
/// `provision` graph resolves them; uploaded facts, checked key by key, are put over them in the
/// next provisioning; deleted, the graph's own come back.
#[test]
fn fuel2_provisioning_facts_are_the_provision_tasks_parameters() {
    let bin = fuel2();
    let c = Controller::start_with(&["--auto-accept", "--nailgun-listen", "127.0.0.1:0"]);
    let _agent = Agent::start(&c, "prov-1", &[]);
    let node = c.api.wait_nodes(1)[0].1;
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({"name": "prov", "version": "1",
            "roles_metadata": {"compute": {"name": "Compute"}},
            "graphs": {
                "default": {"tasks": [{"id": "noop", "type": "shell", "tags": ["compute"],
                                       "parameters": {"cmd": "true"}}]},
                "provision": {"tasks": [{"id": "provision", "type": "provision", "tags": ["compute"],
                    "parameters": {"image": "images/base.raw",
                                   "root_device": {"size": ">= 10"}}}]}}})),
    );
    let f = Fuel2::new(bin, c.nailgun_port(), "admin", &c.api.token);
    let env = f.json(&format!("env create -r {} prov-env", release["id"]))["id"]
        .as_u64()
        .unwrap();
    f.ok(&format!("env add nodes -e {env} -n {node} -r compute"));
    let dir = f.path("facts");
    std::fs::create_dir_all(&dir).unwrap();
    let facts_dir = dir.join(format!("provisioning_{env}"));
    let node_file = facts_dir.join(format!("{node}.yaml"));
    let read = |p: &std::path::Path| -> Value {
        serde_yaml_ng::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    f.ok(&format!(
        "env provisioning-facts get-default -e {env} -d {} -f yaml",
        dir.display()
    ));
    assert_eq!(read(&facts_dir.join("engine.yaml")), json!({}));
    let mut facts = read(&node_file);
    assert_eq!(facts["uid"], node.to_string(), "{facts}");
    assert_eq!(facts["name"], "prov-1");
    assert_eq!(facts["image"], "images/base.raw");
    assert_eq!(facts["root_device"], json!({"size": ">= 10"}));

    // The provision task each node would be given, as Plinth's dry run shows it.
    let given = || {
        let plan = c.api.ok(
            "PUT",
            &format!("/clusters/{env}/deploy/?graph_type=provision&dry_run=true"),
            None,
        );
        plan["nodes"]["provision"]["prov-1"]
            .as_array()
            .and_then(|tasks| tasks.iter().find(|t| t["id"] == "provision"))
            .map(|t| t["parameters"].clone())
            .unwrap_or_else(|| panic!("no provision task: {plan}"))
    };

    // A misspelled parameter is refused, named, with the one meant; nothing is stored.
    facts["imgae"] = json!("images/other.raw");
    std::fs::write(&node_file, serde_yaml_ng::to_string(&facts).unwrap()).unwrap();
    let (ok, out, err) = f.run(&format!(
        "env provisioning-facts upload -e {env} -d {} -f yaml",
        dir.display()
    ));
    assert!(!ok, "{out}");
    assert!(
        err.contains("`imgae`") && err.contains("did you mean `image`"),
        "{err}"
    );
    assert_eq!(given()["image"], "images/base.raw");

    // Uploaded: put over the graph's parameters, key by key.
    let facts = facts.as_object_mut().unwrap();
    facts.remove("imgae");
    facts.insert("image".into(), json!("images/other.raw"));
    facts.insert("hostname".into(), json!("web-1"));
    std::fs::write(&node_file, serde_yaml_ng::to_string(&facts).unwrap()).unwrap();
    std::fs::write(facts_dir.join("engine.yaml"), "grow_last_partition: true\n").unwrap();
    f.ok(&format!(
        "env provisioning-facts upload -e {env} -d {} -f yaml",
        dir.display()
    ));
    let params = given();
    assert_eq!(params["image"], "images/other.raw", "{params}");
    assert_eq!(params["hostname"], "web-1");
    assert_eq!(params["grow_last_partition"], true);
    assert_eq!(params["root_device"], json!({"size": ">= 10"}));

    let mine = f.path("mine");
    std::fs::create_dir_all(&mine).unwrap();
    f.ok(&format!(
        "env provisioning-facts download -e {env} -d {} -f yaml",
        mine.display()
    ));
    let back = read(&mine.join(format!("provisioning_{env}/{node}.yaml")));
    assert_eq!(back["image"], "images/other.raw");
    assert_eq!(back["name"], "prov-1");
    let engine = read(&mine.join(format!("provisioning_{env}/engine.yaml")));
    assert_eq!(engine, json!({"grow_last_partition": true}));

    // Deleted: the graph's own parameters again, and nothing to download.
    f.ok(&format!("env provisioning-facts delete {env}"));
    assert_eq!(given()["image"], "images/base.raw");
    let (ok, out, err) = f.run(&format!(
        "env provisioning-facts download -e {env} -d {} -f yaml",
        mine.display()
    ));
    assert!(!ok, "{out}");
    assert!(err.contains("no provisioning info"), "{err}");
}

/// `fuel2 plugins sync`: registered plugins read again from their files in the controller's plugins
/// directory, all or none; a broken file or a role dropped while a node holds it changes nothing.
#[test]
fn fuel2_plugins_sync_reads_the_plugins_files_again() {
    let bin = fuel2();
    let c = Controller::start_with(&["--auto-accept", "--nailgun-listen", "127.0.0.1:0"]);
    let _agent = Agent::start(&c, "sync-1", &[]);
    let node = c.api.wait_nodes(1)[0].1;
    let dir = c.data_dir().join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("demo.yaml");
    let plugin_text = |title: &str, role: &str, tasks: &str| {
        format!(
            "name: demo\nversion: 1.0.0\ntitle: {title}\nnode_roles:\n  {role}: {{name: Demo}}\n\
             deployment_tasks:\n{tasks}"
        )
    };
    let one_task = "  - {id: say-1, type: shell, tags: [demo-role], parameters: {cmd: 'true'}}\n";
    std::fs::write(&file, plugin_text("Demo", "demo-role", one_task)).unwrap();
    let registered = c.api.raw(
        "POST",
        "/plugins",
        Some(&c.api.token),
        Some(("application/yaml", std::fs::read(&file).unwrap())),
    );
    assert_eq!(registered.status, 201, "{}", registered.body);
    let id = registered.body["id"].as_u64().unwrap();
    let tasks = || -> Vec<String> {
        let graph = c.api.ok(
            "GET",
            &format!("/plugins/{id}/deployment_graphs/default"),
            None,
        );
        graph["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect()
    };
    let title =
        || c.api.ok("GET", &format!("/plugins/{id}"), None)["data"]["metadata"]["title"].clone();
    let f = Fuel2::new(bin, c.nailgun_port(), "admin", &c.api.token);

    // Edited on disk, synced: the record follows the file.
    let two_tasks = format!(
        "{one_task}  - {{id: say-2, type: shell, tags: [demo-role], requires: [say-1], parameters: {{cmd: 'true'}}}}\n"
    );
    std::fs::write(&file, plugin_text("Demo, edited", "demo-role", &two_tasks)).unwrap();
    let out = f.ok("plugins sync");
    assert!(out.contains("successfully synchronized"), "{out}");
    assert_eq!(tasks(), ["say-1", "say-2"]);
    assert_eq!(title(), "Demo, edited");

    // A file whose graph does not hold is named, and nothing changes.
    let cycle = "  - {id: say-1, type: shell, tags: [demo-role], requires: [say-2], parameters: {cmd: 'true'}}\n  \
                 - {id: say-2, type: shell, tags: [demo-role], requires: [say-1], parameters: {cmd: 'true'}}\n";
    std::fs::write(&file, plugin_text("Broken", "demo-role", cycle)).unwrap();
    let (ok, out, err) = f.run(&format!("plugins sync {id}"));
    assert!(!ok, "{out}");
    assert!(err.contains("demo.yaml"), "{err}");
    assert_eq!(title(), "Demo, edited");
    assert_eq!(tasks(), ["say-1", "say-2"]);

    // A role a node holds cannot go away under it.
    let env = c.api.ok(
        "POST",
        "/clusters",
        Some(
            &json!({"name": "sync-env", "release_id": c.api.ok("POST", "/releases",
            Some(&json!({"name": "sync-r", "version": "1"})))["id"]}),
        ),
    )["id"]
        .as_u64()
        .unwrap();
    c.api
        .ok("PUT", &format!("/clusters/{env}/plugins/{id}"), None);
    c.api.ok(
        "PUT",
        &format!("/clusters/{env}/nodes"),
        Some(&json!({"nodes": [{"id": node, "roles": ["demo-role"]}]})),
    );
    std::fs::write(&file, plugin_text("Renamed role", "other-role", one_task)).unwrap();
    let (ok, out, err) = f.run("plugins sync");
    assert!(!ok, "{out}");
    assert!(
        err.contains("\"demo-role\"") && err.contains("sync-1"),
        "{err}"
    );
    assert_eq!(title(), "Demo, edited");

    // A plugin that is not registered is named.
    let (ok, _, err) = f.run("plugins sync 99");
    assert!(!ok);
    assert!(err.contains("no plugin 99"), "{err}");
}
