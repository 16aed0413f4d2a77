//! Talking to the controller: the mutually authenticated TLS client ([`tls`]), the agent endpoints
//! ([`client`]), the choice among several controllers ([`failover`]), bounded body reading ([`body`])
//! and retry pacing ([`backoff`]).

pub mod backoff;
pub mod body;
pub mod client;
pub mod failover;
pub mod tls;

pub use backoff::Backoff;
pub use client::{Controller, KeyNotice, PollAnswer, TransportError};

/// A fresh random poll nonce: 16 bytes from the operating system, as 32 lowercase hex characters.
pub fn fresh_nonce() -> Result<String, TransportError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| TransportError::Random(e.to_string()))?;
    Ok(hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    #[test]
    fn nonces_are_fresh_and_valid() {
        let a = super::fresh_nonce().unwrap();
        let b = super::fresh_nonce().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(plinth_common::wire::valid_nonce(&a));
    }
}
