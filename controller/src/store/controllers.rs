//! What several controllers sharing one database keep there: each one's heartbeat, the sequencing
//! lease (who runs deployments' sequencing now, with a fencing token), and the notices they send
//! each other through the database (PostgreSQL's `LISTEN`/`NOTIFY`).

use serde::{Deserialize, Serialize};

/// The one lease: its holder runs the sequencing of every running deployment.
pub const SEQUENCER_LEASE: &str = "sequencer";

/// A controller's heartbeat, written every second.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerBeat {
    /// The controller's id (kept in its data directory, so a restart keeps it).
    pub id: String,
    /// Its name for operators (the host name unless configured).
    pub name: String,
    /// The URL other controllers and operators reach it at.
    pub url: String,
    /// When this process started (milliseconds since the epoch).
    pub started_ms: i64,
    /// Now (milliseconds since the epoch).
    pub now_ms: i64,
    /// Agents with a connection open to it now.
    pub agents: u64,
}

/// A controller as the database last heard of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControllerRecord {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its URL.
    pub url: String,
    /// When its process started.
    pub started_ms: i64,
    /// Its last heartbeat.
    pub seen_ms: i64,
    /// Agents connected to it at its last heartbeat.
    pub agents: u64,
}

/// The sequencing lease as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRecord {
    /// The controller holding it (or that held it last).
    pub holder: String,
    /// Its fencing token: one more each time the lease changes hands (or its holder restarts).
    pub token: u64,
    /// When it expires unless renewed (milliseconds since the epoch).
    pub expires_ms: i64,
}

/// What a controller proves it still holds when it records a deployment's step: a step recorded
/// under a lease that changed hands since is refused ([`super::StoreError::Fenced`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The holder.
    pub holder: String,
    /// The token it was granted.
    pub token: u64,
}

/// A notice from one controller to the others, sent through the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Lists were published or deployments ended: polls served elsewhere look again.
    Board,
    /// A deployment was recorded by a controller that does not sequence: the holder takes it on.
    Deployments,
    /// A controller that does not sequence stored these nodes' results: the holder folds them in.
    Results {
        /// The deployment.
        deployment: u64,
        /// The nodes.
        nodes: Vec<u64>,
    },
    /// An operator asked to cancel a deployment at a controller that does not sequence.
    Commands,
    /// A node registered, was accepted or deleted: the others read it again (who may poll, as what).
    Node {
        /// The node.
        id: u64,
    },
    /// The listening connection was lost and made again: notices may have been missed meanwhile.
    Reconnected,
}

impl Notice {
    /// The notice as the text sent on the database's channel.
    pub fn payload(&self) -> String {
        match self {
            Notice::Board => "board".into(),
            Notice::Deployments => "deployments".into(),
            Notice::Results { deployment, nodes } => format!(
                "results:{deployment}:{}",
                nodes
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Notice::Commands => "commands".into(),
            Notice::Node { id } => format!("node:{id}"),
            Notice::Reconnected => "reconnected".into(),
        }
    }

    /// Reads a notice's text; `None` for text this controller does not know (a newer one's).
    pub fn parse(text: &str) -> Option<Notice> {
        match text {
            "board" => Some(Notice::Board),
            "deployments" => Some(Notice::Deployments),
            "commands" => Some(Notice::Commands),
            "reconnected" => Some(Notice::Reconnected),
            _ if text.starts_with("node:") => Some(Notice::Node {
                id: text["node:".len()..].parse().ok()?,
            }),
            _ => {
                let rest = text.strip_prefix("results:")?;
                let (deployment, nodes) = rest.split_once(':')?;
                Some(Notice::Results {
                    deployment: deployment.parse().ok()?,
                    nodes: nodes
                        .split(',')
                        .map(str::parse)
                        .collect::<Result<_, _>>()
                        .ok()?,
                })
            }
        }
    }
}

/// The most nodes named in one results notice (its text stays well under PostgreSQL's 8,000 bytes).
pub const NODES_PER_NOTICE: usize = 300;

/// Where claiming the lease leaves it: `held` is the claimant's token when it holds the lease now.
pub fn claim_outcome(
    current: Option<&LeaseRecord>,
    holder: &str,
    held: Option<u64>,
    now_ms: i64,
) -> Option<u64> {
    match current {
        None => Some(1),
        // Renewing what it holds keeps the token.
        Some(l) if l.holder == holder && Some(l.token) == held => Some(l.token),
        // Free (expired), or its own from before a restart: a new token fences anything done under
        // the old one.
        Some(l) if l.expires_ms <= now_ms || l.holder == holder => Some(l.token + 1),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_read_back_as_written() {
        for n in [
            Notice::Board,
            Notice::Deployments,
            Notice::Results {
                deployment: 7,
                nodes: vec![12, 13],
            },
            Notice::Commands,
            Notice::Node { id: 3 },
            Notice::Reconnected,
        ] {
            assert_eq!(Notice::parse(&n.payload()), Some(n));
        }
        assert_eq!(Notice::parse("results:x:1"), None);
        assert_eq!(Notice::parse("something newer"), None);
    }

    #[test]
    fn a_lease_changes_hands_only_when_free_and_its_token_grows() {
        let held = LeaseRecord {
            holder: "a".into(),
            token: 4,
            expires_ms: 1_000,
        };
        assert_eq!(claim_outcome(None, "a", None, 0), Some(1));
        assert_eq!(claim_outcome(Some(&held), "a", Some(4), 500), Some(4));
        assert_eq!(claim_outcome(Some(&held), "b", None, 500), None);
        assert_eq!(claim_outcome(Some(&held), "b", None, 1_000), Some(5));
        // The holder restarted: it takes the lease again at once, under a new token.
        assert_eq!(claim_outcome(Some(&held), "a", None, 500), Some(5));
    }
}
