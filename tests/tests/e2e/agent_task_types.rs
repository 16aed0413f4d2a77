//! Every task type end to end through a real controller and agent: modules synced from the controller's
//! files, a manifest uploaded, `puppet apply` with them (real puppet), files copied with their modes, a
//! reboot (through a reboot command that plays the node going down: it changes the boot id and stops the
//! agent, which the test then starts again, as the node would on boot) and a task after it; a no-op
//! deployment; and files that leave the controller's files root are refused.

use plinth_e2e::*;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(180);

/// The controller's files: a puppet module, a script, and a link that leaves the files root.
fn serve_files(c: &Controller, outside: &Path) {
    let files = c.data_dir().join("files");
    std::fs::create_dir_all(files.join("modules/motd/manifests")).unwrap();
    std::fs::create_dir_all(files.join("bin")).unwrap();
    std::fs::write(
        files.join("modules/motd/manifests/init.pp"),
        "class motd($target) {\n  file { $target: content => \"deployed by plinth\\n\", mode => '0644' }\n}\n",
    )
    .unwrap();
    std::fs::write(files.join("bin/hello.sh"), "#!/bin/sh\necho hello\n").unwrap();
    std::fs::set_permissions(
        files.join("bin/hello.sh"),
        std::fs::Permissions::from_mode(0o750),
    )
    .unwrap();
    std::fs::write(outside.join("secret"), "not for agents").unwrap();
    std::os::unix::fs::symlink(outside.join("secret"), files.join("leak")).unwrap();
}

fn task(id: &str, kind: &str, requires: &[&str], parameters: Value) -> Value {
    json!({"id": id, "type": kind, "tags": ["node"], "requires": requires, "parameters": parameters})
}

/// Agent settings: a reboot command that stands for the real one, and a boot id it changes.
fn reboot_settings(node: &Path) -> String {
    let boot = node.join("boot_id");
    std::fs::write(&boot, "boot-1\n").unwrap();
    let command = format!(
        "echo asked > {n}/reboot-asked; echo boot-2 > {b}; kill -TERM $PPID",
        n = node.display(),
        b = boot.display()
    );
    format!(
        "reboot_command = [\"/bin/sh\", \"-c\", {command:?}]\nboot_id_path = \"{}\"\n",
        boot.display()
    )
}

#[test]
fn sync_upload_puppet_copy_reboot_and_after() {
    let c = Controller::start();
    let node = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    serve_files(&c, outside.path());
    let n = node.path();
    let mut agent = Agent::start_with(
        &c,
        "node-1",
        &["node"],
        &c.public_key(),
        &reboot_settings(n),
    );
    let ids: Vec<u64> = c.api.wait_nodes(1).iter().map(|(_, id)| *id).collect();

    let modules = n.join("etc/puppet/modules");
    let site = n.join("etc/puppet/site.pp");
    let motd = n.join("etc/motd");
    let tool = n.join("usr/local/bin/hello.sh");
    let graph = json!({"default": {"tasks": [
        task("sync-modules", "sync", &[], json!({"src": "modules", "dst": modules})),
        task("upload-site", "upload_file", &[], json!({
            "path": site,
            "data": format!("class {{ 'motd': target => '{}' }}\n", motd.display()),
            "permissions": "0600"})),
        task("puppet-motd", "puppet", &["sync-modules", "upload-site"], json!({
            "puppet_manifest": site, "puppet_modules": modules, "cwd": "/", "timeout": 300})),
        task("copy-tool", "copy_files", &[], json!({
            "files": [{"src": "bin/hello.sh", "dst": tool}]})),
        task("reboot", "reboot", &["puppet-motd", "copy-tool"], json!({"timeout": 120})),
        task("after-reboot", "shell", &["reboot"], json!({
            "cmd": format!("echo after > {}/after-reboot", n.display()), "retries": 0})),
    ]}});
    let cid = c.api.cluster_with_graph("types", graph, &ids);
    let dep = c.api.deploy(cid, "graph_type=default");

    // The node goes down: the reboot command ran and the agent stopped cleanly...
    wait_until("the reboot command", LONG, || {
        n.join("reboot-asked").exists()
    });
    wait_until(
        "the agent to stop for the reboot",
        Duration::from_secs(30),
        || agent.log().contains("plinth-agent stopped"),
    );
    assert!(
        !n.join("after-reboot").exists(),
        "nothing after the reboot runs before it"
    );
    // ... and comes back.
    agent.restart();

    let report = c.api.wait_deployment(dep, LONG);
    let log = || format!("{}\n--- agent ---\n{}", c.log(), agent.log());
    assert_eq!(report["status"], "success", "{report:#}\n{}", log());

    assert_eq!(
        std::fs::read_to_string(modules.join("motd/manifests/init.pp")).unwrap(),
        std::fs::read_to_string(c.data_dir().join("files/modules/motd/manifests/init.pp")).unwrap()
    );
    assert_eq!(
        std::fs::metadata(&site).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::read_to_string(&motd).unwrap(),
        "deployed by plinth\n"
    );
    assert_eq!(
        std::fs::read_to_string(&tool).unwrap(),
        "#!/bin/sh\necho hello\n"
    );
    assert_eq!(
        std::fs::metadata(&tool).unwrap().permissions().mode() & 0o777,
        0o750
    );
    assert_eq!(
        std::fs::read_to_string(n.join("after-reboot")).unwrap(),
        "after\n"
    );

    let puppet = task_line(&report, "node-1", "puppet-motd").unwrap();
    assert_eq!(puppet["status"], "succeeded", "{puppet:#}");
    assert_eq!(puppet["exit_code"], 2, "{puppet:#}");
    assert_eq!(puppet["details"]["summary"]["changed"], 1, "{puppet:#}");
    assert_eq!(puppet["details"]["summary"]["failed"], 0, "{puppet:#}");
    let reboot = task_line(&report, "node-1", "reboot").unwrap();
    assert_eq!(reboot["status"], "succeeded", "{reboot:#}");
    assert_eq!(
        reboot["attempts"], 1,
        "a reboot is one attempt, not an interrupted one: {reboot:#}"
    );
    assert!(
        reboot["message"]
            .as_str()
            .unwrap_or("")
            .contains("rebooted"),
        "{reboot:#}"
    );
    let sync = task_line(&report, "node-1", "sync-modules").unwrap();
    assert_eq!(sync["status"], "succeeded", "{sync:#}");
    assert!(
        sync["message"].as_str().unwrap_or("").contains("1 written"),
        "{sync:#}"
    );
    assert_eq!(
        task_line(&report, "node-1", "after-reboot").unwrap()["status"],
        "succeeded"
    );
}

#[test]
fn noop_deployments_run_puppet_in_noop_mode_and_nothing_else() {
    let c = Controller::start();
    let node = tempfile::tempdir().unwrap();
    let n = node.path();
    let _agent = Agent::start(&c, "node-1", &["node"]);
    let ids: Vec<u64> = c.api.wait_nodes(1).iter().map(|(_, id)| *id).collect();
    let manifest = n.join("site.pp");
    let target = n.join("would-be-written");
    std::fs::write(
        &manifest,
        format!("file {{ '{}': content => 'x' }}\n", target.display()),
    )
    .unwrap();
    let graph = json!({"default": {"tasks": [
        task("puppet", "puppet", &[], json!({"puppet_manifest": manifest})),
        task("shell", "shell", &["puppet"], json!({"cmd": format!("touch {}/shell-ran", n.display())})),
    ]}});
    let cid = c.api.cluster_with_graph("noop", graph, &ids);
    let dep = c.api.deploy(cid, "graph_type=default&noop=true");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success", "{report:#}\n{}", c.log());
    assert!(!target.exists(), "a no-op run changes nothing");
    assert!(
        !n.join("shell-ran").exists(),
        "shell tasks do not run in a no-op deployment"
    );
    let puppet = task_line(&report, "node-1", "puppet").unwrap();
    assert_eq!(puppet["details"]["noop"], true, "{puppet:#}");
    assert_eq!(puppet["details"]["summary"]["out_of_sync"], 1, "{puppet:#}");
    let shell = task_line(&report, "node-1", "shell").unwrap();
    assert_eq!(shell["status"], "skipped", "{shell:#}");
}

#[test]
fn files_outside_the_files_root_are_not_served() {
    let c = Controller::start();
    let node = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    serve_files(&c, outside.path());
    let agent = Agent::start(&c, "node-1", &["node"]);
    let ids: Vec<u64> = c.api.wait_nodes(1).iter().map(|(_, id)| *id).collect();
    let dst = node.path().join("leaked");
    let graph = json!({"default": {"tasks": [
        task("copy-leak", "copy_files", &[], json!({
            "files": [{"src": "leak", "dst": dst}], "retries": 0})),
    ]}});
    let cid = c.api.cluster_with_graph("leak", graph, &ids);
    let dep = c.api.deploy(cid, "graph_type=default");
    let report = c.api.wait_deployment(dep, LONG);
    assert_ne!(report["status"], "success", "{report:#}");
    let line = task_line(&report, "node-1", "copy-leak").unwrap();
    assert_eq!(line["status"], "failed", "{line:#}\n{}", agent.log());
    assert!(
        line["message"]
            .as_str()
            .unwrap_or("")
            .contains("no file leak"),
        "{line:#}"
    );
    assert!(!dst.exists());
}
