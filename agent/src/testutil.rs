//! Helpers shared by the crate's tests: keys, task lists and signed envelopes.

use ed25519_dalek::SigningKey;
use plinth_common::signing;
use plinth_common::wire::{TaskKind, TaskList, TaskSpec, TASK_LIST_FORMAT};

/// The controller's test signing key.
pub fn controller_key() -> SigningKey {
    signing::signing_key_from_seed([11; 32])
}

/// The node's test key.
pub fn node_key() -> SigningKey {
    signing::signing_key_from_seed([22; 32])
}

/// The node's test fingerprint.
pub fn node_fingerprint() -> String {
    signing::fingerprint(&node_key().verifying_key())
}

/// A nonce.
pub const NONCE: &str = "0123456789abcdef0123456789abcdef";

/// A clock reading inside every test list's validity.
pub const NOW: i64 = 1_700_000_100;

/// A shell task.
pub fn shell(id: &str, params: serde_json::Value) -> TaskSpec {
    task(id, TaskKind::Shell, params)
}

/// A task of any kind.
pub fn task(id: &str, kind: TaskKind, params: serde_json::Value) -> TaskSpec {
    TaskSpec {
        id: id.to_string(),
        kind,
        parameters: params.as_object().cloned().unwrap_or_default(),
        skip_reason: None,
        waits_for: vec![],
        gated: false,
        manifests: Default::default(),
    }
}

/// A list for the test node.
pub fn list(revision: u64, tasks: Vec<TaskSpec>) -> TaskList {
    TaskList {
        format: TASK_LIST_FORMAT,
        node_key: node_fingerprint(),
        node_id: 3,
        deployment_id: 42,
        phase: "deploy".into(),
        revision,
        issued_at: NOW - 100,
        expires_at: NOW + 3600,
        nonce: NONCE.into(),
        noop: false,
        cancel: false,
        tasks: tasks.into(),
    }
}

/// A list signed by `key`, as bytes on the wire.
pub fn envelope(key: &SigningKey, list: &TaskList) -> Vec<u8> {
    serde_json::to_vec(&signing::sign_task_list(key, list)).unwrap()
}

/// An attempt context for attempt 1 of task `t1` of deployment 42, revision 7, with its work and state
/// directories under `dir` and a short kill grace.
pub fn attempt(
    dir: &std::path::Path,
    shutdown: crate::shutdown::Shutdown,
) -> crate::executor::AttemptContext {
    crate::executor::AttemptContext {
        work_dir: dir.join("work"),
        kill_grace: std::time::Duration::from_millis(300),
        deployment_id: 42,
        revision: 7,
        task_id: "t1".into(),
        attempt: 1,
        shutdown,
        noop: false,
        services: std::sync::Arc::new(crate::executor::Services::local(dir.join("state"))),
    }
}
