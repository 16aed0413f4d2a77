//! TLS for the controller: its certificate (configured, or self-signed on first start) and the client
//! certificate check that identifies agents by their node key.
//!
//! Agents present a self-signed certificate holding their ed25519 node key. The verifier accepts any such
//! certificate (the key, not a CA, is the identity) but rustls still checks that the client holds the key
//! (the handshake signature). Operators connect without a client certificate and use bearer tokens.

use anyhow::{Context, Result};
use ed25519_dalek::VerifyingKey;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{
    verify_tls12_signature, verify_tls13_signature, CryptoProvider, WebPkiSupportedAlgorithms,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};
use std::path::Path;
use std::sync::Arc;

use crate::datadir::{write_new_file, DataDir};

/// The crypto provider used everywhere (ring).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificate and key the controller serves, as PEM files: the configured ones, or the self-signed
/// pair in the data directory, made on first start.
pub fn certificate_files(
    data: &DataDir,
    configured: Option<&(std::path::PathBuf, std::path::PathBuf)>,
    names: &[String],
) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
    if let Some((cert, key)) = configured {
        return Ok((cert.clone(), key.clone()));
    }
    let (cert, key) = (data.tls_cert(), data.tls_key());
    if !cert.exists() {
        make_self_signed(&cert, &key, names)?;
        tracing::info!(path = %cert.display(), "made a self-signed TLS certificate; agents pin it");
    }
    Ok((cert, key))
}

/// Makes a self-signed certificate and its new key for `localhost`, the loopback addresses, the
/// host's name and `names`, written to `cert` and `key` (which must not exist).
pub fn make_self_signed(cert: &Path, key: &Path, names: &[String]) -> Result<()> {
    let mut all = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let host = host.trim();
        if !host.is_empty() {
            all.push(host.to_string());
        }
    }
    all.extend(names.iter().cloned());
    all.dedup();
    let made = rcgen::generate_simple_self_signed(all)
        .context("cannot make the self-signed TLS certificate")?;
    write_new_file(key, made.signing_key.serialize_pem().as_bytes(), 0o600)?;
    write_new_file(cert, made.cert.pem().as_bytes(), 0o644)?;
    Ok(())
}

pub use plinth_api::tls::{certificate_names, names_in};

/// Which of `names` the certificate at `cert` does not name (exact match; wildcards are not expanded).
pub fn names_not_covered(cert: &Path, names: &[String]) -> Vec<String> {
    let have = certificate_names(cert);
    names
        .iter()
        .filter(|n| !have.iter().any(|h| h.eq_ignore_ascii_case(n)))
        .cloned()
        .collect()
}

/// Builds the server configuration.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("cannot read certificate {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("{} is not a PEM certificate chain", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("cannot read private key {}", key.display()))?;
    let provider = provider();
    let verifier = Arc::new(AgentCertVerifier {
        algorithms: provider.signature_verification_algorithms,
    });
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .context("the TLS certificate and key do not fit together")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Accepts self-signed ed25519 client certificates: the key is the identity.
#[derive(Debug)]
struct AgentCertVerifier {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AgentCertVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        node_key_of(end_entity)
            .map(|_| ClientCertVerified::assertion())
            .ok_or(rustls::Error::InvalidCertificate(
                rustls::CertificateError::BadEncoding,
            ))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        vec![SignatureScheme::ED25519]
    }
}

/// The ed25519 public key in a certificate, if it holds one.
pub fn node_key_of(cert: &CertificateDer<'_>) -> Option<VerifyingKey> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let spki = parsed.public_key();
    if spki.algorithm.algorithm != x509_parser::oid_registry::OID_SIG_ED25519 {
        return None;
    }
    let bytes: [u8; 32] = spki.subject_public_key.data.as_ref().try_into().ok()?;
    VerifyingKey::from_bytes(&bytes).ok()
}

/// The pin of the certificate's key, as the kernel command line's `plinth.tls=` gives it to a
/// netbooted agent: `sha256:` and the hex SHA-256 of its SubjectPublicKeyInfo (DER), which stays the
/// same when the certificate is renewed with the same key.
pub fn key_pin(cert_pem: &Path) -> Result<String> {
    let der = CertificateDer::from_pem_file(cert_pem)
        .with_context(|| format!("cannot read {}", cert_pem.display()))?;
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref())
        .map_err(|e| anyhow::anyhow!("{}: {e}", cert_pem.display()))?;
    Ok(plinth_common::signing::tls_key_pin(
        cert.tbs_certificate.subject_pki.raw,
    ))
}

/// SHA-256 of a certificate's DER, hex: how operators and agents name a pinned certificate.
pub fn cert_fingerprint(cert_pem: &Path) -> Result<String> {
    use sha2::Digest;
    let der = CertificateDer::from_pem_file(cert_pem)
        .with_context(|| format!("cannot read {}", cert_pem.display()))?;
    Ok(hex::encode(sha2::Sha256::digest(der.as_ref())))
}
