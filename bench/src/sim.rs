//! What every simulated agent needs: the controller's address and certificate, a node key in a client
//! certificate, a keep-alive HTTP/1.1 connection, and requests on it.

use anyhow::{bail, Context, Result};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::Request;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use std::path::Path;
use std::sync::Arc;

/// Where the controller is and which certificate it shows.
pub struct Target {
    /// Host name for SNI and the Host header.
    pub host: String,
    /// `host:port`.
    pub addr: String,
    roots: Arc<rustls::RootCertStore>,
}

/// Parses `https://host:port` and the controller's certificate.
pub fn target(controller: &str, cert: &Path) -> Result<Arc<Target>> {
    let url = controller.trim_end_matches('/');
    let hostport = url
        .strip_prefix("https://")
        .context("--controller must be an https:// URL")?;
    let host = hostport
        .rsplit_once(':')
        .map(|(h, _)| h)
        .unwrap_or(hostport)
        .trim_matches(['[', ']'])
        .to_string();
    let mut roots = rustls::RootCertStore::empty();
    for c in
        CertificateDer::pem_file_iter(cert).with_context(|| format!("read {}", cert.display()))?
    {
        roots.add(c?)?;
    }
    Ok(Arc::new(Target {
        host,
        addr: hostport.to_string(),
        roots: Arc::new(roots),
    }))
}

fn builder() -> Result<rustls::ConfigBuilder<rustls::ClientConfig, rustls::WantsVerifier>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?)
}

/// Simulated node `seed`'s TLS configuration: its own ed25519 key in its own client certificate.
pub fn agent_config(target: &Target, seed: usize) -> Result<Arc<rustls::ClientConfig>> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&(seed as u64).to_le_bytes());
    bytes[31] = 0x5a;
    let key = plinth_common::signing::signing_key_from_seed(bytes);
    let der = plinth_common::signing::signing_key_to_der(&key)?;
    let pair = rcgen::KeyPair::try_from(der.as_slice()).context("node key")?;
    let cert = rcgen::CertificateParams::new(vec![format!("sim-{seed}")])?.self_signed(&pair)?;
    let config = builder()?
        .with_root_certificates(target.roots.clone())
        .with_client_auth_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der)),
        )?;
    Ok(Arc::new(config))
}

/// An operator's TLS configuration (no client certificate).
pub fn operator_config(target: &Target) -> Result<Arc<rustls::ClientConfig>> {
    Ok(Arc::new(
        builder()?
            .with_root_certificates(target.roots.clone())
            .with_no_client_auth(),
    ))
}

/// A keep-alive connection.
pub struct Conn {
    sender: SendRequest<Full<Bytes>>,
    host: String,
    token: Option<String>,
}

/// Connects with a TLS configuration.
pub async fn connect(
    target: &Target,
    config: Arc<rustls::ClientConfig>,
    token: Option<String>,
) -> Result<Conn> {
    connect_from(target, config, token, None).await
}

/// Connects from a given local address (any port), or from the system's choice when `None`. One source
/// address has some 28,000 ephemeral ports: a fleet larger than that spreads over several.
pub async fn connect_from(
    target: &Target,
    config: Arc<rustls::ClientConfig>,
    token: Option<String>,
    local: Option<std::net::IpAddr>,
) -> Result<Conn> {
    let tcp = match local {
        None => tokio::net::TcpStream::connect(&target.addr)
            .await
            .with_context(|| format!("connect {}", target.addr))?,
        Some(ip) => {
            let remote = tokio::net::lookup_host(&target.addr)
                .await?
                .next()
                .with_context(|| format!("{} resolves to no address", target.addr))?;
            let socket = if ip.is_ipv4() {
                tokio::net::TcpSocket::new_v4()?
            } else {
                tokio::net::TcpSocket::new_v6()?
            };
            socket
                .bind(std::net::SocketAddr::new(ip, 0))
                .with_context(|| format!("bind {ip}"))?;
            socket
                .connect(remote)
                .await
                .with_context(|| format!("connect {} from {ip}", target.addr))?
        }
    };
    tcp.set_nodelay(true)?;
    let name = ServerName::try_from(target.host.clone())?;
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .context("TLS handshake")?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(Conn {
        sender,
        host: target.host.clone(),
        token,
    })
}

impl Conn {
    /// Sends a request; returns the status and the body.
    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        body: Option<String>,
    ) -> Result<(u16, Bytes)> {
        self.sender.ready().await?;
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.host);
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = req.body(Full::new(Bytes::from(body.unwrap_or_default())))?;
        let resp = self.sender.send_request(req).await?;
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }

    /// Sends and requires a 2xx answer; returns its JSON (Null when empty).
    pub async fn json(
        &mut self,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> Result<serde_json::Value> {
        let (status, bytes) = self.send(method, path, body.map(|b| b.to_string())).await?;
        if !(200..300).contains(&status) {
            bail!(
                "{method} {path}: HTTP {status}: {}",
                String::from_utf8_lossy(&bytes)
            );
        }
        if bytes.is_empty() {
            return Ok(serde_json::Value::Null);
        }
        Ok(serde_json::from_slice(&bytes)?)
    }
}

/// Registers simulated node `seed` with tags and a rack.
pub async fn register(
    target: Arc<Target>,
    seed: usize,
    tags: Vec<String>,
    rack: Option<String>,
) -> Result<()> {
    let mut c = connect(&target, agent_config(&target, seed)?, None).await?;
    let body = serde_json::json!({
        "agent_version": "loadgen", "name": format!("sim-{seed}"),
        "facts": {"hostname": format!("sim-{seed}")}, "tags": tags, "rack": rack
    });
    c.json("POST", "/agent/v1/register", Some(body)).await?;
    Ok(())
}

/// Registers nodes `0..count` with at most `concurrency` handshakes at once; `place` gives each its tags
/// and rack. Returns the seconds it took.
pub async fn register_all(
    target: &Arc<Target>,
    count: usize,
    concurrency: usize,
    place: impl Fn(usize) -> (Vec<String>, Option<String>),
) -> Result<f64> {
    let start = std::time::Instant::now();
    let mut next = 0usize;
    let mut running = tokio::task::JoinSet::new();
    while next < count || !running.is_empty() {
        while next < count && running.len() < concurrency {
            let (tags, rack) = place(next);
            running.spawn(register(target.clone(), next, tags, rack));
            next += 1;
        }
        if let Some(r) = running.join_next().await {
            r??;
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

/// The value at a percentile of sorted microseconds, in milliseconds.
pub fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

/// CPU time (user + system) a process has used so far, in milliseconds, read from `/proc/PID/stat`;
/// `None` when the process is gone or the file does not parse (the controller may run elsewhere).
pub fn cpu_ms(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; the fields after it start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // Linux reports them in USER_HZ ticks, 100 per second on every architecture it runs on.
    Some((utime + stime) * 10.0)
}

/// Resident memory of a process, in MiB, from `/proc/PID/status`; `None` when it cannot be read.
pub fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Raises this process's soft open-file limit to its hard limit (one descriptor per simulated agent);
/// returns the limit now in force.
pub fn raise_open_files() -> Result<u64> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    }
    Ok(getrlimit(Resource::RLIMIT_NOFILE)?.0)
}

/// An operator token from a file (surrounding white space dropped).
pub fn read_token(path: &Path) -> Result<String> {
    Ok(std::fs::read_to_string(path)
        .with_context(|| format!("read {}", path.display()))?
        .trim()
        .to_string())
}

/// Assigns simulated nodes `sim-0` to `sim-{n-1}` to cluster `cid` (as an operator), paging through
/// the node list and assigning in chunks; fails when fewer than `n` are registered. Returns their ids by
/// seed.
pub async fn assign_simulated(
    op: &mut Conn,
    cid: u64,
    n: usize,
) -> Result<std::collections::BTreeMap<usize, u64>> {
    let mut ids = std::collections::BTreeMap::new();
    let mut marker = 0u64;
    loop {
        let page = op
            .json(
                "GET",
                &format!("/api/v1/nodes?limit=10000&marker={marker}"),
                None,
            )
            .await?;
        let Some(page) = page.as_array().filter(|p| !p.is_empty()) else {
            break;
        };
        for node in page {
            let Some(id) = node["id"].as_u64() else {
                continue;
            };
            marker = marker.max(id);
            let seed = node["name"]
                .as_str()
                .and_then(|name| name.strip_prefix("sim-"))
                .and_then(|s| s.parse::<usize>().ok());
            if let Some(seed) = seed.filter(|s| *s < n) {
                ids.insert(seed, id);
            }
        }
    }
    if ids.len() < n {
        bail!(
            "only {} of the {n} simulated nodes are registered",
            ids.len()
        );
    }
    let all: Vec<u64> = ids.values().copied().collect();
    for chunk in all.chunks(10_000) {
        let assign: Vec<_> = chunk
            .iter()
            .map(|id| serde_json::json!({"id": id}))
            .collect();
        op.json(
            "PUT",
            &format!("/api/v1/clusters/{cid}/nodes"),
            Some(serde_json::json!({"nodes": assign})),
        )
        .await?;
    }
    Ok(ids)
}
