//! `plinthctl graph ...`: typed graphs on a controller (list, upload, download, execute, dot,
//! serialized) and offline on files (resolve, check; see [`crate::resolve`]).

use crate::client::Client;
use crate::inputs;
use crate::output::{self, Format};
use crate::resolve::{self, node_list, Dot, Files};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use plinth_api::answers::{Checks, SerializedTasks, Stored};
use plinth_api::records::{ClusterRecord, GraphRecord};
use plinth_common::graph::DotOptions;
use plinth_common::model::{parse_graph, DEFAULT_GRAPH_TYPE};
use reqwest::Method;
use serde_json::Value;
use std::path::PathBuf;

/// The files of an offline resolution.
#[derive(Args, Debug, Clone)]
pub struct ResolveArgs {
    /// The release: YAML or JSON (`name`, `version`, `roles_metadata`, `tags_metadata`, `graphs`), or
    /// Nailgun's fixture (`openstack.yaml`).
    #[arg(long)]
    release: PathBuf,
    /// Fuel `tasks.yaml` files forming the release's graph of `--graph-type` (a directory stands for
    /// every `tasks.yaml` under it); repeatable.
    #[arg(long = "tasks", num_args = 1..)]
    tasks: Vec<PathBuf>,
    /// A plugin file (`name`, `version`, `node_roles`, `tags_metadata`, `graphs`, `deployment_tasks`);
    /// repeatable.
    #[arg(long = "plugin")]
    plugins: Vec<PathBuf>,
    /// The cluster: `name`, `release`, `plugins` (names), `settings`, `tags_metadata`, `graphs`, `nodes`.
    #[arg(long)]
    cluster: PathBuf,
    /// The graph type.
    #[arg(long, alias = "type", default_value = DEFAULT_GRAPH_TYPE)]
    graph_type: String,
    /// Node ids to run on, comma-separated (else the graph's node filter and pending changes choose).
    #[arg(long)]
    nodes: Option<String>,
    /// The old states `changed()` compares with: a JSON or YAML mapping of node id → state.
    #[arg(long)]
    old: Option<PathBuf>,
    /// Treat the old state as empty.
    #[arg(long)]
    force: bool,
}

impl ResolveArgs {
    fn files(&self) -> Result<Files> {
        Ok(Files {
            release: self.release.clone(),
            tasks: self.tasks.clone(),
            plugins: self.plugins.clone(),
            cluster: self.cluster.clone(),
            graph_type: self.graph_type.clone(),
            nodes: self.nodes.as_deref().map(node_list).transpose()?,
            old: self.old.clone(),
            force: self.force,
        })
    }
}

/// Graphviz filters, as the API takes them.
#[derive(Args, Debug, Clone, Default)]
pub struct DotFilters {
    /// Draw only these tasks (comma-separated).
    #[arg(long = "dot-tasks")]
    dot_tasks: Option<String>,
    /// Draw only this task and every task it depends on.
    #[arg(long)]
    parents_for: Option<String>,
    /// Leave out these task types or ids (comma-separated); the order through them is kept.
    #[arg(long)]
    remove: Option<String>,
}

fn split(text: Option<&str>) -> Vec<String> {
    text.unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

impl DotFilters {
    fn options(&self) -> DotOptions {
        DotOptions {
            tasks: split(self.dot_tasks.as_deref()),
            parents_for: self.parents_for.clone().filter(|s| !s.is_empty()),
            remove: split(self.remove.as_deref()),
        }
    }

    fn query(&self) -> String {
        let mut q = String::new();
        for (k, v) in [
            ("tasks", &self.dot_tasks),
            ("parents_for", &self.parents_for),
            ("remove", &self.remove),
        ] {
            if let Some(v) = v {
                q.push_str(&format!("&{k}={}", encode(v)));
            }
        }
        q
    }
}

/// Percent-encodes a query value.
fn encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.,~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Whose graphs.
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub struct GraphOwner {
    /// A cluster (environment).
    #[arg(long, alias = "cluster")]
    env: Option<u64>,
    /// A release.
    #[arg(long)]
    release: Option<u64>,
    /// A plugin.
    #[arg(long)]
    plugin: Option<u64>,
}

impl GraphOwner {
    fn path(&self) -> String {
        match (self.env, self.release, self.plugin) {
            (Some(id), _, _) => format!("/clusters/{id}"),
            (_, Some(id), _) => format!("/releases/{id}"),
            (_, _, Some(id)) => format!("/plugins/{id}"),
            // clap requires one of the three.
            _ => "/clusters/0".into(),
        }
    }
}

/// Which graphs `download` takes.
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub struct Level {
    /// The merged tasks (release → enabled plugins → cluster).
    #[arg(long)]
    all: bool,
    /// The cluster's own graph.
    #[arg(long)]
    cluster: bool,
    /// The enabled plugins' graphs.
    #[arg(long)]
    plugins: bool,
    /// The release's graph.
    #[arg(long)]
    release: bool,
}

/// `plinthctl graph ...`.
#[derive(Subcommand)]
pub enum GraphCommand {
    /// Offline: every node's resolved, ordered tasks, then the pre-deployment findings (exit 1 on an
    /// error finding).
    Resolve {
        #[command(flatten)]
        args: ResolveArgs,
        /// Print the merged graph in Graphviz DOT instead of the tasks (with `-o json`: as `dot`).
        #[arg(long)]
        dot: bool,
        #[command(flatten)]
        filters: DotFilters,
    },
    /// Offline: only the pre-deployment findings (exit 1 on an error finding), with the files'
    /// unknown keys as warnings naming the file, the line and the nearest known key.
    Check {
        #[command(flatten)]
        args: ResolveArgs,
        /// Fail on warnings too (exit 1; an unknown key is one), for a task author's CI.
        #[arg(long)]
        strict: bool,
    },
    /// List the graphs of a cluster (with its release's and plugins'), a release or a plugin.
    List {
        #[command(flatten)]
        owner: GraphOwner,
    },
    /// Upload a graph (a Fuel `tasks.yaml`, or `{name, tasks, node_filter}`), creating or replacing it.
    Upload {
        #[command(flatten)]
        owner: GraphOwner,
        /// The graph type.
        #[arg(long = "type", short = 't', default_value = DEFAULT_GRAPH_TYPE)]
        graph_type: String,
        /// The file (YAML or JSON; `-` for standard input).
        #[arg(long, short = 'f')]
        file: PathBuf,
        /// Store the graph even when its shape has errors (a cycle, a type no one defines); the
        /// errors are printed, and the controller logs that the upload was forced.
        #[arg(long)]
        force: bool,
    },
    /// Download a cluster's tasks as YAML (`-o json`: JSON).
    Download {
        /// The cluster.
        #[arg(long, alias = "cluster-id")]
        env: u64,
        #[command(flatten)]
        level: Level,
        /// The graph type.
        #[arg(long = "type", short = 't', default_value = DEFAULT_GRAPH_TYPE)]
        graph_type: String,
        /// Write here instead of standard output.
        #[arg(long, short = 'f')]
        file: Option<PathBuf>,
    },
    /// Start a deployment of a graph type on a cluster; prints its id.
    Execute {
        /// The cluster.
        #[arg(long, alias = "cluster")]
        env: u64,
        /// The graph type.
        #[arg(long = "type", short = 't', default_value = DEFAULT_GRAPH_TYPE)]
        graph_type: String,
        /// Node ids, comma-separated (`--node`, as seed 002 writes it, too).
        #[arg(long, alias = "node")]
        nodes: Option<String>,
        /// Resolve and show what would run; start nothing.
        #[arg(long)]
        dry_run: bool,
        /// Run puppet in no-op mode.
        #[arg(long)]
        noop: bool,
        /// Treat the last deployed state as empty.
        #[arg(long)]
        force: bool,
        /// Follow it until it ends, then print its report.
        #[arg(long)]
        watch: bool,
    },
    /// A cluster's merged graph in Graphviz DOT.
    Dot {
        /// The cluster.
        #[arg(long, alias = "cluster")]
        env: u64,
        /// The graph type.
        #[arg(long = "type", short = 't', default_value = DEFAULT_GRAPH_TYPE)]
        graph_type: String,
        /// Draw only these tasks (comma-separated).
        #[arg(long)]
        tasks: Option<String>,
        /// Draw only this task and every task it depends on.
        #[arg(long)]
        parents_for: Option<String>,
        /// Leave out these task types or ids (comma-separated).
        #[arg(long)]
        remove: Option<String>,
        /// Write here instead of standard output.
        #[arg(long, short = 'f')]
        file: Option<PathBuf>,
    },
    /// Every node's resolved, ordered tasks as the controller would send them.
    Serialized {
        /// The cluster.
        #[arg(long, alias = "cluster")]
        env: u64,
        /// The graph type.
        #[arg(long = "type", short = 't', default_value = DEFAULT_GRAPH_TYPE)]
        graph_type: String,
        /// Node ids, comma-separated.
        #[arg(long)]
        nodes: Option<String>,
    },
}

/// Runs the offline graph commands; `None` when the command needs a controller.
pub fn run_offline(command: &GraphCommand, format: Format) -> Option<Result<bool>> {
    match command {
        GraphCommand::Resolve { args, dot, filters } => Some(args.files().and_then(|files| {
            resolve::resolve_cmd(
                &files,
                &Dot {
                    enabled: *dot,
                    options: filters.options(),
                },
                format,
            )
        })),
        GraphCommand::Check { args, strict } => Some(
            args.files()
                .and_then(|f| resolve::check_cmd(&f, format, *strict)),
        ),
        _ => None,
    }
}

fn graph_rows(level: &str, graphs: &[GraphRecord]) -> Vec<Vec<String>> {
    graphs
        .iter()
        .map(|g| {
            vec![
                g.id.to_string(),
                level.to_string(),
                g.owner.id().to_string(),
                g.graph_type.clone(),
                g.body.name.clone().unwrap_or_else(|| "-".into()),
                g.body.tasks.len().to_string(),
                g.body.node_filter.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect()
}

/// The cluster's release id and enabled plugin ids.
async fn cluster_parts(client: &Client, env: u64) -> Result<(u64, Vec<u64>)> {
    let c: ClusterRecord = client.get(&format!("/clusters/{env}")).await?;
    Ok((c.release_id, c.data.plugins))
}

fn write_out(file: Option<&PathBuf>, text: &str) -> Result<()> {
    match file {
        Some(p) => {
            std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display()))?;
            eprintln!("wrote {}", p.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}

/// Runs the online graph commands.
pub async fn run(client: &Client, command: GraphCommand, format: Format) -> Result<bool> {
    match command {
        GraphCommand::Resolve { .. } | GraphCommand::Check { .. } => {
            bail!("graph resolve and graph check work offline")
        }
        GraphCommand::List { owner } => {
            let mut levels: Vec<(String, String)> = Vec::new();
            if let Some(env) = owner.env {
                let (release, plugins) = cluster_parts(client, env).await?;
                levels.push(("release".into(), format!("/releases/{release}")));
                for p in plugins {
                    levels.push(("plugin".into(), format!("/plugins/{p}")));
                }
                levels.push(("cluster".into(), format!("/clusters/{env}")));
            } else {
                let level = if owner.release.is_some() {
                    "release"
                } else {
                    "plugin"
                };
                levels.push((level.into(), owner.path()));
            }
            let mut all = Vec::new();
            let mut rows = Vec::new();
            for (level, path) in levels {
                let graphs: Vec<GraphRecord> =
                    client.get(&format!("{path}/deployment_graphs/")).await?;
                rows.extend(graph_rows(&level, &graphs));
                all.extend(graphs);
            }
            match format {
                Format::Json => output::json(&serde_json::to_value(&all)?),
                Format::Table => output::table(
                    &[
                        "id",
                        "level",
                        "owner",
                        "type",
                        "name",
                        "tasks",
                        "node_filter",
                    ],
                    &rows,
                ),
            }
        }
        GraphCommand::Upload {
            owner,
            graph_type,
            file,
            force,
        } => {
            let text = inputs::read_text(&file)?;
            let source = file.display().to_string();
            // Check locally first, for a message naming the file and line, and the graph's shape as
            // the controller checks it.
            let graph = parse_graph(&text, &source).map_err(|e| anyhow::anyhow!("{e}"))?;
            let tasks: Vec<&plinth_common::model::Task> = graph.tasks.iter().collect();
            let mut findings = plinth_common::graph::check_tasks(&tasks);
            findings.extend(plinth_common::graph::text_key_findings(
                plinth_common::graph::DocumentKind::Graph,
                &text,
                &source,
            ));
            let errors = findings
                .iter()
                .filter(|f| f.severity == plinth_common::graph::Severity::Error)
                .count();
            if !findings.is_empty() {
                eprintln!("{source}:");
                for f in &findings {
                    eprintln!("  {f}");
                }
            }
            if errors > 0 && !force {
                bail!(
                    "{source}: {errors} error(s) in the graph (above); fix them, or add --force to \
                     store it anyway"
                );
            }
            if errors > 0 {
                eprintln!("storing it with {errors} error(s), as --force asks");
            }
            let base = format!("{}/deployment_graphs/{graph_type}/", owner.path());
            let query = if force { "?force=true" } else { "" };
            let exists = client.call_opt(Method::GET, &base, None).await?.is_some();
            let (method, verb) = if exists {
                (Method::PUT, "replaced")
            } else {
                (Method::POST, "created")
            };
            let ctype = if file.extension().is_some_and(|e| e == "json") {
                "application/json"
            } else {
                "application/yaml"
            };
            let v = client
                .call_text(method, &format!("{base}{query}"), ctype, text)
                .await?;
            let stored: Stored<GraphRecord> = serde_json::from_value(v.clone())
                .with_context(|| format!("unexpected answer to {base}"))?;
            match format {
                Format::Json => output::json(&v),
                Format::Table => println!(
                    "graph {graph_type:?} of {} {verb} (id {}, {} task(s))",
                    owner.path().trim_start_matches('/'),
                    stored.record.id,
                    graph.tasks.len()
                ),
            }
            if let Some(forced) = &stored.forced {
                eprintln!("the controller: {forced}");
            }
        }
        GraphCommand::Download {
            env,
            level,
            graph_type,
            file,
        } => {
            let tasks: Value = if level.all {
                client
                    .call(
                        Method::GET,
                        &format!("/clusters/{env}/deployment_tasks/?graph_type={graph_type}"),
                        None,
                    )
                    .await?
            } else {
                let (release, plugins) = cluster_parts(client, env).await?;
                let owners: Vec<String> = if level.cluster {
                    vec![format!("/clusters/{env}")]
                } else if level.release {
                    vec![format!("/releases/{release}")]
                } else {
                    plugins.iter().map(|p| format!("/plugins/{p}")).collect()
                };
                let mut out = Vec::new();
                for o in owners {
                    let g = client
                        .call_opt(
                            Method::GET,
                            &format!("{o}/deployment_graphs/{graph_type}/"),
                            None,
                        )
                        .await?;
                    if let Some(g) = g {
                        let g: GraphRecord = serde_json::from_value(g)
                            .with_context(|| format!("unexpected answer to GET {o}"))?;
                        out.extend(g.body.tasks);
                    }
                }
                Value::Array(out)
            };
            let text = match format {
                Format::Json => format!("{}\n", serde_json::to_string_pretty(&tasks)?),
                Format::Table => serde_yaml_ng::to_string(&tasks)?,
            };
            write_out(file.as_ref(), &text)?;
        }
        GraphCommand::Execute {
            env,
            graph_type,
            nodes,
            dry_run,
            noop,
            force,
            watch,
        } => {
            let mut path = format!("/clusters/{env}/deploy/?graph_type={graph_type}");
            if let Some(n) = &nodes {
                node_list(n)?;
                path.push_str(&format!("&nodes={}", encode(n)));
            }
            for (flag, on) in [("dry_run", dry_run), ("noop", noop), ("force", force)] {
                if on {
                    path.push_str(&format!("&{flag}=true"));
                }
            }
            let dep = client.call(Method::PUT, &path, None).await?;
            if dry_run {
                match format {
                    Format::Json => output::json(&dep),
                    Format::Table => print!("{}", serde_yaml_ng::to_string(&dep)?),
                }
                return Ok(true);
            }
            let dep: plinth_api::deployments::StartedDeployment = serde_json::from_value(dep)
                .with_context(|| format!("unexpected answer to PUT {path}"))?;
            let id = dep.record.id;
            if watch {
                eprintln!(
                    "deployment {id} of graph {graph_type:?} started on cluster {env}; following it \
                     (`plinthctl deploy watch {id}` follows it again)"
                );
                return crate::finish_watch(client, id, format).await;
            }
            match format {
                Format::Json => output::json_of(&dep),
                Format::Table => println!("{id}"),
            }
            eprintln!("deployment {id} of graph {graph_type:?} started on cluster {env}");
        }
        GraphCommand::Dot {
            env,
            graph_type,
            tasks,
            parents_for,
            remove,
            file,
        } => {
            let filters = DotFilters {
                dot_tasks: tasks,
                parents_for,
                remove,
            };
            let text = client
                .get_text(
                    &format!(
                        "/clusters/{env}/deploy_tasks/graph.gv?graph_type={graph_type}{}",
                        filters.query()
                    ),
                    "text/vnd.graphviz",
                )
                .await?;
            write_out(file.as_ref(), &text)?;
        }
        GraphCommand::Serialized {
            env,
            graph_type,
            nodes,
        } => {
            let mut path = format!("/clusters/{env}/serialized_tasks/?graph_type={graph_type}");
            if let Some(n) = &nodes {
                node_list(n)?;
                path.push_str(&format!("&nodes={}", encode(n)));
            }
            let v = client.call(Method::GET, &path, None).await?;
            match format {
                Format::Json => output::json(&v),
                Format::Table => {
                    let answer: SerializedTasks = serde_json::from_value(v)
                        .with_context(|| format!("unexpected answer to GET {path}"))?;
                    resolve::print_plan(answer.plan.as_ref());
                    resolve::print_findings(&answer.findings);
                }
            }
        }
    }
    Ok(true)
}

/// `plinthctl cluster check ID`: the controller's pre-deployment checks; Ok(false) when not ok.
pub async fn cluster_check(
    client: &Client,
    id: u64,
    graph_type: &str,
    nodes: Option<&str>,
    format: Format,
) -> Result<bool> {
    let mut path = format!("/clusters/{id}/checks/?graph_type={graph_type}");
    if let Some(n) = nodes {
        node_list(n)?;
        path.push_str(&format!("&nodes={}", encode(n)));
    }
    let v = client.call(Method::GET, &path, None).await?;
    let checks: Checks = serde_json::from_value(v.clone())
        .with_context(|| format!("unexpected answer to GET {path}"))?;
    match format {
        Format::Json => output::json(&v),
        Format::Table => resolve::print_findings(&checks.findings),
    }
    Ok(checks.ok)
}
