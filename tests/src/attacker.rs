//! A hostile server for the refusal tests: it holds the controller's TLS certificate and key (a network
//! attacker who stole them, or a compromised proxy) and answers the agent's polls with crafted task lists,
//! its file requests with forged manifests and bytes, and its gate requests with forged answers. It never
//! has a valid signature for anything it made up, which is what the agent's checks are for; tests hand it
//! genuinely signed lists to see that what it serves next to them is refused.

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

/// What a gate request is answered with: given its deployment, task and nonce, the raw body.
pub type GateCraft = Box<dyn Fn(u64, &str, &str) -> Vec<u8> + Send + Sync>;

/// A canned answer to a file request.
#[derive(Debug, Clone)]
pub struct Served {
    /// Extra headers (such as `x-plinth-sha256`, `x-plinth-mode`).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// The forged answers the attacker gives besides lists.
#[derive(Default)]
struct Answers {
    /// By `manifest:<path>` or `file:<path>`.
    files: std::collections::HashMap<String, Served>,
    /// Gate answers, used in turn (the last one repeats).
    gates: Vec<GateCraft>,
}

/// The attacker's shared state.
#[derive(Default)]
pub struct Log {
    /// Bodies of refusals the agent reported.
    pub refusals: Vec<Value>,
    /// Results the agent reported.
    pub results: Vec<Value>,
    /// Polls answered with a crafted list.
    pub served: usize,
    /// Gate requests answered.
    pub gates: usize,
    /// File requests answered (`manifest:<path>` or `file:<path>`).
    pub files: Vec<String>,
}

/// The running server.
pub struct Attacker {
    /// `https://127.0.0.1:PORT`.
    pub url: String,
    /// What it saw.
    pub log: Arc<Mutex<Log>>,
    queue: Arc<Mutex<VecDeque<Craft>>>,
    answers: Arc<Mutex<Answers>>,
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
        let answers: Arc<Mutex<Answers>> = Arc::default();
        let (log2, queue2, answers2) = (log.clone(), queue.clone(), answers.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (config, log, queue, answers) = (
                    config.clone(),
                    log2.clone(),
                    queue2.clone(),
                    answers2.clone(),
                );
                std::thread::spawn(move || {
                    let Ok(conn) = rustls::ServerConnection::new(config) else {
                        return;
                    };
                    let tls = rustls::StreamOwned::new(conn, stream);
                    serve(tls, &log, &queue, &answers);
                });
            }
        });
        Attacker {
            url,
            log,
            queue,
            answers,
        }
    }

    /// Answers `GET /agent/v1/files/{path}?manifest=true` with `manifest`.
    pub fn serve_manifest(&self, path: &str, manifest: &plinth_common::wire::FileManifest) {
        let body = serde_json::to_vec(manifest).unwrap_or_default();
        self.answers.lock().expect("answers").files.insert(
            format!("manifest:{path}"),
            Served {
                headers: vec![],
                body,
            },
        );
    }

    /// Answers `GET /agent/v1/files/{path}` with `bytes`, announcing their true SHA-256 and `mode`.
    pub fn serve_file(&self, path: &str, bytes: &[u8], mode: u32) {
        use sha2::Digest;
        let sha = hex::encode(sha2::Sha256::digest(bytes));
        self.answers.lock().expect("answers").files.insert(
            format!("file:{path}"),
            Served {
                headers: vec![
                    ("x-plinth-sha256".into(), sha),
                    ("x-plinth-mode".into(), format!("{mode:04o}")),
                ],
                body: bytes.to_vec(),
            },
        );
    }

    /// Answers gate requests with these, in turn; the last one repeats.
    pub fn gate_answers(&self, crafts: Vec<GateCraft>) {
        self.answers.lock().expect("answers").gates = crafts;
    }

    /// Queues a crafted answer for the next poll.
    pub fn push(&self, craft: Craft) {
        self.queue.lock().expect("queue").push_back(craft);
    }
}

fn serve<S: Read + Write>(
    stream: S,
    log: &Mutex<Log>,
    queue: &Mutex<VecDeque<Craft>>,
    answers: &Mutex<Answers>,
) {
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
        let mut extra: Vec<(String, String)> = Vec::new();
        let (status, reply): (u16, Vec<u8>) = match (method.as_str(), path) {
            ("GET", "/agent/v1/gate") => {
                let served = {
                    let mut l = log.lock().expect("log");
                    l.gates += 1;
                    l.gates
                };
                let answers = answers.lock().expect("answers");
                let deployment = param("deployment")
                    .and_then(|d| d.parse().ok())
                    .unwrap_or(0);
                let (task, nonce) = (
                    param("task").unwrap_or_default(),
                    param("nonce").unwrap_or_default(),
                );
                match answers
                    .gates
                    .get((served - 1).min(answers.gates.len().saturating_sub(1)))
                {
                    Some(craft) => (200, craft(deployment, &task, &nonce)),
                    None => (404, Vec::new()),
                }
            }
            ("GET", p) if p.starts_with("/agent/v1/files/") => {
                let file = p.trim_start_matches("/agent/v1/files/").to_string();
                let key = if param("manifest").as_deref() == Some("true") {
                    format!("manifest:{file}")
                } else {
                    format!("file:{file}")
                };
                log.lock().expect("log").files.push(key.clone());
                match answers.lock().expect("answers").files.get(&key).cloned() {
                    Some(served) => {
                        extra = served.headers;
                        (200, served.body)
                    }
                    None => (404, Vec::new()),
                }
            }
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
        let extra: String = extra.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
        let head = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}\r\n",
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
            manifests: Default::default(),
        }]
        .into(),
    }
}

/// A list for `node_key` with the given tasks (JSON task specs).
pub fn list_of(node_key: &str, revision: u64, nonce: &str, tasks: Value) -> TaskList {
    let mut l = list(node_key, revision, nonce, Path::new("/nonexistent"));
    l.tasks = serde_json::from_value(tasks).expect("task specs");
    l
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
