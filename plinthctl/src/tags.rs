//! `plinthctl tag ...`: a release's or a cluster's tags, and the operator's tag changes on nodes.

use crate::client::Client;
use crate::output::Format;
use crate::rows;
use anyhow::Result;
use clap::{Args, Subcommand};
use plinth_api::records::{NodeTagsView, TagView};
use plinth_api::requests::{NewTag, NodeTagsBody, TagChange};
use plinth_common::tags::Owner;
use reqwest::Method;

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
    /// Add tags to nodes: `tag assign --node 1,2 ceph-osd`.
    Assign {
        /// The nodes (comma-separated, or repeated).
        #[arg(long, required = true, value_delimiter = ',')]
        node: Vec<u64>,
        /// The tags.
        #[arg(required = true)]
        tags: Vec<String>,
    },
    /// Remove tags from nodes (a role's tags too; they come back with `assign`).
    Unassign {
        /// The nodes (comma-separated, or repeated).
        #[arg(long, required = true, value_delimiter = ',')]
        node: Vec<u64>,
        /// The tags.
        #[arg(required = true)]
        tags: Vec<String>,
    },
}

impl crate::rows::Row for TagView {
    const HEADER: &'static [&'static str] = &["name", "has_primary", "owner", "read_only"];
    fn cells(&self) -> Vec<String> {
        let owner = match &self.owner {
            Owner::Release => "release".to_string(),
            Owner::Plugin(name) => format!("plugin {name}"),
            Owner::Cluster => "cluster".to_string(),
        };
        vec![
            self.name.clone(),
            self.has_primary.to_string(),
            owner,
            self.read_only.to_string(),
        ]
    }
}

impl crate::rows::Row for NodeTagsView {
    const HEADER: &'static [&'static str] = &["node", "tags", "added", "removed"];
    fn cells(&self) -> Vec<String> {
        vec![
            self.node_id.to_string(),
            self.tags.join(","),
            self.tags_added.join(","),
            self.tags_removed.join(","),
        ]
    }
}

/// Runs a tag command.
pub async fn run(client: &Client, command: TagCommand, format: Format) -> Result<bool> {
    match command {
        TagCommand::List { owner } => {
            let tags: Vec<TagView> = client.get(&owner.base()).await?;
            rows::print(format, &tags);
        }
        TagCommand::Create {
            owner,
            name,
            has_primary,
        } => {
            let tags: Vec<TagView> = client
                .send(
                    Method::POST,
                    &owner.base(),
                    Some(&NewTag { name, has_primary }),
                )
                .await?;
            rows::print(format, &tags);
        }
        TagCommand::Update {
            owner,
            name,
            has_primary,
        } => {
            let tags: Vec<TagView> = client
                .send(
                    Method::PUT,
                    &format!("{}/{name}", owner.base()),
                    Some(&TagChange { has_primary }),
                )
                .await?;
            rows::print(format, &tags);
        }
        TagCommand::Delete { owner, name } => {
            client
                .call(Method::DELETE, &format!("{}/{name}", owner.base()), None)
                .await?;
            eprintln!("tag {name:?} deleted");
        }
        TagCommand::Assign { node, tags } => {
            node_tags(client, format, Method::POST, &node, tags).await?;
        }
        TagCommand::Unassign { node, tags } => {
            node_tags(client, format, Method::DELETE, &node, tags).await?;
        }
    }
    Ok(true)
}

/// Adds (`POST`) or removes (`DELETE`) tags on each node in turn, printing each node's tags after.
async fn node_tags(
    client: &Client,
    format: Format,
    method: Method,
    nodes: &[u64],
    tags: Vec<String>,
) -> Result<()> {
    let mut changed = Vec::with_capacity(nodes.len());
    for node in nodes {
        let body = NodeTagsBody { tags: tags.clone() };
        let v: NodeTagsView = client
            .send(method.clone(), &format!("/nodes/{node}/tags"), Some(&body))
            .await?;
        changed.push(v);
    }
    match changed.as_slice() {
        [one] => rows::print_one(format, one),
        many => rows::print(format, many),
    }
    Ok(())
}
