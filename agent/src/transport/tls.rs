//! The agent's TLS configuration. The agent presents a self-signed client certificate made from its node
//! key, so the controller knows which node every request comes from. It trusts the controller either by
//! pinning its exact certificate (the default for self-signed controllers) or through CA certificates.
//! Only the `ring` provider is used.

use crate::config::ServerTrust;
use crate::identity::NodeIdentity;
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

/// Builds the client configuration: client certificate from the node key, server trust as configured,
/// HTTP/1.1 only.
pub fn client_config(
    identity: &NodeIdentity,
    trust: &ServerTrust,
) -> Result<rustls::ClientConfig, TlsError> {
    let provider = provider();
    let (cert, key) = client_certificate(identity)?;
    let verifier: Arc<dyn ServerCertVerifier> = match trust {
        ServerTrust::Pinned(path) => Arc::new(PinnedServerCert::new(
            first_certificate(path)?,
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

/// Accepts exactly one end-entity certificate (byte for byte) and still checks that the server proves it
/// holds that certificate's key in the handshake. Names, dates and issuers are not consulted: the pin is
/// the trust decision.
#[derive(Debug)]
pub struct PinnedServerCert {
    pinned: CertificateDer<'static>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl PinnedServerCert {
    /// Pins `cert`, verifying handshake signatures with `algorithms`.
    pub fn new(cert: CertificateDer<'static>, algorithms: WebPkiSupportedAlgorithms) -> Self {
        PinnedServerCert {
            pinned: cert,
            algorithms,
        }
    }
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
        if end_entity.as_ref() == self.pinned.as_ref() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_common::signing;

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

    #[test]
    fn config_builds_for_pinned_and_ca_trust() {
        let dir = tempfile::tempdir().unwrap();
        let server = rcgen::generate_simple_self_signed(vec!["controller".to_string()]).unwrap();
        let pem = dir.path().join("controller.pem");
        std::fs::write(&pem, server.cert.pem()).unwrap();
        let id = identity(3);
        let cfg = client_config(&id, &ServerTrust::Pinned(pem.clone())).unwrap();
        assert_eq!(cfg.alpn_protocols, vec![b"http/1.1".to_vec()]);
        client_config(&id, &ServerTrust::Ca(pem)).unwrap();

        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "nothing here").unwrap();
        let err = client_config(&id, &ServerTrust::Pinned(empty)).unwrap_err();
        assert!(err.to_string().contains("empty.pem"), "{err}");
        let err =
            client_config(&id, &ServerTrust::Pinned(dir.path().join("missing.pem"))).unwrap_err();
        assert!(err.to_string().contains("missing.pem"), "{err}");
    }
}
