//! The HTTP client for the operator API: TLS with the controller's certificate pinned as the only root,
//! a bearer token, and errors that carry the controller's message.

use anyhow::{anyhow, bail, Context, Result};
use plinth_api::errors::ErrorBody;
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The first rustls error in a chain of causes, including inside (nested) I/O errors, whose `source`
/// skips the error they wrap.
fn rustls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(r) = e.downcast_ref::<rustls::Error>() {
        return Some(r);
    }
    if let Some(inner) = e
        .downcast_ref::<std::io::Error>()
        .and_then(|io| io.get_ref())
    {
        if let Some(r) = rustls_error(inner) {
            return Some(r);
        }
    }
    e.source().and_then(rustls_error)
}

/// Whether a request failed because the server's certificate does not name the host asked for.
fn is_name_mismatch(e: &(dyn std::error::Error + 'static)) -> bool {
    matches!(
        rustls_error(e),
        Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. }
        ))
    )
}

/// Whether a request failed because the server's certificate was not issued by one `plinthctl` trusts.
fn is_unknown_issuer(e: &(dyn std::error::Error + 'static)) -> bool {
    matches!(
        rustls_error(e),
        Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer | rustls::CertificateError::BadSignature
        ))
    )
}

/// How a call to the controller failed, as far as the exit code goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The controller refused the request (a 4xx other than 401 and 404).
    Refused,
    /// What the request names does not exist (404).
    NotFound,
    /// No controller could be reached, or it could not serve (5xx).
    Unavailable,
    /// The token is missing, unknown or revoked (401).
    Unauthorized,
}

impl Failure {
    /// The exit code `plinthctl` ends with.
    pub fn exit_code(self) -> u8 {
        match self {
            Failure::Refused => 3,
            Failure::NotFound => 4,
            Failure::Unavailable => 5,
            Failure::Unauthorized => 6,
        }
    }

    /// The failure an HTTP status means.
    pub fn of_status(status: StatusCode) -> Failure {
        match status.as_u16() {
            401 => Failure::Unauthorized,
            404 => Failure::NotFound,
            500.. => Failure::Unavailable,
            _ => Failure::Refused,
        }
    }
}

/// A failed call: its kind and a message that says what to do next.
#[derive(Debug)]
pub struct ApiError {
    /// What kind of failure.
    pub kind: Failure,
    /// The message, with the controller's own words when it gave some.
    pub message: String,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

fn failed(kind: Failure, message: String) -> anyhow::Error {
    anyhow::Error::new(ApiError { kind, message })
}

/// What to do after an answer with this status, appended to the controller's message.
fn advice(status: StatusCode, had_token: bool) -> &'static str {
    match status.as_u16() {
        401 if had_token => {
            "\n  the controller does not know this token (mistyped, revoked, or another site's): give \
             an operator token with --token-file FILE (or PLINTH_TOKEN_FILE; the controller's data \
             directory holds admin.token) or --token (PLINTH_TOKEN); `plinth-controller token create` \
             makes more"
        }
        401 => {
            "\n  no token was given: give an operator token with --token-file FILE (or \
             PLINTH_TOKEN_FILE; the controller's data directory holds admin.token) or --token \
             (PLINTH_TOKEN)"
        }
        403 => "\n  this token may not do this (a read-only token?): use a token made without --read-only",
        404 => "\n  check the id or name (the `list` commands show what exists)",
        500..=599 => {
            "\n  the controller could not serve this (its log says why); try again, or give another \
             controller of the site with --controller (PLINTH_CONTROLLER takes a comma-separated list)"
        }
        _ => "",
    }
}

/// Where and how to reach the controllers.
#[derive(Debug, Clone)]
pub struct Target {
    /// Base URLs, e.g. `https://127.0.0.1:7443`: the controllers of one site, in order of preference.
    pub urls: Vec<String>,
    /// Bearer token.
    pub token: Option<String>,
    /// The controller's certificate (PEM), trusted as the only root.
    pub ca_cert: Option<PathBuf>,
}

/// A connected client. With several controllers it talks to one at a time (at first the first); a
/// request that cannot reach the current one, or that it answers 502, 503 or 504, goes to the next (round
/// robin), which stays current. A request that changes something moves on only when its connection could
/// not be made (nothing was sent): one whose answer was lost may have been done, and is not sent twice.
pub struct Client {
    http: reqwest::Client,
    bases: Vec<String>,
    current: AtomicUsize,
    token: Option<String>,
    ca_cert: Option<PathBuf>,
}

/// Whether a request that failed on its way may be sent again to another controller.
fn may_resend(method: &Method, e: &reqwest::Error) -> bool {
    let idempotent = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    !e.is_builder() && (e.is_connect() || (idempotent && (e.is_timeout() || e.is_request())))
}

impl Client {
    /// Builds a client for a target.
    pub fn new(target: &Target) -> Result<Self> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(60))
            .connect_timeout(std::time::Duration::from_secs(10));
        if let Some(ca) = &target.ca_cert {
            let pem = std::fs::read(ca).with_context(|| {
                format!(
                    "cannot read the controller certificate {} (--ca-cert or PLINTH_CA_CERT; the \
                     controller's data directory holds it as tls/cert.pem)",
                    ca.display()
                )
            })?;
            let cert = reqwest::Certificate::from_pem(&pem).with_context(|| {
                format!(
                    "{} is not a PEM certificate: give the controller's tls/cert.pem",
                    ca.display()
                )
            })?;
            builder = builder.tls_certs_only([cert]);
        }
        let http = builder.build().context("cannot build the HTTP client")?;
        let bases: Vec<String> = target
            .urls
            .iter()
            .map(|u| u.trim().trim_end_matches('/').to_string())
            .filter(|u| !u.is_empty())
            .collect();
        if bases.is_empty() {
            bail!("no controller given: --controller URL (or PLINTH_CONTROLLER; several comma-separated)");
        }
        for b in &bases {
            reqwest::Url::parse(b).map_err(|e| {
                anyhow!(
                    "--controller {b:?} is not a URL ({e}): give one such as https://master:7443"
                )
            })?;
        }
        Ok(Client {
            http,
            bases,
            current: AtomicUsize::new(0),
            token: target.token.clone(),
            ca_cert: target.ca_cert.clone(),
        })
    }

    /// The controller requests go to now. `bases` is never empty: [`Client::new`] refuses an empty list.
    pub fn current(&self) -> &str {
        &self.bases[self.current.load(Ordering::Relaxed) % self.bases.len()]
    }

    /// Sends a request built by `build` to the current controller, moving on to the next ones as the
    /// type's documentation says; the last controller's answer (or failure) is returned.
    async fn send_request(
        &self,
        method: &Method,
        path: &str,
        build: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response> {
        let n = self.bases.len();
        let first = self.current.load(Ordering::Relaxed) % n;
        for attempt in 0..n {
            let index = (first + attempt) % n;
            let url = format!("{}/api/v1{}", self.bases[index], path);
            let mut req = build(self.http.request(method.clone(), &url));
            if let Some(t) = &self.token {
                req = req.bearer_auth(t);
            }
            let last = attempt + 1 == n;
            let next = &self.bases[(index + 1) % n];
            match req.send().await {
                Ok(resp) if !last && matches!(resp.status().as_u16(), 502..=504) => {
                    eprintln!(
                        "plinthctl: controller {} answered {}; trying {next}",
                        self.bases[index],
                        resp.status()
                    );
                }
                Ok(resp) => {
                    self.current.store(index, Ordering::Relaxed);
                    return Ok(resp);
                }
                Err(e) if !last && may_resend(method, &e) => {
                    eprintln!(
                        "plinthctl: cannot reach controller {} ({}); trying {next}",
                        self.bases[index],
                        short(&e)
                    );
                }
                Err(e) => return Err(self.unreachable(&self.bases[index], e)),
            }
        }
        // The loop returns on its last attempt.
        bail!("no controller to ask")
    }

    /// Why `url` could not be reached, and what to do about it: one sentence for a certificate that does
    /// not name the host or that is not trusted, else the error with its causes and where to look.
    fn unreachable(&self, url: &str, e: reqwest::Error) -> anyhow::Error {
        let host = reqwest::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_string()))
            .unwrap_or_else(|| url.to_string());
        let others = if self.bases.len() > 1 {
            format!(" (nor any of the {} controllers given)", self.bases.len())
        } else {
            String::new()
        };
        if is_unknown_issuer(&e) {
            let what = match &self.ca_cert {
                Some(ca) => format!(
                    "the controller at {url} presents a certificate that {} did not issue: give the \
                     certificate of this controller (its data directory's tls/cert.pem) with --ca-cert \
                     or PLINTH_CA_CERT",
                    ca.display()
                ),
                None => format!(
                    "the controller's certificate at {url} is not trusted (UnknownIssuer): give its \
                     certificate with --ca-cert FILE or PLINTH_CA_CERT=FILE (the controller's data \
                     directory holds it as tls/cert.pem)"
                ),
            };
            return failed(Failure::Unavailable, what);
        }
        if !is_name_mismatch(&e) {
            let mut causes = short(&e);
            if causes.is_empty() {
                causes = e.to_string();
            }
            return failed(
                Failure::Unavailable,
                format!(
                    "cannot reach the controller at {url}{others}: {causes}\n  check that it runs and \
                     that --controller (PLINTH_CONTROLLER) names it; several controllers of a site can \
                     be given, comma-separated"
                ),
            );
        }
        let names = self
            .ca_cert
            .as_deref()
            .map(plinth_api::tls::certificate_names)
            .unwrap_or_default();
        let carries = if names.is_empty() {
            String::new()
        } else {
            format!(" (it names {})", names.join(", "))
        };
        failed(
            Failure::Unavailable,
            format!(
                "the controller's certificate does not name {host}{carries}: reach it by a name the \
                 certificate carries, or have the controller's certificate made with {host} in tls_names \
                 (`plinth-controller serve --tls-name {host}` before its first start)"
            ),
        )
    }

    /// Sends a request to `/api/v1{path}` and returns the JSON answer (Null for 204).
    pub async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value> {
        let resp = self
            .send_request(&method, path, |req| match body {
                Some(b) => req.json(b),
                None => req,
            })
            .await?;
        self.answer(method, path, resp).await
    }

    /// Sends a request with a typed query and no body, and returns the JSON answer.
    pub async fn call_query<Q: serde::Serialize>(
        &self,
        method: Method,
        path: &str,
        query: &Q,
    ) -> Result<Value> {
        let resp = self
            .send_request(&method, path, |req| req.query(query))
            .await?;
        self.answer(method, path, resp).await
    }

    /// Sends a text body (YAML or JSON documents) and returns the JSON answer.
    pub async fn call_text(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: String,
    ) -> Result<Value> {
        let resp = self
            .send_request(&method, path, |req| {
                req.header("content-type", content_type).body(body.clone())
            })
            .await?;
        self.answer(method, path, resp).await
    }

    /// Opens a streaming GET (for Server-Sent Events), resuming after `last_event_id` when given.
    pub async fn stream(
        &self,
        path: &str,
        last_event_id: Option<u64>,
    ) -> Result<reqwest::Response> {
        let resp = self
            .send_request(&Method::GET, path, |req| {
                let req = req
                    .header("accept", "text/event-stream")
                    .timeout(std::time::Duration::from_secs(24 * 3600));
                match last_event_id {
                    Some(id) => req.header("last-event-id", id.to_string()),
                    None => req,
                }
            })
            .await?;
        if !resp.status().is_success() {
            self.answer(Method::GET, path, resp).await?;
            bail!("GET {path}: unexpected answer");
        }
        Ok(resp)
    }

    async fn answer(&self, method: Method, path: &str, resp: reqwest::Response) -> Result<Value> {
        let status = resp.status();
        let text = resp.text().await.map_err(|e| {
            failed(
                Failure::Unavailable,
                format!("cannot read the controller's answer to {method} {path}: {e}"),
            )
        })?;
        if !status.is_success() {
            let kind = Failure::of_status(status);
            let advice = advice(status, self.token.is_some());
            let Ok(ErrorBody { error }) = serde_json::from_str::<ErrorBody>(&text) else {
                let text = if text.is_empty() {
                    String::new()
                } else {
                    format!(": {}", text.trim())
                };
                return Err(failed(
                    kind,
                    format!("{method} {path}: HTTP {status}{text}{advice}"),
                ));
            };
            let mut out = format!(
                "{method} {path}: {status} {}: {}",
                error.code, error.message
            );
            for f in error.findings() {
                out.push_str(&format!(
                    "\n  - group {}, {}: {}",
                    f.group.as_deref().unwrap_or("-"),
                    f.field.as_deref().unwrap_or("-"),
                    f.message
                ));
            }
            out.push_str(advice);
            return Err(failed(kind, out));
        }
        if status == StatusCode::NO_CONTENT || text.is_empty() {
            return Ok(Value::Null);
        }
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| anyhow!("{method} {path}: HTTP {status}, not JSON ({e}): {text}"))?;
        Ok(value)
    }

    /// GET an answer as text (YAML downloads, Graphviz), with an `Accept` header.
    pub async fn get_text(&self, path: &str, accept: &str) -> Result<String> {
        let resp = self
            .send_request(&Method::GET, path, |req| req.header("accept", accept))
            .await?;
        if resp.status().is_success() {
            return resp.text().await.map_err(|e| {
                failed(
                    Failure::Unavailable,
                    format!("cannot read the controller's answer to GET {path}: {e}"),
                )
            });
        }
        // The error body is JSON: let `answer` word it.
        self.answer(Method::GET, path, resp).await?;
        bail!("GET {path}: unexpected answer")
    }

    /// Like [`Client::call`], but `None` when the controller answers 404.
    pub async fn call_opt(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Option<Value>> {
        let resp = self
            .send_request(&method, path, |req| match body {
                Some(b) => req.json(b),
                None => req,
            })
            .await?;
        if resp.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        self.answer(method, path, resp).await.map(Some)
    }

    /// Sends a typed body (or none) and decodes the typed answer.
    pub async fn send<B: serde::Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<T> {
        let body = body
            .map(serde_json::to_value)
            .transpose()
            .context("cannot encode the request")?;
        let v = self.call(method.clone(), path, body.as_ref()).await?;
        decode(v, &method, path)
    }

    /// GET and decode.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        let v = self.call(Method::GET, path, None).await?;
        decode(v, &Method::GET, path)
    }
}

/// Reads an answer into its type; an answer of another shape is the controller's (exit 5), with what to
/// do about it.
fn decode<T: DeserializeOwned>(v: Value, method: &Method, path: &str) -> Result<T> {
    serde_json::from_value(v).map_err(|e| {
        failed(
            Failure::Unavailable,
            format!(
                "unexpected answer to {method} {path} ({e}): is the controller of another version? \
                 use the plinthctl of the controller's release"
            ),
        )
    })
}

/// An error's causes on one line, without reqwest's own outermost words (which repeat the URL).
fn short(e: &reqwest::Error) -> String {
    let mut parts = Vec::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p: &String| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    if parts.is_empty() {
        e.to_string()
    } else {
        parts.join(": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_have_their_exit_codes() {
        let code = |s: u16| Failure::of_status(StatusCode::from_u16(s).unwrap()).exit_code();
        assert_eq!(code(400), 3);
        assert_eq!(code(403), 3);
        assert_eq!(code(409), 3);
        assert_eq!(code(422), 3);
        assert_eq!(code(404), 4);
        assert_eq!(code(500), 5);
        assert_eq!(code(503), 5);
        assert_eq!(code(401), 6);
    }

    #[test]
    fn advice_names_what_to_give() {
        assert!(advice(StatusCode::UNAUTHORIZED, true).contains("--token-file"));
        assert!(advice(StatusCode::UNAUTHORIZED, false).contains("PLINTH_TOKEN_FILE"));
        assert!(advice(StatusCode::BAD_GATEWAY, true).contains("--controller"));
        assert_eq!(advice(StatusCode::CONFLICT, true), "");
    }

    #[test]
    fn every_controller_given_is_kept_in_order() {
        let c = Client::new(&Target {
            urls: vec!["https://a:1/".into(), " https://b:2".into(), String::new()],
            token: None,
            ca_cert: None,
        })
        .unwrap();
        assert_eq!(c.bases.len(), 2);
        assert_eq!(c.current(), "https://a:1");
        assert!(Client::new(&Target {
            urls: vec!["not a url".into()],
            token: None,
            ca_cert: None
        })
        .is_err());
    }
}
