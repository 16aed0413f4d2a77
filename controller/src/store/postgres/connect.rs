//! Reading a `postgres://` URL and opening connections: plain, or TLS through rustls.
//!
//! The URL is libpq's (`postgres://user:password@host:port/dbname?sslmode=...`) as tokio-postgres reads
//! it, with two additions libpq has and tokio-postgres does not: `sslmode=verify-full` (and
//! `verify-ca`), and `sslrootcert=FILE` (PEM certificates to trust). Whenever TLS is used the server's
//! certificate is verified, against `sslrootcert` if given or else the system's trusted roots:
//! `prefer` (the default: TLS when the server offers it) and `require` verify as `verify-full` does.
//! `sslmode=disable` connects in plain text (a trusted network, a local socket).

use super::bridge::{store_error, Connector};
use crate::store::{StoreError, StoreResult};
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::config::SslMode;

/// A database URL, read.
#[derive(Clone)]
pub struct Target {
    /// What tokio-postgres connects with.
    pub config: tokio_postgres::Config,
    /// The TLS settings, unless `sslmode=disable`.
    pub tls: Option<rustls::ClientConfig>,
}

fn bad(message: impl std::fmt::Display) -> StoreError {
    StoreError::Database(format!("database_url: {message}"))
}

/// Reads a `postgres://` (or `postgresql://`) URL. Errors never repeat the URL (it may hold a password).
pub fn parse(url: &str) -> StoreResult<Target> {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let mut root_file = None;
    let mut kept = Vec::new();
    for pair in query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslrootcert" => root_file = Some(value.to_string()),
            "sslmode" => match value {
                "disable" | "prefer" | "require" => kept.push(pair.to_string()),
                "verify-ca" | "verify-full" => kept.push("sslmode=require".to_string()),
                other => {
                    return Err(bad(format!(
                        "sslmode {other:?} is not one of disable, prefer, require, verify-ca, verify-full"
                    )))
                }
            },
            _ => kept.push(pair.to_string()),
        }
    }
    let rebuilt = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    let mut config: tokio_postgres::Config = rebuilt
        .parse()
        .map_err(|e: tokio_postgres::Error| bad(super::bridge::with_causes(&e)))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(10));
    }
    if config.get_application_name().is_none() {
        config.application_name("plinth-controller");
    }
    let tls = match config.get_ssl_mode() {
        SslMode::Disable => None,
        _ => Some(client_tls(root_file.as_deref())?),
    };
    Ok(Target { config, tls })
}

/// rustls settings trusting `root_file`'s certificates, or the system's when none is given.
fn client_tls(root_file: Option<&str>) -> StoreResult<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    match root_file {
        Some(path) => {
            let pem = std::fs::read(path).map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
            let mut found = 0;
            for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(&pem) {
                let cert: rustls::pki_types::CertificateDer<'static> =
                    cert.map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
                roots
                    .add(cert)
                    .map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
                found += 1;
            }
            if found == 0 {
                return Err(bad(format!("sslrootcert {path}: no PEM certificate in it")));
            }
        }
        None => {
            let native = rustls_native_certs::load_native_certs();
            for cert in native.certs {
                // A system certificate rustls cannot use is skipped, as every TLS client does.
                let _ = roots.add(cert);
            }
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(crate::tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(bad)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

/// What opens connections to `target`, their sockets driven by `runtime`.
pub fn connector(target: Target, runtime: tokio::runtime::Handle) -> Connector {
    let config = Arc::new(target.config);
    let tls = target
        .tls
        .map(tokio_postgres_rustls::MakeRustlsConnect::new);
    Box::new(move || {
        let config = config.clone();
        let tls = tls.clone();
        let opened = runtime.spawn(async move {
            let client = match tls {
                Some(tls) => {
                    let (client, connection) = config.connect(tls).await?;
                    tokio::spawn(drive(connection));
                    client
                }
                None => {
                    let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
                    tokio::spawn(drive(connection));
                    client
                }
            };
            Ok::<_, tokio_postgres::Error>(client)
        });
        match super::bridge::wait(opened) {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => Err(match store_error(e) {
                StoreError::Database(m) => {
                    StoreError::Database(format!("cannot connect to the database: {m}"))
                }
                other => other,
            }),
            Err(e) => Err(StoreError::Database(format!(
                "cannot connect to the database: {e}"
            ))),
        }
    })
}

/// Drives one connection's socket until it closes.
async fn drive<F>(connection: F)
where
    F: std::future::Future<Output = Result<(), tokio_postgres::Error>>,
{
    if let Err(e) = connection.await {
        tracing::warn!(error = %e, "database connection closed");
    }
}
