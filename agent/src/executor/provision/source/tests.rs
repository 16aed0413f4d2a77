//! Images from a web server over HTTPS: a real TLS server on loopback (its certificate the client's
//! one trusted root), the image streamed onto a disk file and checked against its checksum as it
//! arrives; a checksum that does not match, and a download that stops half-way, fail naming the cause,
//! and leave a disk that boots nothing.

use super::*;
use axum::body::Body;
use axum::http::header;
use axum::routing::get;
use axum::Router;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::sync::Arc;

/// The disk file's size.
const DISK: u64 = 16 << 20;

/// A raw image: a GPT-looking first sector with a signature, then data and a long run of zeros.
fn image() -> Vec<u8> {
    let mut image = vec![0u8; 6 << 20];
    image[512..520].copy_from_slice(b"EFI PART");
    for (i, b) in image[1 << 20..(3 << 20)].iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    image
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data).expect("gzip");
    gz.finish().expect("gzip")
}

/// An HTTPS server on loopback serving `/image.gz` whole and `/cut.gz` stopping half-way (it
/// announces the whole length and closes the connection after half); answers its URL and a client
/// trusting its certificate alone.
async fn serve(body: Vec<u8>) -> (String, reqwest::Client) {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("a certificate");
    let cert = certified.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let mut config = rustls::ServerConfig::builder_with_provider(crate::transport::tls::provider())
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .expect("the server's certificate");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let body = Arc::new(body);
    let (whole, cut) = (body.clone(), body);
    let app = Router::new()
        .route("/image.gz", get(move || async move { (*whole).clone() }))
        .route(
            "/cut.gz",
            get(move || async move {
                let half = cut[..cut.len() / 2].to_vec();
                let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
                    vec![Ok(half), Err(std::io::Error::other("the server went away"))];
                (
                    [(header::CONTENT_LENGTH, cut.len().to_string())],
                    Body::from_stream(futures_util::stream::iter(chunks)),
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let port = listener.local_addr().expect("its address").port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let (acceptor, app) = (acceptor.clone(), app.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper_util::service::TowerToHyperService::new(app);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).expect("the certificate as a root");
    let client = client_trusting(roots).expect("a client");
    (format!("https://localhost:{port}"), client)
}

fn disk() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a directory");
    let path = dir.path().join("disk");
    let file = std::fs::File::create(&path).expect("the disk file");
    file.set_len(DISK).expect("its size");
    // Stale data where the image's signature goes: a failure must leave none of the image's.
    std::fs::write(&path, vec![0xa5u8; 1 << 20]).expect("stale data");
    std::fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_len(DISK))
        .expect("its size");
    (dir, path)
}

fn sha256(data: &[u8]) -> ExpectedDigest {
    ExpectedDigest::new(HashAlgorithm::Sha256, &hex::encode(Sha256::digest(data)))
        .expect("a digest")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_image_is_streamed_onto_the_disk_and_checked_as_it_arrives() {
    let raw = image();
    let body = gzip(&raw);
    let (url, client) = serve(body.clone()).await;
    let home = tempfile::tempdir().expect("a directory");
    let (_stop, shutdown) = crate::shutdown::channel();
    let ctx = crate::testutil::attempt(home.path(), shutdown);
    let (_dir, disk) = disk();

    let url = reqwest::Url::parse(&format!("{url}/image.gz")).expect("a URL");
    let written = download(&ctx, &client, &url, &sha256(&body), &disk)
        .await
        .expect("written");
    assert_eq!(written.format, "raw+gzip");
    assert_eq!(written.sha256, hex::encode(Sha256::digest(&body)));
    let on_disk = std::fs::read(&disk).expect("the disk");
    assert_eq!(&on_disk[..raw.len()], &raw[..], "the image, byte for byte");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checksum_that_does_not_match_fails_and_leaves_no_signature() {
    let body = gzip(&image());
    let (url, client) = serve(body).await;
    let home = tempfile::tempdir().expect("a directory");
    let (_stop, shutdown) = crate::shutdown::channel();
    let ctx = crate::testutil::attempt(home.path(), shutdown);
    let (_dir, disk) = disk();

    let url = reqwest::Url::parse(&format!("{url}/image.gz")).expect("a URL");
    let err = download(&ctx, &client, &url, &sha256(b"another image"), &disk)
        .await
        .expect_err("refused");
    assert!(err.contains("image.gz") && err.contains("sha256"), "{err}");
    let on_disk = std::fs::read(&disk).expect("the disk");
    assert!(
        !on_disk[..1 << 20].windows(8).any(|w| w == b"EFI PART"),
        "the image's partition table was wiped: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_that_stops_half_way_fails_naming_it() {
    let body = gzip(&image());
    let (url, client) = serve(body.clone()).await;
    let home = tempfile::tempdir().expect("a directory");
    let (_stop, shutdown) = crate::shutdown::channel();
    let ctx = crate::testutil::attempt(home.path(), shutdown);
    let (_dir, disk) = disk();

    let url = reqwest::Url::parse(&format!("{url}/cut.gz")).expect("a URL");
    let err = download(&ctx, &client, &url, &sha256(&body), &disk)
        .await
        .expect_err("refused");
    assert!(err.contains("cut.gz"), "{err}");
    let on_disk = std::fs::read(&disk).expect("the disk");
    assert!(
        !on_disk[..1 << 20].windows(8).any(|w| w == b"EFI PART"),
        "nothing of the image boots: {err}"
    );
}
