//! `plinthctl site render | load`: an Airship site (its global, type and site folders) rendered as
//! Deckhand renders it, and its Drydock nodes enrolled.

use crate::client::Client;
use crate::output::Format;
use anyhow::{bail, Context, Result};
use clap::Subcommand;
use plinth_api::enrollment::{EnrollAnswer, EnrollmentRecord};
use plinth_common::site::{compile, enrollment_document, SiteNode};
use plinth_deckhand::{read_sources, render_owned, Options, Rendering};
use reqwest::Method;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What `plinthctl site` does.
#[derive(Debug, Subcommand)]
pub enum SiteCommand {
    /// Print the site's documents as Deckhand renders them (offline): every concrete document of
    /// every schema, layered and substituted. Secrets, and what was substituted from them, are
    /// redacted unless `--cleartext-secrets` is given.
    Render {
        /// The site's files or folders (folders are read whole: every `*.yaml` and `*.yml`).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print secrets and the values substituted from them in clear.
        #[arg(long)]
        cleartext_secrets: bool,
        /// Only documents whose schema starts with this (`drydock/BaremetalNode`).
        #[arg(long)]
        schema: Option<String>,
    },
    /// Print the site's Drydock nodes as Drydock compiles them (offline): each
    /// `drydock/BaremetalNode/v1` with its host profiles and hardware profile applied: name, tags,
    /// labels (`owner_data`), rack, boot MACs, out-of-band controller (never its credential).
    Nodes {
        /// The site's files or folders.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Enrol the site's Drydock nodes (`drydock/BaremetalNode/v1` with their host and hardware
    /// profiles): render the site, show what would change, and apply it.
    Load {
        /// The site's files or folders.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Show what would change, and change nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// Every YAML file `paths` name, folders read whole and in name order.
pub(crate) fn site_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("cannot read the folder {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out)?;
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut out)?;
        } else {
            out.push(path.clone());
        }
    }
    Ok(out)
}

/// The site rendered, its warnings printed.
fn rendered(paths: &[PathBuf], cleartext_secrets: bool) -> Result<Rendering> {
    let files = site_files(paths)?;
    let texts: Vec<(String, String)> = files
        .iter()
        .map(|p| {
            std::fs::read_to_string(p)
                .with_context(|| format!("cannot read {}", p.display()))
                .map(|t| (p.display().to_string(), t))
        })
        .collect::<Result<_>>()?;
    let sources: Vec<(&str, &str)> = texts
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let docs = read_sources(&sources)?;
    let rendering = render_owned(docs, &Options { cleartext_secrets })?;
    for w in &rendering.warnings {
        eprintln!("warning: {}: {}", w.document, w.message);
    }
    Ok(rendering)
}

/// The site's Drydock nodes compiled from its rendered documents.
fn compiled(files: &[PathBuf], cleartext_secrets: bool) -> Result<plinth_common::site::Site> {
    let rendering = rendered(files, cleartext_secrets)?;
    let values: Vec<Value> = rendering
        .documents
        .iter()
        .map(|d| d.value.to_value())
        .collect();
    Ok(compile(&values)?)
}

/// `site render`: the rendered documents, as a YAML stream (or a JSON list with `-o json`).
pub fn render_site(
    files: &[PathBuf],
    cleartext_secrets: bool,
    schema: Option<&str>,
    f: Format,
) -> Result<bool> {
    let rendering = rendered(files, cleartext_secrets)?;
    let docs: Vec<&plinth_deckhand::Tree> = rendering
        .find(schema.unwrap_or(""))
        .map(|d| &d.value)
        .collect();
    match f {
        Format::Json => crate::output::json(&serde_json::json!(docs)),
        Format::Table => {
            for doc in &docs {
                print!("---\n{}", serde_yaml_ng::to_string(doc)?);
            }
            println!("...");
        }
    }
    eprintln!(
        "{} documents rendered{}",
        docs.len(),
        if cleartext_secrets {
            " (secrets in clear)"
        } else {
            " (secrets redacted)"
        }
    );
    Ok(true)
}

/// `site nodes`: the compiled nodes, a table or JSON.
pub fn show_nodes(files: &[PathBuf], f: Format) -> Result<bool> {
    let site = compiled(files, false)?;
    match f {
        Format::Json => crate::output::json(&serde_json::json!(site.nodes)),
        Format::Table => {
            println!("name\ttags\track\tmacs\toob\tlabels");
            for n in &site.nodes {
                let oob = n.oob.as_ref().map_or_else(
                    || "-".to_string(),
                    |o| format!("{} {}", o.kind, o.address.as_deref().unwrap_or("-")),
                );
                let labels: Vec<String> =
                    n.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{}",
                    n.name,
                    n.tags.join(","),
                    n.rack.as_deref().unwrap_or("-"),
                    if n.macs.is_empty() {
                        "-".to_string()
                    } else {
                        n.macs.join(",")
                    },
                    oob,
                    labels.join(",")
                );
            }
        }
    }
    Ok(true)
}

/// The site's Drydock nodes as a strategy's inventory: name, tags, labels (`owner_data`), rack.
pub(crate) fn inventory(files: &[PathBuf]) -> Result<Vec<plinth_common::strategy::InventoryNode>> {
    let site = compiled(files, false)?;
    Ok(site
        .nodes
        .into_iter()
        .map(|n| plinth_common::strategy::InventoryNode {
            name: n.name,
            tags: n.tags,
            labels: n.labels,
            rack: n.rack,
        })
        .collect())
}

/// What loading changes for one node.
#[derive(Debug, PartialEq)]
enum Change {
    /// Not enrolled yet: it will be.
    Enrol,
    /// Enrolled as the site says.
    Unchanged,
    /// Enrolled otherwise: these fields differ (left as enrolled).
    Differs(Vec<String>),
}

/// How an enrolled server differs from the site's node (credentials are not compared: they are
/// never shown).
fn differences(enrolled: &EnrollmentRecord, node: &SiteNode, entry: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |field: &str, was: String, site: String| {
        if was != site {
            out.push(format!("{field}: enrolled {was}, the site says {site}"));
        }
    };
    let mut macs = enrolled.macs.clone();
    macs.sort();
    let mut site_macs = node.macs.clone();
    site_macs.sort();
    check("macs", format!("{macs:?}"), format!("{site_macs:?}"));
    let mut tags = enrolled.tags.clone();
    tags.sort();
    let mut site_tags = node.tags.clone();
    site_tags.sort();
    check("tags", format!("{tags:?}"), format!("{site_tags:?}"));
    check(
        "labels",
        format!("{:?}", enrolled.labels),
        format!("{:?}", node.labels),
    );
    check(
        "rack",
        format!("{:?}", enrolled.rack),
        format!("{:?}", node.rack),
    );
    let bmc = |driver: &str, address: &str| format!("{driver} {address}");
    check(
        "bmc",
        enrolled
            .bmc
            .as_ref()
            .map(|b| bmc(b.driver.as_str(), &b.address))
            .unwrap_or_else(|| "none".into()),
        entry
            .get("bmc")
            .map(|b| {
                bmc(
                    b["driver"].as_str().unwrap_or(""),
                    b["address"].as_str().unwrap_or(""),
                )
            })
            .unwrap_or_else(|| "none".into()),
    );
    out
}

/// A node's identity and place, in a few words (never its credential).
fn summary(entry: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(macs) = entry["macs"].as_array() {
        let macs: Vec<&str> = macs.iter().filter_map(Value::as_str).collect();
        parts.push(format!("macs {}", macs.join(",")));
    }
    if let Some(bmc) = entry.get("bmc") {
        parts.push(format!(
            "bmc {} {}",
            bmc["driver"].as_str().unwrap_or(""),
            bmc["address"].as_str().unwrap_or("")
        ));
    }
    if let Some(rack) = entry["rack"].as_str() {
        parts.push(format!("rack {rack}"));
    }
    if let Some(tags) = entry["tags"].as_array() {
        let tags: Vec<&str> = tags.iter().filter_map(Value::as_str).collect();
        parts.push(format!("tags {}", tags.join(",")));
    }
    parts.join(", ")
}

/// `site load`: renders, shows the plan, enrols the nodes not enrolled yet.
pub async fn load(client: &Client, files: &[PathBuf], dry_run: bool, f: Format) -> Result<bool> {
    // In clear: the enrollment carries each BMC's credential (sealed by the controller at rest);
    // nothing below prints one.
    let site = compiled(files, true)?;
    if site.nodes.is_empty() {
        bail!("the site has no drydock/BaremetalNode/v1 document: no node to enrol");
    }
    let (document, left_out) = enrollment_document(&site);
    let enrolled: Vec<EnrollmentRecord> = client.get("/enrollments").await?;
    let entries = document["nodes"].as_array().cloned().unwrap_or_default();
    let mut to_enrol = Vec::new();
    let mut plan = Vec::new();
    for entry in &entries {
        let name = entry["name"].as_str().unwrap_or_default();
        let Some(node) = site.nodes.iter().find(|n| n.name == name) else {
            continue;
        };
        let change = match enrolled.iter().find(|e| e.name == name) {
            None => {
                to_enrol.push(entry.clone());
                Change::Enrol
            }
            Some(e) => match differences(e, node, entry) {
                d if d.is_empty() => Change::Unchanged,
                d => Change::Differs(d),
            },
        };
        plan.push((name.to_string(), summary(entry), change));
    }
    if f == Format::Json {
        let items: Vec<Value> = plan
            .iter()
            .map(|(name, what, change)| {
                let (action, differs) = match change {
                    Change::Enrol => ("enrol", Vec::new()),
                    Change::Unchanged => ("unchanged", Vec::new()),
                    Change::Differs(d) => ("differs", d.clone()),
                };
                serde_json::json!({"name": name, "node": what, "action": action, "differs": differs})
            })
            .collect();
        let left: Vec<Value> = left_out
            .iter()
            .map(|l| serde_json::json!({"name": l.name, "reason": l.reason}))
            .collect();
        crate::output::json(
            &serde_json::json!({"plan": items, "not_enrolled": left, "dry_run": dry_run}),
        );
    } else {
        for (name, what, change) in &plan {
            match change {
                Change::Enrol => println!("enrol      {name}  ({what})"),
                Change::Unchanged => println!("unchanged  {name}"),
                Change::Differs(d) => println!(
                    "differs    {name}: {}; left as enrolled (unenroll it to enrol it from the site)",
                    d.join("; ")
                ),
            }
        }
        for l in &left_out {
            println!("not enrolled {}: {}", l.name, l.reason);
        }
    }
    if dry_run || to_enrol.is_empty() {
        eprintln!(
            "{} node(s) to enrol{}",
            to_enrol.len(),
            if dry_run {
                " (dry run: nothing changed)"
            } else {
                ""
            }
        );
        return Ok(true);
    }
    let body = serde_json::json!({ "nodes": to_enrol });
    let answer = client
        .call(Method::POST, "/enrollments?format=plinth", Some(&body))
        .await
        .context("cannot enrol the site's nodes")?;
    let answer: EnrollAnswer = serde_json::from_value(answer)?;
    eprintln!("{} node(s) enrolled from the site", answer.enrolled.len());
    Ok(true)
}
