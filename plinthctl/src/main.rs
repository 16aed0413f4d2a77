//! `plinthctl`: Plinth's command-line client. Talks to a controller's API, and works offline on files.

/// `println!` through [`pipe::write_out`]: a closed standard output ends `plinthctl` quietly.
macro_rules! println {
    () => {
        $crate::pipe::write_out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::pipe::write_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` through [`pipe::write_out`].
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::pipe::write_out(format_args!($($arg)*))
    };
}

mod client;
mod enroll;
mod expr;
mod graph;
mod inputs;
mod output;
mod pipe;
mod plugins;
mod quickstart;
mod resolve;
mod rows;
mod settings;
mod strategy;
mod tags;
mod watch;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use client::{Client, Target};
use output::Format;
use plinth_api::deployments::{DeploymentRecord, Report, StartedDeployment};
use plinth_api::records::{
    ClusterRecord, ConfigurationRecord, NodeAssignment, NodeView, ReleaseRecord, StrategyRecord,
};
use plinth_api::requests::{AssignNodes, CreateCluster, DeployQuery};
use plinth_common::wire::DeploymentStatus;
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
    /// Deployment strategies: on a controller (list, create, replace, show, delete, validate) and offline
    /// on files (check, simulate).
    Strategy {
        #[command(subcommand)]
        command: StrategyCommand,
    },
    /// A cluster's deployment configuration (Shipyard's DeploymentConfiguration): the strategy deployments
    /// use by default and the phase timeouts.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Task graphs: offline on files (resolve, check) and on a controller (list, upload, download,
    /// execute, dot, serialized).
    Graph {
        #[command(subcommand)]
        command: graph::GraphCommand,
    },
    /// Expressions (YAQL), offline: evaluate one, or an interactive shell.
    Expr {
        #[command(subcommand)]
        command: ExprCommand,
    },
    /// Tags of releases and clusters, and on nodes.
    Tag {
        #[command(subcommand)]
        command: tags::TagCommand,
    },
    /// Plugins: list, show, register, delete, enable and disable in a cluster.
    Plugin {
        #[command(subcommand)]
        command: plugins::PluginCommand,
    },
    /// The controllers sharing the database: which are live, which one sequences deployments, and
    /// each one's connected agents.
    Controllers,
    /// Start a local controller and agents, deploy a sample graph, and print the report.
    Quickstart {
        /// Keep the temporary directory (logs, databases, work directories).
        #[arg(long)]
        keep: bool,
    },
}

/// The data options of the expression commands.
#[derive(clap::Args, Debug, Clone)]
struct ExprData {
    /// The data `$` is (JSON or YAML; `-` for standard input).
    #[arg(long)]
    data: Option<PathBuf>,
    /// The last deployed state, for `changed()`, `old()`, ... (needs `--new`).
    #[arg(long)]
    old: Option<PathBuf>,
    /// The new state (`$`), compared with `--old`.
    #[arg(long)]
    new: Option<PathBuf>,
}

impl ExprData {
    fn files(&self) -> expr::DataFiles {
        expr::DataFiles {
            data: self.data.clone(),
            old: self.old.clone(),
            new: self.new.clone(),
        }
    }
}

#[derive(Subcommand)]
enum ExprCommand {
    /// Evaluate an expression; print the result as JSON (a parse or evaluation error exits 2).
    Eval {
        /// The expression.
        expression: String,
        #[command(flatten)]
        data: ExprData,
    },
    /// Read expressions line by line and print each result or error; ends at the end of input.
    Shell {
        #[command(flatten)]
        data: ExprData,
    },
}

#[derive(Subcommand)]
enum StrategyCommand {
    /// List a cluster's strategies.
    List { cluster: u64 },
    /// Store a strategy (YAML or JSON; Shipyard's document, the plain form, or a site design stream whose
    /// layered DeploymentStrategy is taken) for a cluster.
    Create {
        cluster: u64,
        /// The files (`-` for standard input): one document, or a site design's layers (global, site, ...).
        #[arg(required_unless_present = "file_opts")]
        files: Vec<PathBuf>,
        /// A file, as with the positional ones (repeatable).
        #[arg(short = 'f', long = "file")]
        file_opts: Vec<PathBuf>,
        /// The name (else the document's).
        #[arg(long)]
        name: Option<String>,
    },
    /// Replace a stored strategy.
    Replace {
        cluster: u64,
        name: String,
        /// The files (`-` for standard input): one document, or a site design's layers (global, site, ...).
        #[arg(required_unless_present = "file_opts")]
        files: Vec<PathBuf>,
        /// A file, as with the positional ones (repeatable).
        #[arg(short = 'f', long = "file")]
        file_opts: Vec<PathBuf>,
    },
    /// Show a stored strategy as uploaded (or `--plain`: the normalised form).
    Show {
        cluster: u64,
        name: String,
        /// The normalised form instead of the document as uploaded.
        #[arg(long)]
        plain: bool,
    },
    /// Delete a stored strategy.
    Delete { cluster: u64, name: String },
    /// Validate a strategy against a cluster's nodes on the controller (stores nothing).
    Validate {
        cluster: u64,
        /// The files (`-` for standard input): one document, or a site design's layers (global, site, ...).
        #[arg(required_unless_present = "file_opts")]
        files: Vec<PathBuf>,
        /// A file, as with the positional ones (repeatable).
        #[arg(short = 'f', long = "file")]
        file_opts: Vec<PathBuf>,
    },
    /// Offline: validate a strategy against a node inventory; print each group's nodes and a valid order.
    Check {
        /// The files (`-` for standard input): one document, or a site design's layers (global, site, ...).
        #[arg(required_unless_present = "file_opts")]
        files: Vec<PathBuf>,
        /// A file, as with the positional ones (repeatable).
        #[arg(short = 'f', long = "file")]
        file_opts: Vec<PathBuf>,
        /// The nodes: a YAML or JSON list of {name, tags, labels, rack}.
        #[arg(long)]
        inventory: PathBuf,
    },
    /// Offline: run the whole sequencing with chosen nodes failing chosen phases; print the report.
    Simulate {
        /// The files (`-` for standard input): one document, or a site design's layers (global, site, ...).
        #[arg(required_unless_present = "file_opts")]
        files: Vec<PathBuf>,
        /// A file, as with the positional ones (repeatable).
        #[arg(short = 'f', long = "file")]
        file_opts: Vec<PathBuf>,
        /// The nodes: a YAML or JSON list of {name, tags, labels, rack}.
        #[arg(long)]
        inventory: PathBuf,
        /// `node:phase` (or `node:phase:timed_out|never_reported`), repeatable.
        #[arg(long)]
        fail: Vec<String>,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Store (create or replace) the cluster's deployment configuration.
    Set {
        cluster: u64,
        /// The files (`-` for standard input): the document, or a site design holding one.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Show the cluster's deployment configuration: what Plinth uses, and the document as uploaded.
    Show { cluster: u64 },
    /// Delete the cluster's deployment configuration.
    Delete { cluster: u64 },
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
    /// Enroll servers before they boot, from Plinth's enrollment YAML or Ironic's
    /// (`openstack baremetal create` files, YAML or JSON): all of the file's servers, or none.
    Enroll {
        /// The enrollment file (`-` for standard input).
        #[arg(short = 'f', long)]
        file: PathBuf,
        /// `plinth` or `ironic`; guessed from the file when absent.
        #[arg(long)]
        format: Option<String>,
    },
    /// List enrolled servers (or show one): MACs, BMC, power state, the node an agent became.
    Enrolled {
        /// One server's name.
        name: Option<String>,
    },
    /// Let the next agent claiming an enrolled server take its node with a new key (a reinstalled
    /// server, or one booted into a fresh discovery image by hand).
    Release { name: String },
    /// Forget an enrolled server and its BMC password (its node, if any, stays).
    Unenroll { name: String },
    /// Power enrolled servers on, off (at once), soft-off (the OS shuts down) or reset through their
    /// BMCs, or read their power state (`status`). Exits 1 when any BMC failed.
    Power {
        /// What to do.
        #[arg(value_enum)]
        action: enroll::PowerVerb,
        /// Enrolled servers, by name (or by the id of the node an agent became).
        #[arg(required = true)]
        nodes: Vec<String>,
    },
    /// Set the device an enrolled server boots from, through its BMC. `pxe` also lets the agent of the
    /// discovery image it boots take its node with a new key.
    BootDevice {
        /// The enrolled server.
        node: String,
        /// `pxe` or `disk`.
        #[arg(value_enum)]
        device: enroll::DeviceArg,
        /// For the next boot only (else until changed).
        #[arg(long)]
        once: bool,
        /// The firmware's boot mode; the enrolled profile's when absent.
        #[arg(long, value_enum)]
        mode: Option<enroll::ModeArg>,
    },
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
    /// A cluster's settings (Nailgun's editable attributes): get, set, edit.
    Settings {
        #[command(subcommand)]
        command: SettingsCommand,
    },
    /// The controller's pre-deployment checks of a graph type (exit 1 when a deployment would be refused).
    Check {
        cluster: u64,
        /// The graph type.
        #[arg(
            long = "type",
            short = 't',
            alias = "graph-type",
            default_value = "default"
        )]
        graph_type: String,
        /// Node ids, comma-separated.
        #[arg(long)]
        nodes: Option<String>,
    },
}

#[derive(Subcommand)]
enum SettingsCommand {
    /// Print the settings (or one section) as YAML.
    Get {
        cluster: u64,
        section: Option<String>,
    },
    /// Change settings: `storage.osd_pool_size=2 additional_components.ceilometer=true`.
    Set {
        cluster: u64,
        #[arg(required = true)]
        assignments: Vec<String>,
    },
    /// Edit the settings in $VISUAL or $EDITOR; saved with PUT when changed.
    Edit { cluster: u64 },
}

#[derive(Subcommand)]
enum DeployCommand {
    /// Deploy a graph type on a cluster (all its nodes, or some).
    Start {
        cluster: u64,
        #[arg(long)]
        graph_type: Option<String>,
        /// Node ids, comma-separated.
        #[arg(long)]
        nodes: Option<String>,
        /// A strategy stored for the cluster (its phases choose the graph types); without it, the one the
        /// cluster's deployment configuration names (default `deployment-strategy`) when stored.
        #[arg(long, conflicts_with = "graph_type")]
        strategy: Option<String>,
        /// Shipyard's action: deploy_site, update_site, or redeploy_server (with --node).
        #[arg(long, conflicts_with = "graph_type", value_parser = ["deploy_site", "update_site", "redeploy_server"])]
        action: Option<String>,
        /// The node redeploy_server redeploys, by name (prepare and deploy, outside any group).
        #[arg(long, requires = "action", conflicts_with = "nodes")]
        node: Option<String>,
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
    /// Stop a running deployment: nothing new starts, running tasks are ended (SIGTERM, then SIGKILL).
    Cancel { id: u64 },
    /// Deploy again the failed and not-started nodes of an ended deployment, with the same inputs.
    Retry {
        id: u64,
        /// Follow it until it ends.
        #[arg(long)]
        watch: bool,
    },
}

fn read_doc(path: &PathBuf) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_yaml_ng::from_str(&text)
        .with_context(|| format!("{} is not valid YAML or JSON", path.display()))
}

/// A release read from Nailgun's fixture as `POST /releases` takes it.
fn release_body(release: &plinth_common::model::Release, file: &std::path::Path) -> Result<Value> {
    let Some(version) = release.version.clone() else {
        anyhow::bail!("{}: the release has no `version`", file.display());
    };
    let mut body = json!({
        "name": release.name,
        "version": version,
        "roles_metadata": release.roles_metadata,
        "tags_metadata": release.tags_metadata,
    });
    if release.volumes_metadata.is_object() {
        body["volumes_metadata"] = release.volumes_metadata.clone();
    }
    if release.attributes_metadata.is_object() {
        body["attributes_metadata"] = release.attributes_metadata.clone();
    }
    Ok(body)
}

fn parse_assignment(text: &str) -> Result<NodeAssignment> {
    let (id, roles) = text.split_once(':').unwrap_or((text, ""));
    let id: u64 = id
        .trim()
        .parse()
        .with_context(|| format!("--node {text:?}: {id:?} is not a node id"))?;
    let roles: Vec<String> = roles
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_string)
        .collect();
    Ok(NodeAssignment { id, roles })
}

/// Positional files followed by `-f` ones.
fn joined(files: &[PathBuf], file_opts: &[PathBuf]) -> Vec<PathBuf> {
    files.iter().chain(file_opts).cloned().collect()
}

async fn run(cli: Cli) -> Result<bool> {
    match &cli.command {
        Command::Quickstart { keep } => return quickstart::run(*keep, cli.output).await,
        Command::Strategy {
            command:
                StrategyCommand::Check {
                    files,
                    file_opts,
                    inventory,
                },
        } => return strategy::check(&joined(files, file_opts), inventory, cli.output),
        Command::Strategy {
            command:
                StrategyCommand::Simulate {
                    files,
                    file_opts,
                    inventory,
                    fail,
                },
        } => return strategy::simulate(&joined(files, file_opts), inventory, fail, cli.output),
        Command::Graph { command } => {
            if let Some(r) = graph::run_offline(command, cli.output) {
                return r;
            }
        }
        Command::Expr { command } => {
            return match command {
                ExprCommand::Eval { expression, data } => {
                    expr::eval(expression, &data.files(), cli.output)
                }
                ExprCommand::Shell { data } => expr::shell(&data.files()),
            }
        }
        _ => {}
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
    match cli.command {
        Command::Quickstart { .. } | Command::Expr { .. } => unreachable!("handled above"),
        Command::Graph { command } => return graph::run(&client, command, f).await,
        Command::Tag { command } => return tags::run(&client, command, f).await,
        Command::Plugin { command } => return plugins::run(&client, command, f).await,
        Command::Strategy { command } => match command {
            StrategyCommand::List { cluster } => {
                let list: Vec<StrategyRecord> = client
                    .get(&format!("/clusters/{cluster}/strategies/"))
                    .await?;
                rows::print(f, &list);
            }
            StrategyCommand::Create {
                cluster,
                files,
                file_opts,
                name,
            } => {
                let files = joined(&files, &file_opts);
                let v = strategy::upload(&client, cluster, &files, name.as_deref(), false).await?;
                rows::print_one(f, &rows::Stored(&v));
            }
            StrategyCommand::Replace {
                cluster,
                name,
                files,
                file_opts,
            } => {
                let files = joined(&files, &file_opts);
                let v = strategy::upload(&client, cluster, &files, Some(&name), true).await?;
                rows::print_one(f, &rows::Stored(&v));
            }
            StrategyCommand::Show {
                cluster,
                name,
                plain,
            } => {
                let format = if plain { "plain" } else { "uploaded" };
                let v: StrategyRecord = client
                    .get(&format!(
                        "/clusters/{cluster}/strategies/{name}/?format={format}"
                    ))
                    .await?;
                match f {
                    Format::Json => output::json(&serde_json::to_value(&v)?),
                    Format::Table => println!(
                        "{}",
                        serde_yaml_ng::to_string(&v.document).unwrap_or_default()
                    ),
                }
            }
            StrategyCommand::Delete { cluster, name } => {
                client
                    .call(
                        Method::DELETE,
                        &format!("/clusters/{cluster}/strategies/{name}/"),
                        None,
                    )
                    .await?;
                eprintln!("strategy {name:?} of cluster {cluster} deleted");
            }
            StrategyCommand::Validate {
                cluster,
                files,
                file_opts,
            } => return strategy::validate(&client, cluster, &joined(&files, &file_opts), f).await,
            StrategyCommand::Check { .. } | StrategyCommand::Simulate { .. } => {
                unreachable!("handled above")
            }
        },
        Command::Controllers => {
            let status: plinth_api::controllers::ClusterStatus =
                client.get("/cluster-status").await?;
            match f {
                output::Format::Json => {
                    output::json(&serde_json::to_value(&status).unwrap_or_default())
                }
                output::Format::Table => {
                    rows::print(f, &status.controllers);
                    println!(
                        "database {}; answered by {}; {}",
                        status.database,
                        status.answered_by,
                        match &status.lease {
                            Some(l) if l.held =>
                                format!("sequencing lease held by {} (token {})", l.holder, l.token),
                            Some(l) => format!(
                                "sequencing lease free (last held by {}, token {})",
                                l.holder, l.token
                            ),
                            None => "no controller has held the sequencing lease yet".into(),
                        }
                    );
                }
            }
        }
        Command::Nodes { command } => match command {
            NodesCommand::List => rows::print(f, &all_nodes(&client).await?),
            NodesCommand::Show { id } => output::json(
                &client
                    .call(Method::GET, &format!("/nodes/{id}"), None)
                    .await?,
            ),
            NodesCommand::Accept { id } => rows::print_one(
                f,
                &client
                    .send::<(), NodeView>(Method::POST, &format!("/nodes/{id}/accept"), None)
                    .await?,
            ),
            NodesCommand::Delete { id } => {
                client
                    .call(Method::DELETE, &format!("/nodes/{id}"), None)
                    .await?;
                eprintln!("node {id} deleted");
            }
            NodesCommand::Enroll { file, format } => {
                enroll::enroll(&client, &file, format.as_deref(), f).await?
            }
            NodesCommand::Enrolled { name } => enroll::show(&client, name.as_deref(), f).await?,
            NodesCommand::Release { name } => enroll::release(&client, &name, f).await?,
            NodesCommand::Unenroll { name } => enroll::unenroll(&client, &name).await?,
            NodesCommand::Power { action, nodes } => {
                enroll::power(&client, action, &nodes, f).await?
            }
            NodesCommand::BootDevice {
                node,
                device,
                once,
                mode,
            } => enroll::boot_device(&client, &node, device, once, mode, f).await?,
        },
        Command::Release { command } => match command {
            ReleaseCommand::List => {
                rows::print(f, &client.get::<Vec<ReleaseRecord>>("/releases").await?)
            }
            ReleaseCommand::Create { file } => {
                let mut body = read_doc(&file)?;
                if body.is_array() {
                    // Nailgun's fixture (`openstack.yaml`): read as the offline commands read it.
                    let release = inputs::load_release(&file, &[], "default")?;
                    body = release_body(&release, &file)?;
                }
                rows::print_one(
                    f,
                    &client
                        .send::<_, ReleaseRecord>(Method::POST, "/releases", Some(&body))
                        .await?,
                )
            }
        },
        Command::Cluster { command } => match command {
            ClusterCommand::Settings { command } => match command {
                SettingsCommand::Get { cluster, section } => {
                    settings::get(&client, cluster, section.as_deref(), f).await?
                }
                SettingsCommand::Set {
                    cluster,
                    assignments,
                } => settings::set(&client, cluster, &assignments).await?,
                SettingsCommand::Edit { cluster } => settings::edit(&client, cluster).await?,
            },
            ClusterCommand::List => {
                rows::print(f, &client.get::<Vec<ClusterRecord>>("/clusters").await?)
            }
            ClusterCommand::Create { name, release } => {
                let body = CreateCluster {
                    name,
                    release_id: release,
                    settings: serde_json::Map::new(),
                };
                let v: ClusterRecord = client.send(Method::POST, "/clusters", Some(&body)).await?;
                rows::print_one(f, &v)
            }
            ClusterCommand::AddNodes { cluster, nodes } => {
                let nodes = nodes
                    .iter()
                    .map(|n| parse_assignment(n))
                    .collect::<Result<Vec<_>>>()?;
                let count = nodes.len();
                client
                    .call(
                        Method::PUT,
                        &format!("/clusters/{cluster}/nodes"),
                        Some(&serde_json::to_value(AssignNodes { nodes })?),
                    )
                    .await?;
                eprintln!("added {count} node(s) to cluster {cluster}");
            }
            ClusterCommand::Check {
                cluster,
                graph_type,
                nodes,
            } => {
                return graph::cluster_check(&client, cluster, &graph_type, nodes.as_deref(), f)
                    .await
            }
        },
        Command::Config { command } => match command {
            ConfigCommand::Set { cluster, files } => {
                let v = strategy::set_configuration(&client, cluster, &files).await?;
                rows::print_one(f, &v);
            }
            ConfigCommand::Show { cluster } => {
                let v: ConfigurationRecord = client
                    .get(&format!("/clusters/{cluster}/deployment_configuration/"))
                    .await?;
                match f {
                    Format::Json => output::json(&serde_json::to_value(&v)?),
                    Format::Table => println!(
                        "{}",
                        serde_yaml_ng::to_string(v.source.get("uploaded").unwrap_or(&Value::Null))
                            .unwrap_or_default()
                    ),
                }
            }
            ConfigCommand::Delete { cluster } => {
                client
                    .call(
                        Method::DELETE,
                        &format!("/clusters/{cluster}/deployment_configuration/"),
                        None,
                    )
                    .await?;
                eprintln!("deployment configuration of cluster {cluster} deleted");
            }
        },
        Command::Deploy { command } => match command {
            DeployCommand::Start {
                cluster,
                graph_type,
                nodes,
                strategy,
                action,
                node,
                noop,
                force,
                watch: follow,
            } => {
                let query = DeployQuery {
                    graph_type,
                    nodes,
                    strategy,
                    action,
                    node,
                    noop,
                    force,
                    dry_run: false,
                };
                let path = format!("/clusters/{cluster}/deploy/");
                let answer = client.call_query(Method::PUT, &path, &query).await?;
                let dep: StartedDeployment = serde_json::from_value(answer)
                    .with_context(|| format!("unexpected answer to PUT {path}"))?;
                if f == Format::Table {
                    // What runs: the strategy, how it was chosen, each phase's timeout.
                    eprint!("{}", strategy::describe_start(&dep));
                }
                if follow {
                    return finish_watch(&client, dep.record.id, f).await;
                }
                rows::print_one(f, &dep);
            }
            DeployCommand::Watch { id } => return finish_watch(&client, id, f).await,
            DeployCommand::Report { id } => {
                let r: Report = client.get(&format!("/deployments/{id}")).await?;
                match f {
                    Format::Json => output::json_of(&r),
                    Format::Table => output::report(&r),
                }
                return Ok(r.status != DeploymentStatus::Failed);
            }
            DeployCommand::List => rows::print(
                f,
                &client.get::<Vec<DeploymentRecord>>("/deployments").await?,
            ),
            DeployCommand::Cancel { id } => {
                let d: DeploymentRecord = client
                    .send::<(), _>(Method::POST, &format!("/deployments/{id}/cancel"), None)
                    .await?;
                match f {
                    Format::Json => output::json_of(&d),
                    Format::Table => println!("deployment {id} {}", d.status),
                }
            }
            DeployCommand::Retry { id, watch } => {
                let d: DeploymentRecord = client
                    .send::<(), _>(Method::POST, &format!("/deployments/{id}/retry"), None)
                    .await?;
                if watch {
                    return finish_watch(&client, d.id, f).await;
                }
                match f {
                    Format::Json => output::json_of(&d),
                    Format::Table => println!(
                        "deployment {} started: nodes {} of deployment {id} again",
                        d.id,
                        output::list(&d.node_ids)
                    ),
                }
            }
        },
    }
    Ok(true)
}

/// Follows a deployment, then prints its report; Ok(false) unless it succeeded.
pub(crate) async fn finish_watch(client: &Client, id: u64, f: Format) -> Result<bool> {
    let r = watch::watch(client, id, f == Format::Table).await?;
    match f {
        Format::Json => output::json_of(&r),
        Format::Table => output::report(&r),
    }
    Ok(r.status == DeploymentStatus::Success)
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

/// Every node, page by page.
async fn all_nodes(client: &client::Client) -> Result<Vec<NodeView>> {
    const PAGE: usize = 1000;
    let mut all = Vec::new();
    let mut marker = 0u64;
    loop {
        let items: Vec<NodeView> = client
            .get(&format!("/nodes?limit={PAGE}&marker={marker}"))
            .await?;
        let done = items.len() < PAGE;
        marker = items.last().map_or(marker, |n| n.node.id);
        all.extend(items);
        if done {
            return Ok(all);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
