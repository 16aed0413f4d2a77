//! The agent's TLS configuration. The agent presents a self-signed client certificate made from its node
//! key, so the controller knows which node every request comes from. It trusts the controller by pinning
//! its exact certificate (the default for self-signed controllers), by pinning its key (the SHA-256 of
//! the certificate's SubjectPublicKeyInfo, which a network boot image gets on its kernel command line),
//! or through CA certificates. Only the `ring` provider is used.

use crate::config::ServerTrust;
use crate::identity::NodeIdentity;
use crate::verify::keyring::LearnedTlsPins;
use plinth_common::signing;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{
    verify_tls12_signature, verify_tls13_signature, CryptoProvider, WebPkiSupportedAlgorithms,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why the TLS client cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate file cannot be read or holds no certificate.
    #[error("certificate file {path}: {message}")]
    CertFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The client certificate cannot be made from the node key.
    #[error("cannot make the client certificate from the node key: {0}")]
    ClientCert(String),
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The ring crypto provider, used explicitly everywhere.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds the client configuration: client certificate from the node key, server trust as configured
/// and the TLS keys learned from the controller's key announcements (`learned`, read on every new
/// connection, so a renewed certificate is trusted without restarting the agent), HTTP/1.1 only.
pub fn client_config(
    identity: &NodeIdentity,
    trust: &ServerTrust,
    learned: &LearnedTlsPins,
) -> Result<rustls::ClientConfig, TlsError> {
    let provider = provider();
    let (cert, key) = client_certificate(identity)?;
    let verifier: Arc<dyn ServerCertVerifier> = match trust {
        ServerTrust::Pinned(path) => Arc::new(PinnedServerCert::new(
            first_certificate(path)?,
            provider.signature_verification_algorithms,
        )),
        ServerTrust::KeyPin(digest) => Arc::new(PinnedServerCert::for_key(
            *digest,
            provider.signature_verification_algorithms,
        )),
        ServerTrust::Ca(path) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in read_certificates(path)? {
                roots.add(cert).map_err(|e| TlsError::CertFile {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
            }
            rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots),
                provider.clone(),
            )
            .build()
            .map_err(|e| TlsError::CertFile {
                path: path.clone(),
                message: e.to_string(),
            })?
        }
    };
    let verifier = Arc::new(OrLearned {
        configured: verifier,
        learned: learned.clone(),
        algorithms: provider.signature_verification_algorithms,
    });
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_client_auth_cert(vec![cert], key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// A self-signed certificate for the node key (common name `plinth-node <fingerprint>`), and the key.
pub fn client_certificate(
    identity: &NodeIdentity,
) -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>), TlsError> {
    let der = identity
        .pkcs8_der()
        .map_err(|e| TlsError::ClientCert(e.to_string()))?;
    let key_pair = rcgen::KeyPair::try_from(der.as_slice())
        .map_err(|e| TlsError::ClientCert(e.to_string()))?;
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new())
        .map_err(|e| TlsError::ClientCert(e.to_string()))?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        format!("plinth-node {}", identity.fingerprint()),
    );
    let cert = params
        .self_signed(&key_pair)
        .map_err(|e| TlsError::ClientCert(e.to_string()))?;
    Ok((
        cert.der().clone(),
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der)),
    ))
}

/// Every certificate in a PEM file (at least one).
pub fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let err = |message: String| TlsError::CertFile {
        path: path.to_path_buf(),
        message,
    };
    let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .map_err(|e| err(format!("not PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(err("holds no PEM certificate".into()));
    }
    Ok(certs)
}

/// The first certificate of a PEM file: the end-entity certificate to pin.
fn first_certificate(path: &Path) -> Result<CertificateDer<'static>, TlsError> {
    let mut certs = read_certificates(path)?;
    Ok(certs.swap_remove(0))
}

/// Accepts one end-entity certificate, by what is pinned (the certificate byte for byte, or its key), and
/// still checks that the server proves it holds that certificate's key in the handshake. Names, dates and
/// issuers are not consulted: the pin is the trust decision.
#[derive(Debug)]
pub struct PinnedServerCert {
    pinned: Pin,
    algorithms: WebPkiSupportedAlgorithms,
}

/// What a [`PinnedServerCert`] accepts.
#[derive(Debug)]
enum Pin {
    /// Exactly this certificate.
    Certificate(CertificateDer<'static>),
    /// Any certificate whose SubjectPublicKeyInfo (DER) has this SHA-256: a certificate made again for
    /// the same key keeps the pin.
    Key([u8; 32]),
}

impl PinnedServerCert {
    /// Pins `cert`, verifying handshake signatures with `algorithms`.
    pub fn new(cert: CertificateDer<'static>, algorithms: WebPkiSupportedAlgorithms) -> Self {
        PinnedServerCert {
            pinned: Pin::Certificate(cert),
            algorithms,
        }
    }

    /// Pins the key whose SubjectPublicKeyInfo hashes to `digest` ([`signing::tls_key_pin_digest`]),
    /// verifying handshake signatures with `algorithms`.
    pub fn for_key(digest: [u8; 32], algorithms: WebPkiSupportedAlgorithms) -> Self {
        PinnedServerCert {
            pinned: Pin::Key(digest),
            algorithms,
        }
    }
}

/// Whether `end_entity`'s key is the one `digest` pins; a mismatch names both keys' pins.
fn check_key_pin(end_entity: &CertificateDer<'_>, digest: &[u8; 32]) -> Result<(), rustls::Error> {
    let cert = webpki::EndEntityCert::try_from(end_entity)
        .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
    let spki = cert.subject_public_key_info();
    if signing::tls_key_pin_digest(spki.as_ref()) == *digest {
        return Ok(());
    }
    let mismatch = KeyPinMismatch {
        found: signing::tls_key_pin(spki.as_ref()),
        pinned: format!("{}{}", signing::TLS_KEY_PIN_PREFIX, hex::encode(digest)),
    };
    // Said here, in the message itself, and not only in the failed request's error field: a
    // network-booted node's console shows the journal's messages, not their fields.
    tracing::warn!("refusing the controller's TLS certificate: {mismatch}");
    Err(rustls::Error::InvalidCertificate(CertificateError::Other(
        rustls::OtherError(Arc::new(mismatch)),
    )))
}

impl ServerCertVerifier for PinnedServerCert {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match &self.pinned {
            Pin::Certificate(pinned) if end_entity.as_ref() == pinned.as_ref() => {}
            Pin::Certificate(_) => {
                tracing::warn!(
                    "refusing the controller's TLS certificate: it is not the pinned controller_cert; if the \
                     controller renewed it while this agent was away, pin the new certificate and restart \
                     the agent (docs/SECURITY.md, \"An agent that missed a key rotation\")"
                );
                return Err(rustls::Error::InvalidCertificate(
                    CertificateError::ApplicationVerificationFailure,
                ));
            }
            Pin::Key(digest) => check_key_pin(end_entity, digest)?,
        }
        Ok(ServerCertVerified::assertion())
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
        self.algorithms.supported_schemes()
    }
}

/// The configured trust, or a TLS key the controller announced (signed with its list signing key)
/// before renewing its certificate: a certificate whose key has a learned pin is accepted as a pinned
/// one is (the handshake still proves the server holds the key).
#[derive(Debug)]
struct OrLearned {
    configured: Arc<dyn ServerCertVerifier>,
    learned: LearnedTlsPins,
    algorithms: WebPkiSupportedAlgorithms,
}

impl OrLearned {
    fn learned(&self, end_entity: &CertificateDer<'_>) -> bool {
        let pins = self.learned.read().unwrap_or_else(|e| e.into_inner());
        if pins.is_empty() {
            return false;
        }
        let Ok(cert) = webpki::EndEntityCert::try_from(end_entity) else {
            return false;
        };
        let digest = signing::tls_key_pin_digest(cert.subject_public_key_info().as_ref());
        pins.contains(&digest)
    }
}

impl ServerCertVerifier for OrLearned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.learned(end_entity) {
            return Ok(ServerCertVerified::assertion());
        }
        self.configured.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        if self.learned(cert) {
            return verify_tls12_signature(message, cert, dss, &self.algorithms);
        }
        self.configured.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        if self.learned(cert) {
            return verify_tls13_signature(message, cert, dss, &self.algorithms);
        }
        self.configured.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.configured.supported_verify_schemes()
    }
}

/// A controller whose TLS key is not the pinned one. Its message names both pins, so an operator reading
/// a refusing node's log sees which key the server it reached holds.
struct KeyPinMismatch {
    found: String,
    pinned: String,
}

impl std::fmt::Display for KeyPinMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the controller's TLS key is {}, not the pinned plinth.tls={}",
            self.found, self.pinned
        )
    }
}

// rustls prints the error it carries with `{:?}`: the same sentence.
impl std::fmt::Debug for KeyPinMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for KeyPinMismatch {}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(n: u8) -> NodeIdentity {
        NodeIdentity::from_key(signing::signing_key_from_seed([n; 32]))
    }

    #[test]
    fn client_certificate_carries_the_node_key() {
        let id = identity(4);
        let (cert, _key) = client_certificate(&id).unwrap();
        // The raw ed25519 public key appears in the certificate's SubjectPublicKeyInfo.
        let raw = id.public_key().to_bytes();
        assert!(cert
            .as_ref()
            .windows(raw.len())
            .any(|w| w == raw.as_slice()));
    }

    #[test]
    fn pinned_verifier_accepts_only_the_pinned_certificate() {
        let (a, _) = client_certificate(&identity(1)).unwrap();
        let (b, _) = client_certificate(&identity(2)).unwrap();
        let v = PinnedServerCert::new(a.clone(), provider().signature_verification_algorithms);
        let name = ServerName::try_from("controller").unwrap();
        let now = UnixTime::now();
        assert!(v.verify_server_cert(&a, &[], &name, &[], now).is_ok());
        assert!(v.verify_server_cert(&b, &[], &name, &[], now).is_err());
    }

    /// The SubjectPublicKeyInfo of a certificate rcgen made, as rcgen itself writes it.
    fn spki_of(key: &rcgen::KeyPair) -> Vec<u8> {
        rcgen::PublicKeyData::subject_public_key_info(key)
    }

    #[test]
    fn key_pinned_verifier_accepts_any_certificate_of_the_pinned_key_only() {
        let key = rcgen::KeyPair::generate().unwrap();
        let other = rcgen::KeyPair::generate().unwrap();
        let cert_for = |key: &rcgen::KeyPair, name: &str| {
            rcgen::CertificateParams::new(vec![name.to_string()])
                .unwrap()
                .self_signed(key)
                .unwrap()
                .der()
                .clone()
        };
        let pin = signing::tls_key_pin_digest(&spki_of(&key));
        let v = PinnedServerCert::for_key(pin, provider().signature_verification_algorithms);
        let name = ServerName::try_from("controller").unwrap();
        let now = UnixTime::now();
        // Two certificates of the pinned key, with other names: both pass.
        for cert in [cert_for(&key, "controller"), cert_for(&key, "elsewhere")] {
            assert!(v.verify_server_cert(&cert, &[], &name, &[], now).is_ok());
        }
        // Another key, even with the same name, does not; nor does garbage.
        let err = v
            .verify_server_cert(&cert_for(&other, "controller"), &[], &name, &[], now)
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(&format!(
                "not the pinned plinth.tls={}",
                signing::tls_key_pin(&spki_of(&key))
            )) && text.contains(&signing::tls_key_pin(&spki_of(&other))),
            "{text}"
        );
        let garbage = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x00]);
        assert!(v
            .verify_server_cert(&garbage, &[], &name, &[], now)
            .is_err());
        // The pin is computed from the certificate as it stands, as the common function does.
        let cert = cert_for(&key, "controller");
        let parsed = webpki::EndEntityCert::try_from(&cert).unwrap();
        assert_eq!(
            signing::tls_key_pin(parsed.subject_public_key_info().as_ref()),
            signing::tls_key_pin(&spki_of(&key))
        );
    }

    #[test]
    fn config_builds_for_pinned_and_ca_trust() {
        let dir = tempfile::tempdir().unwrap();
        let server = rcgen::generate_simple_self_signed(vec!["controller".to_string()]).unwrap();
        let pem = dir.path().join("controller.pem");
        std::fs::write(&pem, server.cert.pem()).unwrap();
        let id = identity(3);
        let cfg =
            client_config(&id, &ServerTrust::Pinned(pem.clone()), &Default::default()).unwrap();
        assert_eq!(cfg.alpn_protocols, vec![b"http/1.1".to_vec()]);
        client_config(&id, &ServerTrust::Ca(pem), &Default::default()).unwrap();
        client_config(&id, &ServerTrust::KeyPin([7; 32]), &Default::default()).unwrap();

        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "nothing here").unwrap();
        let err = client_config(&id, &ServerTrust::Pinned(empty), &Default::default()).unwrap_err();
        assert!(err.to_string().contains("empty.pem"), "{err}");
        let err = client_config(
            &id,
            &ServerTrust::Pinned(dir.path().join("missing.pem")),
            &Default::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("missing.pem"), "{err}");
    }
}
