//! `plinthctl quickstart`: a local controller with real agents deploying a sample graph, in a temporary
//! directory, with nothing but the binaries built from this workspace.

use crate::client::{Client, Target};
use crate::{output, watch};
use anyhow::{bail, Context, Result};
use plinth_api::records::{ClusterRecord, NodeAssignment, NodeView, ReleaseRecord};
use plinth_api::requests::{AssignNodes, CreateCluster, DeployQuery};
use reqwest::Method;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SAMPLE: &str = include_str!("sample.yaml");

/// The quickstart's agents: name and tags.
const AGENTS: &[(&str, &[&str])] = &[("web-1", &["web"]), ("web-2", &["web"]), ("db-1", &["db"])];

/// Stops child processes when dropped, whatever happens.
struct Children(Vec<(String, Child)>);

impl Drop for Children {
    fn drop(&mut self) {
        for (_, child) in &mut self.0 {
            // SIGTERM for a clean stop; the binaries handle it.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        for (_, child) in &mut self.0 {
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Finds a sibling binary of this executable.
fn sibling(name: &str) -> Result<PathBuf> {
    let me = std::env::current_exe().context("cannot find this executable")?;
    let path = me.with_file_name(name);
    if path.exists() {
        return Ok(path);
    }
    bail!("{name} is not next to plinthctl ({}); build every binary first: cargo build --release --bins", path.display())
}

fn log_file(dir: &Path, name: &str) -> Result<std::fs::File> {
    std::fs::File::create(dir.join(format!("{name}.log")))
        .with_context(|| format!("cannot create {name}.log"))
}

async fn wait_for<F: std::future::Future<Output = bool>>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> F,
) -> Result<()> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if check().await {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("timed out waiting for {what}")
}

/// Runs the quickstart. Returns whether the deployment succeeded.
pub async fn run(keep: bool, format: output::Format) -> Result<bool> {
    let controller_bin = sibling("plinth-controller")?;
    let agent_bin = sibling("plinth-agent")?;
    let root = std::env::temp_dir().join(format!("plinth-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    let data = root.join("controller");
    eprintln!("Plinth quickstart in {}", root.display());
    eprintln!("  starting the controller");

    let mut children = Children(Vec::new());
    let controller = Command::new(&controller_bin)
        .args(["--data-dir"])
        .arg(&data)
        .args([
            "serve",
            "--listen",
            // Any free port: the controller records the one it bound in its data directory.
            "127.0.0.1:0",
            "--auto-accept",
            "--phase-timeout",
            "300",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file(&root, "controller")?)
        .spawn()
        .with_context(|| format!("cannot start {}", controller_bin.display()))?;
    children.0.push(("controller".into(), controller));

    let token_path = data.join("admin.token");
    let cert_path = data.join("tls").join("cert.pem");
    let listening = data.join("listening.json");
    wait_for("the controller to start", Duration::from_secs(30), || {
        let ok = token_path.exists() && cert_path.exists() && listening.exists();
        async move { ok }
    })
    .await?;
    let bound: serde_json::Value = serde_json::from_slice(&std::fs::read(&listening)?)
        .with_context(|| format!("cannot read {}", listening.display()))?;
    let addr = bound["listen"]
        .as_str()
        .with_context(|| format!("{} names no address", listening.display()))?;
    let url = format!("https://{addr}");
    eprintln!("  the controller listens on {url}");
    let token = std::fs::read_to_string(&token_path)?.trim().to_string();
    let client = Client::new(&Target {
        urls: vec![url.clone()],
        token: Some(token),
        ca_cert: Some(cert_path.clone()),
    })?;
    wait_for("the controller's API", Duration::from_secs(30), || async {
        client.call(Method::GET, "/nodes", None).await.is_ok()
    })
    .await?;
    let key = Command::new(&controller_bin)
        .arg("--data-dir")
        .arg(&data)
        .args(["key", "show"])
        .output()?;
    if !key.status.success() {
        bail!(
            "plinth-controller key show failed: {}",
            String::from_utf8_lossy(&key.stderr)
        );
    }
    let public_key = String::from_utf8_lossy(&key.stdout).trim().to_string();

    let empty_cmdline = root.join("cmdline");
    std::fs::write(&empty_cmdline, "")?;
    for (name, tags) in AGENTS {
        let dir = root.join("agents").join(name);
        std::fs::create_dir_all(dir.join("work"))?;
        let config = format!(
            "controller = \"{url}\"\ncontroller_public_key = \"{public_key}\"\ncontroller_cert = \"{cert}\"\n\
             state_dir = \"{state}\"\nwork_dir = \"{work}\"\nname = \"{name}\"\ntags = {tags:?}\npoll_wait_secs = 20\n",
            cert = cert_path.display(),
            state = dir.join("state").display(),
            work = dir.join("work").display(),
        );
        let config_path = dir.join("agent.toml");
        std::fs::write(&config_path, config)?;
        let child = Command::new(&agent_bin)
            .args(["run", "--config"])
            .arg(&config_path)
            .arg("--cmdline")
            .arg(&empty_cmdline)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file(&root, name)?)
            .spawn()
            .with_context(|| format!("cannot start {}", agent_bin.display()))?;
        children.0.push((name.to_string(), child));
        eprintln!("  started agent {name} with tags {tags:?}");
    }
    wait_for(
        "the agents to register",
        Duration::from_secs(60),
        || async {
            client
                .get::<Vec<NodeView>>("/nodes")
                .await
                .map(|n| n.len() >= AGENTS.len())
                .unwrap_or(false)
        },
    )
    .await?;
    let nodes: Vec<NodeView> = client.get("/nodes").await?;

    let release: Value =
        serde_yaml_ng::from_str(SAMPLE).context("the embedded sample release is not YAML")?;
    let release: ReleaseRecord = client
        .send(Method::POST, "/releases", Some(&release))
        .await?;
    let cluster: ClusterRecord = client
        .send(
            Method::POST,
            "/clusters",
            Some(&CreateCluster {
                name: "quickstart".into(),
                release_id: release.id,
                settings: serde_json::Map::new(),
            }),
        )
        .await?;
    let cid = cluster.id;
    let assign = AssignNodes {
        nodes: nodes
            .iter()
            .map(|n| NodeAssignment {
                id: n.node.id,
                roles: Vec::new(),
            })
            .collect(),
    };
    client
        .send::<_, Value>(
            Method::PUT,
            &format!("/clusters/{cid}/nodes"),
            Some(&assign),
        )
        .await?;
    // The sample's `db` tag has a primary: say where it was elected, and what that changes.
    let assigned: Vec<NodeView> = client.get("/nodes").await?;
    if let Some(primary) = assigned
        .iter()
        .find(|n| n.effective_tags.iter().any(|t| t == "primary-db"))
    {
        eprintln!(
            "  {} is elected primary-db (the db tag has a primary): init-db, tagged primary-db, runs there, once",
            primary.node.name
        );
    }
    let query = DeployQuery {
        graph_type: Some("default".into()),
        ..DeployQuery::default()
    };
    let path = format!("/clusters/{cid}/deploy/");
    let dep: plinth_api::deployments::StartedDeployment =
        serde_json::from_value(client.call_query(Method::PUT, &path, &query).await?)
            .with_context(|| format!("unexpected answer to PUT {path}"))?;
    let id = dep.record.id;
    eprintln!("  deployment {id} started on {} nodes\n", nodes.len());

    let report = watch::watch(&client, id, format == output::Format::Table).await?;
    match format {
        output::Format::Table => {
            println!();
            output::report(&report);
        }
        output::Format::Json => output::json_of(&report),
    }
    drop(children);
    if keep {
        eprintln!(
            "\nKept {} (logs, databases, agents' work directories).",
            root.display()
        );
    } else {
        let _ = std::fs::remove_dir_all(&root);
    }
    Ok(report.status == plinth_common::wire::DeploymentStatus::Success)
}
