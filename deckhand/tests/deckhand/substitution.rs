//! Deckhand's substitution cases (`test_document_layering_and_substitution*.py` and the substitution cases
//! of `test_secrets_manager.py`), each test named after Deckhand's.

use plinth_deckhand::RenderError;
use serde_json::{json, Value};

use crate::support::{
    check_layers, check_layers_include, check_yaml_layers, error_of, rendered, secret, substituted,
    yaml, Factory,
};

fn cert_sub(dest: &str, kind: &str, name: &str) -> Value {
    json!([{"dest": {"path": dest}, "src": {"schema": format!("deckhand/{kind}/v1"), "name": name, "path": "."}}])
}

fn concrete_two_layers(per_layer: &[usize], mapping: Value) -> Vec<Value> {
    let mut factory = Factory::new(per_layer).concrete_site();
    factory.global_abstract = false;
    factory.gen(mapping)
}

#[test]
fn layering_and_substitution_default_scenario() {
    let mut docs = concrete_two_layers(
        &[1, 1],
        json!({
            "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}}},
            "_GLOBAL_SUBSTITUTIONS_1_": cert_sub(".c", "Certificate", "global-cert"),
            "_SITE_DATA_1_": {"data": {"b": 4}},
            "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
        }),
    );
    docs.push(secret(
        "Certificate",
        "cleartext",
        json!("global-secret"),
        "global-cert",
    ));
    check_layers_include(
        &docs,
        &[json!({"a": {"x": 1, "y": 2}, "b": 4, "c": "global-secret"})],
        &[json!({"a": {"x": 1, "y": 2}, "c": "global-secret"})],
    );
}

#[test]
fn layering_and_substitution_no_children() {
    let mut docs = concrete_two_layers(
        &[1, 1],
        json!({
            "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}}},
            "_GLOBAL_SUBSTITUTIONS_1_": cert_sub(".c", "Certificate", "global-cert"),
            "_SITE_DATA_1_": {"data": {"b": 4}},
            "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
        }),
    );
    docs[1]["metadata"]["labels"] = json!({});
    docs.push(secret(
        "Certificate",
        "cleartext",
        json!("global-secret"),
        "global-cert",
    ));
    check_layers_include(
        &docs,
        &[json!({"b": 4})],
        &[json!({"a": {"x": 1, "y": 2}, "c": "global-secret"})],
    );
}

#[test]
fn substitution_without_parent_document() {
    let mut docs = concrete_two_layers(
        &[1, 1],
        json!({
            "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}}},
            "_SITE_DATA_1_": {"data": {"b": 4}},
            "_SITE_SUBSTITUTIONS_1_": cert_sub(".c", "Certificate", "site-cert"),
            "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
        }),
    );
    docs[1]["metadata"]["labels"] = json!({});
    docs.push(secret(
        "Certificate",
        "cleartext",
        json!("site-secret"),
        "site-cert",
    ));
    check_layers_include(
        &docs,
        &[json!({"b": 4, "c": "site-secret"})],
        &[json!({"a": {"x": 1, "y": 2}})],
    );
}

#[test]
fn parent_and_child_layering_and_substitution_same_paths() {
    let mut docs = concrete_two_layers(
        &[1, 1],
        json!({
            "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}}},
            "_GLOBAL_SUBSTITUTIONS_1_": cert_sub(".b", "Certificate", "global-cert"),
            "_SITE_DATA_1_": {"data": {}},
            "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
            "_SITE_SUBSTITUTIONS_1_": cert_sub(".b", "CertificateKey", "site-cert"),
        }),
    );
    docs.push(secret(
        "Certificate",
        "cleartext",
        json!("global-secret"),
        "global-cert",
    ));
    docs.push(secret(
        "CertificateKey",
        "cleartext",
        json!("site-secret"),
        "site-cert",
    ));
    check_layers_include(
        &docs,
        &[json!({"a": {"x": 1, "y": 2}, "b": "site-secret"})],
        &[json!({"a": {"x": 1, "y": 2}, "b": "global-secret"})],
    );
}

#[test]
fn parent_with_multi_child_layering_and_multi_substitutions() {
    let two = |a: &str, an: &str, b: &str, bn: &str| {
        json!([{"dest": {"path": a}, "src": {"schema": "deckhand/CertificateKey/v1", "name": an, "path": "."}},
               {"dest": {"path": b}, "src": {"schema": "deckhand/Certificate/v1", "name": bn, "path": "."}}])
    };
    let mut docs = concrete_two_layers(
        &[1, 2],
        json!({
            "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}}},
            "_GLOBAL_SUBSTITUTIONS_1_": cert_sub(".b", "Certificate", "global-cert"),
            "_SITE_DATA_1_": {"data": {}},
            "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
            "_SITE_SUBSTITUTIONS_1_": two(".c", "site-1-cert-key", ".d", "site-1-cert"),
            "_SITE_DATA_2_": {"data": {}},
            "_SITE_ACTIONS_2_": {"actions": [{"method": "merge", "path": "."}]},
            "_SITE_SUBSTITUTIONS_2_": two(".e", "site-2-cert-key", ".f", "site-2-cert"),
        }),
    );
    docs.push(secret(
        "Certificate",
        "cleartext",
        json!("global-secret"),
        "global-cert",
    ));
    for n in 1..=2 {
        docs.push(secret(
            "CertificateKey",
            "cleartext",
            json!(format!("site-{n}-sec-key")),
            &format!("site-{n}-cert-key"),
        ));
        docs.push(secret(
            "Certificate",
            "cleartext",
            json!(format!("site-{n}-sec")),
            &format!("site-{n}-cert"),
        ));
    }
    check_layers_include(
        &docs,
        &[
            json!({"a": {"x": 1, "y": 2}, "b": "global-secret", "c": "site-1-sec-key", "d": "site-1-sec"}),
            json!({"a": {"x": 1, "y": 2}, "b": "global-secret", "e": "site-2-sec-key", "f": "site-2-sec"}),
        ],
        &[json!({"a": {"x": 1, "y": 2}, "b": "global-secret"})],
    );
}

fn chain(sub1_src: &str, sub1_path: &str) -> Value {
    let site_sub = |dest: &str, name: &str, path: &str| json!([{"dest": {"path": dest}, "src": {"schema": "example/Kind/v1", "name": name, "path": path}}]);
    json!({
        "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}}},
        "_GLOBAL_SUBSTITUTIONS_1_": cert_sub(".b", "Certificate", "global-cert"),
        "_SITE_NAME_1_": "site-1",
        "_SITE_DATA_1_": {"data": {"c": "placeholder"}},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
        "_SITE_SUBSTITUTIONS_1_": [{"dest": {"path": ".c"}, "src": {"schema": if sub1_src == "site-cert" {
            "deckhand/CertificateKey/v1" } else { "example/Kind/v1" }, "name": sub1_src, "path": sub1_path}}],
        "_SITE_NAME_2_": "site-2",
        "_SITE_DATA_2_": {"data": {"d": "placeholder"}},
        "_SITE_ACTIONS_2_": {"actions": [{"method": "merge", "path": "."}]},
        "_SITE_SUBSTITUTIONS_2_": site_sub(".d", "site-1", ".c"),
        "_SITE_NAME_3_": "site-3",
        "_SITE_DATA_3_": {"data": {"e": "placeholder"}},
        "_SITE_ACTIONS_3_": {"actions": [{"method": "merge", "path": "."}]},
        "_SITE_SUBSTITUTIONS_3_": site_sub(".e", "site-2", ".d"),
    })
}

#[test]
fn layering_with_substitution_dependency_chain() {
    let mut docs = concrete_two_layers(&[1, 3], chain("site-cert", "."));
    docs.push(secret(
        "Certificate",
        "cleartext",
        json!("global-secret"),
        "global-cert",
    ));
    docs.push(secret(
        "CertificateKey",
        "cleartext",
        json!("site-secret"),
        "site-cert",
    ));
    for n in 0..docs.len() {
        let mut rotated = docs.clone();
        rotated.rotate_left(n);
        check_layers_include(
            &rotated,
            &[
                json!({"a": {"x": 1, "y": 2}, "b": "global-secret", "c": "site-secret"}),
                json!({"a": {"x": 1, "y": 2}, "b": "global-secret", "d": "site-secret"}),
                json!({"a": {"x": 1, "y": 2}, "b": "global-secret", "e": "site-secret"}),
            ],
            &[json!({"a": {"x": 1, "y": 2}, "b": "global-secret"})],
        );
    }
}

#[test]
fn layering_and_substitution_site_abstract_and_global_concrete() {
    let mut docs = Factory::new(&[1, 1]).concrete_site().gen(json!({
        "_GLOBAL_DATA_1_": {"data": {"global": "random"}},
        "_GLOBAL_SUBSTITUTIONS_1_": cert_sub(".cert", "Certificate", "global-cert"),
        "_SITE_DATA_1_": {"data": {"site": "stuff"}},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
    }));
    docs.push(secret(
        "Certificate",
        "cleartext",
        json!("global-secret"),
        "global-cert",
    ));
    check_layers_include(
        &docs,
        &[json!({"global": "random", "cert": "global-secret", "site": "stuff"})],
        &[],
    );
}

#[test]
fn layering_substitution_source_skips_layering() {
    let text = "
schema: aic/Versions/v1
metadata:
  name: d
  schema: metadata/Document/v1
  labels: {selector: foo1}
  layeringDefinition: {abstract: True, layer: global}
data:
  conf: {foo: default}
---
schema: aic/Versions/v1
metadata:
  name: e
  schema: metadata/Document/v1
  labels: {selector: baz1}
  layeringDefinition:
    abstract: False
    layer: site
    parentSelector: {selector: foo1}
    actions: [{method: merge, path: .}]
data:
  conf: {bar: override}
---
schema: armada/Chart/v1
metadata:
  name: f
  schema: metadata/Document/v1
  layeringDefinition: {abstract: False, layer: site}
  substitutions:
    - src: {schema: aic/Versions/v1, name: e, path: .conf}
      dest: {path: .application.conf}
data:
  application: {conf: {}}
---
schema: deckhand/LayeringPolicy/v1
metadata: {schema: metadata/Control/v1, name: layering-policy}
data: {layerOrder: [global, region, site]}
";
    check_yaml_layers(
        text,
        &[
            json!({"conf": {"foo": "default", "bar": "override"}}),
            json!({"application": {"conf": {"bar": "override", "foo": "default"}}}),
        ],
        &[],
        &[],
    );
    // The same, the destination in the global layer: it still waits for its source's parent.
    check_yaml_layers(
        &text.replace("name: f\n  schema: metadata/Document/v1\n  layeringDefinition: {abstract: False, layer: site}",
                      "name: f\n  schema: metadata/Document/v1\n  layeringDefinition: {abstract: False, layer: global}"),
        &[json!({"conf": {"foo": "default", "bar": "override"}})],
        &[],
        &[json!({"application": {"conf": {"bar": "override", "foo": "default"}}})],
    );
}

#[test]
fn substitution_does_not_alter_source_document() {
    let docs: Vec<Value> = yaml(include_str!(
        "fixtures/substitution_does_not_alter_source_document.yaml"
    ))
    .into_iter()
    .map(|d| d.value.to_value())
    .collect();
    let messaging = json!({"namespace": null, "hosts": {"default": "rabbitmq"}, "host_fqdn_override": {"default": null},
                           "path": "/openstack", "scheme": "rabbit", "port": {"amqp": {"default": 5672}}});
    let charts = json!({"ucp": {"rabbitmq": {"subpath": "rabbitmq", "type": "git",
        "location": "https://git.openstack.org/openstack/openstack-helm",
        "reference": "f902cd14fac7de4c4c9f7d019191268a6b4e9601"}}});
    let images = json!({"ucp": {"rabbitmq": {"rabbitmq": "docker.io/rabbitmq:3.7",
        "dep_check": "quay.io/stackanetes/kubernetes-entrypoint:v0.3.1"}}});
    let mut endpoint = messaging.clone();
    endpoint["auth"] = json!({"user": {"username": "rabbitmq", "password": "password15"},
                              "erlang_cookie": "111df8c05b0f041d4764"});
    check_layers(
        &docs,
        &[
            json!({"ucp": {"oslo_messaging": {"admin": {"username": "rabbitmq"}}}}),
            json!("111df8c05b0f041d4764"),
            json!({"ucp": {"oslo_messaging": messaging}}),
            json!("password15"),
        ],
        &[],
        &[
            json!({"charts": charts, "images": images}),
            json!({"source": charts["ucp"]["rabbitmq"], "values": {"images": {"tags": images["ucp"]["rabbitmq"]},
                   "endpoints": {"oslo_messaging": endpoint}}}),
        ],
    );
}

fn example_cert() -> Value {
    secret(
        "Certificate",
        "cleartext",
        json!("CERTIFICATE DATA"),
        "example-cert",
    )
}

fn to(dests: Value) -> Value {
    json!({"_GLOBAL_SUBSTITUTIONS_1_": [{"dest": dests,
        "src": {"schema": "deckhand/Certificate/v1", "name": "example-cert", "path": "."}}]})
}

#[test]
fn create_destination_path_with_array() {
    assert_eq!(
        substituted(
            to(json!({"path": ".chart[0].values.tls.certificate"})),
            &[example_cert()]
        )
        .unwrap(),
        json!({"chart": [{"values": {"tls": {"certificate": "CERTIFICATE DATA"}}}]})
    );
}

#[test]
fn doc_substitution_single_source_feeds_multiple_destinations() {
    let dests = json!([{"path": ".chart[0].values.tls.certificate"}, {"path": ".chart[0].values.tls.same_certificate"}]);
    assert_eq!(
        substituted(to(dests), &[example_cert()]).unwrap(),
        json!({"chart": [{"values": {"tls": {"certificate": "CERTIFICATE DATA", "same_certificate": "CERTIFICATE DATA"}}}]})
    );
}

#[test]
fn doc_substitution_array_with_multi_digit_index() {
    let dests = json!([{"path": ".chart[10].values.tls.certificate"}, {"path": ".chart[11].values.tls.same_certificate"}]);
    let mut chart = vec![json!({}); 10];
    chart.push(json!({"values": {"tls": {"certificate": "CERTIFICATE DATA"}}}));
    chart.push(json!({"values": {"tls": {"same_certificate": "CERTIFICATE DATA"}}}));
    assert_eq!(
        substituted(to(dests), &[example_cert()]).unwrap(),
        json!({"chart": chart})
    );
}

#[test]
fn create_destination_path_with_nested_arrays() {
    assert_eq!(
        substituted(
            to(json!({"path": ".chart[0].values[0].tls.certificate"})),
            &[example_cert()]
        )
        .unwrap(),
        json!({"chart": [{"values": [{"tls": {"certificate": "CERTIFICATE DATA"}}]}]})
    );
}

#[test]
fn create_destination_with_stringified_subpath() {
    let mapping = json!({"_GLOBAL_SUBSTITUTIONS_1_": [{
        "dest": {"path": ".values.conf.paste.'filter:authtoken'.password"},
        "src": {"schema": "deckhand/Passphrase/v1", "name": "example-passphrase", "path": "."}}]});
    let pass = secret(
        "Passphrase",
        "cleartext",
        json!("admin-passphrase"),
        "example-passphrase",
    );
    assert_eq!(
        substituted(mapping, &[pass]).unwrap(),
        json!({"values": {"conf": {"paste": {"filter:authtoken": {"password": "admin-passphrase"}}}}})
    );
}

#[test]
fn doc_substitution_single_cleartext_with_pattern() {
    let mapping = json!({
        "_GLOBAL_DATA_1_": {"data": {"chart": {"values": {"some_url": "http://admin:INSERT_PASSWORD_HERE@service-name:8080/v1"}}}},
        "_GLOBAL_SUBSTITUTIONS_1_": [{"dest": {"path": ".chart.values.some_url", "pattern": "INSERT_[A-Z]+_HERE"},
            "src": {"schema": "deckhand/Passphrase/v1", "name": "example-password", "path": "."}}]});
    let pass = secret(
        "Passphrase",
        "cleartext",
        json!("my-secret-password"),
        "example-password",
    );
    assert_eq!(
        substituted(mapping, &[pass]).unwrap(),
        json!({"chart": {"values": {"some_url": "http://admin:my-secret-password@service-name:8080/v1"}}})
    );
}

#[test]
fn substitution_with_generic_document_as_source() {
    let mut source = Factory::new(&[1]).gen(json!({"_GLOBAL_DATA_1_": {"data": {"public": "random", "money": "data-from-generic-document"}}}))
        .remove(1);
    source["schema"] = json!("unusual/DictWithSecret/v1");
    source["metadata"]["name"] = json!("dict-with-secret");
    source["metadata"]["layeringDefinition"]["abstract"] = json!(false);
    let mapping = json!({"_GLOBAL_DATA_1_": {"data": {}}, "_GLOBAL_SUBSTITUTIONS_1_": [{"dest": {"path": "."},
        "src": {"schema": "unusual/DictWithSecret/v1", "name": "dict-with-secret", "path": ".money"}}]});
    assert_eq!(
        substituted(mapping, &[source]).unwrap(),
        json!("data-from-generic-document")
    );
}

const PATTERNS: &str = "
schema: deckhand/LayeringPolicy/v1
metadata: {schema: metadata/Control/v1, name: layering-policy}
data: {layerOrder: [global, site]}
---
schema: armada/Chart/v1
metadata:
  schema: metadata/Document/v1
  name: ucp-drydock
  layeringDefinition: {abstract: false, layer: global}
  storagePolicy: cleartext
  substitutions:
    - src: {schema: twigleg/CommonAddresses/v1, name: common-addresses, path: .genesis.ip}
      dest: {path: .values.conf.drydock.maasdriver.maas_api_url, pattern: 'MAAS_IP'}
    - src: {schema: twigleg/CommonAddresses/v1, name: common-addresses, path: .node_ports.maas_api}
      dest: {path: .values.conf.drydock.maasdriver.maas_api_url, pattern: 'MAAS_PORT'}
data:
  values: {conf: {drydock: {maasdriver: {maas_api_url: 'http://MAAS_IP:MAAS_PORT/MAAS/api/2.0/'}}}}
---
schema: twigleg/CommonAddresses/v1
metadata:
  schema: metadata/Document/v1
  name: common-addresses
  layeringDefinition: {abstract: false, layer: site}
  storagePolicy: cleartext
data:
  genesis: {ip: 10.24.31.31}
  node_ports: {maas_api: PORT}
";

fn maas_url(text: &str) -> Value {
    let values: Vec<Value> = yaml(text).into_iter().map(|d| d.value.to_value()).collect();
    let r = rendered(&values).unwrap();
    let url = r.find("armada/Chart").next().unwrap().value["data"]["values"]["conf"]["drydock"]
        ["maasdriver"]["maas_api_url"]
        .to_value();
    url
}

#[test]
fn doc_substitution_multiple_pattern_substitutions() {
    assert_eq!(
        maas_url(&PATTERNS.replace("PORT}", "30001}")),
        json!("http://10.24.31.31:30001/MAAS/api/2.0/")
    );
}

#[test]
fn doc_substitution_multiple_pattern_non_string_values() {
    for (written, expected) in [
        ("123", "123"),
        ("3.2", "3.2"),
        ("False", "False"),
        ("None", "None"),
    ] {
        assert_eq!(
            maas_url(&PATTERNS.replace("PORT}", &format!("{written}}}"))),
            json!(format!("http://10.24.31.31:{expected}/MAAS/api/2.0/")),
            "{written}"
        );
    }
}

#[test]
fn doc_substitution_src_pattern() {
    let text = "
schema: deckhand/LayeringPolicy/v1
metadata: {schema: metadata/Control/v1, name: layering-policy}
data: {layerOrder: [global]}
---
schema: pegleg/SoftwareVersions/v1
metadata: {schema: metadata/Document/v1, name: software-versions, layeringDefinition: {abstract: false, layer: global}}
data:
  images: {hello: 'docker.io/library/hello-world:latest'}
---
schema: armada/Chart/v1
metadata:
  name: example-chart-01
  schema: metadata/Document/v1
  layeringDefinition: {abstract: false, layer: global}
  substitutions:
    - src: {schema: pegleg/SoftwareVersions/v1, name: software-versions, path: .images.hello, pattern: '^(.*):(.*)', match_group: 1}
      dest: {path: .values.images.hello.repo}
    - src: {schema: pegleg/SoftwareVersions/v1, name: software-versions, path: .images.hello, pattern: '^(.*):(.*)', match_group: 2}
      dest: {path: .values.images.hello.tag}
data:
  values: {images: {hello: {repo: null, tag: null}}}
";
    let values: Vec<Value> = yaml(text).into_iter().map(|d| d.value.to_value()).collect();
    let r = rendered(&values).unwrap();
    assert_eq!(
        r.find("armada/Chart").next().unwrap().value["data"]["values"]["images"]["hello"],
        json!({"repo": "docker.io/library/hello-world", "tag": "latest"})
    );
}

#[test]
fn doc_substitution_src_deepcopy() {
    let text = "
schema: deckhand/LayeringPolicy/v1
metadata: {schema: metadata/Control/v1, name: layering-policy}
data: {layerOrder: [global]}
---
schema: pegleg/AccountCatalogue/v1
metadata: {schema: metadata/Document/v1, name: osh_service_accounts, layeringDefinition: {abstract: false, layer: global}}
data: {osh: {client01: client01-data, client02: client02-data}}
---
schema: pegleg/EndpointCatalogue/v1
metadata: {schema: metadata/Document/v1, name: osh_endpoints, layeringDefinition: {abstract: false, layer: global}}
data: {osh: {oslo_db: {client: maria-client}}}
---
schema: armada/Chart/v1
metadata:
  name: example-chart-01
  schema: metadata/Document/v1
  layeringDefinition: {abstract: false, layer: global}
  substitutions:
    - src: {schema: pegleg/EndpointCatalogue/v1, name: osh_endpoints, path: .osh, deepcopy: true}
      dest: {path: .values.endpoints}
    - src: {schema: pegleg/AccountCatalogue/v1, name: osh_service_accounts, path: .osh.client01}
      dest: {path: .values.endpoints.oslo_db.client}
data: {values: {endpoints: null}}
---
schema: armada/Chart/v1
metadata:
  name: example-chart-03
  schema: metadata/Document/v1
  layeringDefinition: {abstract: false, layer: global}
  substitutions:
    - src: {schema: pegleg/EndpointCatalogue/v1, name: osh_endpoints, path: .osh}
      dest: {path: .values.endpoints}
data: {values: {endpoints: null}}
";
    let values: Vec<Value> = yaml(text).into_iter().map(|d| d.value.to_value()).collect();
    let r = rendered(&values).unwrap();
    let client = |name: &str| {
        r.documents
            .iter()
            .find(|d| d.value["metadata"]["name"] == name)
            .unwrap()
            .value["data"]["values"]["endpoints"]["oslo_db"]["client"]
            .clone()
    };
    assert_eq!(client("example-chart-01"), json!("client01-data"));
    assert_eq!(client("example-chart-03"), json!("maria-client"));
}

#[test]
fn doc_substitution_recurse_pattern() {
    let mapping = json!({
        "_GLOBAL_DATA_1_": {"data": {"conf": {"a": "x-PASS-x", "b": ["PASS"], "c": {"d": "PASS"}, "e": 7}}},
        "_GLOBAL_SUBSTITUTIONS_1_": [{"dest": {"path": ".conf", "pattern": "PASS", "recurse": {"depth": 2}},
            "src": {"schema": "deckhand/Passphrase/v1", "name": "pw", "path": "."}}]});
    let pass = secret("Passphrase", "cleartext", json!("s3cret"), "pw");
    assert_eq!(
        substituted(mapping.clone(), std::slice::from_ref(&pass)).unwrap(),
        json!({"conf": {"a": "x-s3cret-x", "b": ["s3cret"], "c": {"d": "s3cret"}, "e": 7}})
    );
    let mut shallow = mapping;
    shallow["_GLOBAL_SUBSTITUTIONS_1_"][0]["dest"]["recurse"] = json!({"depth": 1});
    assert_eq!(
        substituted(shallow, &[pass]).unwrap(),
        json!({"conf": {"a": "x-s3cret-x", "b": ["PASS"], "c": {"d": "PASS"}, "e": 7}})
    );
}

#[test]
fn layering_with_substitution_cycle_fails() {
    let docs = Factory::new(&[1, 3])
        .concrete_site()
        .gen(chain("site-3", "."));
    let error = error_of(&docs);
    let RenderError::SubstitutionDependencyCycle { cycle } = &error else {
        panic!("{error}")
    };
    assert_eq!(cycle.len(), 4, "{error}");
    assert_eq!(cycle.first(), cycle.last());
}

#[test]
fn layering_with_substitution_self_reference_fails() {
    let docs = Factory::new(&[1, 1]).concrete_site().gen(json!({
        "_GLOBAL_DATA_1_": {"data": {"a": {"x": 1, "y": 2}}},
        "_SITE_NAME_1_": "site-1",
        "_SITE_DATA_1_": {"data": {"c": "placeholder"}},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
        "_SITE_SUBSTITUTIONS_1_": [{"dest": {"path": ".c"}, "src": {"schema": "example/Kind/v1", "name": "site-1", "path": "."}}],
    }));
    assert!(matches!(
        error_of(&docs),
        RenderError::SubstitutionDependencyCycle { .. }
    ));
}

#[test]
fn layering_with_missing_substitution_source_raises_exc() {
    let mut factory = Factory::new(&[1]);
    factory.global_abstract = false;
    let docs = factory.gen(json!({
        "_GLOBAL_SUBSTITUTIONS_1_": [{"dest": {"path": ".c"}, "src": {"schema": "example/Kind/v1", "name": "nowhere-to-be-found", "path": "."}}],
        "_GLOBAL_DATA_1_": {"data": {"a": {"b": [1, 2, 3]}, "c": "d"}},
    }));
    let error = error_of(&docs);
    assert!(
        matches!(error, RenderError::SubstitutionSourceNotFound { ref src_name, .. } if src_name == "nowhere-to-be-found"),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("[example/Kind/v1] global1 (global layer, case.yaml document 2"),
        "{error}"
    );
}

#[test]
fn abstract_documents_are_not_substitution_sources() {
    let mut docs = Factory::new(&[1, 1]).concrete_site().gen(json!({
        "_GLOBAL_DATA_1_": {"data": {"x": 1}},
        "_SITE_SUBSTITUTIONS_1_": [{"dest": {"path": ".c"}, "src": {"schema": "example/Kind/v1", "name": "global1", "path": ".x"}}],
    }));
    assert!(matches!(
        error_of(&docs),
        RenderError::SubstitutionSourceNotFound { .. }
    ));
    docs[1]["metadata"]["layeringDefinition"]["abstract"] = json!(false);
    let r = rendered(&docs).unwrap();
    assert_eq!(
        r.find("example/Kind")
            .map(|d| d.value["data"].clone())
            .collect::<Vec<_>>(),
        [json!({"x": 1}), json!({"c": 1})]
    );
}

#[test]
fn secret_substititon_missing_src_path_in_src_doc_raises_exc() {
    let mapping = json!({"_GLOBAL_SUBSTITUTIONS_1_": [{"dest": {"path": ".chart.values.tls.certificate"},
        "src": {"schema": "deckhand/Certificate/v1", "name": "example-cert", "path": ".path-to-nowhere"}}]});
    let cert = secret("Certificate", "cleartext", json!({}), "example-cert");
    let error = substituted(mapping, &[cert]).unwrap_err();
    assert!(
        matches!(error, RenderError::SubstitutionSourceDataNotFound { ref path, .. } if path == ".path-to-nowhere"),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("[deckhand/Certificate/v1] example-cert (site layer"),
        "{error}"
    );
}

#[test]
fn substitution_pattern_into_a_value_that_is_not_text_raises_exc() {
    let mapping = json!({"_GLOBAL_DATA_1_": {"data": {"port": 5}},
        "_GLOBAL_SUBSTITUTIONS_1_": [{"dest": {"path": ".port", "pattern": "X"},
            "src": {"schema": "deckhand/Passphrase/v1", "name": "pw", "path": "."}}]});
    let error = substituted(
        mapping,
        &[secret("Passphrase", "cleartext", json!("p"), "pw")],
    )
    .unwrap_err();
    assert!(
        matches!(error, RenderError::UnknownSubstitutionError { .. }),
        "{error}"
    );
}
