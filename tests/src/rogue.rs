//! A hostile or unlucky node, for the tests of what the controller does with what nodes send: an agent
//! client with a node key of the test's choosing that sends whatever the test wants (registrations with
//! any name and tags, polls with any `after`, results for any task), over the same mutually authenticated
//! TLS as a real agent.

use crate::{Answer, Controller};
use plinth_common::signing;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// A node client with its own key.
pub struct Rogue {
    /// The controller's URL.
    pub url: String,
    /// The node key's fingerprint (the node's identity on the controller).
    pub fingerprint: String,
    http: reqwest::blocking::Client,
}

impl Rogue {
    /// A client for `c` whose node key is made from `seed`.
    pub fn new(c: &Controller, seed: u8) -> Rogue {
        let http = reqwest::blocking::Client::builder()
            .tls_backend_preconfigured((*raw_tls_config(c, Some(seed))).clone())
            .timeout(Duration::from_secs(60))
            .build()
            .expect("client");
        let key = signing::signing_key_from_seed([seed; 32]);
        Rogue {
            url: c.url.clone(),
            fingerprint: signing::fingerprint(&key.verifying_key()),
            http,
        }
    }

    /// Sends a request to an agent endpoint (`path` after `/agent/v1`).
    pub fn send(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self
            .http
            .request(method, format!("{}/agent/v1{}", self.url, path));
        if let Some(b) = body {
            req = req.json(b);
        }
        match req.send() {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let text = resp.text().unwrap_or_default();
                Answer {
                    status,
                    body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
                }
            }
            Err(e) => Answer {
                status: 0,
                body: json!({"error": {"message": e.to_string()}}),
            },
        }
    }

    /// Registers with this name, tags and facts.
    pub fn register(&self, name: &str, tags: &[&str], facts: Value) -> Answer {
        self.send(
            "POST",
            "/register",
            Some(&json!({"agent_version": "rogue", "name": name, "facts": facts, "tags": tags})),
        )
    }

    /// Polls once with this `after`, waiting at most `wait` seconds.
    pub fn poll(&self, after: u64, wait: u64) -> Answer {
        self.send(
            "GET",
            &format!("/tasks?nonce=00112233445566778899aabbccddeeff&after={after}&wait={wait}"),
            None,
        )
    }

    /// The list in a poll's answer (the signed envelope's payload), if it holds one.
    pub fn list_of(answer: &Answer) -> Option<Value> {
        use base64::Engine as _;
        let payload = answer.body["payload"].as_str()?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(payload)
            .ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Polls until a list comes (at most `timeout`).
    pub fn wait_list(&self, after: u64, timeout: Duration) -> Value {
        let start = std::time::Instant::now();
        while start.elapsed() < timeout {
            let a = self.poll(after, 2);
            if let Some(list) = Self::list_of(&a) {
                return list;
            }
        }
        panic!("no list came within {timeout:?}");
    }

    /// Reports results.
    pub fn results(&self, results: &[Value]) -> Answer {
        self.send("POST", "/results", Some(&json!({"results": results})))
    }
}

/// A result for a task of a list, with the given attempt and status.
pub fn result(list: &Value, task: &str, attempt: u32, status: &str) -> Value {
    json!({
        "deployment_id": list["deployment_id"],
        "revision": list["revision"],
        "task_id": task,
        "attempt": attempt,
        "status": status,
        "last": status != "running",
        "exit_code": if status == "succeeded" { 0 } else { 1 },
        "started_at_ms": 1,
        "duration_ms": 1,
    })
}

/// Every task id of a list.
pub fn task_ids(list: &Value) -> Vec<String> {
    list["tasks"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// A TLS client configuration trusting `c`'s certificate, with the node key made from `client_seed` in
/// a client certificate (none without a seed): for rogue clients and tests that open raw connections.
pub fn raw_tls_config(c: &Controller, client_seed: Option<u8>) -> Arc<rustls::ClientConfig> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(c.cert_path()).expect("controller certificate");
    for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(&pem) {
        let cert: CertificateDer<'static> = cert.expect("a PEM certificate");
        roots.add(cert).expect("a root");
    }
    let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
    let config = match client_seed {
        None => builder.with_no_client_auth(),
        Some(seed) => {
            let key = signing::signing_key_from_seed([seed; 32]);
            let der = signing::signing_key_to_der(&key).expect("a DER key");
            let pair = rcgen::KeyPair::try_from(der.as_slice()).expect("an rcgen key");
            let cert = rcgen::CertificateParams::new(vec![format!("rogue-{seed}")])
                .expect("params")
                .self_signed(&pair)
                .expect("a certificate");
            builder
                .with_client_auth_cert(
                    vec![cert.der().clone()],
                    PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der)),
                )
                .expect("client auth")
        }
    };
    Arc::new(config)
}
