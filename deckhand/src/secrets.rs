//! Secrets: which documents are secret, and what is put in place of a secret value.
//!
//! A document is secret when its schema is one of Deckhand's secret types (`deckhand/Passphrase/v1`,
//! `deckhand/Certificate/v1`, ...) or its `metadata.storagePolicy` is `encrypted`. A redacted value is
//! what Deckhand's `DocumentDict.redact` gives: the SHA-256, in hex, of the value written as Python's
//! `json.dumps` writes it.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::document::Document;
use crate::path::python_float;

/// Deckhand's secret schemas (each with any version).
pub const SECRET_SCHEMAS: &[&str] = &[
    "deckhand/CertificateAuthority/",
    "deckhand/CertificateAuthorityKey/",
    "deckhand/CertificateKey/",
    "deckhand/Certificate/",
    "deckhand/PrivateKey/",
    "deckhand/PublicKey/",
    "deckhand/Passphrase/",
];

/// A secret document: one of the secret schemas, or `metadata.storagePolicy: encrypted`.
pub fn is_secret(doc: &Document) -> bool {
    doc.is_encrypted() || SECRET_SCHEMAS.iter().any(|s| doc.schema().starts_with(s))
}

/// What Deckhand puts in place of a secret value: `sha256(json.dumps(value))` in hex.
pub fn redact(value: &Value) -> Value {
    let digest = Sha256::digest(python_json(value).as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 15)]));
    }
    Value::String(hex)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A value as Python's `json.dumps` writes it by default: `", "` and `": "` separators, non-ASCII
/// characters escaped as `\uXXXX`, keys in the mapping's order.
pub fn python_json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64() {
            Some(f) if !n.is_i64() && !n.is_u64() => out.push_str(&python_float(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (n, (k, v)) in map.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                write_string(k, out);
                out.push_str(": ");
                write_json(v, out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
