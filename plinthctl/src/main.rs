//! `plinthctl`: Plinth's command-line client. Talks to a controller's API, and works offline on files.

/// plinthctl's allocator, the controller's: rendering a site (`plinthctl site`, strategies given as a
/// site) makes and frees many small blocks, and jemalloc spends less CPU per block than glibc's malloc
/// (with it, rendering the treasuremap site takes under half the time; docs/BENCHMARKS.md).
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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
mod site;
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

/// `--help`'s description, with the exit codes.
const LONG_ABOUT: &str = "Drive a Plinth controller, and check task graphs offline.

The commands that talk to a controller take --controller (one URL, or several controllers of one site, \
comma-separated: a request that cannot reach one, or that it answers 502, 503 or 504, goes to the next), \
--token or --token-file, and --ca-cert, before the command or after it. An empty environment variable \
counts as not set.

Exit codes:
  0  done
  1  what was asked ran and failed: a deployment followed did not fully succeed (`deploy report`: it failed), a check found errors, a BMC failed
  2  usage: the command line, or a file or expression it names, is wrong
  3  refused by the controller (400, 403, 409, 422, ...: its message says why)
  4  not found: the id or name given does not exist (404)
  5  no controller could be reached or serve (connection, TLS, 5xx, an answer it cannot read)
  6  unauthorized: no token, or one the controller does not know (401)";

#[derive(Parser)]
#[command(
    name = "plinthctl",
    version,
    about = "Drive a Plinth controller, and check task graphs offline",
    long_about = LONG_ABOUT
)]
struct Cli {
    #[command(flatten)]
    server: ServerArgs,
    /// Output format: `table` for people, `json` for scripts.
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
    /// An Airship site: render it as Deckhand does (offline), enrol its Drydock nodes.
    Site {
        #[command(subcommand)]
        command: site::SiteCommand,
    },
    /// Plugins: list, show, register, delete, enable and disable in a cluster.
    Plugin {
        #[command(subcommand)]
        command: plugins::PluginCommand,
    },
    /// The controllers sharing the database: which are live, which one sequences deployments, and
    /// each one's connected agents.
    Controllers,
    /// Shell completions and the man page, offline (the Debian package installs them).
    Generate {
        #[command(subcommand)]
        what: plinth_common::cli_docs::Generate,
    },
    /// Start a local controller and agents, deploy a sample graph, and print the report.
    Quickstart {
        /// Keep the temporary directory (logs, databases, work directories).
        #[arg(long)]
        keep: bool,
    },
}

/// How to reach the controllers: options of the commands that talk to one (and of `plinthctl` itself,
/// before the command).
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Controller")]
struct ServerArgs {
    /// The controller's URL; several controllers of one site comma-separated (or repeated), tried in
    /// turn when one cannot be reached or answers 502, 503 or 504.
    #[arg(
        long,
        env = "PLINTH_CONTROLLER",
        value_name = "URL",
        value_delimiter = ',',
        default_value = "https://127.0.0.1:7443"
    )]
    controller: Vec<String>,
    /// An operator token (prefer --token-file: a command line is seen by every user of the host).
    #[arg(long, env = "PLINTH_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// A file holding the operator token (for example the controller's admin.token).
    #[arg(long, env = "PLINTH_TOKEN_FILE", value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// The controller's certificate (PEM) to trust; its self-signed one is tls/cert.pem in its data
    /// directory.
    #[arg(long, env = "PLINTH_CA_CERT", value_name = "FILE")]
    ca_cert: Option<PathBuf>,
}

/// The environment variables of [`ServerArgs`]: an empty one counts as not set.
const SERVER_ENV: [&str; 4] = [
    "PLINTH_CONTROLLER",
    "PLINTH_TOKEN",
    "PLINTH_TOKEN_FILE",
    "PLINTH_CA_CERT",
];

/// The commands that work offline (no controller): they take no controller options.
fn offline(path: &[&str]) -> bool {
    matches!(
        path,
        ["graph", "resolve" | "check"]
            | ["strategy", "check" | "simulate"]
            | ["expr", ..]
            | ["quickstart"]
            | ["generate", ..]
            | ["help", ..]
    )
}

/// Gives every command that talks to a controller the controller options, so that they may follow it
/// (`plinthctl nodes list --controller URL`) and show in its help; offline commands have none.
fn with_server_options(cmd: clap::Command, path: &mut Vec<String>) -> clap::Command {
    use clap::Args;
    let leaf = cmd.get_subcommands().next().is_none();
    if leaf {
        let names: Vec<&str> = path.iter().map(String::as_str).collect();
        if names.is_empty() || offline(&names) {
            return cmd;
        }
        let options = ServerArgs::augment_args(clap::Command::new("server"));
        return cmd.args(options.get_arguments().cloned());
    }
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    names.into_iter().fold(cmd, |cmd, name| {
        path.push(name.clone());
        let cmd = cmd.mut_subcommand(&name, |sub| with_server_options(sub, path));
        path.pop();
        cmd
    })
}

/// The command line's definition: [`Cli`] with the controller options on every online command.
fn cli_command() -> clap::Command {
    use clap::CommandFactory;
    with_server_options(Cli::command(), &mut Vec::new())
}

impl ServerArgs {
    /// The options in effect: those given after the command win over those before it, which win over
    /// the environment and the defaults.
    fn effective(top: &ServerArgs, matches: &clap::ArgMatches) -> Result<ServerArgs> {
        use clap::FromArgMatches;
        let mut leaf = matches;
        while let Some((_, sub)) = leaf.subcommand() {
            leaf = sub;
        }
        if std::ptr::eq(leaf, matches) || leaf.try_get_raw("controller").is_err() {
            return Ok(top.clone());
        }
        let after = ServerArgs::from_arg_matches(leaf).context("reading the controller options")?;
        let given =
            |id: &str| leaf.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
        // The value after the command when given there, else the one before it (or the environment's).
        fn pick<T: Clone>(given: bool, after: T, before: &T) -> T {
            if given {
                after
            } else {
                before.clone()
            }
        }
        Ok(ServerArgs {
            controller: pick(given("controller"), after.controller, &top.controller),
            token: pick(given("token"), after.token, &top.token),
            token_file: pick(given("token_file"), after.token_file, &top.token_file),
            ca_cert: pick(given("ca_cert"), after.ca_cert, &top.ca_cert),
        })
    }
}

/// An error in what the operator gave (exit 2): a file, a value.
#[derive(Debug)]
struct Usage(String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// The exit code for an error (see [`LONG_ABOUT`]).
fn exit_code(e: &anyhow::Error) -> u8 {
    e.chain()
        .find_map(|c| c.downcast_ref::<client::ApiError>())
        .map_or(2, |a| a.kind.exit_code())
}

/// Runs one call per id, printing each failure; fails, with the first failure's kind, when any did.
fn each_failed(what: &str, failures: Vec<(u64, anyhow::Error)>, total: usize) -> Result<()> {
    let Some((_, first)) = failures.first() else {
        return Ok(());
    };
    let kind = first
        .chain()
        .find_map(|c| c.downcast_ref::<client::ApiError>())
        .map(|a| a.kind);
    for (id, e) in &failures {
        eprintln!("plinthctl: {id}: {e:#}");
    }
    let ids: Vec<u64> = failures.iter().map(|(id, _)| *id).collect();
    let message = format!(
        "{} of {total} not {what}: {} (the lines above say why)",
        failures.len(),
        output::list(&ids)
    );
    Err(match kind {
        Some(kind) => anyhow::Error::new(client::ApiError { kind, message }),
        None => anyhow::Error::new(Usage(message)),
    })
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
    /// Evaluate an expression; print the result as JSON (a parse or evaluation error exits 2, with a caret under the place).
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
    List {
        /// The cluster's id.
        cluster: u64,
    },
    /// Store a strategy (YAML or JSON; Shipyard's document, the plain form, or a site design stream whose
    /// layered DeploymentStrategy is taken) for a cluster.
    Create {
        /// The cluster's id.
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
        /// The cluster's id.
        cluster: u64,
        /// The strategy's name.
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
        /// The cluster's id.
        cluster: u64,
        /// The strategy's name.
        name: String,
        /// The normalised form instead of the document as uploaded.
        #[arg(long)]
        plain: bool,
    },
    /// Delete a stored strategy.
    Delete {
        /// The cluster's id.
        cluster: u64,
        /// The strategy's name.
        name: String,
    },
    /// Validate a strategy against a cluster's nodes on the controller (stores nothing).
    Validate {
        /// The cluster's id.
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
        /// The cluster's id.
        cluster: u64,
        /// The files (`-` for standard input): the document, or a site design holding one.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Show the cluster's deployment configuration: what Plinth uses, and the document as uploaded.
    Show {
        /// The cluster's id.
        cluster: u64,
    },
    /// Delete the cluster's deployment configuration.
    Delete {
        /// The cluster's id.
        cluster: u64,
    },
}

#[derive(Subcommand)]
enum NodesCommand {
    /// List nodes.
    List,
    /// Show nodes with their facts: `nodes show 1 2` (several: a JSON list).
    Show {
        /// The nodes' ids (`nodes list` shows them).
        #[arg(required = true)]
        ids: Vec<u64>,
    },
    /// Accept discovered nodes: `nodes accept 1 2 3`.
    Accept {
        /// The nodes' ids.
        #[arg(required = true)]
        ids: Vec<u64>,
    },
    /// Delete nodes: `nodes delete 4 5`.
    Delete {
        /// The nodes' ids.
        #[arg(required = true)]
        ids: Vec<u64>,
    },
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
    Release {
        /// The enrolled server's name.
        name: String,
    },
    /// Forget an enrolled server and its BMC password (its node, if any, stays).
    Unenroll {
        /// The enrolled server's name.
        name: String,
    },
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
    /// Create a release (name, version, roles_metadata, tags_metadata, graphs) from a YAML or JSON file,
    /// or from Nailgun's fixture (`openstack.yaml`, which holds several: choose one with --name).
    Create {
        /// The file (YAML or JSON).
        file: PathBuf,
        /// Which release of a Nailgun fixture holding several (the error lists them).
        #[arg(long)]
        name: Option<String>,
    },
}

#[derive(Subcommand)]
enum ClusterCommand {
    /// List clusters.
    List,
    /// Create a cluster.
    Create {
        /// The cluster's name.
        #[arg(long)]
        name: String,
        /// The release's id (`release list` shows them); the cluster starts with its settings.
        #[arg(long)]
        release: u64,
    },
    /// Add nodes to a cluster: `--node 3` or `--node 3:controller,mongo` (pending roles).
    AddNodes {
        /// The cluster's id.
        cluster: u64,
        /// A node's id, with its roles after a colon: `3` or `3:controller,mongo` (repeatable).
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
        /// The cluster's id.
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
        /// The cluster's id.
        cluster: u64,
        /// One section (`storage`), else all.
        section: Option<String>,
    },
    /// Change settings: `storage.osd_pool_size=2 additional_components.ceilometer=true`.
    Set {
        /// The cluster's id.
        cluster: u64,
        /// `section.key=value` (the value read as YAML: `2`, `true`, `[a, b]`).
        #[arg(required = true)]
        assignments: Vec<String>,
    },
    /// Edit the settings in $VISUAL or $EDITOR; saved with PUT when changed.
    Edit {
        /// The cluster's id.
        cluster: u64,
    },
}

#[derive(Subcommand)]
enum DeployCommand {
    /// Deploy a graph type on a cluster (all its nodes, or some).
    Start {
        /// The cluster's id.
        cluster: u64,
        /// The graph type (`default` unless a strategy or action chooses).
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
        /// Follow it until it ends (its id is printed first), then print its report.
        #[arg(long)]
        watch: bool,
    },
    /// Follow a deployment with progress bars, then print its report. A lost controller, a takeover
    /// or a database outage is waited out: it reconnects and goes on from the last event it saw.
    Watch {
        /// The deployment's id.
        id: u64,
    },
    /// Print a deployment's report.
    Report {
        /// The deployment's id.
        id: u64,
    },
    /// List deployments.
    List,
    /// Stop running deployments: nothing new starts, running tasks are ended (SIGTERM, then SIGKILL).
    Cancel {
        /// The deployments' ids.
        #[arg(required = true)]
        ids: Vec<u64>,
    },
    /// Deploy again the failed and not-started nodes of an ended deployment, with the same inputs.
    Retry {
        /// The ended deployment's id.
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

async fn run(cli: Cli, server: ServerArgs) -> Result<bool> {
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
        Command::Generate { what } => {
            plinth_common::cli_docs::generate(*what, cli_command(), &mut std::io::stdout())?;
            return Ok(true);
        }
        Command::Site {
            command:
                site::SiteCommand::Render {
                    files,
                    cleartext_secrets,
                    schema,
                },
        } => return site::render_site(files, *cleartext_secrets, schema.as_deref(), cli.output),
        Command::Site {
            command: site::SiteCommand::Nodes { files },
        } => return site::show_nodes(files, cli.output),
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
    let token = match (&server.token, &server.token_file) {
        (Some(t), _) => Some(t.clone()),
        (None, Some(f)) => Some(
            std::fs::read_to_string(f)
                .with_context(|| {
                    format!(
                        "cannot read the token file {} (--token-file or PLINTH_TOKEN_FILE): give a \
                         file holding an operator token, such as the controller's admin.token",
                        f.display()
                    )
                })?
                .trim()
                .to_string(),
        ),
        (None, None) => None,
    };
    let client = Client::new(&Target {
        urls: server.controller.clone(),
        token,
        ca_cert: server.ca_cert.clone(),
    })?;
    let f = cli.output;
    match cli.command {
        Command::Quickstart { .. } | Command::Expr { .. } | Command::Generate { .. } => {
            unreachable!("handled above")
        }
        Command::Graph { command } => return graph::run(&client, command, f).await,
        Command::Tag { command } => return tags::run(&client, command, f).await,
        Command::Plugin { command } => return plugins::run(&client, command, f).await,
        Command::Site {
            command: site::SiteCommand::Load { files, dry_run },
        } => return site::load(&client, &files, dry_run, f).await,
        Command::Site {
            command: site::SiteCommand::Render { .. } | site::SiteCommand::Nodes { .. },
        } => unreachable!("handled above"),
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
                    let now = rows::now_ms();
                    let table = rows::controller_rows(&status.controllers, now);
                    output::table(rows::CONTROLLER_HEADER, &table);
                    let answered = status
                        .controllers
                        .iter()
                        .find(|c| c.id == status.answered_by)
                        .map_or(status.answered_by.clone(), |c| {
                            format!("{} ({})", c.id, c.url)
                        });
                    println!(
                        "database {}; answered by {}; {}",
                        status.database,
                        answered,
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
            NodesCommand::Show { ids } => {
                let mut shown = Vec::with_capacity(ids.len());
                for id in &ids {
                    shown.push(
                        client
                            .call(Method::GET, &format!("/nodes/{id}"), None)
                            .await?,
                    );
                }
                match shown.as_slice() {
                    [one] => output::json(one),
                    _ => output::json(&serde_json::Value::Array(shown)),
                }
            }
            NodesCommand::Accept { ids } => {
                let mut accepted = Vec::new();
                let mut failures = Vec::new();
                for id in &ids {
                    match client
                        .send::<(), NodeView>(Method::POST, &format!("/nodes/{id}/accept"), None)
                        .await
                    {
                        Ok(n) => accepted.push(n),
                        Err(e) => failures.push((*id, e)),
                    }
                }
                match accepted.as_slice() {
                    // One id asked for: one record, as before lists of ids were taken.
                    [one] if ids.len() == 1 => rows::print_one(f, one),
                    [] => {}
                    all => rows::print(f, all),
                }
                each_failed("accepted", failures, ids.len())?;
            }
            NodesCommand::Delete { ids } => {
                let mut failures = Vec::new();
                for id in &ids {
                    match client
                        .call(Method::DELETE, &format!("/nodes/{id}"), None)
                        .await
                    {
                        Ok(_) => eprintln!("node {id} deleted"),
                        Err(e) => failures.push((*id, e)),
                    }
                }
                each_failed("deleted", failures, ids.len())?;
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
            ReleaseCommand::Create { file, name } => {
                let mut body = read_doc(&file)?;
                if body.is_array() {
                    // Nailgun's fixture (`openstack.yaml`): the release chosen by name.
                    let release = inputs::load_fixture_release(&file, name.as_deref())?;
                    body = release_body(&release, &file)?;
                } else if let Some(name) = &name {
                    let own = body.get("name").and_then(Value::as_str).unwrap_or_default();
                    if own != name {
                        anyhow::bail!(
                            "{} holds one release, named {own:?}, not {name:?}: leave out --name, or \
                             give the file that holds {name:?}",
                            file.display()
                        );
                    }
                }
                let stored = client
                    .send::<_, plinth_api::answers::Stored<ReleaseRecord>>(
                        Method::POST,
                        "/releases",
                        Some(&body),
                    )
                    .await?;
                // Unknown keys are warnings: the release is stored, and they are said.
                for finding in &stored.findings {
                    eprintln!("{finding}");
                }
                rows::print_one(f, &stored.record)
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
                    // First, so that the operator can follow it again should this command end.
                    eprintln!(
                        "deployment {} started; following it (`plinthctl deploy watch {}` follows it \
                         again)",
                        dep.record.id, dep.record.id
                    );
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
            DeployCommand::Cancel { ids } => {
                let mut failures = Vec::new();
                let mut cancelled = Vec::new();
                for id in &ids {
                    match client
                        .send::<(), DeploymentRecord>(
                            Method::POST,
                            &format!("/deployments/{id}/cancel"),
                            None,
                        )
                        .await
                    {
                        Ok(d) => {
                            if f == Format::Table {
                                println!("deployment {id} {}", d.status);
                            }
                            cancelled.push(d);
                        }
                        Err(e) => failures.push((*id, e)),
                    }
                }
                if f == Format::Json {
                    match cancelled.as_slice() {
                        [one] if ids.len() == 1 => output::json_of(one),
                        all => output::json_of(&all),
                    }
                }
                each_failed("cancelled", failures, ids.len())?;
            }
            DeployCommand::Retry { id, watch } => {
                let d: DeploymentRecord = client
                    .send::<(), _>(Method::POST, &format!("/deployments/{id}/retry"), None)
                    .await?;
                if watch {
                    eprintln!(
                        "deployment {} started: nodes {} of deployment {id} again; following it \
                         (`plinthctl deploy watch {}` follows it again)",
                        d.id,
                        output::list(&d.node_ids),
                        d.id
                    );
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
    for name in SERVER_ENV {
        // An empty variable (`PLINTH_TOKEN_FILE=`) counts as not set, not as an empty value. Nothing
        // else runs yet: no thread reads the environment meanwhile.
        if std::env::var_os(name).is_some_and(|v| v.is_empty()) {
            std::env::remove_var(name);
        }
    }
    let matches = cli_command().get_matches();
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let server = match ServerArgs::effective(&cli.server, &matches) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("plinthctl: {e:#}");
            return ExitCode::from(2);
        }
    };
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
    match runtime.block_on(run(cli, server)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("plinthctl: {e:#}");
            ExitCode::from(exit_code(&e))
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
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        cli_command().debug_assert();
    }

    /// Every command's path and definition, depth first.
    fn all(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<(Vec<String>, clap::Command)>) {
        out.push((path.clone(), cmd.clone()));
        for sub in cmd.get_subcommands() {
            let mut p = path.clone();
            p.push(sub.get_name().to_string());
            all(sub, p, out);
        }
    }

    #[test]
    fn every_option_and_argument_has_help() {
        let mut cmds = Vec::new();
        all(&cli_command(), Vec::new(), &mut cmds);
        let mut missing = Vec::new();
        for (path, cmd) in &cmds {
            for arg in cmd.get_arguments() {
                if ["help", "version"].contains(&arg.get_id().as_str()) {
                    continue;
                }
                if arg.get_help().is_none() {
                    missing.push(format!("{} {}", path.join(" "), arg.get_id()));
                }
            }
        }
        assert!(missing.is_empty(), "without help: {missing:#?}");
    }

    #[test]
    fn offline_commands_take_no_controller_options() {
        let mut cmds = Vec::new();
        all(&cli_command(), Vec::new(), &mut cmds);
        let has = |cmd: &clap::Command| cmd.get_arguments().any(|a| a.get_id() == "controller");
        for (path, cmd) in &cmds {
            if path.is_empty() || cmd.get_subcommands().next().is_some() {
                continue;
            }
            let names: Vec<&str> = path.iter().map(String::as_str).collect();
            assert_eq!(has(cmd), !offline(&names), "{names:?}");
        }
        for offline in [
            vec!["graph", "resolve"],
            vec!["strategy", "check"],
            vec!["expr", "eval"],
        ] {
            assert!(cmds.iter().any(|(p, _)| p == &offline), "{offline:?}");
        }
    }

    #[test]
    fn controller_options_after_the_command_win() {
        let parse = |args: &[&str]| {
            let m = cli_command().try_get_matches_from(args).unwrap();
            let cli = <Cli as clap::FromArgMatches>::from_arg_matches(&m).unwrap();
            ServerArgs::effective(&cli.server, &m).unwrap()
        };
        let s = parse(&["plinthctl", "--controller", "https://a:1", "nodes", "list"]);
        assert_eq!(s.controller, ["https://a:1"]);
        let s = parse(&[
            "plinthctl",
            "--controller",
            "https://a:1",
            "--token",
            "t",
            "nodes",
            "list",
            "--controller",
            "https://b:2,https://c:3",
        ]);
        assert_eq!(s.controller, ["https://b:2", "https://c:3"]);
        assert_eq!(s.token.as_deref(), Some("t"));
        assert!(cli_command()
            .try_get_matches_from(["plinthctl", "expr", "eval", "1", "--controller", "x"])
            .is_err());
    }

    #[test]
    fn lists_of_ids_are_taken() {
        let m = cli_command()
            .try_get_matches_from(["plinthctl", "nodes", "accept", "1", "2", "3"])
            .unwrap();
        let cli = <Cli as clap::FromArgMatches>::from_arg_matches(&m).unwrap();
        let Command::Nodes {
            command: NodesCommand::Accept { ids },
        } = cli.command
        else {
            panic!("not nodes accept");
        };
        assert_eq!(ids, [1, 2, 3]);
    }

    #[test]
    fn the_exit_codes_are_documented_and_distinct() {
        let codes: Vec<&str> = LONG_ABOUT
            .lines()
            .skip_while(|l| !l.starts_with("Exit codes"))
            .skip(1)
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(codes, ["0", "1", "2", "3", "4", "5", "6"]);
        let e = |kind| {
            anyhow::Error::new(client::ApiError {
                kind,
                message: String::new(),
            })
        };
        assert_eq!(exit_code(&e(client::Failure::Refused)), 3);
        assert_eq!(exit_code(&e(client::Failure::NotFound)), 4);
        assert_eq!(exit_code(&e(client::Failure::Unavailable).context("x")), 5);
        assert_eq!(exit_code(&e(client::Failure::Unauthorized)), 6);
        assert_eq!(exit_code(&anyhow::anyhow!("bad file")), 2);
    }
}
