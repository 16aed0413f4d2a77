//! The HTTP client for the operator API: TLS with the controller's certificate pinned as the only root,
//! a bearer token, and errors that carry the controller's message.

use anyhow::{anyhow, bail, Context, Result};
use plinth_api::errors::ErrorBody;
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::PathBuf;

/// Whether a request failed because the server's certificate does not name the host asked for: a
/// rustls error anywhere in the chain of causes, including inside (nested) I/O errors, whose `source`
/// skips the error they wrap.
fn is_name_mismatch(e: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(rustls::Error::InvalidCertificate(
        rustls::CertificateError::NotValidForName
        | rustls::CertificateError::NotValidForNameContext { .. },
    )) = e.downcast_ref::<rustls::Error>()
    {
        return true;
    }
    if let Some(inner) = e
        .downcast_ref::<std::io::Error>()
        .and_then(|io| io.get_ref())
    {
        if is_name_mismatch(inner) {
            return true;
        }
    }
    e.source().is_some_and(is_name_mismatch)
}

/// Where and how to reach the controller.
#[derive(Debug, Clone)]
pub struct Target {
    /// Base URL, e.g. `https://127.0.0.1:7443`.
    pub url: String,
    /// Bearer token.
    pub token: Option<String>,
    /// The controller's certificate (PEM), trusted as the only root.
    pub ca_cert: Option<PathBuf>,
}

/// A connected client.
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
    ca_cert: Option<PathBuf>,
}

impl Client {
    /// Builds a client for a target.
    pub fn new(target: &Target) -> Result<Self> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder().timeout(std::time::Duration::from_secs(60));
        if let Some(ca) = &target.ca_cert {
            let pem = std::fs::read(ca).with_context(|| {
                format!("cannot read the controller certificate {}", ca.display())
            })?;
            let cert = reqwest::Certificate::from_pem(&pem)
                .with_context(|| format!("{} is not a PEM certificate", ca.display()))?;
            builder = builder.tls_certs_only([cert]);
        }
        let http = builder.build().context("cannot build the HTTP client")?;
        Ok(Client {
            http,
            base: target.url.trim_end_matches('/').to_string(),
            token: target.token.clone(),
            ca_cert: target.ca_cert.clone(),
        })
    }

    /// Why `url` could not be reached: one sentence for a certificate that does not name the host
    /// (the usual mistake with a controller reached at an address its certificate lacks), else the error
    /// with its causes.
    fn unreachable(&self, url: &str, e: reqwest::Error) -> anyhow::Error {
        if !is_name_mismatch(&e) {
            return anyhow::Error::new(e).context(format!("cannot reach the controller at {url}"));
        }
        let host = reqwest::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_string()))
            .unwrap_or_else(|| url.to_string());
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
        anyhow!(
            "the controller's certificate does not name {host}{carries}: reach it by a name the \
             certificate carries, or have the controller's certificate made with {host} in tls_names \
             (`plinth-controller serve --tls-name {host}` before its first start)"
        )
    }

    /// Sends a request to `/api/v1{path}` and returns the JSON answer (Null for 204).
    pub async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value> {
        let url = format!("{}/api/v1{}", self.base, path);
        let mut req = self.http.request(method.clone(), &url);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.map_err(|e| self.unreachable(&url, e))?;
        Self::answer(method, path, resp).await
    }

    /// Sends a request with a typed query and no body, and returns the JSON answer.
    pub async fn call_query<Q: serde::Serialize>(
        &self,
        method: Method,
        path: &str,
        query: &Q,
    ) -> Result<Value> {
        let url = format!("{}/api/v1{}", self.base, path);
        let mut req = self.http.request(method.clone(), &url).query(query);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.map_err(|e| self.unreachable(&url, e))?;
        Self::answer(method, path, resp).await
    }

    /// Sends a text body (YAML or JSON documents) and returns the JSON answer.
    pub async fn call_text(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: String,
    ) -> Result<Value> {
        let url = format!("{}/api/v1{}", self.base, path);
        let mut req = self
            .http
            .request(method.clone(), &url)
            .header("content-type", content_type)
            .body(body);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.map_err(|e| self.unreachable(&url, e))?;
        Self::answer(method, path, resp).await
    }

    /// Opens a streaming GET (for Server-Sent Events).
    pub async fn stream(&self, path: &str) -> Result<reqwest::Response> {
        let url = format!("{}/api/v1{}", self.base, path);
        let mut req = self
            .http
            .get(&url)
            .header("accept", "text/event-stream")
            .timeout(std::time::Duration::from_secs(24 * 3600));
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.map_err(|e| self.unreachable(&url, e))?;
        if !resp.status().is_success() {
            bail!("GET {path}: HTTP {}", resp.status());
        }
        Ok(resp)
    }

    async fn answer(method: Method, path: &str, resp: reqwest::Response) -> Result<Value> {
        let status = resp.status();
        let text = resp
            .text()
            .await
            .context("cannot read the controller's answer")?;
        if status == StatusCode::NO_CONTENT || text.is_empty() {
            if status.is_success() {
                return Ok(Value::Null);
            }
            bail!("{method} {path}: HTTP {status}");
        }
        if !status.is_success() {
            let Ok(ErrorBody { error }) = serde_json::from_str::<ErrorBody>(&text) else {
                bail!("{method} {path}: HTTP {status}: {text}");
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
            bail!(out);
        }
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| anyhow!("{method} {path}: HTTP {status}, not JSON ({e}): {text}"))?;
        Ok(value)
    }

    /// GET an answer as text (YAML downloads, Graphviz), with an `Accept` header.
    pub async fn get_text(&self, path: &str, accept: &str) -> Result<String> {
        let url = format!("{}/api/v1{}", self.base, path);
        let mut req = self.http.get(&url).header("accept", accept);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.map_err(|e| self.unreachable(&url, e))?;
        if resp.status().is_success() {
            return resp
                .text()
                .await
                .context("cannot read the controller's answer");
        }
        // The error body is JSON: let `answer` word it.
        Self::answer(Method::GET, path, resp).await?;
        bail!("GET {path}: unexpected answer")
    }

    /// Like [`Client::call`], but `None` when the controller answers 404.
    pub async fn call_opt(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Option<Value>> {
        let url = format!("{}/api/v1{}", self.base, path);
        let mut req = self.http.request(method.clone(), &url);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.map_err(|e| self.unreachable(&url, e))?;
        if resp.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        Self::answer(method, path, resp).await.map(Some)
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
        serde_json::from_value(v).with_context(|| format!("unexpected answer to {method} {path}"))
    }

    /// GET and decode.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        let v = self.call(Method::GET, path, None).await?;
        serde_json::from_value(v).with_context(|| format!("unexpected answer to GET {path}"))
    }
}
