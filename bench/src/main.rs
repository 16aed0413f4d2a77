//! `plinth-loadgen`: many simulated agents, each with its own node key and TLS connection, registering with
//! a controller and then polling it as fast as they can. Prints throughput and latency percentiles.
//!
//! ```text
//! plinth-loadgen --controller https://127.0.0.1:7443 --cert data/tls/cert.pem --nodes 10000 \
//!     --connections 256 --seconds 20
//! ```
//! The controller must admit the simulated nodes (`--auto-accept`) for polls to be authorised.

use anyhow::{bail, Context, Result};
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::Request;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "plinth-loadgen",
    about = "Simulated agents polling a Plinth controller"
)]
struct Args {
    /// The controller's URL (https://host:port).
    #[arg(long)]
    controller: String,
    /// The controller's certificate (PEM).
    #[arg(long)]
    cert: PathBuf,
    /// How many simulated nodes to register first.
    #[arg(long, default_value_t = 10_000)]
    nodes: usize,
    /// How many of them poll at once, each over its own keep-alive connection.
    #[arg(long, default_value_t = 256)]
    connections: usize,
    /// How long to poll.
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    /// Registration concurrency.
    #[arg(long, default_value_t = 64)]
    register_concurrency: usize,
}

struct Target {
    host: String,
    addr: String,
    roots: Arc<rustls::RootCertStore>,
}

/// A simulated node's TLS client configuration (its own key in its own certificate).
fn client_config(target: &Target, seed: usize) -> Result<Arc<rustls::ClientConfig>> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&(seed as u64).to_le_bytes());
    bytes[31] = 0x5a;
    let key = plinth_common::signing::signing_key_from_seed(bytes);
    let der = plinth_common::signing::signing_key_to_der(&key)?;
    let pair = rcgen::KeyPair::try_from(der.as_slice()).context("node key")?;
    let cert = rcgen::CertificateParams::new(vec![format!("sim-{seed}")])?.self_signed(&pair)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(target.roots.clone())
        .with_client_auth_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der)),
        )?;
    Ok(Arc::new(config))
}

async fn connect(
    target: &Target,
    config: Arc<rustls::ClientConfig>,
) -> Result<SendRequest<Full<Bytes>>> {
    let tcp = tokio::net::TcpStream::connect(&target.addr)
        .await
        .with_context(|| format!("connect {}", target.addr))?;
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
    Ok(sender)
}

async fn send(
    sender: &mut SendRequest<Full<Bytes>>,
    host: &str,
    method: &str,
    path: &str,
    body: Option<String>,
) -> Result<u16> {
    sender.ready().await?;
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", host);
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    let req = req.body(Full::new(Bytes::from(body.unwrap_or_default())))?;
    let resp = sender.send_request(req).await?;
    let status = resp.status().as_u16();
    resp.into_body().collect().await?;
    Ok(status)
}

async fn register(target: Arc<Target>, seed: usize) -> Result<()> {
    let mut s = connect(&target, client_config(&target, seed)?).await?;
    let body = serde_json::json!({
        "agent_version": "loadgen", "name": format!("sim-{seed}"),
        "facts": {"hostname": format!("sim-{seed}")}, "tags": ["sim"]
    });
    let status = send(
        &mut s,
        &target.host,
        "POST",
        "/agent/v1/register",
        Some(body.to_string()),
    )
    .await?;
    if status != 200 {
        bail!("registration of sim-{seed} got HTTP {status}");
    }
    Ok(())
}

async fn poller(target: Arc<Target>, seed: usize, until: Instant) -> Result<Vec<u32>> {
    let mut s = connect(&target, client_config(&target, seed)?).await?;
    let mut latencies = Vec::with_capacity(100_000);
    let mut n: u64 = 0;
    while Instant::now() < until {
        n += 1;
        let path = format!(
            "/agent/v1/tasks?nonce={:032x}&after=0&wait=0",
            (seed as u128) << 64 | n as u128
        );
        let start = Instant::now();
        let status = send(&mut s, &target.host, "GET", &path, None).await?;
        latencies.push(start.elapsed().as_micros().min(u32::MAX as u128) as u32);
        if status != 204 && status != 200 {
            bail!("poll of sim-{seed} got HTTP {status}");
        }
    }
    Ok(latencies)
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = args.controller.trim_end_matches('/');
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
    for cert in CertificateDer::pem_file_iter(&args.cert)
        .with_context(|| format!("read {}", args.cert.display()))?
    {
        roots.add(cert?)?;
    }
    let target = Arc::new(Target {
        host,
        addr: hostport.to_string(),
        roots: Arc::new(roots),
    });

    let start = Instant::now();
    let mut next = 0usize;
    let mut running = tokio::task::JoinSet::new();
    while next < args.nodes || !running.is_empty() {
        while next < args.nodes && running.len() < args.register_concurrency {
            running.spawn(register(target.clone(), next));
            next += 1;
        }
        if let Some(r) = running.join_next().await {
            r??;
        }
    }
    let reg_secs = start.elapsed().as_secs_f64();
    eprintln!(
        "registered {} nodes in {reg_secs:.1} s ({:.0}/s)",
        args.nodes,
        args.nodes as f64 / reg_secs
    );

    let connections = args.connections.min(args.nodes.max(1));
    let until = Instant::now() + Duration::from_secs(args.seconds);
    let started = Instant::now();
    let mut pollers = tokio::task::JoinSet::new();
    for i in 0..connections {
        // Spread the pollers over the registered nodes.
        let seed = i * args.nodes.max(1) / connections;
        pollers.spawn(poller(target.clone(), seed, until));
    }
    let mut all = Vec::new();
    while let Some(r) = pollers.join_next().await {
        all.extend(r??);
    }
    let secs = started.elapsed().as_secs_f64();
    all.sort_unstable();
    let report = serde_json::json!({
        "registered_nodes": args.nodes,
        "connections": connections,
        "seconds": secs,
        "polls": all.len(),
        "polls_per_second": all.len() as f64 / secs,
        "latency_ms": {"p50": percentile(&all, 0.50), "p90": percentile(&all, 0.90),
                       "p99": percentile(&all, 0.99), "max": percentile(&all, 1.0)},
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
