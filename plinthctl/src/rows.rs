//! The operator API's typed answers as table rows: each type names its columns and its cells, so no
//! table reads a JSON answer by string.

use crate::output::{self, list, opt, word, Format};
use plinth_api::deployments::{DeploymentRecord, StartedDeployment};
use plinth_api::records::{
    AgentInfo, ClusterRecord, ConfigurationRecord, NodeView, ReleaseRecord, StrategyRecord,
};
use plinth_common::strategy::DeploymentConfiguration;
use serde::Serialize;

/// A typed answer printed as one row of a table.
pub trait Row: Serialize {
    /// The columns.
    const HEADER: &'static [&'static str];
    /// This item's cells, one per column.
    fn cells(&self) -> Vec<String>;
}

/// Prints typed answers: JSON as the controller sent them (the same types serialize the same way), or a
/// table.
pub fn print<T: Row>(format: Format, items: &[T]) {
    match format {
        Format::Json => output::json(&serde_json::to_value(items).unwrap_or_default()),
        Format::Table => {
            let rows: Vec<Vec<String>> = items.iter().map(Row::cells).collect();
            output::table(T::HEADER, &rows);
        }
    }
}

/// Prints one typed answer: JSON as an object, or a one-row table.
pub fn print_one<T: Row>(format: Format, item: &T) {
    match format {
        Format::Json => output::json(&serde_json::to_value(item).unwrap_or_default()),
        Format::Table => output::table(T::HEADER, &[item.cells()]),
    }
}

/// Now, in milliseconds since the epoch (0 if the clock is before it).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A moment relative to now, in words: `3 s ago`, `4 min ago`, `2 h ago`, `5 d ago` (`-` when unknown).
pub fn ago(then_ms: i64, now_ms: i64) -> String {
    if then_ms <= 0 {
        return "-".into();
    }
    let secs = (now_ms - then_ms).max(0) / 1000;
    match secs {
        0..=119 => format!("{secs} s ago"),
        120..=7199 => format!("{} min ago", secs / 60),
        7200..=172_799 => format!("{} h ago", secs / 3600),
        _ => format!("{} d ago", secs / 86_400),
    }
}

/// The columns of `plinthctl controllers`.
pub const CONTROLLER_HEADER: &[&str] = &[
    "id",
    "name",
    "url",
    "state",
    "sequencer",
    "agents",
    "started",
    "last seen",
];

/// The controllers as rows: times relative to `now_ms`, agents only for live controllers (a dead
/// one's count is its last heartbeat's, stale), and names made distinct: controllers on one host share
/// its name, so a shared name is followed by the controller's address (or its id).
pub fn controller_rows(
    controllers: &[plinth_api::controllers::ControllerView],
    now_ms: i64,
) -> Vec<Vec<String>> {
    let count = |f: &dyn Fn(&plinth_api::controllers::ControllerView) -> String, v: &str| {
        controllers.iter().filter(|c| f(c) == v).count()
    };
    let authority = |c: &plinth_api::controllers::ControllerView| {
        reqwest::Url::parse(&c.url)
            .ok()
            .and_then(|u| {
                u.host_str()
                    .map(|h| format!("{h}:{}", u.port_or_known_default().unwrap_or(0)))
            })
            .unwrap_or_else(|| c.url.clone())
    };
    controllers
        .iter()
        .map(|c| {
            let name = if count(&|o| o.name.clone(), &c.name) < 2 {
                c.name.clone()
            } else if count(
                &|o| format!("{} {}", o.name, authority(o)),
                &format!("{} {}", c.name, authority(c)),
            ) < 2
            {
                format!("{} ({})", c.name, authority(c))
            } else {
                format!("{} ({})", c.name, c.id)
            };
            vec![
                c.id.clone(),
                name,
                c.url.clone(),
                if c.live { "live" } else { "not live" }.into(),
                if c.sequencer { "yes" } else { "" }.into(),
                if c.live {
                    c.agents.to_string()
                } else {
                    "-".into()
                },
                ago(c.started_ms, now_ms),
                ago(c.seen_ms, now_ms),
            ]
        })
        .collect()
}

impl Row for NodeView {
    const HEADER: &'static [&'static str] = &[
        "id",
        "name",
        "admission",
        "status",
        "online",
        "cluster",
        "tags",
        "reported tags",
        "roles",
        "pending",
        "agent",
        "why",
    ];
    fn cells(&self) -> Vec<String> {
        let n = &self.node;
        // Why a node is in error, and the deployment whose report tells the rest.
        let why = match (&n.model.error_msg, n.model.error_deployment_id) {
            (Some(msg), Some(dep)) => format!("{msg} (deployment {dep})"),
            (Some(msg), None) => msg.clone(),
            (None, Some(dep)) => format!("deployment {dep} failed"),
            (None, None) => String::new(),
        };
        vec![
            n.id.to_string(),
            n.name.clone(),
            word(&n.admission),
            word(&n.status),
            self.online.to_string(),
            opt(n.cluster_id),
            list(&self.effective_tags),
            list(&n.tags),
            list(&n.roles),
            list(&n.pending_roles),
            self.agent.as_ref().map_or_else(String::new, agent_cell),
            why,
        ]
    }
}

/// An agent's version, with its protocol when it is not this release's (an agent to upgrade).
fn agent_cell(agent: &AgentInfo) -> String {
    if agent.protocol == plinth_common::wire::PROTOCOL_VERSION {
        agent.version.clone()
    } else {
        format!("{} (protocol {})", agent.version, agent.protocol)
    }
}

impl Row for ReleaseRecord {
    const HEADER: &'static [&'static str] = &["id", "name", "version"];
    fn cells(&self) -> Vec<String> {
        vec![self.id.to_string(), self.name.clone(), self.version.clone()]
    }
}

impl Row for ClusterRecord {
    const HEADER: &'static [&'static str] = &["id", "name", "release"];
    fn cells(&self) -> Vec<String> {
        vec![
            self.id.to_string(),
            self.name.clone(),
            self.release_id.to_string(),
        ]
    }
}

impl Row for StrategyRecord {
    const HEADER: &'static [&'static str] = &["cluster", "name", "groups"];
    fn cells(&self) -> Vec<String> {
        let groups = self
            .document
            .get("groups")
            .and_then(serde_json::Value::as_array)
            .map_or(0, Vec::len);
        vec![
            self.cluster_id.to_string(),
            self.name.clone(),
            groups.to_string(),
        ]
    }
}

/// A strategy just stored: its cluster and name.
#[derive(Serialize)]
#[serde(transparent)]
pub struct Stored<'a>(pub &'a StrategyRecord);

impl Row for Stored<'_> {
    const HEADER: &'static [&'static str] = &["cluster", "name"];
    fn cells(&self) -> Vec<String> {
        vec![self.0.cluster_id.to_string(), self.0.name.clone()]
    }
}

impl Row for ConfigurationRecord {
    const HEADER: &'static [&'static str] = &[
        "cluster",
        "name",
        "strategy",
        "prepare timeout",
        "deploy timeout",
    ];
    fn cells(&self) -> Vec<String> {
        let used: Option<DeploymentConfiguration> =
            serde_json::from_value(self.configuration.clone()).ok();
        vec![
            self.cluster_id.to_string(),
            self.name.clone(),
            opt(used.as_ref().and_then(|c| c.deployment_strategy.clone())),
            opt(used.as_ref().map(|c| c.prepare_node_timeout)),
            opt(used.as_ref().map(|c| c.deploy_timeout)),
        ]
    }
}

impl Row for DeploymentRecord {
    const HEADER: &'static [&'static str] = &["id", "cluster", "graph", "status", "nodes"];
    fn cells(&self) -> Vec<String> {
        vec![
            self.id.to_string(),
            self.cluster_id.to_string(),
            self.graph_type.clone(),
            self.status.to_string(),
            list(&self.node_ids),
        ]
    }
}

impl Row for StartedDeployment {
    const HEADER: &'static [&'static str] = DeploymentRecord::HEADER;
    fn cells(&self) -> Vec<String> {
        self.record.cells()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_api::controllers::ControllerView;

    #[test]
    fn an_agent_of_another_protocol_shows_it() {
        let agent = |protocol| AgentInfo {
            version: "0.1.0".into(),
            protocol,
        };
        let current = plinth_common::wire::PROTOCOL_VERSION;
        assert_eq!(agent_cell(&agent(current)), "0.1.0");
        assert_eq!(
            agent_cell(&agent(current - 1)),
            format!("0.1.0 (protocol {})", current - 1)
        );
    }

    fn view(id: &str, name: &str, url: &str, live: bool, agents: u64) -> ControllerView {
        ControllerView {
            id: id.into(),
            name: name.into(),
            url: url.into(),
            live,
            sequencer: live,
            agents,
            started_ms: 1_000_000,
            seen_ms: 1_057_000,
        }
    }

    #[test]
    fn times_read_as_words() {
        let now = 100_000_000;
        assert_eq!(ago(now - 3_000, now), "3 s ago");
        assert_eq!(ago(now - 600_000, now), "10 min ago");
        assert_eq!(ago(now - 3 * 3_600_000, now), "3 h ago");
        assert_eq!(ago(now + 5_000, now), "0 s ago");
        assert_eq!(ago(0, now), "-");
    }

    #[test]
    fn controllers_read_well() {
        let now = 1_060_000;
        let rows = controller_rows(
            &[
                view("a1", "host", "https://127.0.0.1:7001", true, 3),
                view("b2", "host", "https://127.0.0.1:7002", false, 5),
                view("c3", "other", "https://other:7443", true, 1),
            ],
            now,
        );
        assert_eq!(rows[0][1], "host (127.0.0.1:7001)");
        assert_eq!(rows[1][1], "host (127.0.0.1:7002)");
        assert_eq!(rows[2][1], "other");
        // A dead controller's agent count is stale: not shown.
        assert_eq!(rows[0][5], "3");
        assert_eq!(rows[1][5], "-");
        assert_eq!(rows[1][3], "not live");
        assert_eq!(rows[0][6], "60 s ago");
        assert_eq!(rows[0][7], "3 s ago");
        // The same name and address: the ids tell them apart.
        let rows = controller_rows(
            &[
                view("a1", "host", "https://h:1", true, 0),
                view("b2", "host", "https://h:1", true, 0),
            ],
            now,
        );
        assert_ne!(rows[0][1], rows[1][1]);
    }
}
