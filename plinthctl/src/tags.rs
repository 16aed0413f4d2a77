//! `plinthctl tag ...`: a release's or a cluster's tags, and the operator's tag changes on nodes.

use crate::client::Client;
use crate::output::{self, Format};
use anyhow::Result;
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{json, Value};

/// Whose tags: a release's or a cluster's.
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub struct TagOwner {
    /// A release's tags.
    #[arg(long)]
    pub release: Option<u64>,
    /// A cluster's (environment's) own tags.
    #[arg(long, alias = "cluster")]
    pub env: Option<u64>,
}

impl TagOwner {
    fn base(&self) -> String {
        match (self.release, self.env) {
            (Some(r), _) => format!("/releases/{r}/tags"),
            (None, Some(c)) => format!("/clusters/{c}/tags"),
            // clap requires one of the two.
            (None, None) => "/releases/0/tags".into(),
        }
    }
}

/// `plinthctl tag ...`.
#[derive(Subcommand)]
pub enum TagCommand {
    /// List the tags (role-owned ones are read-only).
    List {
        #[command(flatten)]
        owner: TagOwner,
    },
    /// Define a tag.
    Create {
        #[command(flatten)]
        owner: TagOwner,
        /// The tag's name.
        name: String,
        /// One node of a cluster carrying it becomes its primary.
        #[arg(long)]
        has_primary: bool,
    },
    /// Change whether a tag has a primary.
    Update {
        #[command(flatten)]
        owner: TagOwner,
        /// The tag's name.
        name: String,
        /// `true` or `false`.
        #[arg(long, action = clap::ArgAction::Set)]
        has_primary: bool,
    },
    /// Delete a tag.
    Delete {
        #[command(flatten)]
        owner: TagOwner,
        /// The tag's name.
        name: String,
    },
    /// Add tags to a node.
    Assign {
        /// The node.
        #[arg(long)]
        node: u64,
        /// The tags.
        #[arg(required = true)]
        tags: Vec<String>,
    },
    /// Remove tags from a node (a role's tags too; they come back with `assign`).
    Unassign {
        /// The node.
        #[arg(long)]
        node: u64,
        /// The tags.
        #[arg(required = true)]
        tags: Vec<String>,
    },
}

fn owner_text(t: &Value) -> String {
    match &t["owner"] {
        Value::String(s) => s.clone(),
        // `{kind: plugin, name: p1}` reads `plugin p1`.
        Value::Object(m) => {
            let mut parts: Vec<String> = m
                .get("kind")
                .map(|k| output::cell(k, ""))
                .into_iter()
                .collect();
            parts.extend(
                m.iter()
                    .filter(|(k, v)| k.as_str() != "kind" && !v.is_null())
                    .map(|(_, v)| output::cell(v, "")),
            );
            parts.join(" ")
        }
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

fn print_tags(format: Format, v: &Value) {
    match format {
        Format::Json => output::json(v),
        Format::Table => {
            let items: Vec<&Value> = match v {
                Value::Array(a) => a.iter().collect(),
                other => vec![other],
            };
            let rows: Vec<Vec<String>> = items
                .iter()
                .map(|t| {
                    vec![
                        output::cell(t, "/name"),
                        output::cell(t, "/has_primary"),
                        owner_text(t),
                        output::cell(t, "/read_only"),
                    ]
                })
                .collect();
            output::table(&["name", "has_primary", "owner", "read_only"], &rows);
        }
    }
}

fn print_node_tags(format: Format, v: &Value) {
    match format {
        Format::Json => output::json(v),
        Format::Table => output::table(
            &["node", "tags", "added", "removed"],
            &[vec![
                output::cell(v, "/node_id"),
                output::cell(v, "/tags"),
                output::cell(v, "/tags_added"),
                output::cell(v, "/tags_removed"),
            ]],
        ),
    }
}

/// Runs a tag command.
pub async fn run(client: &Client, command: TagCommand, format: Format) -> Result<bool> {
    match command {
        TagCommand::List { owner } => {
            let v = client.call(Method::GET, &owner.base(), None).await?;
            print_tags(format, &v);
        }
        TagCommand::Create {
            owner,
            name,
            has_primary,
        } => {
            let v = client
                .call(
                    Method::POST,
                    &owner.base(),
                    Some(&json!({"name": name, "has_primary": has_primary})),
                )
                .await?;
            print_tags(format, &v);
        }
        TagCommand::Update {
            owner,
            name,
            has_primary,
        } => {
            let v = client
                .call(
                    Method::PUT,
                    &format!("{}/{name}", owner.base()),
                    Some(&json!({"has_primary": has_primary})),
                )
                .await?;
            print_tags(format, &v);
        }
        TagCommand::Delete { owner, name } => {
            client
                .call(Method::DELETE, &format!("{}/{name}", owner.base()), None)
                .await?;
            eprintln!("tag {name:?} deleted");
        }
        TagCommand::Assign { node, tags } => {
            let v = client
                .call(
                    Method::POST,
                    &format!("/nodes/{node}/tags"),
                    Some(&json!({"tags": tags})),
                )
                .await?;
            print_node_tags(format, &v);
        }
        TagCommand::Unassign { node, tags } => {
            let v = client
                .call(
                    Method::DELETE,
                    &format!("/nodes/{node}/tags"),
                    Some(&json!({"tags": tags})),
                )
                .await?;
            print_node_tags(format, &v);
        }
    }
    Ok(true)
}
