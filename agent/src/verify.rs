//! Task list verification with the agent's durable state: the trusted controller keys ([`keyring`]), this node's key
//! fingerprint, the last accepted revision (persisted across reboots) and the accepted list itself, kept so
//! that a restarted agent resumes it.
//!
//! State files in the state directory: `revision` (the last accepted revision, decimal), `list.json` (the
//! accepted envelope exactly as received) and `finished` (the revision whose run has ended). Accepting a
//! list writes `list.json`, then `revision`, each durably, before anything of it runs.

pub mod keyring;

use crate::fsutil;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use keyring::Keyring;
use plinth_common::signing::{self, Expectations, GateRequest, GateVerifyError, VerifyError};
use plinth_common::wire::{GateAnswer, TaskList, MAX_TASK_LIST_BYTES};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// File holding the last accepted revision.
pub const REVISION_FILE: &str = "revision";
/// File holding the accepted list's envelope.
pub const LIST_FILE: &str = "list.json";
/// File holding the revision whose run has ended.
pub const FINISHED_FILE: &str = "finished";

/// Why the verifier's state cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// A state file cannot be read or written.
    #[error("state file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file of learned controller keys cannot be read.
    #[error(
        "controller keys file {path}: {message} (remove it to trust the configured key alone)"
    )]
    BadKeys {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A state file holds something other than a revision number.
    #[error("state file {path} does not hold a revision number: {content:?}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What it holds (first bytes).
        content: String,
    },
}

/// Why a list was refused. Nothing in a refused list runs.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The list failed a check.
    #[error("{error}")]
    Invalid {
        /// The failed check.
        error: VerifyError,
        /// The revision the list claims, when its payload could be read at all.
        claimed_revision: Option<u64>,
    },
    /// The list verified but could not be stored durably, so it must not run.
    #[error("task list revision {revision} verified but cannot be stored: {source}")]
    Storage {
        /// The list's revision.
        revision: u64,
        /// The cause.
        source: StateError,
    },
}

impl Refused {
    /// The revision the refused list claimed, if known.
    pub fn claimed_revision(&self) -> Option<u64> {
        match self {
            Refused::Invalid {
                claimed_revision, ..
            } => *claimed_revision,
            Refused::Storage { revision, .. } => Some(*revision),
        }
    }
}

/// Verifies lists against the trusted controller keys and the persisted revision.
#[derive(Debug)]
pub struct Verifier {
    keys: Arc<Keyring>,
    node_key: String,
    dir: PathBuf,
    last_revision: u64,
}

/// Checks lists without storing them: what the agent uses while it runs a list, to see whether the
/// controller ordered it to stop (a signed list with `cancel` set). Cheap to clone.
#[derive(Debug, Clone)]
pub struct ListChecker {
    keys: Arc<Keyring>,
    node_key: String,
}

impl ListChecker {
    /// Takes what a poll's answer said about the controller's keys ([`Keyring::consider`]); a
    /// failure to keep it is logged (the keys file is written again on the next announcement).
    pub fn take_key_notice(
        &self,
        announcement: Option<&str>,
        signer: Option<&str>,
        nonce: &str,
        now: i64,
    ) {
        if let Err(e) = self
            .keys
            .consider(announcement, signer, &self.node_key, nonce, now)
        {
            tracing::error!(error = %e, "cannot keep the controller's announced keys");
        }
    }

    /// Verifies an envelope as [`Verifier::accept`] does (signature, format, node, nonce, a revision
    /// above `last_revision`, times), storing nothing.
    pub fn check(
        &self,
        envelope: &[u8],
        nonce: &str,
        now: i64,
        last_revision: u64,
    ) -> Result<TaskList, Refused> {
        let expect = Expectations {
            node_key: &self.node_key,
            last_revision,
            nonce: Some(nonce),
            now: Some(now),
        };
        verify_fresh(&self.keys, envelope, &expect)
    }
}

/// Verifies a freshly polled list with the keys trusted now, and records which signed it.
fn verify_fresh(
    keys: &Keyring,
    envelope: &[u8],
    expect: &Expectations<'_>,
) -> Result<TaskList, Refused> {
    let now = expect.now.unwrap_or(0);
    let storage = |source| Refused::Storage {
        revision: claimed_revision(envelope).unwrap_or(0),
        source,
    };
    let trusted = keys.trusted(now).map_err(storage)?;
    let (list, by) =
        signing::verify_task_list_with(&trusted, envelope, expect).map_err(|error| {
            Refused::Invalid {
                claimed_revision: claimed_revision(envelope),
                error,
            }
        })?;
    keys.signed_by(&trusted[by]).map_err(storage)?;
    Ok(list)
}

impl Verifier {
    /// A checker with the same keys and node, for use while a list runs.
    pub fn checker(&self) -> ListChecker {
        ListChecker {
            keys: self.keys.clone(),
            node_key: self.node_key.clone(),
        }
    }

    /// Opens the verifier's state in `state_dir` (a missing revision file means 0), with the keys
    /// the agent trusts (see [`Keyring`]).
    pub fn open(
        state_dir: &Path,
        keys: Arc<Keyring>,
        node_key: &str,
    ) -> Result<Verifier, StateError> {
        fsutil::ensure_dir(state_dir, 0o700).map_err(|source| StateError::Io {
            path: state_dir.to_path_buf(),
            source,
        })?;
        let last_revision = read_number(&state_dir.join(REVISION_FILE))?.unwrap_or(0);
        Ok(Verifier {
            keys,
            node_key: node_key.to_string(),
            dir: state_dir.to_path_buf(),
            last_revision,
        })
    }

    /// The keys this verifier trusts.
    pub fn keys(&self) -> &Arc<Keyring> {
        &self.keys
    }

    /// Verifies a signed gate answer: a trusted key's signature, and that it answers this node's
    /// request about `task` of `deployment` with `nonce`. A task starts on nothing less.
    pub fn verify_gate(
        &self,
        envelope: &[u8],
        deployment: u64,
        task: &str,
        nonce: &str,
    ) -> Result<GateAnswer, GateVerifyError> {
        signing::verify_gate_answer_with(
            &self.keys.current_and_next(),
            envelope,
            &GateRequest {
                node_key: &self.node_key,
                deployment,
                task,
                nonce,
            },
        )
    }

    /// The last accepted revision (what polls send as `after`).
    pub fn last_revision(&self) -> u64 {
        self.last_revision
    }

    /// Verifies a freshly polled envelope (signature, format, node, nonce, revision, times) and, when it
    /// passes, stores it and persists its revision before returning it.
    pub fn accept(&mut self, envelope: &[u8], nonce: &str, now: i64) -> Result<TaskList, Refused> {
        let expect = Expectations {
            node_key: &self.node_key,
            last_revision: self.last_revision,
            nonce: Some(nonce),
            now: Some(now),
        };
        let list = verify_fresh(&self.keys, envelope, &expect)?;
        let storage = |source| Refused::Storage {
            revision: list.revision,
            source,
        };
        self.write(LIST_FILE, envelope).map_err(storage)?;
        self.write(REVISION_FILE, list.revision.to_string().as_bytes())
            .map_err(storage)?;
        self.last_revision = list.revision;
        Ok(list)
    }

    /// The accepted list whose run has not finished, re-verified (signature and node key; nonce and expiry
    /// are not checked again: it was accepted when fresh). `Ok(None)` when there is none.
    pub fn pending(&mut self) -> Result<Option<TaskList>, Refused> {
        let path = self.dir.join(LIST_FILE);
        let Some(envelope) = fsutil::read_optional(&path).map_err(|source| Refused::Storage {
            revision: self.last_revision,
            source: StateError::Io {
                path: path.clone(),
                source,
            },
        })?
        else {
            return Ok(None);
        };
        let claimed = claimed_revision(&envelope).unwrap_or(0);
        let expect = Expectations {
            node_key: &self.node_key,
            last_revision: claimed.saturating_sub(1),
            nonce: None,
            now: None,
        };
        let list = signing::verify_task_list_with(&self.keys.known(), &envelope, &expect)
            .map(|(list, _)| list)
            .map_err(|error| Refused::Invalid {
                error,
                claimed_revision: Some(claimed),
            })?;
        let finished = self.finished().map_err(|source| Refused::Storage {
            revision: list.revision,
            source,
        })?;
        if finished >= list.revision {
            return Ok(None);
        }
        if list.revision > self.last_revision {
            // Stored but the revision was not yet persisted when the agent stopped: it was accepted.
            self.write(REVISION_FILE, list.revision.to_string().as_bytes())
                .map_err(|source| Refused::Storage {
                    revision: list.revision,
                    source,
                })?;
            self.last_revision = list.revision;
        }
        Ok(Some(list))
    }

    /// Records that the run of `revision` has ended (every task has its last result in the journal).
    pub fn mark_finished(&mut self, revision: u64) -> Result<(), StateError> {
        self.write(FINISHED_FILE, revision.to_string().as_bytes())
    }

    /// Gives up a stored list that can no longer be verified, so it is not tried on every start.
    pub fn abandon_pending(&mut self) -> Result<(), StateError> {
        let path = self.dir.join(LIST_FILE);
        match std::fs::remove_file(&path) {
            Ok(()) => fsutil::sync_dir(&self.dir).map_err(|source| StateError::Io { path, source }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(StateError::Io { path, source }),
        }
    }

    /// The revision whose run has ended (0 when none).
    fn finished(&self) -> Result<u64, StateError> {
        Ok(read_number(&self.dir.join(FINISHED_FILE))?.unwrap_or(0))
    }

    fn write(&self, name: &str, bytes: &[u8]) -> Result<(), StateError> {
        let path = self.dir.join(name);
        fsutil::write_atomic(&path, bytes, 0o600).map_err(|source| StateError::Io { path, source })
    }
}

/// Reads a decimal number from a state file; `None` when missing.
fn read_number(path: &Path) -> Result<Option<u64>, StateError> {
    let Some(bytes) = fsutil::read_optional(path).map_err(|source| StateError::Io {
        path: path.to_path_buf(),
        source,
    })?
    else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&bytes);
    text.trim()
        .parse()
        .map(Some)
        .map_err(|_| StateError::Corrupt {
            path: path.to_path_buf(),
            content: text.chars().take(40).collect(),
        })
}

/// The revision an envelope's payload claims, read without trusting it (for refusal reports).
pub fn claimed_revision(envelope: &[u8]) -> Option<u64> {
    if envelope.len() > MAX_TASK_LIST_BYTES {
        return None;
    }
    let env: signing::SignedTaskList = serde_json::from_slice(envelope).ok()?;
    let payload = B64.decode(env.payload.as_bytes()).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&payload).ok()?;
    value.get("revision")?.as_u64()
}

#[cfg(test)]
mod tests;
