//! An Airship site as Deckhand renders it, through `plinthctl site render | load`: the real
//! treasuremap site (global, type and site folders) rendered with its secrets redacted unless asked
//! for, its Drydock nodes enrolled as Drydock has them (known by their BMC's address, which an agent
//! reads in band), and seed 004's example deployed with real agents from a site of Deckhand documents
//! (layered, substituted) around the seed's example strategy as the seed writes it, picked out of the
//! rendered site, its agents the Drydock nodes `site nodes` compiles (names, tags from host profiles,
//! racks), which the strategy's selectors pick.

use plinth_e2e::rogue::Rogue;
use plinth_e2e::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn treasuremap() -> PathBuf {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/corpus/treasuremap-v1.9"
    ))
    .to_path_buf()
}

#[test]
fn the_treasuremap_site_renders_and_its_nodes_enrol_as_drydock_has_them() {
    let c = Controller::start_with(&["--auto-accept"]);
    let site = treasuremap();
    let site = site.to_str().unwrap();

    // Rendered offline: every document, secrets redacted unless asked for.
    let (ok, out, err) = c.plinthctl(&["site", "render", site, "--schema", "deckhand/Passphrase"]);
    assert!(ok, "{err}");
    assert!(err.contains("secrets redacted"), "{err}");
    assert!(!out.contains("password123"), "a passphrase in clear: {out}");
    let (ok, out, _) = c.plinthctl(&[
        "site",
        "render",
        site,
        "--schema",
        "deckhand/Passphrase",
        "--cleartext-secrets",
    ]);
    assert!(ok);
    assert!(out.contains("data: password123"), "{out}");
    let (ok, out, err) = c.plinthctl(&["-o", "json", "site", "render", site]);
    assert!(ok, "{err}");
    let docs: Vec<Value> = serde_json::from_str(&out).unwrap();
    let profile = docs
        .iter()
        .find(|d| d["schema"] == "drydock/HostProfile/v1" && d["metadata"]["name"] == "dp_r720")
        .expect("the dp_r720 host profile");
    let credential = profile["data"]["oob"]["credential"].as_str().unwrap();
    assert!(
        credential.len() == 64 && credential != "password123",
        "the substituted IPMI password is redacted: {credential}"
    );

    // Shipyard's strategy, picked out of the rendered site, selects from Drydock's nodes as Drydock
    // compiles them (their tags set on the nodes themselves, their host profiles inherited).
    let out = std::process::Command::new(bin("plinthctl"))
        .args(["strategy", "check", site, "--inventory", site])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(
            "masters  yes       -           100%      2      cab23-r720-12, cab23-r720-13"
        ),
        "{text}"
    );
    assert!(
        text.contains("workers  yes       masters     60%       3      cab23-r720-14, cab23-r720-16, cab23-r720-17"),
        "{text}"
    );

    // Loading shows the plan first; a dry run changes nothing.
    let (ok, out, err) = c.plinthctl(&["site", "load", site, "--dry-run"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("enrol      cab23-r720-12  (bmc ipmi 10.23.104.12, rack cab23, tags masters)"),
        "{out}"
    );
    assert_eq!(out.matches("enrol ").count(), 5, "{out}");
    assert!(!out.contains("password123") && !err.contains("password123"));
    assert_eq!(c.api.get("/enrollments").unwrap(), json!([]));

    let (ok, out, err) = c.plinthctl(&["site", "load", site]);
    assert!(ok, "{err}");
    assert!(
        err.contains("5 node(s) enrolled from the site"),
        "{err}{out}"
    );
    let e = c.api.get("/enrollments/cab23-r720-12").unwrap();
    assert_eq!(e["rack"], "cab23");
    assert_eq!(e["tags"], json!(["masters"]));
    assert_eq!(e["bmc"]["driver"], "ipmi");
    assert_eq!(e["bmc"]["address"], "10.23.104.12");
    assert_eq!(e["bmc"]["username"], "root");
    assert_eq!(e["bmc"]["password_set"], true);
    assert_eq!(
        e["profile"]["boot_mode"], "legacy",
        "dell_r720's hardware profile: bios"
    );
    // Drydock's owner_data, inherited from the global control-plane profile, are the labels
    // Shipyard's node_labels select.
    assert_eq!(e["labels"]["openstack-control-plane"], "enabled", "{e}");
    let worker = c.api.get("/enrollments/cab23-r720-17").unwrap();
    assert_eq!(worker["tags"], json!(["workers"]));

    // Loading again changes nothing and says so.
    let (ok, out, err) = c.plinthctl(&["site", "load", site]);
    assert!(ok, "{err}");
    assert_eq!(out.matches("unchanged  ").count(), 5, "{out}");
    assert!(err.contains("0 node(s) to enrol"), "{err}");

    // The server's agent, reading its BMC's address in band, becomes the site's node.
    let agent = Rogue::new(&c, 51);
    let a = agent.register(
        "localhost",
        &[],
        json!({"hostname": "localhost", "bmc_address": "10.23.104.12"}),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let node = c.api.get(&format!("/nodes/{}", a.body["node_id"])).unwrap();
    assert_eq!(node["name"], "cab23-r720-12");
    assert_eq!(node["rack"], "cab23");
    assert_eq!(node["tags"], json!(["masters"]));
    // An agent whose BMC is no enrolled server's is discovered as itself.
    let stranger = Rogue::new(&c, 52).register(
        "stranger",
        &[],
        json!({"hostname": "stranger", "bmc_address": "10.99.0.1"}),
    );
    assert_eq!(stranger.status, 200, "{}", stranger.body);
    let node = c
        .api
        .get(&format!("/nodes/{}", stranger.body["node_id"]))
        .unwrap();
    assert_eq!(node["name"], "stranger");
}

/// The site around seed 004's example strategy (read from the seed as written, [`seed_strategy`]):
/// Drydock's nodes of the seed's racks, their tags from host profiles; a passphrase substituted into
/// the profiles.
const GLOBAL: &str = r#"
schema: deckhand/LayeringPolicy/v1
metadata: {schema: metadata/Control/v1, name: layering-policy}
data: {layerOrder: [global, site]}
---
schema: drydock/HostProfile/v1
metadata:
  schema: metadata/Document/v1
  name: base
  labels: {hosttype: base}
  layeringDefinition: {abstract: false, layer: global}
  storagePolicy: cleartext
  substitutions:
    - dest: {path: .oob.credential}
      src: {schema: deckhand/Passphrase/v1, name: bmc_password, path: .}
data:
  hardware_profile: generic
  oob: {type: ipmi, network: oob, account: admin}
---
schema: drydock/HardwareProfile/v1
metadata:
  schema: metadata/Document/v1
  name: generic
  layeringDefinition: {abstract: false, layer: global}
  storagePolicy: cleartext
data: {vendor: generic, boot_mode: uefi}
"#;

const SITE: &str = r#"
schema: deckhand/Passphrase/v1
metadata:
  schema: metadata/Document/v1
  name: bmc_password
  layeringDefinition: {abstract: false, layer: site}
  storagePolicy: cleartext
data: Site-Secret-7
---
schema: drydock/HostProfile/v1
metadata:
  schema: metadata/Document/v1
  name: control
  layeringDefinition: {abstract: false, layer: site}
  storagePolicy: cleartext
data: {host_profile: base, metadata: {tags: [control]}}
---
schema: drydock/HostProfile/v1
metadata:
  schema: metadata/Document/v1
  name: compute
  layeringDefinition: {abstract: false, layer: site}
  storagePolicy: cleartext
data: {host_profile: base, metadata: {tags: [compute]}}
"#;

/// The seed's nodes: name, host profile or tag, rack, BMC address.
/// Seed 004's "Example Deployment Strategy Document", as the seed writes it.
fn seed_strategy() -> String {
    let seeds = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/seeds"));
    let seed = std::fs::read_dir(seeds)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("004_"))
        .expect("seed 004");
    let text = std::fs::read_to_string(seed).unwrap();
    let start = text
        .find("---\nschema: shipyard/DeploymentStrategy/v1")
        .expect("the seed's example document");
    let end = start
        + text[start..]
            .find("\nThe ordering of groups")
            .expect("the text after the example");
    text[start..end].trim_end().to_string() + "\n"
}

const NODES: &[(&str, &str, &str, &str)] = &[
    ("ntp01", "", "rack03", "10.0.9.1"),
    ("ctl01", "control", "rack03", "10.0.9.2"),
    ("ctl02", "control", "rack03", "10.0.9.6"),
    ("ctl03", "control", "rack03", "10.0.9.7"),
    ("cmp101", "compute", "rack01", "10.0.9.3"),
    ("cmp202", "compute", "rack02", "10.0.9.4"),
    ("mon01", "monitoring", "rack02", "10.0.9.5"),
];

fn node_documents() -> String {
    NODES
        .iter()
        .map(|(name, kind, rack, bmc)| {
            let (profile, tags) = match *kind {
                "control" | "compute" => (*kind, String::new()),
                "" => ("base", String::new()),
                tag => ("base", format!(", tags: [{tag}]")),
            };
            format!(
                "schema: drydock/BaremetalNode/v1\nmetadata:\n  schema: metadata/Document/v1\n  name: {name}\n  \
                 layeringDefinition: {{abstract: false, layer: site}}\n  storagePolicy: cleartext\ndata:\n  \
                 host_profile: {profile}\n  addressing: [{{network: oob, address: {bmc}}}]\n  \
                 metadata: {{rack: {rack}{tags}}}\n"
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

#[test]
fn seed_004s_example_deploys_from_a_rendered_site_with_real_agents() {
    let c = Controller::start_with(&["--auto-accept"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("global")).unwrap();
    std::fs::create_dir_all(dir.path().join("site")).unwrap();
    std::fs::write(dir.path().join("global/site.yaml"), GLOBAL).unwrap();
    std::fs::write(dir.path().join("global/strategy.yaml"), seed_strategy()).unwrap();
    std::fs::write(dir.path().join("site/site.yaml"), SITE).unwrap();
    std::fs::write(dir.path().join("site/nodes.yaml"), node_documents()).unwrap();
    let root = dir.path().to_str().unwrap();

    // The servers come up as the site's nodes: each agent with the name, tags and rack Drydock
    // compiles for it (`site nodes`: host profile inheritance, the hardware profile, the BMC).
    let (ok, out, err) = c.plinthctl(&["-o", "json", "site", "nodes", root]);
    assert!(ok, "{err}{out}");
    assert!(!out.contains("Site-Secret-7"), "a credential shown: {out}");
    let nodes: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(nodes.len(), 7);
    let ctl = nodes.iter().find(|n| n["name"] == "ctl01").unwrap();
    assert_eq!(ctl["tags"], json!(["control"]), "from its host profile");
    assert_eq!(ctl["boot_mode"], "uefi", "from the global hardware profile");
    assert_eq!(ctl["oob"]["address"], "10.0.9.2");
    let key = c.public_key();
    let agents: Vec<Agent> = nodes
        .iter()
        .map(|n| {
            let tags: Vec<&str> = n["tags"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect();
            Agent::start_with(
                &c,
                n["name"].as_str().unwrap(),
                &tags,
                &key,
                &format!("rack = \"{}\"", n["rack"].as_str().unwrap()),
            )
        })
        .collect();
    let ids: Vec<u64> = c.api.wait_nodes(7).into_iter().map(|(_, id)| id).collect();
    let task = |phase: &str| {
        json!({"id": format!("{phase}-node"), "type": "shell", "tags": ["*"],
               "parameters": {"cmd": format!("echo {phase}d >> phases"), "timeout": 60}})
    };
    let graph =
        json!({"prepare": {"tasks": [task("prepare")]}, "deploy": {"tasks": [task("deploy")]}});
    let cluster = c.api.cluster_with_graph("site", graph, &ids);

    // The strategy comes from the whole rendered site: the seed's example, as written.
    let mut args = vec!["strategy".to_string(), "create".into(), cluster.to_string()];
    for file in [
        "global/site.yaml",
        "global/strategy.yaml",
        "site/site.yaml",
        "site/nodes.yaml",
    ] {
        args.push("-f".into());
        args.push(dir.path().join(file).display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, out, err) = c.plinthctl(&args);
    assert!(ok, "{err}{out}");
    assert!(
        err.contains("strategy.yaml document 1") && err.contains("(global layer)"),
        "{err}"
    );

    let dep = c.api.deploy(cluster, "strategy=deployment-strategy");
    let report = c.api.wait_deployment(dep, Duration::from_secs(180));
    assert_eq!(report["status"], "success", "{report:#}");
    let order: Vec<&str> = report["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    let at = |g: &str| order.iter().position(|o| *o == g).unwrap();
    assert!(at("ntp-node") < at("control-nodes"), "{order:?}");
    assert!(
        at("control-nodes") < at("compute-nodes-1") && at("control-nodes") < at("compute-nodes-2")
    );
    for (group_name, node) in [
        ("ntp-node", "ntp01"),
        ("control-nodes", "ctl01"),
        ("compute-nodes-1", "cmp101"),
        ("compute-nodes-2", "cmp202"),
        ("monitoring-nodes", "mon01"),
    ] {
        let g = group(&report, group_name);
        assert_eq!(g["state"], "succeeded", "{group_name}: {g:#}");
        assert!(
            g["succeeded"].as_array().unwrap().iter().any(|n| n == node),
            "{group_name} selected {node}: {g:#}"
        );
    }
    for a in &agents {
        assert_eq!(
            read(&a.work().join("phases")).unwrap(),
            "prepared\ndeployd\n",
            "{}",
            a.name
        );
    }
}
