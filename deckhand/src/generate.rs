//! Generated sites, for benchmarks and for comparing with Deckhand's own engine on the same documents.
//!
//! [`baremetal_site`] builds a site of `nodes` concrete `drydock/BaremetalNode/v1` documents: a layering
//! policy (`global`, `site`), one abstract global node every node is layered onto (`merge .` and
//! `replace .metadata`), a `deckhand/Passphrase/v1` substituted into every node (`.oob.credential`), and a
//! shared `pegleg/CommonAddresses/v1` from which every node takes its DNS servers (`.dns`) and the
//! provisioner's address (by pattern, inside `.boot_url`). [`to_yaml`] writes documents as a YAML stream
//! that Deckhand's Python engine reads too.

use serde_json::json;

use crate::document::{Document, Origin};

/// The generated site's documents, each with its position as origin (file `generated.yaml`).
pub fn baremetal_site(nodes: usize) -> Vec<Document> {
    let mut values = vec![
        json!({
            "schema": "deckhand/LayeringPolicy/v1",
            "metadata": {"schema": "metadata/Control/v1", "name": "layering-policy"},
            "data": {"layerOrder": ["global", "site"]},
        }),
        json!({
            "schema": "deckhand/Passphrase/v1",
            "metadata": {"schema": "metadata/Document/v1", "name": "ipmi-admin-password",
                         "storagePolicy": "cleartext", "layeringDefinition": {"abstract": false, "layer": "site"}},
            "data": "generated-password",
        }),
        json!({
            "schema": "pegleg/CommonAddresses/v1",
            "metadata": {"schema": "metadata/Document/v1", "name": "common-addresses",
                         "storagePolicy": "cleartext", "layeringDefinition": {"abstract": false, "layer": "site"}},
            "data": {"dns": {"servers": "10.0.0.2,10.0.0.3"}, "provisioner": {"ip": "10.0.0.10"}},
        }),
        json!({
            "schema": "drydock/BaremetalNode/v1",
            "metadata": {"schema": "metadata/Document/v1", "name": "node-global",
                         "storagePolicy": "cleartext", "labels": {"name": "node-global"},
                         "layeringDefinition": {"abstract": true, "layer": "global"}},
            "data": {
                "oob": {"type": "ipmi", "network": "oob", "account": "root", "credential": "placeholder"},
                "host_profile": "cp-global",
                "boot_url": "http://PROVISIONER_IP:8000/boot",
                "platform": {"image": "bionic", "kernel": "ga-18.04",
                             "kernel_params": {"console": "ttyS1,115200n8", "intel_iommu": "on"}},
                "metadata": {"tags": ["workers"], "rack": "unassigned"},
            },
        }),
    ];
    for n in 0..nodes {
        let (rack, slot) = (n / 40, n % 40);
        values.push(json!({
            "schema": "drydock/BaremetalNode/v1",
            "metadata": {
                "schema": "metadata/Document/v1",
                "name": format!("node-{n:05}"),
                "storagePolicy": "cleartext",
                "layeringDefinition": {
                    "abstract": false,
                    "layer": "site",
                    "parentSelector": {"name": "node-global"},
                    "actions": [{"method": "merge", "path": "."}, {"method": "replace", "path": ".metadata"}],
                },
                "substitutions": [
                    {"src": {"schema": "deckhand/Passphrase/v1", "name": "ipmi-admin-password", "path": "."},
                     "dest": {"path": ".oob.credential"}},
                    {"src": {"schema": "pegleg/CommonAddresses/v1", "name": "common-addresses", "path": ".dns.servers"},
                     "dest": {"path": ".dns"}},
                    {"src": {"schema": "pegleg/CommonAddresses/v1", "name": "common-addresses", "path": ".provisioner.ip"},
                     "dest": {"path": ".boot_url", "pattern": "PROVISIONER_IP"}},
                ],
            },
            "data": {
                "addressing": [
                    {"network": "oob", "address": format!("10.1.{rack}.{}", slot + 10)},
                    {"network": "pxe", "address": format!("10.2.{rack}.{}", slot + 10)},
                ],
                "platform": {"kernel_params": {"hugepagesz": "1G"}},
                "metadata": {"tags": ["workers"], "rack": format!("rack{rack:03}")},
            },
        }));
    }
    values
        .into_iter()
        .enumerate()
        .map(|(i, value)| {
            Document::new(
                value,
                Origin {
                    file: "generated.yaml".to_string(),
                    index: i + 1,
                    line: i + 1,
                },
            )
        })
        .collect()
}

/// Documents as a YAML stream (each document written as JSON, which YAML reads as it is).
pub fn to_yaml(docs: &[Document]) -> String {
    let mut out = String::new();
    for doc in docs {
        out.push_str("---\n");
        out.push_str(&doc.value.to_string());
        out.push('\n');
    }
    out
}
