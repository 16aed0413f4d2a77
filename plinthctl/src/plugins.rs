//! `plinthctl plugin ...`: registered plugins, and enabling them in clusters.

use crate::client::Client;
use crate::inputs;
use crate::output::{self, Format};
use anyhow::Result;
use clap::Subcommand;
use plinth_api::records::PluginRecord;
use reqwest::Method;
use serde_json::Value;
use std::path::PathBuf;

/// `plinthctl plugin ...`.
#[derive(Subcommand)]
pub enum PluginCommand {
    /// List registered plugins.
    List,
    /// Show a plugin.
    Show {
        /// The plugin's id.
        id: u64,
    },
    /// Register a plugin from one file (YAML or JSON): `name`, `version`, `metadata`, `node_roles`,
    /// `tags_metadata`, `volumes`, `graphs` and/or `deployment_tasks`.
    Register {
        /// The plugin file.
        #[arg(long)]
        file: PathBuf,
    },
    /// Read registered plugins again from their files in the controller's plugins directory
    /// (`<data_dir>/plugins/`, one plugin document per file, matched by name and version): their
    /// metadata, roles, volumes and graphs are replaced, all or none.
    Sync {
        /// The plugins' ids (all registered plugins with a file by default).
        ids: Vec<u64>,
    },
    /// Delete a plugin.
    Delete {
        /// The plugin's id.
        id: u64,
    },
    /// Enable a plugin in a cluster.
    Enable {
        /// The cluster.
        #[arg(long, alias = "cluster")]
        env: u64,
        /// The plugin's id.
        plugin_id: u64,
    },
    /// Disable a plugin in a cluster.
    Disable {
        /// The cluster.
        #[arg(long, alias = "cluster")]
        env: u64,
        /// The plugin's id.
        plugin_id: u64,
    },
}

impl crate::rows::Row for PluginRecord {
    const HEADER: &'static [&'static str] = &["id", "name", "version", "roles"];
    fn cells(&self) -> Vec<String> {
        let roles: Vec<String> = self
            .data
            .get("roles_metadata")
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        vec![
            self.id.to_string(),
            self.name.clone(),
            self.version.clone(),
            if roles.is_empty() {
                "-".into()
            } else {
                roles.join(",")
            },
        ]
    }
}

/// The content type a plugin file is sent with.
fn content_type(path: &std::path::Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("yaml") | Some("yml") => "application/yaml",
        Some("json") => "application/json",
        // Neither: YAML reads JSON too.
        _ => "application/yaml",
    }
}

/// Runs a plugin command.
pub async fn run(client: &Client, command: PluginCommand, format: Format) -> Result<bool> {
    match command {
        PluginCommand::List => {
            let plugins: Vec<PluginRecord> = client.get("/plugins").await?;
            crate::rows::print(format, &plugins);
        }
        PluginCommand::Show { id } => {
            let v = client
                .call(Method::GET, &format!("/plugins/{id}"), None)
                .await?;
            match format {
                Format::Json => output::json(&v),
                Format::Table => print!("{}", serde_yaml_ng::to_string(&v).unwrap_or_default()),
            }
        }
        PluginCommand::Register { file } => {
            // Check locally first, for a message naming the file and line; unknown keys are said
            // and do not stop the upload.
            let mut findings = Vec::new();
            inputs::load_plugin(&file, &mut findings)?;
            for f in &findings {
                eprintln!("{f}");
            }
            let text = inputs::read_text(&file)?;
            let v = client
                .call_text(Method::POST, "/plugins", content_type(&file), text)
                .await?;
            let plugin: PluginRecord = serde_json::from_value(v)
                .map_err(|e| anyhow::anyhow!("unexpected answer to POST /plugins: {e}"))?;
            crate::rows::print_one(format, &plugin);
        }
        PluginCommand::Sync { ids } => {
            let body = (!ids.is_empty()).then(|| serde_json::json!({ "ids": ids }));
            let v = client
                .call(Method::POST, "/plugins/sync", body.as_ref())
                .await?;
            match format {
                Format::Json => output::json(&v),
                Format::Table => {
                    for p in v["synced"].as_array().into_iter().flatten() {
                        println!(
                            "synced  {} {} (id {}) from {}",
                            p["name"].as_str().unwrap_or(""),
                            p["version"].as_str().unwrap_or(""),
                            p["id"],
                            p["file"].as_str().unwrap_or("")
                        );
                    }
                    for p in v["without_file"].as_array().into_iter().flatten() {
                        println!(
                            "no file {} {} (id {}): left as registered",
                            p["name"].as_str().unwrap_or(""),
                            p["version"].as_str().unwrap_or(""),
                            p["id"]
                        );
                    }
                }
            }
        }
        PluginCommand::Delete { id } => {
            client
                .call(Method::DELETE, &format!("/plugins/{id}"), None)
                .await?;
            eprintln!("plugin {id} deleted");
        }
        PluginCommand::Enable { env, plugin_id } => {
            let v = client
                .call(
                    Method::PUT,
                    &format!("/clusters/{env}/plugins/{plugin_id}"),
                    None,
                )
                .await?;
            match format {
                Format::Json => output::json(&v),
                Format::Table => eprintln!("plugin {plugin_id} enabled in cluster {env}"),
            }
        }
        PluginCommand::Disable { env, plugin_id } => {
            let v = client
                .call(
                    Method::DELETE,
                    &format!("/clusters/{env}/plugins/{plugin_id}"),
                    None,
                )
                .await?;
            match format {
                Format::Json => output::json(&v),
                Format::Table => eprintln!("plugin {plugin_id} disabled in cluster {env}"),
            }
        }
    }
    Ok(true)
}
