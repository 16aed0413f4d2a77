//! The generated benchmark site renders as intended, and reads back from its YAML stream.

use plinth_deckhand::generate::{baremetal_site, to_yaml};
use plinth_deckhand::{read_sources, render, secrets::redact, Options};
use serde_json::json;

#[test]
fn generated_site_layers_and_substitutes_every_node() {
    let docs = baremetal_site(50);
    let clear = render(
        &docs,
        &Options {
            cleartext_secrets: true,
        },
    )
    .unwrap();
    let nodes: Vec<_> = clear.find("drydock/BaremetalNode/v1").collect();
    assert_eq!(nodes.len(), 50);
    let node = &nodes[41].value["data"];
    assert_eq!(node["oob"]["credential"], "generated-password");
    assert_eq!(node["dns"], "10.0.0.2,10.0.0.3");
    assert_eq!(node["boot_url"], "http://10.0.0.10:8000/boot");
    assert_eq!(
        node["metadata"],
        json!({"tags": ["workers"], "rack": "rack001"})
    );
    assert_eq!(
        node["platform"]["kernel_params"],
        json!({"console": "ttyS1,115200n8", "intel_iommu": "on", "hugepagesz": "1G"})
    );
    assert_eq!(node["addressing"][0]["address"], "10.1.1.11");
    let redacted = render(&docs, &Options::default()).unwrap();
    let node = &redacted
        .find("drydock/BaremetalNode/v1")
        .nth(41)
        .unwrap()
        .value["data"];
    assert_eq!(
        node["oob"]["credential"],
        redact(&"generated-password".into())
    );
    assert_eq!(node["dns"], "10.0.0.2,10.0.0.3");
    // Written as YAML and read back: the same documents.
    let text = to_yaml(&docs);
    let again = read_sources(&[("generated.yaml", &text)]).unwrap();
    assert_eq!(again.len(), docs.len());
    assert!(again.iter().zip(&docs).all(|(a, b)| a.value == b.value));
}
