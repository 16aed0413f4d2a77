//! Getting the image onto the disk: the download runs on the agent's runtime and feeds, through a
//! bounded pipe, the imaging engine on a thread of its own; a download that stops half-way ends the
//! pipe early, which the engine reports (and the disk is wiped, as after any failure once writing
//! started).

use super::super::transfer::check_sealed;
use super::super::AttemptContext;
use super::ImageSource;
use crate::imaging::{
    self, ExpectedDigest, HashAlgorithm, ImagingError, WriteOptions, WriteReport,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tokio::io::AsyncWriteExt;

/// What the pipe between the download and the engine holds at most.
const PIPE_BYTES: usize = 4 << 20;

/// What was written, for the task's report.
#[derive(Debug, Clone)]
pub struct Written {
    /// The hex SHA-256 (or SHA-512, for a URL given one) of the image as downloaded.
    pub sha256: String,
    /// The format recognised: `raw` or `qcow2`, with its compression (`qcow2+zstd`).
    pub format: String,
    /// Bytes of data written.
    pub written: u64,
    /// Bytes zeroed without being written.
    pub zeroed: u64,
}

/// Streams the image onto `disk`; the error is a sentence naming the cause (and, after writing
/// started, that the disk was wiped).
pub async fn write(
    ctx: &AttemptContext,
    image: &ImageSource,
    manifests: &BTreeMap<String, String>,
    disk: &Path,
) -> Result<Written, String> {
    match image {
        ImageSource::Served(path) => write_served(ctx, path, manifests, disk).await,
        ImageSource::Url { url, checksum } => write_url(ctx, url, checksum, disk).await,
    }
}

async fn write_served(
    ctx: &AttemptContext,
    path: &str,
    manifests: &BTreeMap<String, String>,
    disk: &Path,
) -> Result<Written, String> {
    let manifest = ctx
        .services
        .files
        .manifest(path)
        .await
        .map_err(|e| format!("image {path}: {e}"))?;
    let key = path
        .split('/')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("/");
    check_sealed(path, &manifest, manifests.get(&key).map(String::as_str))?;
    let [file] = manifest.files.as_slice() else {
        return Err(format!(
            "image {path}: the controller serves a directory there, not an image file"
        ));
    };
    let expected = ExpectedDigest::new(HashAlgorithm::Sha256, &file.sha256)
        .map_err(|e| format!("image {path}: {e}"))?;
    let options = options(ctx, expected, Some(file.size));
    let (mut tx, rx) = tokio::io::duplex(PIPE_BYTES);
    let engine = start_engine(rx, disk.to_path_buf(), options);
    let pulled = ctx.services.files.stream(path, file.size, &mut tx).await;
    let _ = tx.shutdown().await;
    drop(tx);
    let written = finish(engine, disk).await;
    outcome(path, pulled.err().map(|e| e.to_string()), written, disk)
}

async fn write_url(
    ctx: &AttemptContext,
    url: &reqwest::Url,
    checksum: &ExpectedDigest,
    disk: &Path,
) -> Result<Written, String> {
    let client = web_client().map_err(|e| format!("image {url}: {e}"))?;
    download(ctx, &client, url, checksum, disk).await
}

/// Streams the image at `url` through `client` onto `disk`, checked against `checksum`.
async fn download(
    ctx: &AttemptContext,
    client: &reqwest::Client,
    url: &reqwest::Url,
    checksum: &ExpectedDigest,
    disk: &Path,
) -> Result<Written, String> {
    let mut response = client
        .get(url.clone())
        .send()
        .await
        .map_err(|e| format!("image {url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!(
            "image {url}: the server answered {}",
            response.status()
        ));
    }
    let length = response.content_length();
    let options = options(ctx, checksum.clone(), length);
    let (mut tx, rx) = tokio::io::duplex(PIPE_BYTES);
    let engine = start_engine(rx, disk.to_path_buf(), options);
    let download: Result<(), String> = async {
        loop {
            let chunk = tokio::time::timeout(std::time::Duration::from_secs(120), response.chunk())
                .await
                .map_err(|_| "no data for 120 s".to_string())?
                .map_err(|e| e.to_string())?;
            let Some(chunk) = chunk else { return Ok(()) };
            if tx.write_all(&chunk).await.is_err() {
                // The engine stopped reading: its own error says why.
                return Ok(());
            }
        }
    }
    .await;
    let _ = tx.shutdown().await;
    drop(tx);
    let written = finish(engine, disk).await;
    outcome(url.as_str(), download.err(), written, disk)
}

fn options(ctx: &AttemptContext, expected: ExpectedDigest, length: Option<u64>) -> WriteOptions {
    WriteOptions {
        expected_digest: Some(expected),
        expected_length: length,
        cancel: Some(ctx.shutdown.clone()),
        ..WriteOptions::default()
    }
}

type Engine = tokio::task::JoinHandle<Result<WriteReport, ImagingError>>;

fn start_engine(rx: tokio::io::DuplexStream, disk: PathBuf, options: WriteOptions) -> Engine {
    tokio::task::spawn_blocking(move || {
        let reader = tokio_util::io::SyncIoBridge::new(rx);
        imaging::write_image(reader, &disk, &options)
    })
}

async fn finish(engine: Engine, disk: &Path) -> Result<WriteReport, ImagingError> {
    engine.await.unwrap_or_else(|e| {
        Err(ImagingError::Read {
            after: 0,
            source: std::io::Error::other(format!(
                "the thread writing {} failed: {e}",
                disk.display()
            )),
        })
    })
}

/// The task's word on a write: the engine's error first (it names the cause and says whether the disk
/// was wiped), the download's when it alone failed.
fn outcome(
    name: &str,
    download: Option<String>,
    written: Result<WriteReport, ImagingError>,
    disk: &Path,
) -> Result<Written, String> {
    match (download, written) {
        (None, Ok(report)) => Ok(describe(report)),
        (Some(d), Ok(_)) => Err(format!("image {name}: the download failed: {d}")),
        (download, Err(e)) => {
            let nothing = if e.disk_changed() {
                String::new()
            } else {
                format!("; nothing was written to {}", disk.display())
            };
            let also = download.map_or(String::new(), |d| format!(" (the download: {d})"));
            Err(format!("image {name}: {e}{nothing}{also}"))
        }
    }
}

fn describe(report: WriteReport) -> Written {
    let format = match report.compression {
        Some(c) => format!("{}+{}", report.format, c),
        None => report.format.to_string(),
    };
    Written {
        sha256: report.digest.unwrap_or_default(),
        format,
        written: report.written,
        zeroed: report.zeroed,
    }
}

/// A client for images on web servers: the system's CA certificates, no client certificate.
fn web_client() -> Result<reqwest::Client, String> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for cert in native.certs {
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return Err("this system has no CA certificates to check the server with".into());
    }
    client_trusting(roots)
}

/// A client checking servers against `roots`.
fn client_trusting(roots: rustls::RootCertStore) -> Result<reqwest::Client, String> {
    let config = rustls::ClientConfig::builder_with_provider(crate::transport::tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(config)
        .connect_timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
