//! `plinthctl`: Plinth's command-line client. Talks to a controller's API, and works offline on files.

mod client;
mod output;
mod quickstart;
mod watch;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use client::{Client, Target};
use output::Format;
use reqwest::Method;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "plinthctl",
    version,
    about = "Drive a Plinth controller, and check task graphs offline"
)]
struct Cli {
    /// The controller's URL.
    #[arg(
        long,
        env = "PLINTH_CONTROLLER",
        global = true,
        default_value = "https://127.0.0.1:7443"
    )]
    controller: String,
    /// An operator token.
    #[arg(long, env = "PLINTH_TOKEN", global = true, hide_env_values = true)]
    token: Option<String>,
    /// A file holding the operator token (for example the controller's admin.token).
    #[arg(long, env = "PLINTH_TOKEN_FILE", global = true)]
    token_file: Option<PathBuf>,
    /// The controller's certificate (PEM) to trust; its self-signed one is in its data directory.
    #[arg(long, env = "PLINTH_CA_CERT", global = true)]
    ca_cert: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, global = true, default_value = "table")]
    output: Format,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Nodes: list, show, accept, delete.
    Nodes {
        #[command(subcommand)]
        command: NodesCommand,
    },
    /// Releases: list, create from a YAML or JSON file.
    Release {
        #[command(subcommand)]
        command: ReleaseCommand,
    },
    /// Clusters: list, create, add nodes.
    Cluster {
        #[command(subcommand)]
        command: ClusterCommand,
    },
    /// Deployments: start, watch, report, list.
    Deploy {
        #[command(subcommand)]
        command: DeployCommand,
    },
    /// Start a local controller and agents, deploy a sample graph, and print the report.
    Quickstart {
        /// Keep the temporary directory (logs, databases, work directories).
        #[arg(long)]
        keep: bool,
    },
}

#[derive(Subcommand)]
enum NodesCommand {
    /// List nodes.
    List,
    /// Show a node with its facts.
    Show { id: u64 },
    /// Accept a discovered node.
    Accept { id: u64 },
    /// Delete a node.
    Delete { id: u64 },
}

#[derive(Subcommand)]
enum ReleaseCommand {
    /// List releases.
    List,
    /// Create a release (name, version, roles_metadata, tags_metadata, graphs) from a YAML or JSON file.
    Create { file: PathBuf },
}

#[derive(Subcommand)]
enum ClusterCommand {
    /// List clusters.
    List,
    /// Create a cluster.
    Create {
        #[arg(long)]
        name: String,
        #[arg(long)]
        release: u64,
    },
    /// Add nodes to a cluster: `--node 3` or `--node 3:controller,mongo` (pending roles).
    AddNodes {
        cluster: u64,
        #[arg(long = "node", required = true)]
        nodes: Vec<String>,
    },
}

#[derive(Subcommand)]
enum DeployCommand {
    /// Deploy a graph type on a cluster (all its nodes, or some).
    Start {
        cluster: u64,
        #[arg(long, default_value = "default")]
        graph_type: String,
        /// Node ids, comma-separated.
        #[arg(long)]
        nodes: Option<String>,
        /// Run puppet in no-op mode.
        #[arg(long)]
        noop: bool,
        /// Treat the last deployed state as empty.
        #[arg(long)]
        force: bool,
        /// Follow it until it ends.
        #[arg(long)]
        watch: bool,
    },
    /// Follow a deployment with progress bars, then print its report.
    Watch { id: u64 },
    /// Print a deployment's report.
    Report { id: u64 },
    /// List deployments.
    List,
}

fn read_doc(path: &PathBuf) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_yaml_ng::from_str(&text)
        .with_context(|| format!("{} is not valid YAML or JSON", path.display()))
}

fn parse_assignment(text: &str) -> Result<Value> {
    let (id, roles) = text.split_once(':').unwrap_or((text, ""));
    let id: u64 = id
        .trim()
        .parse()
        .with_context(|| format!("--node {text:?}: {id:?} is not a node id"))?;
    let roles: Vec<&str> = roles
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .collect();
    Ok(json!({"id": id, "roles": roles}))
}

fn print(format: Format, v: &Value, header: &[&str], pointers: &[&str]) {
    match format {
        Format::Json => output::json(v),
        Format::Table => {
            let items: Vec<&Value> = match v {
                Value::Array(a) => a.iter().collect(),
                other => vec![other],
            };
            let rows: Vec<Vec<String>> = items
                .iter()
                .map(|i| pointers.iter().map(|p| output::cell(i, p)).collect())
                .collect();
            output::table(header, &rows);
        }
    }
}

async fn run(cli: Cli) -> Result<bool> {
    if let Command::Quickstart { keep } = &cli.command {
        return quickstart::run(*keep, cli.output).await;
    }
    let token = match (&cli.token, &cli.token_file) {
        (Some(t), _) => Some(t.clone()),
        (None, Some(f)) => Some(
            std::fs::read_to_string(f)
                .with_context(|| format!("cannot read {}", f.display()))?
                .trim()
                .to_string(),
        ),
        (None, None) => None,
    };
    let client = Client::new(&Target {
        url: cli.controller.clone(),
        token,
        ca_cert: cli.ca_cert.clone(),
    })?;
    let f = cli.output;
    let node_cols = [
        "id",
        "name",
        "admission",
        "status",
        "online",
        "cluster",
        "tags",
        "roles",
        "pending",
    ];
    let node_ptrs = [
        "/id",
        "/name",
        "/admission",
        "/status",
        "/online",
        "/cluster_id",
        "/tags",
        "/roles",
        "/pending_roles",
    ];
    match cli.command {
        Command::Quickstart { .. } => unreachable!("handled above"),
        Command::Nodes { command } => match command {
            NodesCommand::List => print(
                f,
                &client.call(Method::GET, "/nodes", None).await?,
                &node_cols,
                &node_ptrs,
            ),
            NodesCommand::Show { id } => output::json(
                &client
                    .call(Method::GET, &format!("/nodes/{id}"), None)
                    .await?,
            ),
            NodesCommand::Accept { id } => print(
                f,
                &client
                    .call(Method::POST, &format!("/nodes/{id}/accept"), None)
                    .await?,
                &node_cols,
                &node_ptrs,
            ),
            NodesCommand::Delete { id } => {
                client
                    .call(Method::DELETE, &format!("/nodes/{id}"), None)
                    .await?;
                eprintln!("node {id} deleted");
            }
        },
        Command::Release { command } => match command {
            ReleaseCommand::List => print(
                f,
                &client.call(Method::GET, "/releases", None).await?,
                &["id", "name", "version"],
                &["/id", "/name", "/version"],
            ),
            ReleaseCommand::Create { file } => {
                let body = read_doc(&file)?;
                print(
                    f,
                    &client.call(Method::POST, "/releases", Some(&body)).await?,
                    &["id", "name", "version"],
                    &["/id", "/name", "/version"],
                )
            }
        },
        Command::Cluster { command } => match command {
            ClusterCommand::List => print(
                f,
                &client.call(Method::GET, "/clusters", None).await?,
                &["id", "name", "release"],
                &["/id", "/name", "/release_id"],
            ),
            ClusterCommand::Create { name, release } => {
                let v = client
                    .call(
                        Method::POST,
                        "/clusters",
                        Some(&json!({"name": name, "release_id": release})),
                    )
                    .await?;
                print(
                    f,
                    &v,
                    &["id", "name", "release"],
                    &["/id", "/name", "/release_id"],
                )
            }
            ClusterCommand::AddNodes { cluster, nodes } => {
                let nodes = nodes
                    .iter()
                    .map(|n| parse_assignment(n))
                    .collect::<Result<Vec<_>>>()?;
                client
                    .call(
                        Method::PUT,
                        &format!("/clusters/{cluster}/nodes"),
                        Some(&json!({"nodes": nodes})),
                    )
                    .await?;
                eprintln!("added {} node(s) to cluster {cluster}", nodes.len());
            }
        },
        Command::Deploy { command } => {
            match command {
                DeployCommand::Start {
                    cluster,
                    graph_type,
                    nodes,
                    noop,
                    force,
                    watch: follow,
                } => {
                    let mut path = format!("/clusters/{cluster}/deploy/?graph_type={graph_type}&noop={noop}&force={force}");
                    if let Some(n) = nodes {
                        path.push_str(&format!("&nodes={n}"));
                    }
                    let dep = client.call(Method::PUT, &path, None).await?;
                    if follow {
                        let id = dep["id"].as_u64().unwrap_or_default();
                        return finish_watch(&client, id, f).await;
                    }
                    print(
                        f,
                        &dep,
                        &["id", "cluster", "graph", "status", "nodes"],
                        &["/id", "/cluster_id", "/graph_type", "/status", "/node_ids"],
                    );
                }
                DeployCommand::Watch { id } => return finish_watch(&client, id, f).await,
                DeployCommand::Report { id } => {
                    let r = client
                        .call(Method::GET, &format!("/deployments/{id}"), None)
                        .await?;
                    match f {
                        Format::Json => output::json(&r),
                        Format::Table => output::report(&r),
                    }
                    return Ok(r["status"] != "failed");
                }
                DeployCommand::List => print(
                    f,
                    &client.call(Method::GET, "/deployments", None).await?,
                    &["id", "cluster", "graph", "status", "nodes"],
                    &["/id", "/cluster_id", "/graph_type", "/status", "/node_ids"],
                ),
            }
        }
    }
    Ok(true)
}

async fn finish_watch(client: &Client, id: u64, f: Format) -> Result<bool> {
    let r = watch::watch(client, id, f == Format::Table).await?;
    match f {
        Format::Json => output::json(&r),
        Format::Table => output::report(&r),
    }
    Ok(r["status"] == "success")
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("plinthctl: cannot start: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("plinthctl: {e:#}");
            ExitCode::from(2)
        }
    }
}
