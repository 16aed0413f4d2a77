//! Reading the offline commands' files: documents (JSON or YAML, `-` for standard input), releases
//! (Plinth's form or Nailgun's fixture, plus Fuel `tasks.yaml` files), plugins, clusters with their nodes,
//! and old states. Every error names the file, and the line when the parser knows it. The loaders of
//! tasks, releases, plugins and clusters add their files' unknown keys to the findings they are given
//! (warnings naming the file, the line and the nearest known key).

use anyhow::{anyhow, bail, Context, Result};
use plinth_common::graph::{key_findings, text_key_findings, DocumentKind, Finding};
use plinth_common::model::{
    parse_release_fixture, parse_release_fixture_named, parse_tasks, release_fixture_names,
    Cluster, Graph, Node, Plugin, Release, Task, DEFAULT_GRAPH_TYPE,
};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Reads a file, or standard input for `-`.
pub fn read_text(path: &Path) -> Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .context("cannot read standard input")?;
        return Ok(text);
    }
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// The name a file goes by in messages.
fn name(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".into()
    } else {
        path.display().to_string()
    }
}

/// Parses YAML (JSON is YAML) into `T`; the error names the file and, when known, the line and column.
fn parse_as<T: DeserializeOwned>(text: &str, source: &str) -> Result<T> {
    serde_yaml_ng::from_str(text).map_err(|e| match e.location() {
        Some(l) => anyhow!("{source}:{}:{}: {e}", l.line(), l.column()),
        None => anyhow!("{source}: {e}"),
    })
}

/// Reads a JSON or YAML document as JSON.
pub fn read_doc(path: &Path) -> Result<Value> {
    let text = read_text(path)?;
    let v: Value = parse_as(&text, &name(path))?;
    Ok(v)
}

/// Every `tasks.yaml` under a directory, sorted; a file stands for itself.
fn task_files(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| format!("cannot read the directory {}", path.display()))?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.extend(task_files(&p)?);
        } else if p.file_name().is_some_and(|n| n == "tasks.yaml") {
            out.push(p);
        }
    }
    Ok(out)
}

/// Reads Fuel `tasks.yaml` files (a directory stands for every `tasks.yaml` under it), in order; their
/// unknown keys join `findings`.
pub fn load_tasks(paths: &[PathBuf], findings: &mut Vec<Finding>) -> Result<Vec<Task>> {
    let mut tasks = Vec::new();
    for path in paths {
        for file in task_files(path)? {
            let text = read_text(&file)?;
            let source = name(&file);
            tasks.extend(parse_tasks(&text, &source).map_err(|e| anyhow!("{e}"))?);
            findings.extend(text_key_findings(DocumentKind::Tasks, &text, &source));
        }
    }
    Ok(tasks)
}

/// Reads a release: Plinth's form (a mapping with `name`, `roles_metadata`, `graphs`, ...) or
/// Nailgun's fixture (`openstack.yaml`, a list of entries). `tasks`, when not empty, form the release's
/// graph of `graph_type` (replacing the tasks of one the file has). Unknown keys join `findings`.
pub fn load_release(
    path: &Path,
    tasks: &[PathBuf],
    graph_type: &str,
    findings: &mut Vec<Finding>,
) -> Result<Release> {
    let text = read_text(path)?;
    let source = name(path);
    let shape: Value = parse_as(&text, &source)?;
    findings.extend(key_findings(
        DocumentKind::Release,
        &shape,
        Some(&text),
        &source,
    ));
    let mut release: Release = match shape {
        Value::Array(_) => parse_release_fixture(&text, &source).map_err(|e| anyhow!("{e}"))?,
        Value::Object(_) => parse_as(&text, &source)?,
        _ => bail!("{source}: a release is a mapping (or Nailgun's fixture, a list of entries)"),
    };
    if !tasks.is_empty() {
        let tasks = load_tasks(tasks, findings)?;
        release
            .graphs
            .entry(graph_type.to_string())
            .or_default()
            .tasks = tasks;
    }
    Ok(release)
}

/// Reads the release `name` of Nailgun's fixture (a list of entries; `openstack.yaml` holds several).
/// Without a name the file must hold one named release: with several, the error lists them and asks
/// for `--name`.
pub fn load_fixture_release(path: &Path, name: Option<&str>) -> Result<Release> {
    let text = read_text(path)?;
    let source = self::name(path);
    let releases = release_fixture_names(&text, &source).map_err(|e| anyhow!("{e}"))?;
    if let Some(wanted) = name {
        if !releases.iter().any(|r| r.name == wanted) {
            bail!(
                "{source} holds no release named {wanted:?}; it holds {}",
                fixture_list(&releases)
            );
        }
    } else if releases.len() > 1 {
        bail!(
            "{source} holds {} releases: {}; choose one with --name",
            releases.len(),
            fixture_list(&releases)
        );
    }
    parse_release_fixture_named(&text, &source, name).map_err(|e| anyhow!("{e}"))
}

/// A fixture's releases in words: `"A" (newton-10.0, unavailable), "B" (newton-10.0)`.
fn fixture_list(releases: &[plinth_common::model::FixtureRelease]) -> String {
    if releases.is_empty() {
        return "no named release".into();
    }
    releases
        .iter()
        .map(|r| {
            let about: Vec<&str> = r
                .version
                .iter()
                .chain(r.state.iter().filter(|s| s.as_str() != "available"))
                .map(String::as_str)
                .collect();
            if about.is_empty() {
                format!("{:?}", r.name)
            } else {
                format!("{:?} ({})", r.name, about.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The part of a plugin file that is not [`Plugin`]: Fuel's `deployment_tasks.yaml`.
#[derive(Deserialize)]
struct PluginExtras {
    #[serde(default)]
    deployment_tasks: Option<Vec<Task>>,
    /// `tasks.yaml` in the old format (no ids, `stage: post_deployment/100`).
    #[serde(default)]
    tasks: Option<Vec<Value>>,
}

/// Reads a plugin file: `name`, `version`, `node_roles`/`roles_metadata`, `tags_metadata`, `graphs`,
/// and `deployment_tasks` (its `default` graph, as Fuel plugins ship it). Unknown keys join `findings`.
pub fn load_plugin(path: &Path, findings: &mut Vec<Finding>) -> Result<Plugin> {
    let text = read_text(path)?;
    let source = name(path);
    let mut plugin: Plugin = parse_as(&text, &source)?;
    findings.extend(text_key_findings(DocumentKind::Plugin, &text, &source));
    let extras: PluginExtras = parse_as(&text, &source)?;
    if let Some(tasks) = extras.deployment_tasks {
        if plugin.graphs.contains_key(DEFAULT_GRAPH_TYPE) {
            bail!("{source}: give the default graph either as `deployment_tasks` or under `graphs`, not both");
        }
        plugin
            .graphs
            .insert(DEFAULT_GRAPH_TYPE.to_string(), Graph::with_tasks(tasks));
    }
    if let Some(old) = extras.tasks {
        let converted = plinth_common::model::convert_legacy_tasks(&plugin.name, &old)
            .map_err(|e| anyhow!("{source}: {e}"))?;
        let tasks: Vec<Task> = serde_json::from_value(Value::Array(converted))
            .map_err(|e| anyhow!("{source}: tasks: {e}"))?;
        plugin
            .graphs
            .entry(DEFAULT_GRAPH_TYPE.to_string())
            .or_default()
            .tasks
            .extend(tasks);
    }
    if plugin.name.trim().is_empty() {
        bail!("{source}: the plugin's `name` is empty");
    }
    let problems = plugin.volume_problems();
    if !problems.is_empty() {
        bail!("{source}: {}", problems.join("; "));
    }
    Ok(plugin)
}

/// The parts of a cluster file that are not [`Cluster`].
#[derive(Deserialize)]
struct ClusterExtras {
    #[serde(default)]
    id: Option<u64>,
    #[serde(default)]
    release: Option<String>,
    #[serde(default)]
    nodes: Vec<Node>,
}

/// A cluster file: the cluster, its id and its nodes.
pub struct ClusterFile {
    /// The cluster's id (`id`, else 1).
    pub id: u64,
    /// The cluster.
    pub cluster: Cluster,
    /// Its nodes.
    pub nodes: Vec<Node>,
}

/// Reads a cluster file: `name`, `release` (the release's name; absent: the release given), `plugins`
/// (names), `settings`, `tags_metadata`, `graphs`, and `nodes` (each a node: `id`, `name`, `roles`,
/// `pending_roles`, `tags_added`, `tags_removed`, `labels`, `rack`, `status`, `pending_addition`, ...).
/// Unknown keys join `findings`.
pub fn load_cluster(
    path: &Path,
    release_name: &str,
    findings: &mut Vec<Finding>,
) -> Result<ClusterFile> {
    let text = read_text(path)?;
    let source = name(path);
    let shape: Value = parse_as(&text, &source)?;
    findings.extend(key_findings(
        DocumentKind::Cluster,
        &shape,
        Some(&text),
        &source,
    ));
    let Value::Object(mut map) = shape else {
        bail!("{source}: a cluster is a mapping with `name`, `nodes`, ...");
    };
    let extras: ClusterExtras = parse_as(&text, &source)?;
    let cluster: Cluster = if extras.release.is_none() {
        map.insert("release".into(), Value::String(release_name.to_string()));
        serde_json::from_value(Value::Object(map)).map_err(|e| anyhow!("{source}: {e}"))?
    } else {
        parse_as(&text, &source)?
    };
    let mut seen = std::collections::BTreeSet::new();
    for (i, n) in extras.nodes.iter().enumerate() {
        if n.id == 0 {
            bail!(
                "{source}: nodes[{i}]: node id 0 names the controller's own host; give ids from 1"
            );
        }
        if !seen.insert(n.id) {
            bail!("{source}: nodes[{i}]: node id {} appears twice", n.id);
        }
    }
    Ok(ClusterFile {
        id: extras.id.unwrap_or(1),
        cluster,
        nodes: extras.nodes,
    })
}

/// Gives an offline cluster the attributes a controller would have given it at creation (Nailgun's
/// rule): its release's `attributes_metadata` with the cluster file's `settings` merged over the
/// editable defaults, and `generated` made unless the file gives it. Offline, the generators draw from a
/// fixed sequence (so a resolution reads the same every time) and `MASTER_IP` is `127.0.0.1`.
pub fn starting_attributes(
    cluster: &mut Cluster,
    release: &Release,
    cluster_id: u64,
) -> Result<()> {
    if release.attributes_metadata.is_null() {
        return Ok(());
    }
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut random = |buf: &mut [u8]| {
        for b in buf {
            // xorshift64: deterministic bytes, not secrets (nothing offline is deployed).
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *b = state as u8;
        }
    };
    let mut site = plinth_common::model::AttributeSite {
        master_ip: "127.0.0.1".into(),
        dns_upstream: vec!["127.0.0.1".into()],
        ntp_upstream: vec!["127.0.0.1".into()],
        cluster_id: Some(cluster_id),
        release_version: release.version.clone().unwrap_or_default(),
        random: &mut random,
    };
    let attrs = plinth_common::model::new_cluster_attributes(
        &release.attributes_metadata,
        &cluster.settings,
        &mut site,
    )
    .map_err(|e| anyhow!("release {}: attributes_metadata: {e}", release.name))?;
    cluster.settings = attrs.editable;
    if cluster.generated.is_null() {
        cluster.generated = attrs.generated;
    }
    Ok(())
}

/// Reads an old-state file: a JSON or YAML mapping of node id → the state (`$`) its tasks last ran
/// against.
pub fn load_old(path: &Path) -> Result<BTreeMap<u64, Value>> {
    let doc = read_doc(path)?;
    let Value::Object(map) = doc else {
        bail!(
            "{}: old states are a mapping of node id to state",
            name(path)
        );
    };
    map.into_iter()
        .map(|(k, v)| {
            let id = k
                .trim()
                .parse::<u64>()
                .map_err(|_| anyhow!("{}: key {k:?} is not a node id", name(path)))?;
            Ok((id, v))
        })
        .collect()
}
