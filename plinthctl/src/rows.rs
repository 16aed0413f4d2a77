//! The operator API's typed answers as table rows: each type names its columns and its cells, so no
//! table reads a JSON answer by string.

use crate::output::{self, list, opt, word, Format};
use plinth_api::deployments::{DeploymentRecord, StartedDeployment};
use plinth_api::records::{
    ClusterRecord, ConfigurationRecord, NodeView, ReleaseRecord, StrategyRecord,
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

impl Row for plinth_api::controllers::ControllerView {
    const HEADER: &'static [&'static str] =
        &["id", "name", "url", "live", "sequencer", "agents", "seen"];
    fn cells(&self) -> Vec<String> {
        vec![
            self.id.clone(),
            self.name.clone(),
            self.url.clone(),
            self.live.to_string(),
            self.sequencer.to_string(),
            self.agents.to_string(),
            self.seen_ms.to_string(),
        ]
    }
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
    ];
    fn cells(&self) -> Vec<String> {
        let n = &self.node;
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
        ]
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
