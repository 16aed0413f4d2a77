//! Hostile nodes and hostile servers against file tasks and gates, with real processes: a link planted in a
//! destination never redirects a write; a node reads only the files its current list names; a server
//! holding the controller's TLS key cannot make an agent install bytes, modes or gate answers the
//! controller did not sign.

use plinth_e2e::*;
use serde_json::{json, Value};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

fn task(id: &str, kind: &str, requires: &[&str], parameters: Value) -> Value {
    json!({"id": id, "type": kind, "tags": ["node"], "requires": requires, "parameters": parameters})
}

/// Names in a directory, sorted.
fn names(dir: &std::path::Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

#[test]
fn sync_never_follows_a_link_planted_in_its_destination() {
    let c = Controller::start();
    let files = c.data_dir().join("files");
    std::fs::create_dir_all(files.join("tree/a")).unwrap();
    std::fs::write(files.join("tree/a/x.conf"), "served\n").unwrap();
    std::fs::write(files.join("tree/b.conf"), "b\n").unwrap();
    let node = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("precious"), "keep me\n").unwrap();
    let dst = node.path().join("dst");
    std::fs::create_dir_all(&dst).unwrap();
    // Whoever can write below the destination plants links to elsewhere.
    std::os::unix::fs::symlink(elsewhere.path(), dst.join("a")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path().join("precious"), dst.join("b.conf")).unwrap();

    let agent = Agent::start(&c, "node-1", &["node"]);
    let ids: Vec<u64> = c.api.wait_nodes(1).iter().map(|(_, id)| *id).collect();
    let graph = json!({"default": {"tasks": [
        task("sync-tree", "sync", &[], json!({"src": "tree", "dst": dst, "retries": 0})),
    ]}});
    let cid = c.api.cluster_with_graph("links", graph, &ids);
    let dep = c.api.deploy(cid, "graph_type=default");
    let report = c.api.wait_deployment(dep, LONG);
    let line = task_line(&report, "node-1", "sync-tree").unwrap();
    assert_eq!(line["status"], "succeeded", "{line:#}\n{}", agent.log());

    // Elsewhere is exactly as it was: nothing written into it, nothing removed from it.
    assert_eq!(names(elsewhere.path()), ["precious"]);
    assert_eq!(
        std::fs::read_to_string(elsewhere.path().join("precious")).unwrap(),
        "keep me\n"
    );
    // The links were replaced by what the source holds.
    assert!(std::fs::symlink_metadata(dst.join("a")).unwrap().is_dir());
    assert_eq!(
        std::fs::read_to_string(dst.join("a/x.conf")).unwrap(),
        "served\n"
    );
    assert!(std::fs::symlink_metadata(dst.join("b.conf"))
        .unwrap()
        .is_file());
}
