//! Controller to controller: a gate question an agent asks at a controller that does not sequence is
//! forwarded to the one that does.
//!
//! The request carries a header signed with the list signing key all controllers share (a timestamp
//! and the path with its query), so only a controller can ask. The answer is the gate answer the
//! sequencing controller signs with that same key for the agent's node key and nonce, passed to the
//! agent unchanged: the agent verifies it as any gate answer, so the connection between controllers
//! needs no certificate check of its own for integrity (it is TLS all the same).

use crate::clock::now_ms;
use base64::Engine as _;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier};
use plinth_common::signing::SignedEnvelope;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::sync::Arc;
use std::time::Duration;

/// The header a controller's request to another carries.
pub const PEER_HEADER: &str = "plinth-peer";
/// How far a peer request's timestamp may be from now.
const PEER_SKEW_MS: i64 = 30_000;
/// Domain separation for the header's signature.
const PEER_DOMAIN: &str = "plinth-peer-v1";

/// The forwarding client.
pub struct Peers {
    client: reqwest::Client,
}

/// Why a forwarded question got no answer.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The other controller could not be reached or answered badly.
    #[error("the controller sequencing deployments ({url}) did not answer: {reason}")]
    Unreachable {
        /// Its URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// It answered with an error status.
    #[error("the controller sequencing deployments answered {status}: {body}")]
    Refused {
        /// The status.
        status: u16,
        /// Its body.
        body: String,
    },
}

impl Peers {
    /// A client for forwarding.
    pub fn new() -> Result<Peers, String> {
        let provider = crate::tls::provider();
        let tls = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnswersAreSigned(provider)))
            .with_no_client_auth();
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Peers { client })
    }

    /// Asks the controller at `url` for a gate answer (its `path_and_query` under it), waiting up to
    /// `wait` for it.
    pub async fn gate(
        &self,
        signer: &SigningKey,
        url: &str,
        path_and_query: &str,
        wait: Duration,
    ) -> Result<SignedEnvelope, PeerError> {
        let unreachable = |reason: String| PeerError::Unreachable {
            url: url.to_string(),
            reason,
        };
        let answer = self
            .client
            .get(format!("{url}{path_and_query}"))
            .header(PEER_HEADER, peer_header(signer, path_and_query, now_ms()))
            .timeout(wait + Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        let status = answer.status();
        if !status.is_success() {
            let body = answer.text().await.unwrap_or_default();
            return Err(PeerError::Refused {
                status: status.as_u16(),
                body: body.chars().take(500).collect(),
            });
        }
        answer
            .json::<SignedEnvelope>()
            .await
            .map_err(|e| unreachable(e.to_string()))
    }
}

/// The header proving a request comes from a controller holding the signing key.
pub fn peer_header(signer: &SigningKey, path_and_query: &str, now_ms: i64) -> String {
    let signature = signer.sign(peer_message(now_ms, path_and_query).as_bytes());
    format!(
        "{now_ms}.{}",
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(signature.to_bytes())
    )
}

/// Whether `header` was made with one of the shared signing keys (`keys`: during a rotation, the
/// controllers switch one after another) for this request, recently.
pub fn peer_header_valid(
    keys: &[ed25519_dalek::VerifyingKey],
    header: &str,
    path_and_query: &str,
    now_ms: i64,
) -> bool {
    let Some((at, signature)) = header.split_once('.') else {
        return false;
    };
    let Ok(at) = at.parse::<i64>() else {
        return false;
    };
    if (now_ms - at).abs() > PEER_SKEW_MS {
        return false;
    }
    let Ok(bytes) = base64::engine::general_purpose::STANDARD_NO_PAD.decode(signature) else {
        return false;
    };
    let Ok(signature) = Signature::from_slice(&bytes) else {
        return false;
    };
    let message = peer_message(at, path_and_query);
    keys.iter()
        .any(|key| key.verify(message.as_bytes(), &signature).is_ok())
}

fn peer_message(at: i64, path_and_query: &str) -> String {
    format!("{PEER_DOMAIN}\n{at}\n{path_and_query}")
}

/// Accepts the other controller's certificate without checking who it names (its answers are signed
/// with the shared key, which the agent checks), while still checking the handshake's signatures.
#[derive(Debug)]
struct AnswersAreSigned(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnswersAreSigned {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_shared_key_makes_a_valid_peer_header_for_that_request_and_time() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let other = SigningKey::from_bytes(&[8; 32]);
        let path = "/internal/v1/gate?node_key=ab&deployment=1&task=t&nonce=00&wait=5";
        let header = peer_header(&key, path, 1_000_000);
        let (ours, theirs) = ([key.verifying_key()], [other.verifying_key()]);
        assert!(peer_header_valid(&ours, &header, path, 1_000_000 + 1_000));
        assert!(!peer_header_valid(&theirs, &header, path, 1_000_000));
        // During a rotation either key of the two is accepted.
        let both = [other.verifying_key(), key.verifying_key()];
        assert!(peer_header_valid(&both, &header, path, 1_000_000));
        assert!(!peer_header_valid(
            &ours,
            &header,
            "/internal/v1/gate?node_key=cd",
            1_000_000
        ));
        assert!(!peer_header_valid(&ours, &header, path, 1_000_000 + 60_000));
        assert!(!peer_header_valid(&ours, "garbage", path, 1_000_000));
    }
}
