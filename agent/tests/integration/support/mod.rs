//! A scripted controller for the agent's process-level tests: real mutual TLS on loopback, the agent
//! endpoints, and a log of everything the agent sent.

#![allow(dead_code)]

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use ed25519_dalek::{SigningKey, VerifyingKey};
use plinth_common::signing;
use plinth_common::wire::*;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Makes the signed answer to one poll from its nonce.
pub type Craft = Box<dyn Fn(&str) -> Vec<u8> + Send>;

/// Everything the agent sent.
#[derive(Default)]
pub struct Log {
    pub registrations: Vec<Registration>,
    pub results: Vec<TaskResult>,
    pub refusals: Vec<Refusal>,
    pub heartbeats: u32,
    pub polls: u32,
    /// The node key fingerprints seen on client certificates.
    pub peers: Vec<String>,
    /// When set, every endpoint but register answers 401 until the node registers again.
    pub forget: bool,
    /// When set, every endpoint answers 503 with an HTML body, like a proxy in front of a dead controller.
    pub down: bool,
}

struct Shared {
    log: Mutex<Log>,
    crafts: Mutex<VecDeque<Craft>>,
    pushed: Notify,
}

/// The scripted controller.
pub struct FakeController {
    pub url: String,
    pub cert: PathBuf,
    pub key: SigningKey,
    shared: Arc<Shared>,
    /// Its certificate and key (DER), for a second controller of the same site.
    identity: (CertificateDer<'static>, Vec<u8>),
    _dir: tempfile::TempDir,
}

impl FakeController {
    /// Starts on a loopback port with a fresh self-signed certificate.
    pub fn start() -> FakeController {
        let certified =
            rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
                .unwrap();
        Self::start_as(
            certified.cert.der().clone(),
            certified.signing_key.serialize_der(),
        )
    }

    /// Starts another controller of the same site: on another port, with the same certificate (so an
    /// agent's pin holds for both) and the same signing key.
    pub fn start_beside(other: &FakeController) -> FakeController {
        Self::start_as(other.identity.0.clone(), other.identity.1.clone())
    }

    fn start_as(cert: CertificateDer<'static>, key_der: Vec<u8>) -> FakeController {
        let dir = tempfile::tempdir().unwrap();
        let cert_path = dir.path().join("controller.pem");
        let pem = format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            base64_lines(cert.as_ref())
        );
        std::fs::write(&cert_path, pem).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(Arc::new(AnyClientCert(provider)))
            .with_single_cert(
                vec![cert.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key_der.clone())),
            )
            .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let shared = Arc::new(Shared {
            log: Mutex::new(Log::default()),
            crafts: Mutex::new(VecDeque::new()),
            pushed: Notify::new(),
        });
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let port = std_listener.local_addr().unwrap().port();
        let app_shared = shared.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(serve(std_listener, Arc::new(config), app_shared));
        });
        FakeController {
            url: format!("https://127.0.0.1:{port}"),
            cert: cert_path,
            key: signing::signing_key_from_seed([77; 32]),
            shared,
            identity: (cert, key_der),
            _dir: dir,
        }
    }

    /// Queues an answer for the next poll.
    pub fn push(&self, craft: Craft) {
        self.shared.crafts.lock().unwrap().push_back(craft);
        self.shared.pushed.notify_waiters();
    }

    /// Queues a list signed with the controller key; the nonce is filled in from the poll.
    pub fn push_list(&self, list: TaskList) {
        let key = self.key.clone();
        self.push(Box::new(move |nonce| {
            let mut l = list.clone();
            l.nonce = nonce.to_string();
            serde_json::to_vec(&signing::sign_task_list(&key, &l)).unwrap()
        }));
    }

    /// Reads the log.
    pub fn log<R>(&self, f: impl FnOnce(&mut Log) -> R) -> R {
        f(&mut self.shared.log.lock().unwrap())
    }

    /// The controller's public key as agent configs carry it.
    pub fn public_key(&self) -> String {
        signing::public_key_to_text(&self.key.verifying_key())
    }

    /// The pin of its TLS key, as `plinth.tls=` takes it.
    pub fn tls_pin(&self) -> String {
        let cert = webpki::EndEntityCert::try_from(&self.identity.0).unwrap();
        signing::tls_key_pin(cert.subject_public_key_info().as_ref())
    }
}

async fn serve(
    listener: std::net::TcpListener,
    config: Arc<rustls::ServerConfig>,
    shared: Arc<Shared>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let app = Router::new()
        .route("/agent/v1/register", post(register))
        .route("/agent/v1/tasks", get(poll))
        .route("/agent/v1/results", post(results))
        .route("/agent/v1/refusals", post(refusals))
        .route("/agent/v1/heartbeat", post(heartbeat))
        .route("/agent/v1/gate", get(gate))
        .with_state(shared);
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let acceptor = acceptor.clone();
        let app = app.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let peer = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .and_then(|c| ed25519_key_of(c.as_ref()))
                .map(|k| signing::fingerprint(&k))
                .unwrap_or_default();
            let app = app.layer(Extension(Peer(peer)));
            let service = hyper_util::service::TowerToHyperService::new(app);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
        });
    }
}

#[derive(Clone)]
struct Peer(String);

/// Base64 in PEM's lines of 64 characters.
fn base64_lines(der: &[u8]) -> String {
    use base64::Engine;
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = text
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    lines.join("\n")
}

/// The ed25519 key of a certificate: the 32 bytes after the SPKI prefix of id-Ed25519.
pub fn ed25519_key_of(der: &[u8]) -> Option<VerifyingKey> {
    const PREFIX: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00];
    let at = der.windows(PREFIX.len()).position(|w| w == PREFIX)? + PREFIX.len();
    let bytes: [u8; 32] = der.get(at..at + 32)?.try_into().ok()?;
    VerifyingKey::from_bytes(&bytes).ok()
}

fn forgotten(shared: &Shared) -> bool {
    shared.log.lock().unwrap().forget
}

fn down(shared: &Shared) -> Option<Response> {
    shared.log.lock().unwrap().down.then(|| {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "<html>503 Service Unavailable</html>",
        )
            .into_response()
    })
}

async fn register(
    State(s): State<Arc<Shared>>,
    Extension(peer): Extension<Peer>,
    Json(reg): Json<Registration>,
) -> Response {
    if let Some(r) = down(&s) {
        return r;
    }
    let mut log = s.log.lock().unwrap();
    log.registrations.push(reg);
    log.peers.push(peer.0.clone());
    log.forget = false;
    Json(RegistrationAck {
        node_id: 1,
        node_key: peer.0,
        admission: Admission::Accepted,
        revision: 0,
        controller_version: "test".into(),
        protocol: plinth_common::wire::PROTOCOL_VERSION,
    })
    .into_response()
}

async fn poll(State(s): State<Arc<Shared>>, Query(q): Query<PollQuery>) -> Response {
    if let Some(r) = down(&s) {
        return r;
    }
    if forgotten(&s) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    s.log.lock().unwrap().polls += 1;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(q.wait.min(30));
    loop {
        let notified = s.pushed.notified();
        if let Some(craft) = s.crafts.lock().unwrap().pop_front() {
            return (StatusCode::OK, craft(&q.nonce)).into_response();
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return StatusCode::NO_CONTENT.into_response();
        }
    }
}

async fn results(State(s): State<Arc<Shared>>, Json(batch): Json<ResultsBatch>) -> Response {
    if let Some(r) = down(&s) {
        return r;
    }
    if forgotten(&s) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let mut log = s.log.lock().unwrap();
    let mut verdicts = Vec::new();
    for r in batch.results {
        let verdict = if log.results.iter().any(|x| x.key() == r.key()) {
            Verdict::Duplicate
        } else {
            Verdict::Accepted
        };
        verdicts.push(ResultVerdict {
            key: r.key(),
            verdict,
            reason: None,
        });
        if verdict == Verdict::Accepted {
            log.results.push(r);
        }
    }
    Json(ResultAck { verdicts }).into_response()
}

async fn refusals(State(s): State<Arc<Shared>>, Json(r): Json<Refusal>) -> StatusCode {
    s.log.lock().unwrap().refusals.push(r);
    StatusCode::NO_CONTENT
}

async fn heartbeat(State(s): State<Arc<Shared>>) -> StatusCode {
    if down(&s).is_some() {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    if forgotten(&s) {
        return StatusCode::UNAUTHORIZED;
    }
    s.log.lock().unwrap().heartbeats += 1;
    StatusCode::NO_CONTENT
}

/// Every gated task may start: a signed answer bound to the asking node, task and nonce.
async fn gate(
    Extension(peer): Extension<Peer>,
    Query(q): Query<GateQuery>,
) -> Json<signing::SignedEnvelope> {
    let answer = GateAnswer {
        node_key: peer.0,
        deployment: q.deployment,
        task: q.task,
        nonce: q.nonce,
        ready: true,
        waiting_for: vec![],
        blocked: false,
    };
    Json(signing::sign_gate_answer(
        &signing::signing_key_from_seed([77; 32]),
        &answer,
    ))
}

/// Accepts any client certificate (the key is the identity) and checks the handshake signatures.
#[derive(Debug)]
struct AnyClientCert(Arc<rustls::crypto::CryptoProvider>);

impl ClientCertVerifier for AnyClientCert {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }
    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// An agent process with its own state and work directories.
pub struct AgentProcess {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    child: Option<Child>,
}

impl AgentProcess {
    /// Writes a config for `controller` (plus `extra` lines) and starts `plinth-agent run`.
    pub fn start(controller: &FakeController, cmdline: &str, extra: &str) -> AgentProcess {
        let line = format!("controller = \"{}\"", controller.url);
        Self::start_configured(controller, &line, cmdline, extra)
    }

    /// Starts an agent given several controllers (`controllers = [...]`, in this order), which share the
    /// first one's certificate and signing key.
    pub fn start_for(controllers: &[&FakeController], cmdline: &str, extra: &str) -> AgentProcess {
        let urls: Vec<&str> = controllers.iter().map(|c| c.url.as_str()).collect();
        let line = format!("controllers = {urls:?}");
        Self::start_configured(controllers[0], &line, cmdline, extra)
    }

    /// Starts an agent as a network boot image does: its configuration file says nothing about the
    /// controller (only the test's timings and state directory); `cmdline` gives everything.
    pub fn start_from_cmdline(cmdline: &str) -> AgentProcess {
        Self::start_with_settings("", cmdline)
    }

    fn start_configured(
        controller: &FakeController,
        controllers: &str,
        cmdline: &str,
        extra: &str,
    ) -> AgentProcess {
        let settings = format!(
            "{controllers}\ncontroller_public_key = \"{}\"\ncontroller_cert = \"{}\"\n{extra}\n",
            controller.public_key(),
            controller.cert.display(),
        );
        Self::start_with_settings(&settings, cmdline)
    }

    /// Writes a config of `settings` and the test's state directory and timings, and starts the agent.
    fn start_with_settings(settings: &str, cmdline: &str) -> AgentProcess {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cmdline"), cmdline).unwrap();
        let config = dir.path().join("agent.toml");
        std::fs::write(
            &config,
            format!(
                "state_dir = \"{}\"\npoll_wait_secs = 5\nheartbeat_secs = 1\nbackoff_min_ms = 50\n\
                 backoff_max_ms = 500\nkill_grace_secs = 1\n{settings}",
                dir.path().join("state").display(),
            ),
        )
        .unwrap();
        let mut a = AgentProcess {
            dir,
            config,
            child: None,
        };
        a.spawn();
        a
    }

    /// Starts the process (again).
    pub fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("agent.log"))
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_plinth-agent"))
            .arg("run")
            .arg("--config")
            .arg(&self.config)
            .arg("--cmdline")
            .arg(self.dir.path().join("cmdline"))
            .env("PLINTH_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    /// The state directory.
    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// The work directory (the default, under the state directory).
    pub fn work(&self) -> PathBuf {
        self.state().join("work")
    }

    /// The node's fingerprint (once the agent made its key).
    pub fn fingerprint(&self) -> String {
        let pem = std::fs::read_to_string(self.state().join("node.key")).unwrap();
        signing::fingerprint(&signing::signing_key_from_pem(&pem).unwrap().verifying_key())
    }

    /// Sends SIGTERM and returns the exit code.
    pub fn terminate(&mut self) -> Option<i32> {
        let mut child = self.child.take()?;
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends a signal to the process.
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let child = self.child.as_ref().expect("the agent runs");
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
    }

    /// Kills the process at once.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The agent's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("agent.log")).unwrap_or_default()
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits for a condition, panicking with `what` after `limit`.
pub fn wait_until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A list for `node_key`.
pub fn list(node_key: &str, revision: u64, tasks: serde_json::Value) -> TaskList {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    TaskList {
        format: TASK_LIST_FORMAT,
        node_key: node_key.to_string(),
        node_id: 1,
        deployment_id: 9,
        phase: "deploy".into(),
        revision,
        issued_at: now,
        expires_at: now + 600,
        nonce: String::new(),
        noop: false,
        cancel: false,
        tasks: serde_json::from_value(tasks).unwrap(),
    }
}

/// A path as a string for shell commands.
pub fn p(path: &Path) -> String {
    path.display().to_string()
}
