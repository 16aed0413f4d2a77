//! Canonical bytes and ed25519 signatures for task lists.
