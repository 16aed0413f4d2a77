//! A hostile server for the refusal tests: it holds the controller's TLS certificate and key (a network
//! attacker who stole them, or a compromised proxy) and answers the agent's polls with crafted task lists.
//! It never has a valid signature for a list it made up, which is what the agent's checks are for.

use plinth_common::signing::{self, SignedTaskList};
use plinth_common::wire::{TaskKind, TaskList, TaskSpec, TASK_LIST_FORMAT};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// What a poll is answered with: given the poll's nonce and `after`, the raw body.
pub type Craft = Box<dyn FnOnce(&str, u64) -> Vec<u8> + Send>;

/// The attacker's shared state.
#[derive(Default)]
pub struct Log {
    /// Bodies of refusals the agent reported.
    pub refusals: Vec<Value>,
    /// Results the agent reported.
    pub results: Vec<Value>,
    /// Polls answered with a crafted list.
    pub served: usize,
}

/// The running server.
pub struct Attacker {
    /// `https://127.0.0.1:PORT`.
    pub url: String,
    /// What it saw.
    pub log: Arc<Mutex<Log>>,
    queue: Arc<Mutex<VecDeque<Craft>>>,
}

impl Attacker {
    /// Serves on a free loopback port with the given certificate and key files.
    pub fn start(cert: &Path, key: &Path) -> Attacker {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .expect("cert")
            .collect::<Result<_, _>>()
            .expect("cert chain");
        let key = PrivateKeyDer::from_pem_file(key).expect("key");
        let config = Arc::new(
            rustls::ServerConfig::builder()
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .expect("server config"),
        );
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!(
            "https://127.0.0.1:{}",
            listener.local_addr().expect("addr").port()
        );
        let log = Arc::new(Mutex::new(Log::default()));
        let queue: Arc<Mutex<VecDeque<Craft>>> = Arc::default();
        let (log2, queue2) = (log.clone(), queue.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (config, log, queue) = (config.clone(), log2.clone(), queue2.clone());
                std::thread::spawn(move || {
                    let Ok(conn) = rustls::ServerConnection::new(config) else {
                        return;
                    };
                    let tls = rustls::StreamOwned::new(conn, stream);
                    serve(tls, &log, &queue);
                });
            }
        });
        Attacker { url, log, queue }
    }

    /// Queues a crafted answer for the next poll.
    pub fn push(&self, craft: Craft) {
        self.queue.lock().expect("queue").push_back(craft);
    }
}

fn serve<S: Read + Write>(stream: S, log: &Mutex<Log>, queue: &Mutex<VecDeque<Craft>>) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, target) = (
            parts.next().unwrap_or("").to_string(),
            parts.next().unwrap_or("").to_string(),
        );
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h == "\r\n" {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let param = |name: &str| {
            query.split('&').find_map(|kv| {
                kv.split_once('=')
                    .filter(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            })
        };
        let (status, reply): (u16, Vec<u8>) = match (method.as_str(), path) {
            ("POST", "/agent/v1/register") => (
                200,
                json!({"node_id": 1, "node_key": "", "admission": "accepted", "revision": 0})
                    .to_string()
                    .into_bytes(),
            ),
            ("GET", "/agent/v1/tasks") => {
                let next = queue.lock().expect("queue").pop_front();
                match next {
                    Some(craft) => {
                        log.lock().expect("log").served += 1;
                        let after = param("after").and_then(|a| a.parse().ok()).unwrap_or(0);
                        (200, craft(&param("nonce").unwrap_or_default(), after))
                    }
                    None => {
                        std::thread::sleep(std::time::Duration::from_millis(300));
                        (204, Vec::new())
                    }
                }
            }
            ("POST", "/agent/v1/refusals") => {
                log.lock()
                    .expect("log")
                    .refusals
                    .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                (204, Vec::new())
            }
            ("POST", "/agent/v1/results") => {
                let batch: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let keys: Vec<Value> = batch["results"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| {
                        json!({"deployment_id": r["deployment_id"], "revision": r["revision"], "task_id": r["task_id"],
                               "attempt": r["attempt"], "status": r["status"]})
                    })
                    .collect();
                log.lock()
                    .expect("log")
                    .results
                    .extend(batch["results"].as_array().cloned().unwrap_or_default());
                (200, json!({"acked": keys}).to_string().into_bytes())
            }
            ("POST", "/agent/v1/heartbeat") => (204, Vec::new()),
            _ => (
                404,
                json!({"error": {"code": "not_found", "message": "no", "details": null}})
                    .to_string()
                    .into_bytes(),
            ),
        };
        let head = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            reply.len()
        );
        let stream = reader.get_mut();
        if stream
            .write_all(head.as_bytes())
            .and_then(|_| stream.write_all(&reply))
            .and_then(|_| stream.flush())
            .is_err()
        {
            return;
        }
    }
}

/// A task list for `node_key` that would create `marker` if it ever ran.
pub fn list(node_key: &str, revision: u64, nonce: &str, marker: &Path) -> TaskList {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    TaskList {
        format: TASK_LIST_FORMAT,
        node_key: node_key.to_string(),
        node_id: 1,
        deployment_id: 1,
        phase: "deploy".into(),
        revision,
        issued_at: now,
        expires_at: now + 600,
        nonce: nonce.to_string(),
        noop: false,
        cancel: false,
        tasks: vec![TaskSpec {
            id: "plant-marker".into(),
            kind: TaskKind::Shell,
            parameters: json!({"cmd": format!("touch {}", marker.display())})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            skip_reason: None,
            waits_for: vec![],
            gated: false,
        }],
    }
}

/// A signed envelope's bytes.
pub fn envelope(key: &ed25519_dalek::SigningKey, list: &TaskList) -> Vec<u8> {
    serde_json::to_vec(&signing::sign_task_list(key, list)).unwrap_or_default()
}

/// An envelope whose payload has one byte flipped after signing.
pub fn tampered(key: &ed25519_dalek::SigningKey, list: &TaskList) -> Vec<u8> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let signed = signing::sign_task_list(key, list);
    let mut payload = b64.decode(&signed.payload).unwrap_or_default();
    // Flip a byte inside the shell command: `touch` becomes `tnuch`-like garbage but still valid JSON.
    if let Some(pos) = payload.windows(5).position(|w| w == b"touch") {
        payload[pos + 1] ^= 0x01;
    }
    serde_json::to_vec(&SignedTaskList {
        payload: b64.encode(payload),
        signature: signed.signature,
    })
    .unwrap_or_default()
}
