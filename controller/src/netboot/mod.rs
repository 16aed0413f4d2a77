//! Network boot: a plain-HTTP listener of its own that serves iPXE scripts and the discovery image's
//! kernel and initramfs, and nothing else, and dnsmasq's configuration for DHCP and TFTP
//! ([`dnsmasq`]).
//!
//! Firmware iPXE may speak no TLS, so this listener is plain HTTP; what it serves is public: the
//! discovery image holds no secret, and the kernel command line names the controller with its
//! signing key and a pin of its TLS key, so the agent trusts nothing the boot network could change
//! (see docs/SECURITY.md, "Network boot"). The listener runs on a thread and runtime of its own with a
//! bound on connections, so a storm of booting servers (or a flood) never holds up the agent or
//! operator APIs; it reads the store at most once a second, whatever the rate of requests.

pub mod dnsmasq;
pub mod files;
pub mod script;

use crate::config::LiveConfig;
use crate::store::Store;
use anyhow::{Context, Result};
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use hyper_util::rt::TokioIo;
use plinth_api::enrollment::BootTarget;
use plinth_common::wire::normalize_mac;
use script::BootParams;
use serde::Deserialize;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tower::ServiceExt;

/// The boot listener's settings (the config file's `[netboot]` table, with defaults filled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Netboot {
    /// Where it listens (plain HTTP).
    pub listen: SocketAddr,
    /// Its URL as booting servers reach it; from `listen` when not configured.
    pub url: Option<String>,
    /// The directory with `vmlinuz` and `initrd.img` (`packaging/make-image --format netboot`).
    pub images: PathBuf,
    /// The controller's URL for agents; `advertise_url` or the listen address when not configured.
    pub controller_url: Option<String>,
    /// More kernel arguments for the discovery image (consoles, ...).
    pub kernel_args: String,
    /// Whether the enrollment token goes on the kernel command line (visible on the boot network).
    pub pass_enrollment_token: bool,
    /// The most boot connections at once.
    pub max_connections: usize,
}

/// The config file's `[netboot]` table.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetbootFile {
    /// See [`Netboot::listen`].
    pub listen: Option<SocketAddr>,
    /// See [`Netboot::url`].
    pub url: Option<String>,
    /// See [`Netboot::images`]; `netboot` in the data directory when absent.
    pub images: Option<PathBuf>,
    /// See [`Netboot::controller_url`].
    pub controller_url: Option<String>,
    /// See [`Netboot::kernel_args`].
    pub kernel_args: Option<String>,
    /// See [`Netboot::pass_enrollment_token`].
    pub pass_enrollment_token: Option<bool>,
    /// See [`Netboot::max_connections`]; 512 when absent.
    pub max_connections: Option<usize>,
}

/// The most boot connections at once, by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// How long a request's headers may take to arrive.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long what the listener knows of enrollments and keys is kept before it reads them again.
const SNAPSHOT_AGE: Duration = Duration::from_secs(1);

/// What scripts are made from: the parameters and each enrolled MAC's server, read together.
struct Snapshot {
    params: BootParams,
    macs: HashMap<String, (String, BootTarget)>,
}

/// The listener's shared state.
struct Boot {
    /// The configuration in force: the controller's URL and TLS certificate, the enrollment token.
    config: Arc<LiveConfig>,
    /// Where enrollments are read.
    store: Arc<dyn Store>,
    /// The controller's signing keys: the current public key is what the kernel command line gives
    /// agents.
    keys: Arc<crate::keys::KeyRing>,
    settings: Netboot,
    boot_url: String,
    files: files::BootFiles,
    snapshot: Mutex<Option<(Instant, Arc<Snapshot>)>>,
}

/// The URL booting servers reach the listener at: configured, or from a listen address that is one
/// address (not `0.0.0.0`).
pub fn boot_url(settings: &Netboot, bound: SocketAddr) -> Result<String> {
    match &settings.url {
        Some(url) => Ok(url.trim_end_matches('/').to_string()),
        None if !bound.ip().is_unspecified() => Ok(format!("http://{bound}")),
        None => anyhow::bail!(
            "netboot.listen is {bound}: set netboot.url to the address booting servers reach"
        ),
    }
}

/// Binds the boot listener and serves it on a thread of its own until the process ends; answers the
/// address bound. Scripts are made from the configuration in force, the enrollments in `store` and
/// the controller's public signing key.
pub fn start(
    config: Arc<LiveConfig>,
    store: Arc<dyn Store>,
    keys: Arc<crate::keys::KeyRing>,
    settings: Netboot,
) -> Result<SocketAddr> {
    let (bound_tx, bound_rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("netboot".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    let _ = bound_tx
                        .send(Err(anyhow::Error::new(e)
                            .context("cannot start the boot listener's runtime")));
                    return;
                }
            };
            runtime.block_on(async move {
                let listener = match listen(settings.listen) {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = bound_tx.send(Err(anyhow::Error::new(e).context(format!(
                            "cannot listen on {} (netboot.listen)",
                            settings.listen
                        ))));
                        return;
                    }
                };
                let made = listener
                    .local_addr()
                    .map_err(anyhow::Error::new)
                    .and_then(|bound| Ok((bound, boot_url(&settings, bound)?)));
                let (bound, boot_url) = match made {
                    Ok(m) => m,
                    Err(e) => {
                        let _ = bound_tx.send(Err(e));
                        return;
                    }
                };
                let boot = Arc::new(Boot {
                    files: files::BootFiles::new(&settings.images),
                    config,
                    store,
                    keys,
                    settings,
                    boot_url,
                    snapshot: Mutex::new(None),
                });
                let _ = bound_tx.send(Ok(bound));
                serve(boot, listener).await;
            });
        })
        .context("cannot start the boot listener's thread")?;
    bound_rx
        .recv()
        .context("the boot listener's thread ended before it listened")?
}

/// How many connections wait to be accepted: a rack's, arriving at once. The usual default (128) drops
/// the rest of a boot storm's first packets, and their clients wait seconds to try again.
const BACKLOG: u32 = 4096;

fn listen(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

async fn serve(boot: Arc<Boot>, listener: tokio::net::TcpListener) {
    let slots = Arc::new(tokio::sync::Semaphore::new(boot.settings.max_connections));
    let router = Router::new()
        .route("/boot/ipxe", get(ipxe))
        .route("/boot/files/{name}", get(file))
        .fallback(|| async { (StatusCode::NOT_FOUND, "not a boot file\n") })
        .with_state(boot.clone());
    tracing::info!(netboot_listen = ?listener.local_addr().ok(), url = %boot.boot_url, images = %boot.files.dir().display(), "serving network boot over plain HTTP");
    loop {
        // A connection waits for a slot before it is accepted: beyond the bound, clients queue in the
        // kernel's backlog and nothing else of the controller notices.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let (tcp, _peer) = match listener.accept().await {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed (netboot)");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let router = router.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(
                move |req: axum::extract::Request<hyper::body::Incoming>| {
                    router.clone().oneshot(req.map(axum::body::Body::new))
                },
            );
            let conn = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .timer(hyper_util::rt::TokioTimer::new())
                .serve_connection(TokioIo::new(tcp), service);
            let _ = conn.await;
            drop(slot);
        });
    }
}

/// `?mac=` of `/boot/ipxe`.
#[derive(Debug, Deserialize)]
struct IpxeQuery {
    mac: Option<String>,
}

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

/// `GET /boot/ipxe[?mac=]`: without a MAC, a script that asks again with the booting interface's; with
/// one, the discovery image, or the local disk for a provisioned server.
async fn ipxe(State(boot): State<Arc<Boot>>, Query(query): Query<IpxeQuery>) -> Response {
    let Some(given) = query.mac else {
        return text(StatusCode::OK, script::chain(&boot.boot_url));
    };
    let Some(mac) = normalize_mac(&given) else {
        return text(
            StatusCode::BAD_REQUEST,
            "mac must be six hex pairs, as 52:54:00:12:34:56\n".into(),
        );
    };
    let snapshot = match snapshot(&boot).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "the boot listener cannot read enrollments");
            return text(
                StatusCode::SERVICE_UNAVAILABLE,
                "the controller cannot answer now; iPXE retries\n".into(),
            );
        }
    };
    let body = match snapshot.macs.get(&mac) {
        Some((name, BootTarget::Disk)) => script::local_disk(name, &mac),
        Some((name, BootTarget::Discovery)) => {
            script::discovery(&snapshot.params, &mac, Some(name))
        }
        None => script::discovery(&snapshot.params, &mac, None),
    };
    tracing::debug!(%mac, "boot script served");
    text(StatusCode::OK, body)
}

/// `GET /boot/files/{name}`: `vmlinuz` or `initrd.img`, from memory.
async fn file(State(boot): State<Arc<Boot>>, Path(name): Path<String>) -> Response {
    let b = boot.clone();
    let got = tokio::task::spawn_blocking(move || b.files.get(&name)).await;
    match got {
        Ok(Ok(bytes)) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/octet-stream")],
            bytes,
        )
            .into_response(),
        Ok(Err(files::FileError::NotBootFile)) => {
            text(StatusCode::NOT_FOUND, "not a boot file\n".into())
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "a boot file cannot be served");
            text(
                StatusCode::NOT_FOUND,
                "the discovery image is not installed on the controller\n".into(),
            )
        }
        Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "\n".into()),
    }
}

/// What the listener knows, read again when older than [`SNAPSHOT_AGE`].
async fn snapshot(boot: &Arc<Boot>) -> Result<Arc<Snapshot>> {
    if let Some((at, s)) = boot
        .snapshot
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
    {
        if at.elapsed() < SNAPSHOT_AGE {
            return Ok(s.clone());
        }
    }
    let b = boot.clone();
    let fresh = tokio::task::spawn_blocking(move || read_snapshot(&b))
        .await
        .context("the boot listener's reader stopped")??;
    let fresh = Arc::new(fresh);
    *boot.snapshot.lock().unwrap_or_else(|p| p.into_inner()) =
        Some((Instant::now(), fresh.clone()));
    Ok(fresh)
}

fn read_snapshot(boot: &Boot) -> Result<Snapshot> {
    let config = boot.config.get();
    let controller_url = boot
        .settings
        .controller_url
        .clone()
        .or_else(|| config.advertise_url.clone())
        .unwrap_or_else(|| format!("https://{}", config.listen));
    let data = crate::datadir::DataDir::new(&config.data_dir);
    let (cert, _) = crate::tls::certificate_files(&data, config.tls_files.as_ref(), &[])?;
    let params = BootParams {
        boot_url: boot.boot_url.clone(),
        controller_url,
        signing_key: plinth_common::signing::public_key_to_text(
            &boot.keys.signer().verifying_key(),
        ),
        tls_pin: crate::tls::key_pin(&cert)?,
        token: config
            .enrollment_token
            .clone()
            .filter(|_| boot.settings.pass_enrollment_token),
        kernel_args: boot.settings.kernel_args.clone(),
    };
    let mut macs = HashMap::new();
    for e in boot.store.list_enrollments()? {
        for mac in &e.macs {
            macs.insert(mac.clone(), (e.name.clone(), e.boot));
        }
    }
    Ok(Snapshot { params, macs })
}
