//! Secrets: which documents are secret, what Deckhand puts in place of a secret value (the SHA-256 of
//! Python's `json.dumps` of it; the digests below are Python's), and where redaction applies.

use plinth_deckhand::secrets;
use plinth_deckhand::Tree;
use plinth_deckhand::{render, Options};
use serde_json::{json, Value};

use crate::support::{docs, secret, Factory};

/// What Deckhand puts in place of a secret value.
fn redact(value: &Value) -> Value {
    secrets::redact(&Tree::from(value)).to_value()
}

/// A value as Python's `json.dumps` writes it.
fn python_json(value: &Value) -> String {
    secrets::python_json(&Tree::from(value))
}

#[test]
fn redaction_is_the_digest_of_pythons_json() {
    let cases = [
        (
            json!({"a": 1, "b": [true, null, 1.5]}),
            r#"{"a": 1, "b": [true, null, 1.5]}"#,
            "c2bb3406b69de327bc0f7805e9264964cfe3e3d8e0969b04f8159df5bda70c75",
        ),
        (
            json!("p\u{e9}\n\""),
            r#""p\u00e9\n\"""#,
            "63b68bedb751a19c1a270b4605b2a6ccaa080f0b0b8a51dca7df024c8e6a00df",
        ),
        (
            json!(1e16),
            "1e+16",
            "a144838520595009e7daf5aff8472573f9ce6a4bcd8c30673675618883464ab0",
        ),
        (
            json!(0.0001),
            "0.0001",
            "e539aebac7fd2ed8aba8854fedeaa65436962f8ee1c82341b394698f085b6496",
        ),
        (
            json!(12345678901234567u64),
            "12345678901234567",
            "97f40b8ae3e4d3118bb4afb623d3e768f04d9bc2f913bd64296ebcd53386c1ac",
        ),
        (
            json!("password123"),
            r#""password123""#,
            "4a61f9cdf3d1802bfa50f0a524af2753cdc86516614ad0e8ace229a77e41d07d",
        ),
    ];
    for (value, written, digest) in cases {
        assert_eq!(python_json(&value), written);
        assert_eq!(redact(&value), json!(digest), "{written}");
    }
}

/// A chart taking a passphrase (cleartext or encrypted) at `.values.pw`, and a public value at `.host`.
fn site(storage_policy: &str) -> Vec<Value> {
    let mut factory = Factory::new(&[1, 1]);
    factory.global_abstract = false;
    let mut values = factory.gen(json!({
        "_GLOBAL_DATA_1_": {"data": {"values": {"pw": "x", "user": "admin"}}},
        "_GLOBAL_SUBSTITUTIONS_1_": [
            {"dest": {"path": ".values.pw"}, "src": {"schema": "deckhand/Passphrase/v1", "name": "pw", "path": "."}},
            {"dest": {"path": ".host"}, "src": {"schema": "example/Address/v1", "name": "addr", "path": ".host"}},
        ],
    }));
    values.truncate(2);
    values.push(secret("Passphrase", storage_policy, json!("s3cret"), "pw"));
    values.push(json!({"schema": "example/Address/v1", "metadata": {"name": "addr", "layeringDefinition": {"layer": "site"}},
                       "data": {"host": "10.0.0.1"}}));
    values
}

fn chart(values: &[Value], cleartext: bool) -> (Value, bool) {
    let r = render(
        &docs(values),
        &Options {
            cleartext_secrets: cleartext,
        },
    )
    .unwrap();
    let chart = r.find("example/Kind").next().unwrap();
    (chart.value.to_value(), chart.secret)
}

#[test]
fn a_cleartext_secret_substituted_is_redacted_where_it_went() {
    let values = site("cleartext");
    let (redacted, secret) = chart(&values, false);
    assert!(secret);
    assert_eq!(
        redacted["data"],
        json!({"values": {"pw": redact(&json!("s3cret")), "user": "admin"}, "host": "10.0.0.1"})
    );
    // The substitution's metadata is kept: the source is cleartext.
    assert_eq!(redacted["metadata"]["substitutions"][0]["src"]["path"], ".");
    assert_eq!(redacted["metadata"]["storagePolicy"], "cleartext");
    let (clear, secret) = chart(&values, true);
    assert!(secret);
    assert_eq!(
        clear["data"],
        json!({"values": {"pw": "s3cret", "user": "admin"}, "host": "10.0.0.1"})
    );
}

#[test]
fn an_encrypted_source_makes_the_destination_encrypted() {
    let values = site("encrypted");
    let (redacted, _) = chart(&values, false);
    assert_eq!(redacted["metadata"]["storagePolicy"], "encrypted");
    let data = json!({"values": {"pw": "s3cret", "user": "admin"}, "host": "10.0.0.1"});
    assert_eq!(redacted["data"], redact(&data));
    assert_eq!(
        redacted["metadata"]["substitutions"][0]["src"]["path"],
        redact(&json!("."))
    );
    assert_eq!(
        redacted["metadata"]["substitutions"][1]["dest"]["path"],
        redact(&json!(".host"))
    );
    let (clear, _) = chart(&values, true);
    assert_eq!(clear["metadata"]["storagePolicy"], "cleartext");
    assert_eq!(clear["data"], data);
}

#[test]
fn secret_documents_are_redacted_unless_asked_in_clear() {
    let values = site("cleartext");
    for cleartext in [false, true] {
        let r = render(
            &docs(&values),
            &Options {
                cleartext_secrets: cleartext,
            },
        )
        .unwrap();
        let pass = r.find("deckhand/Passphrase/v1").next().unwrap();
        assert!(pass.secret);
        let expected = if cleartext {
            json!("s3cret")
        } else {
            redact(&json!("s3cret"))
        };
        assert_eq!(pass.value["data"], expected);
        let addr = r.find("example/Address").next().unwrap();
        assert!(!addr.secret);
        assert_eq!(addr.value["data"], json!({"host": "10.0.0.1"}));
    }
}

#[test]
fn every_secret_schema_is_secret() {
    for kind in [
        "Passphrase",
        "Certificate",
        "CertificateKey",
        "CertificateAuthority",
        "CertificateAuthorityKey",
        "PrivateKey",
        "PublicKey",
    ] {
        let mut values = Factory::new(&[1, 1]).gen(json!({}));
        values.truncate(1);
        values.push(secret(kind, "cleartext", json!({"k": "v"}), "s"));
        let r = render(&docs(&values), &Options::default()).unwrap();
        let doc = r
            .find("deckhand/")
            .find(|d| d.value["metadata"]["name"] == "s")
            .unwrap();
        assert!(doc.secret, "{kind}");
        assert_eq!(doc.value["data"], redact(&json!({"k": "v"})), "{kind}");
    }
}

#[test]
fn a_secret_inherited_from_a_parent_stays_redacted() {
    let mut values = Factory::new(&[1, 1]).concrete_site().gen(json!({
        "_GLOBAL_DATA_1_": {"data": {"pw": "x", "other": 1}},
        "_GLOBAL_SUBSTITUTIONS_1_": [{"dest": {"path": ".pw"}, "src": {"schema": "deckhand/Passphrase/v1", "name": "pw", "path": "."}}],
        "_SITE_DATA_1_": {"data": {"other": 2}},
        "_SITE_ACTIONS_1_": {"actions": [{"method": "merge", "path": "."}]},
    }));
    values.push(secret("Passphrase", "cleartext", json!("s3cret"), "pw"));
    let r = render(&docs(&values), &Options::default()).unwrap();
    let child = r.find("example/Kind").next().unwrap();
    assert!(child.secret);
    assert_eq!(
        child.value["data"],
        json!({"pw": redact(&json!("s3cret")), "other": 2})
    );
    // The child replacing the value with its own: nothing secret is left.
    values[2]["data"] = json!({"pw": "mine"});
    let r = render(&docs(&values), &Options::default()).unwrap();
    let child = r.find("example/Kind").next().unwrap();
    assert!(!child.secret);
    assert_eq!(child.value["data"], json!({"pw": "mine", "other": 1}));
    // In clear, the same documents are secret.
    for (pw, secret) in [(json!({"other": 2}), true), (json!({"pw": "mine"}), false)] {
        values[2]["data"] = pw;
        let clear = Options {
            cleartext_secrets: true,
        };
        let r = render(&docs(&values), &clear).unwrap();
        assert_eq!(r.find("example/Kind").next().unwrap().secret, secret);
    }
}
