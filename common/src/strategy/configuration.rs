//! Shipyard's `shipyard/DeploymentConfiguration/v1`: which strategy a deployment uses
//! (`physical_provisioner.deployment_strategy`, default `deployment-strategy`, the seed's name) and how long
//! each phase may take (`prepare_node_timeout` for the prepare phase, `deploy_timeout` for the deploy phase).
//! Every other section (`kubernetes_provisioner`, `armada`, ...) is kept as uploaded and not used.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::finding::{Finding, StrategyError};
use super::load::{concrete, read_sources, Source};
use super::model::Strategy;

/// The `schema` of Shipyard's deployment configuration document.
pub const CONFIGURATION_SCHEMA: &str = "shipyard/DeploymentConfiguration/v1";

/// The strategy a deployment uses when the configuration names none (the seed: `deployment-strategy`).
pub const DEFAULT_STRATEGY_NAME: &str = "deployment-strategy";

/// Shipyard's default `prepare_node_timeout` (seconds).
pub const DEFAULT_PREPARE_NODE_TIMEOUT: u64 = 1800;
/// Shipyard's default `deploy_timeout` (seconds).
pub const DEFAULT_DEPLOY_TIMEOUT: u64 = 3600;

/// `physical_provisioner` keys Shipyard knows. Plinth uses `deployment_strategy`, `prepare_node_timeout` and
/// `deploy_timeout`; the others are checked (whole seconds) and kept.
const PHYSICAL_KEYS: &[&str] = &[
    "deployment_strategy",
    "deploy_interval",
    "deploy_timeout",
    "destroy_interval",
    "destroy_timeout",
    "join_wait",
    "prepare_node_interval",
    "prepare_node_timeout",
    "prepare_site_interval",
    "prepare_site_timeout",
    "verify_interval",
    "verify_timeout",
    "relabel_nodes_interval",
    "relabel_nodes_timeout",
];

/// A deployment configuration as Plinth uses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeploymentConfiguration {
    /// `metadata.name` (Shipyard's is `deployment-configuration`).
    pub name: String,
    /// The strategy named by `physical_provisioner.deployment_strategy`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_strategy: Option<String>,
    /// Seconds the prepare phase may take (`physical_provisioner.prepare_node_timeout`).
    pub prepare_node_timeout: u64,
    /// Seconds the deploy phase may take (`physical_provisioner.deploy_timeout`).
    pub deploy_timeout: u64,
}

/// A configuration as loaded: the configuration, the document as uploaded, and warnings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadedConfiguration {
    /// What Plinth uses.
    pub configuration: DeploymentConfiguration,
    /// The document as uploaded (every section kept).
    pub document: Value,
    /// Fields Plinth does not know (kept), keys repeated in a mapping.
    pub warnings: Vec<Finding>,
}

impl DeploymentConfiguration {
    /// The strategy name deployments use by default: the one named, else `deployment-strategy`.
    pub fn strategy_name(&self) -> &str {
        self.deployment_strategy
            .as_deref()
            .unwrap_or(DEFAULT_STRATEGY_NAME)
    }

    /// Gives the strategy's `prepare` and `deploy` phases the configured timeouts, unless a phase sets its
    /// own `timeout` in the strategy (Plinth's extension, the more specific of the two).
    pub fn apply(&self, strategy: &mut Strategy) {
        for phase in &mut strategy.phases {
            if phase.timeout.is_some() {
                continue;
            }
            match phase.name.as_str() {
                "prepare" => phase.timeout = Some(self.prepare_node_timeout),
                "deploy" => phase.timeout = Some(self.deploy_timeout),
                _ => {}
            }
        }
    }

    /// Reads the configuration from its document (Shipyard's envelope), every problem at once.
    pub fn from_document(value: &Value) -> Result<(Self, Vec<Finding>), StrategyError> {
        let mut problems = Vec::new();
        let mut warnings = Vec::new();
        let mut problem = |field: &str, message: String| {
            problems.push(Finding::new(None, field, message));
        };
        let Some(doc) = value.as_object() else {
            return Err(StrategyError::Invalid(vec![Finding::new(
                None,
                "",
                "expected a mapping with `schema`, `metadata` and `data`",
            )]));
        };
        match doc.get("schema").and_then(Value::as_str) {
            Some(CONFIGURATION_SCHEMA) => {}
            Some(other) => problem(
                "schema",
                format!("expected {CONFIGURATION_SCHEMA:?}, found {other:?}"),
            ),
            None => problem(
                "schema",
                format!("missing required field; expected {CONFIGURATION_SCHEMA:?}"),
            ),
        }
        let name = match value.pointer("/metadata/name") {
            Some(Value::String(name)) if !name.is_empty() => name.clone(),
            _ => {
                problem(
                    "metadata.name",
                    "missing required field (a non-empty string)".to_string(),
                );
                String::new()
            }
        };
        let empty = Map::new();
        let data = match doc.get("data") {
            Some(Value::Object(data)) => data,
            Some(_) => {
                problem("data", "expected a mapping".to_string());
                &empty
            }
            None => {
                problem("data", "missing required field".to_string());
                &empty
            }
        };
        if let Some(manifest) = data.get("armada").and_then(|a| a.get("manifest")) {
            if !manifest.is_string() {
                problem(
                    "data.armada.manifest",
                    "expected a string (the name of the Armada manifest), found a value of another kind"
                        .to_string(),
                );
            }
        }
        let physical = match data.get("physical_provisioner") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(map)) => map,
            Some(_) => {
                problem(
                    "data.physical_provisioner",
                    "expected a mapping".to_string(),
                );
                &empty
            }
        };
        let mut deployment_strategy = None;
        let mut prepare_node_timeout = DEFAULT_PREPARE_NODE_TIMEOUT;
        let mut deploy_timeout = DEFAULT_DEPLOY_TIMEOUT;
        for (key, value) in physical {
            let field = format!("data.physical_provisioner.{key}");
            match key.as_str() {
                "deployment_strategy" => match value {
                    Value::Null => {}
                    Value::String(name) if !name.is_empty() => {
                        deployment_strategy = Some(name.clone())
                    }
                    _ => problem(
                        &field,
                        "expected the name of a strategy (a string)".to_string(),
                    ),
                },
                known if PHYSICAL_KEYS.contains(&known) => match value.as_u64() {
                    Some(0) if known.ends_with("_timeout") => {
                        problem(&field, "a timeout must be at least 1 second".to_string())
                    }
                    Some(seconds) => {
                        if known == "prepare_node_timeout" {
                            prepare_node_timeout = seconds;
                        } else if known == "deploy_timeout" {
                            deploy_timeout = seconds;
                        }
                    }
                    None => problem(
                        &field,
                        format!("expected whole seconds (0 or more), found {value}"),
                    ),
                },
                unknown => {
                    let mut message = "unknown field".to_string();
                    // Names operators reach for that Shipyard spells otherwise, then likely typos.
                    let near = match unknown {
                        "deploy_node_timeout" => Some("deploy_timeout"),
                        "deploy_node_interval" => Some("deploy_interval"),
                        "prepare_timeout" => Some("prepare_node_timeout"),
                        "prepare_interval" => Some("prepare_node_interval"),
                        _ => super::parse::closest(unknown, PHYSICAL_KEYS),
                    };
                    if let Some(near) = near {
                        message.push_str(&format!(" (did you mean {near:?}?)"));
                    }
                    message.push_str("; kept, and not used by Plinth");
                    warnings.push(Finding::new(None, field, message));
                }
            }
        }
        if !problems.is_empty() {
            return Err(StrategyError::Invalid(problems));
        }
        Ok((
            DeploymentConfiguration {
                name,
                deployment_strategy,
                prepare_node_timeout,
                deploy_timeout,
            },
            warnings,
        ))
    }
}

/// Loads the deployment configuration from one or several texts: a lone document, or the one concrete
/// `DeploymentConfiguration` of a (layered) site design stream.
pub fn load_configuration(sources: &[Source<'_>]) -> Result<LoadedConfiguration, StrategyError> {
    let mut warnings = Vec::new();
    let docs = read_sources(sources, &mut warnings)?;
    let document = match docs.as_slice() {
        [] => {
            return Err(StrategyError::Syntax(
                "the text holds no document".to_string(),
            ))
        }
        [only] => only.value.to_value(),
        _ => {
            let found = concrete(&docs, CONFIGURATION_SCHEMA, &mut warnings)?;
            match found.as_slice() {
                [only] => only.value.to_value(),
                other => {
                    return Err(StrategyError::Syntax(format!(
                        "the text holds {} concrete documents with schema {CONFIGURATION_SCHEMA}; give one",
                        other.len()
                    )))
                }
            }
        }
    };
    let (configuration, mut more) = DeploymentConfiguration::from_document(&document)?;
    warnings.append(&mut more);
    Ok(LoadedConfiguration {
        configuration,
        document,
        warnings,
    })
}
