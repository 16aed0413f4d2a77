//! Hostile nodes and hostile servers against file tasks and gates, with real processes: a link planted in a
//! destination never redirects a write; a node reads only the files its current list names; a server
//! holding the controller's TLS key cannot make an agent install bytes, modes or gate answers the
//! controller did not sign.

use plinth_common::wire::ManifestKind;
use plinth_e2e::attacker;
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

    // On the way to a copy's destination, a link someone else owns (root can give it away) is not
    // followed either; links root or the agent owns are (the system's own, such as /lib -> usr/lib).
    let root = nix::unistd::geteuid().is_root();
    let theirs = node.path().join("theirs");
    std::os::unix::fs::symlink(elsewhere.path(), &theirs).unwrap();
    if root {
        nix::unistd::fchownat(
            nix::fcntl::AT_FDCWD,
            &theirs,
            Some(nix::unistd::Uid::from_raw(65534)),
            None,
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .unwrap();
    }

    let agent = Agent::start(&c, "node-1", &["node"]);
    let ids: Vec<u64> = c.api.wait_nodes(1).iter().map(|(_, id)| *id).collect();
    let graph = json!({"default": {"tasks": [
        task("sync-tree", "sync", &[], json!({"src": "tree", "dst": dst, "retries": 0})),
        task("copy-through", "copy_files", &["sync-tree"], json!({"retries": 0,
            "files": [{"src": "tree/b.conf", "dst": theirs.join("b.conf")}]})),
    ]}});
    let cid = c.api.cluster_with_graph("links", graph, &ids);
    let dep = c.api.deploy(cid, "graph_type=default");
    let report = c.api.wait_deployment(dep, LONG);
    let line = task_line(&report, "node-1", "sync-tree").unwrap();
    assert_eq!(line["status"], "succeeded", "{line:#}\n{}", agent.log());
    if root {
        let copy = task_line(&report, "node-1", "copy-through").unwrap();
        assert_eq!(copy["status"], "failed", "{copy:#}");
        let message = copy["message"].as_str().unwrap_or("");
        assert!(message.contains("owned by uid 65534"), "{message}");
    }

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

/// The node key an agent made, once it exists.
fn agent_key(agent: &Agent) -> ed25519_dalek::SigningKey {
    let key_path = agent.dir.path().join("state").join("node.key");
    wait_until("the agent's node key", Duration::from_secs(30), || {
        key_path.exists()
    });
    plinth_common::signing::signing_key_from_pem(&std::fs::read_to_string(&key_path).unwrap())
        .unwrap()
}

/// An HTTPS client that presents `key` as its node key, as an agent does.
fn node_client(c: &Controller, key: &ed25519_dalek::SigningKey) -> reqwest::blocking::Client {
    let der = plinth_common::signing::signing_key_to_der(key).unwrap();
    let pair = rcgen::KeyPair::try_from(der.as_slice()).unwrap();
    let cert = rcgen::CertificateParams::new(vec!["agent".into()])
        .unwrap()
        .self_signed(&pair)
        .unwrap();
    let identity =
        reqwest::Identity::from_pem(format!("{}{}", cert.pem(), pair.serialize_pem()).as_bytes())
            .unwrap();
    let pem = std::fs::read(c.cert_path()).unwrap();
    reqwest::blocking::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(&pem).unwrap()])
        .identity(identity)
        .build()
        .unwrap()
}

#[test]
fn a_node_reads_only_the_files_its_current_list_names() {
    let c = Controller::start();
    let files = c.data_dir().join("files");
    std::fs::create_dir_all(files.join("mods")).unwrap();
    std::fs::create_dir_all(files.join("private")).unwrap();
    std::fs::write(files.join("allowed.txt"), "for node-1\n").unwrap();
    std::fs::write(files.join("mods/a.pp"), "class a {}\n").unwrap();
    std::fs::write(files.join("private/other-node.key"), "not for node-1\n").unwrap();
    let node = tempfile::tempdir().unwrap();
    let agent = Agent::start(&c, "node-1", &["node"]);
    let ids: Vec<u64> = c.api.wait_nodes(1).iter().map(|(_, id)| *id).collect();
    let copied = node.path().join("allowed.txt");
    let graph = json!({"default": {"tasks": [
        task("copy", "copy_files", &[], json!({"files": [{"src": "allowed.txt", "dst": copied}]})),
        task("mods", "sync", &["copy"], json!({"src": "mods", "dst": node.path().join("mods")})),
        // Keeps the list current while the test reads as the node.
        task("hold", "shell", &["mods"], json!({"cmd": "sleep 300"})),
    ]}});
    let cid = c.api.cluster_with_graph("scoped", graph, &ids);
    c.api.deploy(cid, "graph_type=default");
    wait_until("the node's file tasks", LONG, || {
        node.path().join("mods/a.pp").exists()
    });
    assert_eq!(std::fs::read_to_string(&copied).unwrap(), "for node-1\n");

    let as_node = node_client(&c, &agent_key(&agent));
    let get = |client: &reqwest::blocking::Client, path: &str| {
        let r = client
            .get(format!("{}/agent/v1/files/{path}", c.url))
            .send()
            .unwrap();
        let status = r.status().as_u16();
        (status, r.text().unwrap_or_default())
    };
    for named in [
        "allowed.txt",
        "allowed.txt?manifest=true",
        "mods?manifest=true",
        "mods/a.pp",
    ] {
        assert_eq!(get(&as_node, named).0, 200, "{named}");
    }
    for unnamed in [
        "private/other-node.key",
        "private/other-node.key?manifest=true",
        "private?manifest=true",
        "mods/a.pp?manifest=true",
    ] {
        let (status, body) = get(&as_node, unnamed);
        assert_eq!(status, 403, "{unnamed}: {body}");
        assert!(!body.contains("not for node-1"), "{body}");
    }
    // Another accepted node, with no list, reads nothing.
    let stranger_key = plinth_common::signing::signing_key_from_seed([42; 32]);
    let stranger = node_client(&c, &stranger_key);
    let reg = json!({"agent_version": "test", "facts": {"hostname": "stranger"}});
    let ack: Value = stranger
        .post(format!("{}/agent/v1/register", c.url))
        .json(&reg)
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(ack["admission"], "accepted", "{ack}");
    assert_eq!(get(&stranger, "allowed.txt").0, 403);
    assert_eq!(get(&stranger, "mods?manifest=true").0, 403);
}

/// One served file's manifest entry.
fn entry(path: &str, bytes: &[u8], mode: u32) -> plinth_common::wire::ManifestFile {
    use sha2::Digest;
    plinth_common::wire::ManifestFile {
        path: path.into(),
        size: bytes.len() as u64,
        sha256: hex::encode(sha2::Sha256::digest(bytes)),
        mode,
    }
}

fn manifest(
    kind: plinth_common::wire::ManifestKind,
    path: &str,
    files: Vec<plinth_common::wire::ManifestFile>,
) -> plinth_common::wire::FileManifest {
    plinth_common::wire::FileManifest {
        kind,
        path: path.into(),
        files,
    }
}

/// The final result the agent reported for `task`, once it has.
fn final_result(evil: &attacker::Attacker, task: &str) -> Value {
    let mut found = Value::Null;
    wait_until(&format!("the final result of {task}"), LONG, || {
        let log = evil.log.lock().unwrap();
        found = log
            .results
            .iter()
            .rev()
            .find(|r| r["task_id"] == task && r["status"] != "running")
            .cloned()
            .unwrap_or(Value::Null);
        !found.is_null()
    });
    found
}

#[test]
fn a_server_holding_the_tls_key_cannot_install_bytes_or_modes_the_list_did_not_sign() {
    use std::os::unix::fs::PermissionsExt;
    let c = Controller::start();
    let real = c.signing_key();
    let evil = attacker::Attacker::start(&c.cert_path(), &c.data_dir().join("tls").join("key.pem"));
    let agent = Agent::start_at(
        &evil.url,
        &c.cert_path(),
        "victim",
        &["x"],
        &c.public_key(),
        "",
    );
    let node_key = plinth_common::signing::fingerprint(&agent_key(&agent).verifying_key());
    let digest = plinth_common::signing::manifest_digest;
    let genuine = b"#!/bin/sh\necho genuine\n".as_slice();
    // As long as the genuine file, so only its hash tells them apart.
    let evil_bytes = b"#!/bin/sh\necho evilish\n".as_slice();
    assert_eq!(evil_bytes.len(), genuine.len());
    let out = agent.work();

    // What the controller published: each source's manifest digest, signed with the list.
    let tool = manifest(
        ManifestKind::File,
        "tool",
        vec![entry("tool", genuine, 0o755)],
    );
    let tree = manifest(
        ManifestKind::Directory,
        "mods",
        vec![entry("a.sh", genuine, 0o755)],
    );
    let cases: Vec<(&str, Value, &str)> = vec![
        // A forged manifest: set-uid, other bytes.
        (
            "forged-manifest",
            json!({"type": "copy_files", "manifests": {"tool": digest(&tool)},
            "parameters": {"files": [{"src": "tool", "dst": out.join("forged-manifest")}], "retries": 0}}),
            "not the one the signed task list names",
        ),
        // The signed manifest, but other bytes (announced with their own hash) and a set-uid mode.
        (
            "forged-bytes",
            json!({"type": "copy_files", "manifests": {"tool2": digest(&tool)},
            "parameters": {"files": [{"src": "tool2", "dst": out.join("forged-bytes")}], "retries": 0}}),
            "the signed manifest says",
        ),
        // A tree with a file added.
        (
            "forged-tree",
            json!({"type": "sync", "manifests": {"mods": digest(&tree)},
            "parameters": {"src": "mods", "dst": out.join("forged-tree"), "retries": 0}}),
            "not the one the signed task list names",
        ),
        // The genuine bytes announced as set-uid: installed with the signed mode.
        (
            "genuine",
            json!({"type": "copy_files", "manifests": {"tool3": digest(&tool)},
            "parameters": {"files": [{"src": "tool3", "dst": out.join("genuine")}], "retries": 0}}),
            "",
        ),
    ];
    evil.serve_manifest(
        "tool",
        &manifest(
            ManifestKind::File,
            "tool",
            vec![entry("tool", evil_bytes, 0o4755)],
        ),
    );
    evil.serve_file("tool", evil_bytes, 0o4755);
    evil.serve_manifest("tool2", &tool);
    evil.serve_file("tool2", evil_bytes, 0o4755);
    evil.serve_manifest(
        "mods",
        &manifest(
            ManifestKind::Directory,
            "mods",
            vec![
                entry("a.sh", genuine, 0o755),
                entry("b.sh", evil_bytes, 0o4755),
            ],
        ),
    );
    evil.serve_file("mods/a.sh", genuine, 0o755);
    evil.serve_file("mods/b.sh", evil_bytes, 0o4755);
    evil.serve_manifest("tool3", &tool);
    evil.serve_file("tool3", genuine, 0o4755);

    for (revision, (id, mut spec, refused)) in (5u64..).zip(cases) {
        spec["id"] = json!(id);
        let (k, nk, tasks) = (real.clone(), node_key.clone(), json!([spec]));
        evil.push(Box::new(move |nonce, _| {
            attacker::envelope(&k, &attacker::list_of(&nk, revision, nonce, tasks))
        }));
        let result = final_result(&evil, id);
        let installed = out.join(id);
        if refused.is_empty() {
            assert_eq!(result["status"], "succeeded", "{result:#}\n{}", agent.log());
            assert_eq!(std::fs::read(&installed).unwrap(), genuine);
            let mode = std::fs::metadata(&installed).unwrap().permissions().mode() & 0o7777;
            assert_eq!(mode, 0o755, "the signed mode, not the announced {mode:o}");
        } else {
            assert_eq!(result["status"], "failed", "{result:#}\n{}", agent.log());
            let message = result["message"].as_str().unwrap_or("");
            assert!(message.contains(refused), "{id}: {message}");
            assert!(!installed.exists(), "{id}: something was installed");
            assert!(!installed.join("b.sh").exists());
        }
    }
}

#[test]
fn forged_gate_answers_never_start_a_gated_task() {
    let c = Controller::start();
    let real = c.signing_key();
    let evil = attacker::Attacker::start(&c.cert_path(), &c.data_dir().join("tls").join("key.pem"));
    let agent = Agent::start_at(
        &evil.url,
        &c.cert_path(),
        "victim",
        &["x"],
        &c.public_key(),
        "",
    );
    let node_key = plinth_common::signing::fingerprint(&agent_key(&agent).verifying_key());
    let marker = agent.work().join("STARTED");
    let signed = |key: ed25519_dalek::SigningKey,
                  node: String,
                  task: Option<&'static str>,
                  nonce: Option<&'static str>|
     -> attacker::GateCraft {
        Box::new(move |deployment, t, n| {
            let answer = plinth_common::wire::GateAnswer {
                node_key: node.clone(),
                deployment,
                task: task.unwrap_or(t).to_string(),
                nonce: nonce.unwrap_or(n).to_string(),
                ready: true,
                waiting_for: vec![],
                blocked: false,
            };
            serde_json::to_vec(&plinth_common::signing::sign_gate_answer(&key, &answer)).unwrap()
        })
    };
    let stranger = plinth_common::signing::signing_key_from_seed([9; 32]);
    let forged: Vec<attacker::GateCraft> = vec![
        // What a forger without the key says: plain "ready".
        Box::new(|_, _, _| br#"{"ready": true, "blocked": false, "waiting_for": []}"#.to_vec()),
        signed(stranger, node_key.clone(), None, None),
        signed(
            real.clone(),
            node_key.clone(),
            None,
            Some("00000000000000000000000000000000"),
        ),
        signed(real.clone(), node_key.clone(), Some("another-task"), None),
        signed(real.clone(), "another-node".into(), None, None),
    ];
    let count = forged.len();
    evil.gate_answers(forged);
    let tasks = json!([{"id": "gated", "type": "shell", "gated": true,
        "parameters": {"cmd": format!("touch {}", marker.display())}}]);
    let (k, nk) = (real.clone(), node_key.clone());
    evil.push(Box::new(move |nonce, _| {
        attacker::envelope(&k, &attacker::list_of(&nk, 5, nonce, tasks))
    }));
    wait_until("every forged gate answer to be tried", LONG, || {
        evil.log.lock().unwrap().gates > count || marker.exists()
    });
    assert!(
        !marker.exists(),
        "a forged gate answer started the task:\n{}",
        agent.log()
    );
    assert!(
        agent.log().contains("refused a gate answer"),
        "{}",
        agent.log()
    );

    // The controller's own answer, bound to this request, starts it.
    evil.gate_answers(vec![signed(real, node_key, None, None)]);
    wait_until("the genuinely opened task to run", LONG, || marker.exists());
}

/// Every log line a node's text reaches, tried with text that would forge lines of its own (a new
/// line, a carriage return, a terminal escape): the controller's log shows each inside the line that
/// carries it, escaped, and no forged line starts anywhere.
#[test]
fn no_text_a_node_sends_forges_a_log_line() {
    let c = Controller::start();
    let forged =
        "\n2026-11-29T08:00:00.000000Z  WARN plinth_controller: FORGED token revoked\r\u{1b}[2K";
    let key = plinth_common::signing::signing_key_from_seed([7; 32]);
    let node = node_client(&c, &key);
    let post = |path: &str, body: Value| {
        node.post(format!("{}/agent/v1/{path}", c.url))
            .json(&body)
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    // Registration: a name, tags it may not claim, labels.
    let reg = json!({"agent_version": format!("1{forged}"),
        "facts": {"hostname": format!("evil{forged}")},
        "tags": [format!("primary-x{forged}")],
        "labels": {"rack": format!("r{forged}")}});
    // Refused or taken, whichever: then registered under a plain name, with the tags and labels.
    let _ = post("register", reg);
    let reg = json!({"agent_version": "1", "facts": {"hostname": "evil"},
        "tags": [format!("primary-x{forged}")],
        "labels": {"rack": format!("r{forged}")}});
    let _ = post("register", reg);
    let reg = json!({"agent_version": "1", "facts": {"hostname": "evil"}});
    assert_eq!(post("register", reg), 200);
    // A file its list does not name.
    let path = format!("private{}", urlencoding(forged));
    let refused = node
        .get(format!("{}/agent/v1/files/{path}", c.url))
        .send()
        .unwrap()
        .status()
        .as_u16();
    assert_eq!(refused, 403);
    // A result for a task never issued to it, and a refused list.
    let result = plinth_common::wire::TaskResult {
        deployment_id: 1,
        revision: 1,
        task_id: format!("t{forged}"),
        attempt: 1,
        status: plinth_common::wire::ResultStatus::Failed,
        last: true,
        exit_code: Some(1),
        started_at_ms: 0,
        duration_ms: 1,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        message: format!("m{forged}"),
        details: Value::Null,
    };
    assert_eq!(post("results", json!({"results": [result]})), 200);
    assert_eq!(
        post(
            "refusals",
            json!({"reason": format!("bad{forged}"), "claimed_revision": 3})
        ),
        204
    );
    wait_until("the controller to log what the node caused", LONG, || {
        c.log().matches("FORGED").count() >= 3
    });
    let log = c.log();
    assert!(!log.contains('\u{1b}') && !log.contains('\r'), "{log}");
    for line in log.lines().filter(|l| l.contains("FORGED")) {
        let before = &line[..line.find("FORGED").unwrap_or(0)];
        assert!(
            before.contains(" WARN ") || before.contains(" INFO "),
            "a node's text started a line of its own: {line:?}"
        );
    }
}

/// `text` percent-encoded for a URL path (every byte outside the unreserved set).
fn urlencoding(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
