//! The whole treasuremap v1.9 site (global, type and site folders) rendered as it is.

use std::path::{Path, PathBuf};

use plinth_deckhand::{read_sources, render, Options, Rendering};
use serde_json::{json, Value};

/// The corpus beside the checkout.
fn site_root() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/corpus/treasuremap-v1.9"
    ))
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
}

/// Every YAML file of the site, as (name relative to the site, text).
pub fn site_texts() -> Vec<(String, String)> {
    let root = site_root();
    let mut files = Vec::new();
    yaml_files(&root, &mut files);
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let name = p.strip_prefix(&root).unwrap().display().to_string();
            (name, text)
        })
        .collect()
}

fn rendered(cleartext: bool) -> Rendering {
    let texts = site_texts();
    let sources: Vec<(&str, &str)> = texts
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let docs = read_sources(&sources).unwrap();
    render(
        &docs,
        &Options {
            cleartext_secrets: cleartext,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn named<'a>(r: &'a Rendering, schema: &str, name: &str) -> &'a plinth_deckhand::Rendered {
    r.find(schema)
        .find(|d| d.value["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {schema} {name}"))
}

fn is_digest(value: &plinth_deckhand::Tree) -> bool {
    value
        .as_str()
        .is_some_and(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[test]
fn treasuremap_renders_every_concrete_document() {
    let r = rendered(false);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.documents.len(), 404);
    assert_eq!(r.find("drydock/BaremetalNode/v1").count(), 5);
    assert_eq!(r.find("deckhand/Passphrase/v1").count(), 91);
    assert_eq!(r.find("deckhand/Certificate/v1").count(), 36);
    // Control documents are returned as they are; abstract ones are not.
    assert_eq!(r.find("deckhand/LayeringPolicy/v1").count(), 1);
    assert_eq!(r.find("deckhand/DataSchema/v1").count(), 30);
    assert!(r
        .documents
        .iter()
        .all(|d| d.value["metadata"]["layeringDefinition"]["abstract"].as_bool() != Some(true)));
    // The one strategy: the site document replacing the global one.
    let strategies: Vec<_> = r.find("shipyard/DeploymentStrategy/v1").collect();
    assert_eq!(strategies.len(), 1);
}

#[test]
fn treasuremap_baremetal_node_data() {
    let r = rendered(false);
    let node = named(&r, "drydock/BaremetalNode/v1", "cab23-r720-12");
    assert_eq!(node.value["data"]["host_profile"], "cp_r720-primary");
    assert_eq!(
        node.value["data"]["metadata"],
        json!({"tags": ["masters"], "rack": "cab23"})
    );
    assert_eq!(
        node.value["data"]["addressing"][0],
        json!({"network": "oob", "address": "10.23.104.12"})
    );
    assert_eq!(
        node.value["data"]["addressing"].as_array().map(<[_]>::len),
        Some(6)
    );
    assert!(!node.secret);
    assert!(node
        .provenance
        .to_string()
        .starts_with("site/seaworthy/baremetal/nodes.yaml document 1 (line"));
}

#[test]
fn treasuremap_host_profile_is_layered_and_its_passphrase_redacted() {
    let redacted = rendered(false);
    let clear = rendered(true);
    let profile = named(&redacted, "drydock/HostProfile/v1", "cp_r720-primary");
    assert!(
        profile.provenance.to_string().contains("(site layer; replace .interfaces, replace .storage, merge .), layered onto global/profiles/host/cp.yaml document 1"),
        "{}",
        profile.provenance
    );
    assert!(profile.secret);
    // The IPMI password comes from a Passphrase: redacted as Deckhand redacts (sha256 of its JSON).
    assert_eq!(
        profile.value["data"]["oob"]["credential"],
        "4a61f9cdf3d1802bfa50f0a524af2753cdc86516614ad0e8ace229a77e41d07d"
    );
    assert_eq!(profile.value["data"]["oob"]["account"], "root");
    let in_clear = named(&clear, "drydock/HostProfile/v1", "cp_r720-primary");
    assert_eq!(in_clear.value["data"]["oob"]["credential"], "password123");
    // The rest of the data is the same either way.
    let mut a = profile.value["data"].to_value();
    let mut b = in_clear.value["data"].to_value();
    a["oob"]["credential"] = Value::Null;
    b["oob"]["credential"] = Value::Null;
    assert_eq!(a, b);
    // The Passphrase itself.
    let pass = named(&redacted, "deckhand/Passphrase/v1", "ipmi_admin_password");
    assert!(pass.secret && is_digest(&pass.value["data"]));
    assert_eq!(
        named(&clear, "deckhand/Passphrase/v1", "ipmi_admin_password").value["data"],
        "password123"
    );
}

#[test]
fn treasuremap_certificates_substituted() {
    let redacted = rendered(false);
    let clear = rendered(true);
    // A cleartext certificate into the endpoint catalogue: that value is redacted, the rest is not.
    let path = [
        "ucp",
        "identity",
        "host_fqdn_override",
        "public",
        "tls",
        "crt",
    ];
    let at =
        |d: &plinth_deckhand::Rendered| path.iter().fold(&d.value["data"], |v, k| &v[*k]).clone();
    let endpoints = named(&redacted, "pegleg/EndpointCatalogue/v1", "ucp_endpoints");
    assert!(endpoints.secret);
    assert!(is_digest(&at(endpoints)), "{}", at(endpoints));
    let hosts = &endpoints.value["data"]["ucp"]["identity"]["hosts"];
    assert!(hosts.is_object());
    assert_eq!(
        hosts,
        &named(&clear, "pegleg/EndpointCatalogue/v1", "ucp_endpoints").value["data"]["ucp"]
            ["identity"]["hosts"]
    );
    let in_clear = at(named(
        &clear,
        "pegleg/EndpointCatalogue/v1",
        "ucp_endpoints",
    ));
    assert!(
        in_clear
            .as_str()
            .is_some_and(|c| c.starts_with("-----BEGIN CERTIFICATE-----")),
        "{in_clear}"
    );
    // An encrypted certificate into a chart: Deckhand marks the chart encrypted and redacts its whole
    // data and its substitution paths.
    let chart = named(&redacted, "armada/Chart/v1", "kubernetes-apiserver");
    assert!(chart.secret);
    assert_eq!(chart.value["metadata"]["storagePolicy"], "encrypted");
    assert!(is_digest(&chart.value["data"]));
    assert!(is_digest(
        &chart.value["metadata"]["substitutions"][0]["src"]["path"]
    ));
    let chart = named(&clear, "armada/Chart/v1", "kubernetes-apiserver");
    assert_eq!(chart.value["metadata"]["storagePolicy"], "cleartext");
    let cert = &chart.value["data"]["values"]["secrets"]["tls"]["cert"];
    assert!(
        cert.as_str()
            .is_some_and(|c| c.starts_with("-----BEGIN CERTIFICATE-----")),
        "{cert}"
    );
    assert_eq!(
        cert,
        &named(&clear, "deckhand/Certificate/v1", "apiserver").value["data"]
    );
}

#[test]
fn rendering_owned_documents_gives_what_rendering_borrowed_ones_gives() {
    let texts = site_texts();
    let sources: Vec<(&str, &str)> = texts
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let docs = read_sources(&sources).unwrap();
    let generated = plinth_deckhand::generate::baremetal_site(50);
    for cleartext_secrets in [false, true] {
        let options = Options { cleartext_secrets };
        for docs in [&docs, &generated] {
            let borrowed = render(docs, &options).unwrap();
            let owned = plinth_deckhand::render_owned(docs.clone(), &options).unwrap();
            assert_eq!(owned, borrowed);
        }
    }
}
