//! Authentication of operators and agents, and bad input at the API: clear 4xx, nothing changed.

use plinth_e2e::*;
use serde_json::json;

fn agent_client(c: &Controller, seed: u8) -> reqwest::blocking::Client {
    let key = plinth_common::signing::signing_key_from_seed([seed; 32]);
    let der = plinth_common::signing::signing_key_to_der(&key).unwrap();
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
fn operators_need_a_valid_token_and_read_only_tokens_only_read() {
    let c = Controller::start();
    assert_eq!(c.api.raw("GET", "/nodes", None, None).status, 401);
    let bad = c.api.raw("GET", "/nodes", Some("plt_wrong"), None);
    assert_eq!(bad.status, 401);
    assert_eq!(bad.body["error"]["code"], "unauthorized");
    let out = std::process::Command::new(bin("plinth-controller"))
        .arg("--data-dir")
        .arg(c.data_dir())
        .args(["token", "create", "--name", "viewer", "--read-only"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let ro = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert_eq!(c.api.raw("GET", "/nodes", Some(&ro), None).status, 200);
    let denied = c.api.raw(
        "POST",
        "/clusters",
        Some(&ro),
        Some(("application/json", b"{}".to_vec())),
    );
    assert_eq!(denied.status, 403);
    // The OpenAPI document is public and describes the graph endpoints.
    let spec = c.api.raw("GET", "/openapi.json", None, None);
    assert_eq!(spec.status, 200);
    assert!(spec.body["paths"]["/clusters/{id}/deploy/"].is_object());
}

#[test]
fn agents_need_a_registered_node_key() {
    let c = Controller::start_with(&[]);
    let anonymous = c.api.http();
    let poll = |client: &reqwest::blocking::Client| {
        client
            .get(format!(
                "{}/agent/v1/tasks?nonce=00112233445566778899aabbccddeeff&wait=0",
                c.url
            ))
            .send()
            .unwrap()
    };
    assert_eq!(poll(&anonymous).status(), 401, "no client certificate");
    let stranger = agent_client(&c, 7);
    assert_eq!(poll(&stranger).status(), 401, "a key that never registered");

    // Register, still discovered: polls get no work and results are refused (each with its reason).
    let reg = json!({"agent_version": "test", "facts": {"hostname": "manual"}, "tags": ["x"]});
    let ack: serde_json::Value = stranger
        .post(format!("{}/agent/v1/register", c.url))
        .json(&reg)
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(ack["admission"], "discovered");
    assert_eq!(poll(&stranger).status(), 204);
    let result = json!({"results": [{"deployment_id": 1, "revision": 1, "task_id": "t", "attempt": 1, "status": "succeeded",
        "last": true, "started_at_ms": 0}]});
    let r = stranger
        .post(format!("{}/agent/v1/results", c.url))
        .json(&result)
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: serde_json::Value = r.json().unwrap();
    assert_eq!(body["verdicts"][0]["verdict"], "refused", "{body}");
    assert_eq!(body["verdicts"][0]["reason"], "this node is not accepted");

    // Accepted, it still cannot report results for lists it was never given.
    c.api
        .ok("POST", &format!("/nodes/{}/accept", ack["node_id"]), None);
    let r = stranger
        .post(format!("{}/agent/v1/results", c.url))
        .json(&result)
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: serde_json::Value = r.json().unwrap();
    assert_eq!(body["verdicts"][0]["verdict"], "refused", "{body}");
    assert!(
        body["verdicts"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("not issued to this node"),
        "{body}"
    );
    // A bad nonce is a clear 400.
    let r = stranger
        .get(format!("{}/agent/v1/tasks?nonce=XYZ", c.url))
        .send()
        .unwrap();
    assert_eq!(r.status(), 400);
}

#[test]
fn bad_input_gets_a_clear_4xx_and_changes_nothing() {
    let c = Controller::start();
    let before = c.api.get("/releases").unwrap();
    let cases: Vec<(&str, &str, Vec<u8>, u16)> = vec![
        ("POST", "/releases", b"{not json".to_vec(), 400),
        ("POST", "/releases", br#"{"name": "r", "version": "1", "colour": "red"}"#.to_vec(), 422),
        ("POST", "/releases", br#"{"name": "r"}"#.to_vec(), 422),
        ("POST", "/releases", br#"{"name": "r", "version": "1", "graphs": {"default": {"tasks": [{"type": "shell"}]}}}"#.to_vec(), 400),
        ("POST", "/releases", br#"{"name": "r", "version": "1", "graphs": {"bad type!": {"tasks": []}}}"#.to_vec(), 400),
        ("POST", "/clusters", br#"{"name": "c", "release_id": 999}"#.to_vec(), 404),
        ("PUT", "/clusters/999/nodes", br#"{"nodes": [{"id": 1}]}"#.to_vec(), 404),
        ("PUT", "/clusters/1/deploy/?nodes=abc", Vec::new(), 400),
        ("PUT", "/clusters/1/deploy/?colour=red", Vec::new(), 400),
        ("POST", "/nodes/42/accept", Vec::new(), 404),
        ("GET", "/deployments/42", Vec::new(), 404),
        ("GET", "/nowhere", Vec::new(), 404),
    ];
    for (method, path, body, want) in cases {
        let a = c.api.raw(
            method,
            path,
            Some(&c.api.token),
            Some(("application/json", body)),
        );
        assert_eq!(a.status, want, "{method} {path}: {}", a.body);
        assert!(
            a.body["error"]["message"].is_string(),
            "{method} {path}: error body {}",
            a.body
        );
    }
    // Oversize bodies are refused before they are read whole.
    let huge = vec![b' '; 17 * 1024 * 1024];
    assert_eq!(
        c.api
            .raw(
                "POST",
                "/releases",
                Some(&c.api.token),
                Some(("application/json", huge))
            )
            .status,
        413
    );
    assert_eq!(
        c.api.get("/releases").unwrap(),
        before,
        "nothing was created"
    );

    // A graph upload whose second task is bad creates nothing, and a duplicate create is 409.
    let rel = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({"name": "r", "version": "1"})),
    );
    let path = format!("/releases/{}/deployment_graphs/custom/", rel["id"]);
    let bad = c.api.send(
        "POST",
        &path,
        Some(&json!({"tasks": [{"id": "ok", "type": "stage"}, {"type": "shell"}]})),
    );
    assert_eq!(bad.status, 400);
    assert!(
        bad.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("task 1"),
        "{}",
        bad.body
    );
    assert_eq!(c.api.send("GET", &path, None).status, 404);
    c.api.ok(
        "POST",
        &path,
        Some(&json!({"tasks": [{"id": "ok", "type": "stage"}]})),
    );
    assert_eq!(
        c.api
            .send("POST", &path, Some(&json!({"tasks": []})))
            .status,
        409
    );
    assert_eq!(c.api.send("DELETE", &path, None).status, 204);
    // A deployment whose graph has a cycle is refused and starts nothing.
    let _a = Agent::start(&c, "n1", &["x"]);
    let nodes = c.api.wait_nodes(1);
    let cycle = json!({"default": {"tasks": [
        {"id": "a", "type": "shell", "tags": ["x"], "requires": ["b"], "parameters": {"cmd": "true"}}, {"id": "b", "type": "shell", "tags": ["x"], "requires": ["a"], "parameters": {"cmd": "true"}}]}});
    // Its upload is refused, naming the cycle, and stores nothing; forced, it is stored, and the
    // deployment still refuses it.
    let releases = || c.api.get("/releases").unwrap().as_array().unwrap().len();
    let releases_before = releases();
    let refused = c.api.send(
        "POST",
        "/releases",
        Some(&json!({"name": "cyc", "version": "1", "graphs": cycle})),
    );
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("a -> b -> a"),
        "{}",
        refused.body
    );
    assert_eq!(
        releases(),
        releases_before,
        "a refused upload stores nothing"
    );
    let release = c.api.ok(
        "POST",
        "/releases?force=true",
        Some(&json!({"name": "cyc", "version": "1", "graphs": cycle})),
    );
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "cyc", "release_id": release["id"]})),
    );
    let cid = cluster["id"].as_u64().unwrap();
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [{"id": nodes[0].1}]})),
    );
    let d = c.api.send("PUT", &format!("/clusters/{cid}/deploy/"), None);
    assert_eq!(d.status, 422, "{}", d.body);
    assert!(
        d.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cycle"),
        "{}",
        d.body
    );
    assert_eq!(
        c.api.get("/deployments").unwrap().as_array().unwrap().len(),
        0
    );
}

#[test]
fn bad_documents_for_the_model_are_refused_with_what_and_where() {
    let c = Controller::start();
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(&serde_json::json!({"name": "r", "version": "1"})),
    );
    let rid = release["id"].as_u64().unwrap();
    let yaml = |path: &str, text: &str| {
        c.api.raw(
            "POST",
            path,
            Some(&c.api.token),
            Some(("application/yaml", text.as_bytes().to_vec())),
        )
    };
    let broken = yaml("/plugins", "name: p\nversion: 1\nnode_roles: [unclosed\n");
    assert_eq!(broken.status, 400, "{}", broken.body);
    assert!(broken.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("line"));
    let unknown = yaml("/plugins", "name: p\nversion: '1'\ncolour: red\n");
    assert_eq!(unknown.status, 422, "{}", unknown.body);
    assert!(unknown.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("colour"));
    // A task without a type is kept for ordering (as the seeds write tasks); one of a wrong shape is not.
    let no_type = yaml(
        &format!("/releases/{rid}/deployment_graphs/custom"),
        "- id: a\n  type: shell\n- id: b\n  type: [shell]\n",
    );
    assert_eq!(no_type.status, 422, "{}", no_type.body);
    let message = no_type.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("task 1 (b)") && message.contains("type"),
        "{message}"
    );
    let bad_tag = c.api.send(
        "POST",
        &format!("/releases/{rid}/tags"),
        Some(&serde_json::json!({"name": "primary-x"})),
    );
    assert_eq!(bad_tag.status, 400, "{}", bad_tag.body);
    assert_eq!(c.api.get("/plugins").unwrap(), serde_json::json!([]));
    assert_eq!(c.api.get("/graphs").unwrap(), serde_json::json!([]));
    let tags = c.api.get(&format!("/releases/{rid}/tags")).unwrap();
    assert_eq!(tags, serde_json::json!([]), "nothing was written");
}

/// Tokens from the Keystone-style endpoint live as long as the operator says (Keystone's hour by
/// default), stand for the operator token they were asked with (its role, its revocation), and a
/// forged or expired one is refused with a reason.
#[test]
fn keystone_tokens_expire_and_follow_their_operator_token() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("controller.toml");
    std::fs::write(&config, "keystone_token_lifetime_secs = 3\n").unwrap();
    let c = Controller::start_with(&[
        "--nailgun-listen",
        "127.0.0.1:0",
        "--config",
        config.to_str().unwrap(),
    ]);
    let base = format!("http://127.0.0.1:{}", c.nailgun_port());
    let plain = reqwest::blocking::Client::new();
    let (ok, viewer, err) = c.command(&["token", "create", "--name", "viewer", "--read-only"]);
    assert!(ok, "{err}");
    let viewer = viewer.trim().to_string();
    let issue = |password: &str| -> serde_json::Value {
        plain
            .post(format!("{base}/keystone/v2.0/tokens"))
            .json(&json!({"auth": {"passwordCredentials": {"username": "viewer", "password": password}}}))
            .send()
            .unwrap()
            .json()
            .unwrap()
    };
    let status = |token: &str, method: &str| {
        plain
            .request(method.parse().unwrap(), format!("{base}/api/v1/clusters/"))
            .header("X-Auth-Token", token)
            .send()
            .unwrap()
    };
    let access = issue(&viewer);
    let token = access["access"]["token"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(token, viewer, "a token of its own, not the operator's");
    let expires = access["access"]["token"]["expires"].as_str().unwrap();
    assert!(!expires.starts_with("9999"), "{access}");
    assert_eq!(status(&token, "GET").status().as_u16(), 200);
    let who: serde_json::Value = plain
        .get(format!("{base}/api/v1/whoami/"))
        .header("X-Auth-Token", &token)
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(
        who["role"], "read_only",
        "it is as read-only as the token it was asked with"
    );
    let mut forged = token.clone();
    forged.pop();
    forged.push(if token.ends_with('A') { 'B' } else { 'A' });
    assert_eq!(status(&forged, "GET").status().as_u16(), 401);
    std::thread::sleep(std::time::Duration::from_secs(4));
    let expired = status(&token, "GET");
    assert_eq!(expired.status().as_u16(), 401);
    let body = expired.text().unwrap();
    assert!(
        body.contains("expired") && body.contains("keystone"),
        "{body}"
    );
    // Revoking the operator token ends the tokens issued over it.
    let fresh = issue(&viewer)["access"]["token"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(status(&fresh, "GET").status().as_u16(), 200);
    let (ok, _, err) = c.command(&["token", "revoke", "viewer"]);
    assert!(ok, "{err}");
    assert_eq!(status(&fresh, "GET").status().as_u16(), 401);
}

/// The agent and the controller say their versions and protocols to each other: an agent of the
/// previous protocol (one that says none) is served, older and newer ones are refused (426) with what
/// to upgrade, and `nodes list` shows each node's agent version.
#[test]
fn agents_of_the_previous_protocol_are_served_and_others_told_what_to_upgrade() {
    let c = Controller::start();
    let version = env!("CARGO_PKG_VERSION");
    let register = |seed: u8, protocol: Option<u32>| {
        let mut body = json!({"agent_version": format!("agent-{seed}"), "facts": {"hostname": format!("v{seed}")}});
        if let Some(p) = protocol {
            body["protocol"] = json!(p);
        }
        let r = agent_client(&c, seed)
            .post(format!("{}/agent/v1/register", c.url))
            .json(&body)
            .send()
            .unwrap();
        (r.status().as_u16(), r.json::<serde_json::Value>().unwrap())
    };
    let (status, ack) = register(31, None);
    assert_eq!(
        status, 200,
        "an agent of protocol 1 (none said) is served: {ack}"
    );
    assert_eq!(ack["controller_version"], version);
    assert_eq!(ack["protocol"], plinth_common::wire::PROTOCOL_VERSION);
    let (status, _) = register(32, Some(plinth_common::wire::PROTOCOL_VERSION));
    assert_eq!(status, 200);
    let (status, old) = register(33, Some(0));
    assert_eq!(status, 426, "{old}");
    let said = old["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("upgrade the agent") && said.contains(version),
        "{said}"
    );
    let (status, new) = register(34, Some(plinth_common::wire::PROTOCOL_VERSION + 1));
    assert_eq!(status, 426, "{new}");
    let said = new["error"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("upgrade the controller"), "{said}");
    // A real agent's version shows in `nodes list`.
    let _a = Agent::start(&c, "versioned", &[]);
    c.api.wait_nodes(3);
    let (ok, out, err) = c.plinthctl(&["nodes", "list"]);
    assert!(ok, "{err}");
    assert!(out.contains("AGENT"), "{out}");
    let row = out
        .lines()
        .find(|l| l.contains("versioned"))
        .unwrap_or_default();
    assert!(row.contains(version), "the agent's version: {out}");
    let row = out.lines().find(|l| l.contains("v31")).unwrap_or_default();
    assert!(row.contains("agent-31"), "{out}");
}
