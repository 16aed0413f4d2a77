//! The agent endpoints of the controller, over one keep-alive HTTP/1.1 client whose TLS connection carries
//! the node's client certificate.
//!
//! | call | request | success |
//! |---|---|---|
//! | [`Controller::register`] | `POST /agent/v1/register` [`Registration`] | 200 [`RegistrationAck`] |
//! | [`Controller::poll`] | `GET /agent/v1/tasks?nonce&after&wait` | 200 signed list, 204 nothing new |
//! | [`Controller::send_results`] | `POST /agent/v1/results` [`ResultsBatch`] | 200 [`ResultAck`] |
//! | [`Controller::send_refusal`] | `POST /agent/v1/refusals` [`Refusal`] | 204 |
//! | [`Controller::heartbeat`] | `POST /agent/v1/heartbeat` | 204 |
//! | [`Controller::gate`] | `GET /agent/v1/gate?deployment&task&nonce&wait` | 200 signed gate answer |
//! | [`Controller::file_manifest`] | `GET /agent/v1/files/{path}?manifest=true` | 200 [`Manifest`] |
//! | [`Controller::pull_file`] | `GET /agent/v1/files/{path}` | 200 the bytes, `X-Plinth-Sha256`, `X-Plinth-Mode` |
//!
//! Any endpoint answering 401 means the controller does not know this node (any more):
//! [`TransportError::Unauthorized`], after which the agent registers again.
//!
//! Every request goes to the current controller of the configured list; a failure that is the
//! controller's moves the agent to the next one ([`super::failover`]).

use super::body::{describe, error_from, read_limited};
use super::failover::Failover;
use super::tls::{self, TlsError};
use crate::config::Settings;
use crate::executor::services::{Manifest, Pulled};
use crate::identity::NodeIdentity;
use crate::verify::keyring::LearnedTlsPins;
use plinth_common::signing::MAX_GATE_ANSWER_BYTES;
use plinth_common::wire::{
    Refusal, Registration, RegistrationAck, ResultAck, ResultsBatch, AGENT_API_PREFIX,
    KEY_ANNOUNCEMENT_HEADER, MAX_KEY_ANNOUNCEMENT_BYTES, MAX_TASK_LIST_BYTES, SIGNING_KEY_HEADER,
};
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use plinth_common::wire::SHA256_HEADER;
/// The largest file manifest the agent reads, in bytes.
pub const MAX_MANIFEST_BYTES: usize = 16 * 1024 * 1024;

/// The largest non-task-list answer the agent reads.
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// How long a short request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How much longer than its `wait` a long-poll may take before the agent gives up on it.
pub const LONG_POLL_MARGIN: Duration = Duration::from_secs(15);

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// 401: the controller does not know this node; register again.
    #[error("the controller does not know this node (401)")]
    Unauthorized,
    /// Another non-success status.
    #[error("controller answered {status}{}: {message}", if code.is_empty() { String::new() } else { format!(" {code}") })]
    Api {
        /// HTTP status.
        status: u16,
        /// The error code from the controller's error document, if any.
        code: String,
        /// The error message, or an excerpt of the body.
        message: String,
    },
    /// The controller could not be reached or the connection broke.
    #[error("cannot reach the controller: {0}")]
    Network(String),
    /// The answer was larger than the agent reads.
    #[error("controller answer is larger than {limit} bytes (at least {size})")]
    TooLarge {
        /// The limit.
        limit: usize,
        /// The announced length, or how much had arrived when reading stopped.
        size: usize,
    },
    /// The answer is not what the endpoint returns.
    #[error("controller answer cannot be read: {0}")]
    Decode(String),
    /// Writing what arrived failed on this node (a full disk, say): no controller is to blame.
    #[error("{0}")]
    Local(String),
    /// The operating system gave no randomness for a nonce.
    #[error("no randomness for a poll nonce: {0}")]
    Random(String),
    /// The client could not be built.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// The answer to a poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PollAnswer {
    /// A signed task list envelope, exactly as received (not yet verified).
    List(Vec<u8>),
    /// Nothing new within the wait (or the node is not admitted yet).
    NoWork,
}

/// What an answer to a poll said about the controller's keys (see [`crate::verify::keyring`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyNotice {
    /// The signed key announcement, while the controller announces a rotation.
    pub announcement: Option<String>,
    /// The fingerprint of the key that signs the controller's lists.
    pub signer: Option<String>,
}

impl KeyNotice {
    fn of(response: &reqwest::Response) -> KeyNotice {
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .filter(|v| v.len() <= MAX_KEY_ANNOUNCEMENT_BYTES)
                .map(str::to_string)
        };
        KeyNotice {
            announcement: header(KEY_ANNOUNCEMENT_HEADER),
            signer: header(SIGNING_KEY_HEADER),
        }
    }
}

/// A client for the configured controllers (one at a time, see [`super::failover`]). Clones share the
/// connection pool and the choice of the current controller.
#[derive(Debug, Clone)]
pub struct Controller {
    http: reqwest::Client,
    failover: Arc<Failover>,
}

impl Controller {
    /// Builds the client for the configured controllers with this node's identity. The one TLS trust
    /// (`controller_cert` or `ca_cert`, and the TLS keys `learned` from key announcements) applies to
    /// every controller.
    pub fn new(
        settings: &Settings,
        identity: &NodeIdentity,
        learned: &LearnedTlsPins,
    ) -> Result<Controller, TransportError> {
        let tls = tls::client_config(identity, &settings.trust, learned)?;
        Controller::with_tls(settings.controllers.clone(), tls)
    }

    /// Builds a client for `bases` (in order of preference) from a ready TLS configuration.
    pub fn with_tls(
        bases: Vec<reqwest::Url>,
        tls: rustls::ClientConfig,
    ) -> Result<Controller, TransportError> {
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .http1_only()
            .user_agent(concat!("plinth-agent/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(2)
            .tcp_keepalive(Duration::from_secs(60))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| TransportError::Network(describe(&e)))?;
        Ok(Controller {
            http,
            failover: Arc::new(Failover::new(bases)),
        })
    }

    /// How many controllers the agent may use.
    pub fn controllers(&self) -> usize {
        self.failover.len()
    }

    /// The base URL of the controller requests go to now.
    pub fn current(&self) -> reqwest::Url {
        self.failover.current().base
    }

    /// Runs one request against the current controller (its base URL is passed in) and moves on to the
    /// next controller when the request failed for the controller's sake. A request still under way
    /// when another one made the agent leave its controller is abandoned with a network error, so its
    /// caller retries on the new controller instead of waiting for a dead one's timeout.
    async fn on<T, F, Fut>(&self, request: F) -> Result<T, TransportError>
    where
        F: FnOnce(reqwest::Url) -> Fut,
        Fut: Future<Output = Result<T, TransportError>>,
    {
        let target = self.failover.current();
        tokio::select! {
            result = request(target.base.clone()) => {
                self.failover.settle(&target, &result);
                result
            }
            () = self.failover.left(&target) => Err(TransportError::Network(format!(
                "abandoned: the agent left controller {} for controller {}",
                target.base,
                self.failover.current().base
            ))),
        }
    }

    /// `POST /agent/v1/register`.
    pub async fn register(
        &self,
        registration: &Registration,
    ) -> Result<RegistrationAck, TransportError> {
        self.on(|base| async move {
            let response = self.post_json(&base, "register", registration).await?;
            expect_json(response, StatusCode::OK).await
        })
        .await
    }

    /// `GET /agent/v1/tasks`: long-polls for a task list above `after`. The body is read with the
    /// [`MAX_TASK_LIST_BYTES`] limit and returned unparsed for verification, with what the answer
    /// said about the controller's keys.
    pub async fn poll(
        &self,
        nonce: &str,
        after: u64,
        wait: Duration,
    ) -> Result<(PollAnswer, KeyNotice), TransportError> {
        self.on(|base| async move {
            let response = self
                .http
                .get(url(&base, "tasks"))
                .query(&[
                    ("nonce", nonce.to_string()),
                    ("after", after.to_string()),
                    ("wait", wait.as_secs().to_string()),
                ])
                .timeout(wait + LONG_POLL_MARGIN)
                .send()
                .await
                .map_err(network)?;
            let keys = KeyNotice::of(&response);
            match response.status() {
                StatusCode::OK => Ok((
                    PollAnswer::List(read_limited(response, MAX_TASK_LIST_BYTES).await?),
                    keys,
                )),
                StatusCode::NO_CONTENT => Ok((PollAnswer::NoWork, keys)),
                _ => Err(failure(response).await),
            }
        })
        .await
    }

    /// `POST /agent/v1/results`.
    pub async fn send_results(&self, batch: &ResultsBatch) -> Result<ResultAck, TransportError> {
        self.on(|base| async move {
            let response = self.post_json(&base, "results", batch).await?;
            expect_json(response, StatusCode::OK).await
        })
        .await
    }

    /// `POST /agent/v1/refusals`.
    pub async fn send_refusal(&self, refusal: &Refusal) -> Result<(), TransportError> {
        self.on(|base| async move {
            let response = self.post_json(&base, "refusals", refusal).await?;
            expect_empty(response).await
        })
        .await
    }

    /// `POST /agent/v1/boot`: asks the controller to set where this node boots next.
    pub async fn boot(
        &self,
        request: &plinth_common::wire::BootRequest,
    ) -> Result<plinth_common::wire::BootAnswer, TransportError> {
        self.on(|base| async move {
            let response = self.post_json(&base, "boot", request).await?;
            expect_json(response, StatusCode::OK).await
        })
        .await
    }

    /// `POST /agent/v1/heartbeat`.
    pub async fn heartbeat(&self) -> Result<(), TransportError> {
        self.on(|base| async move {
            let response = self
                .http
                .post(url(&base, "heartbeat"))
                .timeout(REQUEST_TIMEOUT)
                .send()
                .await
                .map_err(network)?;
            expect_empty(response).await
        })
        .await
    }

    /// `GET /agent/v1/gate`: may `task` of `deployment` start? Held open up to `wait`. The answer is a
    /// signed envelope, returned unverified (see [`crate::verify::Verifier::verify_gate`]).
    pub async fn gate(
        &self,
        deployment: u64,
        task: &str,
        nonce: &str,
        wait: Duration,
    ) -> Result<Vec<u8>, TransportError> {
        self.on(|base| async move {
            let response = self
                .http
                .get(url(&base, "gate"))
                .query(&[
                    ("deployment", deployment.to_string()),
                    ("task", task.to_string()),
                    ("nonce", nonce.to_string()),
                    ("wait", wait.as_secs().to_string()),
                ])
                .timeout(wait + LONG_POLL_MARGIN)
                .send()
                .await
                .map_err(network)?;
            if response.status() != StatusCode::OK {
                return Err(failure(response).await);
            }
            read_limited(response, MAX_GATE_ANSWER_BYTES).await
        })
        .await
    }

    /// `GET /agent/v1/files/{path}?manifest=true`: what the controller serves at `path`.
    pub async fn file_manifest(&self, path: &str) -> Result<Manifest, TransportError> {
        self.on(|base| async move {
            let response = self
                .http
                .get(file_url(&base, path))
                .query(&[("manifest", "true")])
                .timeout(REQUEST_TIMEOUT)
                .send()
                .await
                .map_err(network)?;
            if response.status() != StatusCode::OK {
                return Err(failure(response).await);
            }
            let body = read_limited(response, MAX_MANIFEST_BYTES).await?;
            serde_json::from_slice(&body).map_err(|e| TransportError::Decode(e.to_string()))
        })
        .await
    }

    /// `GET /agent/v1/files/{path}`: streams the file into `into`, hashing it on the way, and stops with
    /// an error once more than `max_size` bytes arrived. The caller compares the hash with the signed
    /// manifest's. No overall timeout (files may be large); a stalled connection fails after
    /// [`REQUEST_TIMEOUT`] without a byte.
    pub async fn pull_file(
        &self,
        path: &str,
        max_size: u64,
        into: &mut (dyn tokio::io::AsyncWrite + Unpin + Send),
    ) -> Result<Pulled, TransportError> {
        self.on(|base| self.pull_from(base, path, max_size, into))
            .await
    }

    async fn pull_from(
        &self,
        base: reqwest::Url,
        path: &str,
        max_size: u64,
        into: &mut (dyn tokio::io::AsyncWrite + Unpin + Send),
    ) -> Result<Pulled, TransportError> {
        use sha2::{Digest, Sha256};
        use tokio::io::AsyncWriteExt;
        let mut response = self
            .http
            .get(file_url(&base, path))
            .send()
            .await
            .map_err(network)?;
        if response.status() != StatusCode::OK {
            return Err(failure(response).await);
        }
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let announced_sha256 = header(SHA256_HEADER).ok_or_else(|| {
            TransportError::Decode(format!(
                "the answer for {path} has no {SHA256_HEADER} header"
            ))
        })?;
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        loop {
            let chunk = tokio::time::timeout(REQUEST_TIMEOUT, response.chunk())
                .await
                .map_err(|_| {
                    TransportError::Network(format!(
                        "{path}: no data for {}s",
                        REQUEST_TIMEOUT.as_secs()
                    ))
                })?
                .map_err(network)?;
            let Some(chunk) = chunk else { break };
            hasher.update(&chunk);
            size += chunk.len() as u64;
            if size > max_size {
                return Err(TransportError::TooLarge {
                    limit: usize::try_from(max_size).unwrap_or(usize::MAX),
                    size: usize::try_from(size).unwrap_or(usize::MAX),
                });
            }
            into.write_all(&chunk)
                .await
                .map_err(|e| TransportError::Local(format!("cannot write {path} locally: {e}")))?;
        }
        into.flush()
            .await
            .map_err(|e| TransportError::Local(format!("cannot write {path} locally: {e}")))?;
        Ok(Pulled {
            announced_sha256: announced_sha256.to_ascii_lowercase(),
            sha256: hex::encode(hasher.finalize()),
            size,
        })
    }

    async fn post_json<T: Serialize>(
        &self,
        base: &reqwest::Url,
        endpoint: &str,
        body: &T,
    ) -> Result<reqwest::Response, TransportError> {
        self.http
            .post(url(base, endpoint))
            .json(body)
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(network)
    }
}

/// The URL of an agent endpoint on the controller at `base` (which may have a base path).
fn url(base: &reqwest::Url, endpoint: &str) -> reqwest::Url {
    let mut url = base.clone();
    let path = format!(
        "{}{}/{}",
        base.path().trim_end_matches('/'),
        AGENT_API_PREFIX,
        endpoint
    );
    url.set_path(&path);
    url
}

/// The URL of a served file: `/agent/v1/files/` and the path's segments, each percent-encoded.
fn file_url(base: &reqwest::Url, path: &str) -> reqwest::Url {
    let mut url = url(base, "files");
    if let Ok(mut segments) = url.path_segments_mut() {
        segments.pop_if_empty();
        for s in path.split('/').filter(|s| !s.is_empty()) {
            segments.push(s);
        }
    }
    url
}

fn network(e: reqwest::Error) -> TransportError {
    TransportError::Network(describe(&e))
}

async fn failure(response: reqwest::Response) -> TransportError {
    if response.status() == StatusCode::UNAUTHORIZED {
        TransportError::Unauthorized
    } else {
        error_from(response).await
    }
}

async fn expect_json<T: DeserializeOwned>(
    response: reqwest::Response,
    want: StatusCode,
) -> Result<T, TransportError> {
    if response.status() != want {
        return Err(failure(response).await);
    }
    let body = read_limited(response, MAX_ANSWER_BYTES).await?;
    serde_json::from_slice(&body).map_err(|e| TransportError::Decode(e.to_string()))
}

async fn expect_empty(response: reqwest::Response) -> Result<(), TransportError> {
    if response.status().is_success() {
        Ok(())
    } else {
        Err(failure(response).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn controllers(bases: &[&str]) -> Controller {
        let dir = tempfile::tempdir().unwrap();
        let server = rcgen::generate_simple_self_signed(vec!["c".to_string()]).unwrap();
        let pem = dir.path().join("c.pem");
        std::fs::write(&pem, server.cert.pem()).unwrap();
        let id = NodeIdentity::from_key(plinth_common::signing::signing_key_from_seed([1; 32]));
        let tls = tls::client_config(
            &id,
            &crate::config::ServerTrust::Pinned(pem),
            &Default::default(),
        )
        .unwrap();
        let bases = bases
            .iter()
            .map(|b| reqwest::Url::parse(b).unwrap())
            .collect();
        Controller::with_tls(bases, tls).unwrap()
    }

    #[test]
    fn endpoint_urls_keep_a_base_path() {
        let base = reqwest::Url::parse("https://ctl:8443").unwrap();
        assert_eq!(
            url(&base, "tasks").as_str(),
            "https://ctl:8443/agent/v1/tasks"
        );
        assert_eq!(
            file_url(&base, "/modules/a b/x%y.pp").as_str(),
            "https://ctl:8443/agent/v1/files/modules/a%20b/x%25y.pp"
        );
        let base = reqwest::Url::parse("https://ctl:8443/plinth").unwrap();
        assert_eq!(
            url(&base, "register").as_str(),
            "https://ctl:8443/plinth/agent/v1/register"
        );
    }

    #[tokio::test]
    async fn an_unreachable_controller_is_a_network_error() {
        // Port 9 on loopback: nothing listens there, so the connection is refused at once.
        let c = controllers(&["https://127.0.0.1:9"]);
        let err = c.heartbeat().await.unwrap_err();
        assert!(matches!(err, TransportError::Network(_)), "{err}");
        assert_eq!(c.current().as_str(), "https://127.0.0.1:9/");
    }

    #[tokio::test]
    async fn refused_and_broken_connections_move_every_clone_to_the_next_controller() {
        // A listener that accepts and closes at once: the TLS handshake fails.
        let broken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = broken.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in broken.incoming() {
                drop(stream);
            }
        });
        let tls_fails = format!("https://127.0.0.1:{port}");
        let c = controllers(&["https://127.0.0.1:9", &tls_fails]);
        let other = c.clone();
        assert_eq!(c.controllers(), 2);
        let err = c.heartbeat().await.unwrap_err();
        assert!(matches!(err, TransportError::Network(_)), "{err}");
        // The clone (the sender's, say) follows the switch.
        assert_eq!(other.current().as_str(), format!("{tls_fails}/"));
        let err = other
            .poll(
                "00112233445566778899aabbccddeeff",
                0,
                Duration::from_secs(1),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, TransportError::Network(_)), "{err}");
        // Round robin: back to the first.
        assert_eq!(c.current().as_str(), "https://127.0.0.1:9/");
    }

    #[tokio::test]
    async fn a_poll_hanging_on_a_controller_the_agent_left_is_abandoned() {
        // A controller whose host went silent: connections are accepted and never answered.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = silent.local_addr().unwrap().port();
        let (connected, arrived) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in silent.incoming() {
                held.push(stream);
                let _ = connected.send(());
            }
        });
        let c = controllers(&[&format!("https://127.0.0.1:{port}"), "https://127.0.0.1:9"]);
        let poll = {
            let c = c.clone();
            tokio::spawn(async move {
                c.poll(
                    "00112233445566778899aabbccddeeff",
                    0,
                    Duration::from_secs(25),
                )
                .await
            })
        };
        // The poll is under way once the silent controller has its connection.
        tokio::task::spawn_blocking(move || arrived.recv_timeout(Duration::from_secs(60)))
            .await
            .unwrap()
            .expect("the poll connects");
        assert!(!poll.is_finished(), "the silent controller holds the poll");
        // Another request (a heartbeat, say) found the controller failed.
        let first = c.failover.current();
        c.failover
            .settle::<()>(&first, &Err(TransportError::Network("timed out".into())));
        // The bound is far below the poll's own timeout (40 s) only to keep a broken build from hanging.
        let err = tokio::time::timeout(Duration::from_secs(20), poll)
            .await
            .expect("the poll is abandoned at the switch")
            .unwrap()
            .unwrap_err();
        assert!(
            err.to_string().contains("abandoned") && err.to_string().contains("127.0.0.1:9"),
            "{err}"
        );
        // The abandoned poll did not move the agent on again.
        assert_eq!(c.current().as_str(), "https://127.0.0.1:9/");
    }
}
