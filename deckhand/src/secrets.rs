//! Secrets: which documents are secret, and what is put in place of a secret value.
//!
//! A document is secret when its schema is one of Deckhand's secret types (`deckhand/Passphrase/v1`,
//! `deckhand/Certificate/v1`, ...) or its `metadata.storagePolicy` is `encrypted`. A redacted value is
//! what Deckhand's `DocumentDict.redact` gives: the SHA-256, in hex, of the value written as Python's
//! `json.dumps` writes it.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use foldhash::fast::RandomState;
use sha2::{Digest, Sha256};

use crate::document::Document;
use crate::path::python_float;
use crate::tree::Tree;

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
    crate::document::Header::of(doc).is_secret()
}

/// One of Deckhand's secret schemas.
pub fn is_secret_schema(schema: &str) -> bool {
    schema.starts_with("deckhand/") && SECRET_SCHEMAS.iter().any(|s| schema.starts_with(s))
}

/// What Deckhand puts in place of a secret value: `sha256(json.dumps(value))` in hex.
pub fn redact(value: &Tree) -> Tree {
    let digest = Sha256::digest(python_json(value).as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 15)]));
    }
    Tree::from(hex)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Redacted values of one rendering, by identity: a secret substituted into many documents (shared, as
/// [`Tree`]s share) is hashed once. Each value is kept while it is cached, so that its address cannot be
/// taken by another value.
#[derive(Default)]
pub(crate) struct Redactions(HashMap<usize, (Tree, Tree), RandomState>);

impl Redactions {
    /// [`redact`], from the cache when this very value was redacted before.
    pub fn redact(&mut self, value: &Tree) -> Tree {
        let Some(id) = value.address() else {
            return redact(value);
        };
        match self.0.entry(id) {
            Entry::Occupied(found) => found.get().1.clone(),
            Entry::Vacant(slot) => slot.insert((value.clone(), redact(value))).1.clone(),
        }
    }
}

/// A value as Python's `json.dumps` writes it by default: `", "` and `": "` separators, non-ASCII
/// characters escaped as `\uXXXX`, keys in the mapping's order.
pub fn python_json(value: &Tree) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &Tree, out: &mut String) {
    match value {
        Tree::Null => out.push_str("null"),
        Tree::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Tree::Number(n) => match n.as_f64() {
            Some(f) if !n.is_i64() && !n.is_u64() => out.push_str(&python_float(f)),
            _ => out.push_str(&n.to_string()),
        },
        Tree::String(s) => write_string(s, out),
        Tree::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Tree::Object(map) => {
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
    // Runs of printable ASCII other than `"` and `\` are copied whole.
    let mut plain = 0;
    for (at, c) in s.char_indices() {
        let escape = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => "",
            _ => continue,
        };
        out.push_str(&s[plain..at]);
        plain = at + c.len_utf8();
        if escape.is_empty() {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str("\\u");
                for shift in [12, 8, 4, 0] {
                    out.push(char::from(HEX[usize::from((*unit >> shift) & 15)]));
                }
            }
        } else {
            out.push_str(escape);
        }
    }
    out.push_str(&s[plain..]);
    out.push('"');
}
