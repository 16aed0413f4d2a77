//! The messages agents and the controller exchange, and the limits both sides enforce.
//!
//! Agents talk to the controller under `/agent/v1` over mutually authenticated TLS: the agent's client
//! certificate carries its ed25519 node key, so every request is authenticated by the connection it travels
//! on. The controller's answers to polls are [`crate::signing::SignedTaskList`] envelopes; everything else is
//! plain JSON described here.

mod boot;
mod bounded;
mod deployment;
mod facts;
mod files;
mod keys;
mod results;
mod task_list;

pub use boot::{BootAnswer, BootRequest, NextBoot};
pub use deployment::{DeploymentEvent, DeploymentStatus, GroupStatus, NodeStatus};
pub use facts::{normalize_mac, Cpu, Disk, Dmi, Facts, Memory, Nic, OsRelease};
pub use files::{
    FileManifest, ManifestFile, ManifestKind, MAX_MANIFEST_FILES, MODE_HEADER, SHA256_HEADER,
};
pub use keys::{
    KeyAnnouncement, KEY_ANNOUNCEMENT_HEADER, MAX_KEY_ANNOUNCEMENT_BYTES, SIGNING_KEY_HEADER,
};
pub use results::{
    json_len, Refusal, ResultAck, ResultKey, ResultStatus, ResultVerdict, ResultsBatch, TaskResult,
    Verdict, MAX_DETAILS_BYTES, MAX_MESSAGE_BYTES, MAX_RESULT_BYTES, OUTPUT_TAIL_BYTES,
    PROVISION_DETAILS_KEY,
};
pub use task_list::{CrossDependency, TaskKind, TaskList, TaskSpec, Tasks, TASK_LIST_FORMAT};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Path prefix of every agent endpoint.
pub const AGENT_API_PREFIX: &str = "/agent/v1";

/// The largest signed task list an agent accepts, in bytes, before it parses anything.
pub const MAX_TASK_LIST_BYTES: usize = 16 * 1024 * 1024;

/// The largest request body the controller accepts from an agent.
pub const MAX_AGENT_REQUEST_BYTES: usize = 4 * 1024 * 1024;

/// The largest a registration's facts may be, as JSON.
pub const MAX_FACTS_BYTES: usize = 256 * 1024;
/// The most tags, and the most labels, a registration may carry.
pub const MAX_REPORTED_ITEMS: usize = 64;
/// The longest a reported name, tag, label key or rack may be, in bytes.
pub const MAX_REPORTED_NAME_BYTES: usize = 128;
/// The longest a label's value may be, in bytes.
pub const MAX_LABEL_VALUE_BYTES: usize = 512;
/// The prefix of the tags primary election gives; a node can never report one itself.
pub const PRIMARY_TAG_PREFIX: &str = "primary-";

/// The longest a poll may be held open by the controller, in seconds.
pub const MAX_POLL_WAIT_SECS: u64 = 30;

/// The agent protocol this build speaks: what an agent and a controller say to each other at
/// registration. A controller serves agents of this protocol and of the one before it
/// ([`OLDEST_AGENT_PROTOCOL`]), and refuses others saying which side to upgrade.
///
/// - 1: registration without `protocol` (agents before the protocol was said).
/// - 2: registration says `protocol`; the answer says the controller's version and protocol.
pub const PROTOCOL_VERSION: u32 = 2;

/// The oldest agent protocol a controller of this build serves: the one before [`PROTOCOL_VERSION`].
pub const OLDEST_AGENT_PROTOCOL: u32 = PROTOCOL_VERSION - 1;

/// The protocol of an agent that does not say one.
fn first_protocol() -> u32 {
    1
}

/// What an agent sends when it registers (on every start, and again when the controller asks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registration {
    /// The agent's version, for operators.
    pub agent_version: String,
    /// The node's name as its configuration sets it (agent config `name`); the hostname when absent.
    #[serde(default)]
    pub name: Option<String>,
    /// Hardware and system facts.
    pub facts: Facts,
    /// Tags from the agent's configuration and kernel command line.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Labels (`key=value`) from configuration and kernel command line.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The rack the node sits in, when known.
    #[serde(default)]
    pub rack: Option<String>,
    /// An enrollment token that admits the node without an operator.
    #[serde(default)]
    pub enrollment_token: Option<String>,
    /// The agent protocol it speaks ([`PROTOCOL_VERSION`]; 1 when absent).
    #[serde(default = "first_protocol")]
    pub protocol: u32,
}

impl Registration {
    /// Checks the sizes of what the agent reports: facts at most [`MAX_FACTS_BYTES`], at most
    /// [`MAX_REPORTED_ITEMS`] tags and labels, names at most [`MAX_REPORTED_NAME_BYTES`], label values at
    /// most [`MAX_LABEL_VALUE_BYTES`]. The error names the field.
    pub fn check_sizes(&self) -> Result<(), String> {
        let facts = results::json_len(&self.facts);
        if facts > MAX_FACTS_BYTES {
            return Err(format!(
                "facts are {facts} bytes, more than the limit of {MAX_FACTS_BYTES}"
            ));
        }
        for (field, count) in [("tags", self.tags.len()), ("labels", self.labels.len())] {
            if count > MAX_REPORTED_ITEMS {
                return Err(format!(
                    "{count} {field}, more than the limit of {MAX_REPORTED_ITEMS}"
                ));
            }
        }
        let names = self
            .name
            .iter()
            .map(|n| ("name", n.as_str()))
            .chain(self.rack.iter().map(|r| ("rack", r.as_str())))
            .chain(self.tags.iter().map(|t| ("tag", t.as_str())))
            .chain(self.labels.keys().map(|k| ("label", k.as_str())));
        for (field, value) in names {
            if value.len() > MAX_REPORTED_NAME_BYTES {
                return Err(format!(
                    "{field} {:?}… is {} bytes, more than the limit of {MAX_REPORTED_NAME_BYTES}",
                    value.chars().take(32).collect::<String>(),
                    value.len()
                ));
            }
            if value.chars().any(char::is_control) {
                return Err(format!("{field} {value:?} holds a control character"));
            }
        }
        if let Some((key, value)) = self
            .labels
            .iter()
            .find(|(_, v)| v.len() > MAX_LABEL_VALUE_BYTES)
        {
            return Err(format!(
                "label {key:?} has a value of {} bytes, more than the limit of {MAX_LABEL_VALUE_BYTES}",
                value.len()
            ));
        }
        Ok(())
    }
}

/// Whether a node may receive work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Admission {
    /// Known but not yet accepted by an operator, token or policy: it gets no work.
    Discovered,
    /// Accepted: it gets work.
    Accepted,
}

/// The controller's answer to a registration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegistrationAck {
    /// The node's numeric id in the controller.
    pub node_id: u64,
    /// The node key fingerprint the controller saw on the connection.
    pub node_key: String,
    /// Whether the node is admitted.
    pub admission: Admission,
    /// The highest task list revision the controller has issued to this node (0 when none).
    pub revision: u64,
    /// The controller's version (empty from a controller before protocol 2).
    #[serde(default)]
    pub controller_version: String,
    /// The newest agent protocol the controller speaks (0 from a controller before protocol 2).
    #[serde(default)]
    pub protocol: u32,
}

/// The query string of a poll: `GET /agent/v1/tasks?nonce=..&after=..&wait=..`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PollQuery {
    /// A fresh random value the signed answer must echo (hex, at most 64 characters).
    pub nonce: String,
    /// The last revision the agent accepted; only a higher one is returned.
    #[serde(default)]
    pub after: u64,
    /// How long the controller may hold the poll open waiting for work, in seconds.
    #[serde(default)]
    pub wait: u64,
}

/// The query string of a dependency check: may the agent start `task` of `deployment` yet?
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateQuery {
    /// The deployment the task belongs to.
    pub deployment: u64,
    /// The task id.
    pub task: String,
    /// A fresh random value the signed answer must echo (as a poll's nonce).
    pub nonce: String,
    /// How long the controller may hold the request waiting for the answer to become yes, in seconds.
    #[serde(default)]
    pub wait: u64,
}

/// The controller's answer to a dependency check, signed (see [`crate::signing::sign_gate_answer`]) and
/// bound to the node, the deployment, the task and the request's nonce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateAnswer {
    /// The fingerprint of the node key the answer is for.
    pub node_key: String,
    /// The deployment asked about.
    pub deployment: u64,
    /// The task asked about.
    pub task: String,
    /// The nonce of the request answered.
    pub nonce: String,
    /// True when every dependency has finished and any concurrency limit leaves room.
    pub ready: bool,
    /// Why not, for the agent's log.
    #[serde(default)]
    pub waiting_for: Vec<String>,
    /// True when a dependency failed, so the task can never run.
    #[serde(default)]
    pub blocked: bool,
}

/// Checks that a nonce is well-formed: 16 to 64 lowercase hex characters.
pub fn valid_nonce(nonce: &str) -> bool {
    (16..=64).contains(&nonce.len())
        && nonce
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonce_rules() {
        assert!(valid_nonce("0123456789abcdef"));
        assert!(!valid_nonce("0123456789ABCDEF"));
        assert!(!valid_nonce("short"));
        assert!(!valid_nonce(&"a".repeat(65)));
    }
}
