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
    let mut hashing = Hashing {
        hasher: Sha256::new(),
        buffer: Vec::with_capacity(Hashing::BUFFER),
    };
    write_json(value, &mut hashing);
    hashing.hasher.update(&hashing.buffer);
    let digest = hashing.hasher.finalize();
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

/// Where [`write_json`] writes: a `String`, or straight into a digest ([`Hashing`]).
trait Out {
    fn push_str(&mut self, s: &str);
    fn push(&mut self, c: char) {
        self.push_str(c.encode_utf8(&mut [0; 4]));
    }
}

impl Out for String {
    fn push_str(&mut self, s: &str) {
        String::push_str(self, s);
    }
    fn push(&mut self, c: char) {
        String::push(self, c);
    }
}

/// Text written into SHA-256 through a buffer, so that the digest gets it in large pieces and the whole
/// text is never held.
struct Hashing {
    hasher: Sha256,
    buffer: Vec<u8>,
}

impl Hashing {
    const BUFFER: usize = 8192;
}

impl Out for Hashing {
    fn push_str(&mut self, s: &str) {
        if self.buffer.len() + s.len() > Hashing::BUFFER {
            self.hasher.update(&self.buffer);
            self.buffer.clear();
        }
        if s.len() > Hashing::BUFFER {
            self.hasher.update(s.as_bytes());
        } else {
            self.buffer.extend_from_slice(s.as_bytes());
        }
    }
}

fn write_json(value: &Tree, out: &mut impl Out) {
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

/// A byte `json.dumps` does not write as it is: `"`, `\\`, a control character, DEL, or a byte of a
/// character beyond ASCII.
fn escaped(b: u8) -> bool {
    !(0x20..=0x7e).contains(&b) | (b == b'"') | (b == b'\\')
}

fn write_string(s: &str, out: &mut impl Out) {
    out.push('"');
    let bytes = s.as_bytes();
    // The start of the run of plain bytes not yet written, and where the scan is. Every byte before
    // `at` is ASCII or part of a whole character, so `at` is always at a character's start.
    let (mut plain, mut at) = (0, 0);
    loop {
        // Sixteen plain bytes at a time, each chunk checked without a branch (which compiles to vector
        // instructions), then byte by byte.
        while let Some(chunk) = bytes.get(at..at + 16) {
            if chunk.iter().fold(false, |any, &b| any | escaped(b)) {
                break;
            }
            at += 16;
        }
        while at < bytes.len() && !escaped(bytes[at]) {
            at += 1;
        }
        let Some(c) = s[at..].chars().next() else {
            break;
        };
        out.push_str(&s[plain..at]);
        at += c.len_utf8();
        plain = at;
        let escape = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            _ => "",
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `json.dumps` of a string, one character at a time.
    fn dumped(s: &str) -> String {
        let mut out = String::from('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                ' '..='~' => out.push(c),
                c => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            }
        }
        out.push('"');
        out
    }

    #[test]
    fn strings_are_written_as_json_dumps_writes_them_wherever_their_escapes_fall() {
        let specials = [
            "\"", "\\", "\n", "\t", "\u{7f}", "\u{1}", "é", "€", "😀", "~", " ",
        ];
        for len in 0..40 {
            for special in specials {
                for at in (0..=len).step_by(3) {
                    let mut text: String = "abcdefghij".chars().cycle().take(len).collect();
                    text.insert_str(at, special);
                    assert_eq!(python_json(&Tree::string(&text)), dumped(&text), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn a_redacted_value_is_the_digest_of_all_its_text() {
        // Longer than the digest's buffer, with escapes across its edges.
        let long: String = "line of a certificate\n".repeat(1000);
        let value = Tree::from(serde_json::json!({"pem": long, "n": [1, 2.5, null, true]}));
        let digest = Sha256::digest(python_json(&value).as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(redact(&value), Tree::from(hex));
    }
}
