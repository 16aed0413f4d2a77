//! YAML as Shipyard reads it (PyYAML's `safe_load`, YAML 1.1): plain `yes`/`no`/`on`/`off`/`True`/... are
//! booleans, `0o`-less octals (`010`), `0b`, `0x`, `_` separators and base-60 numbers are integers, a float
//! needs a dot, merge keys (`<<: *anchor`, `<<: [*a, *b]`) copy the keys a mapping does not set itself, and a
//! key repeated in one mapping keeps its last value (with a warning). Quoted and block scalars are always
//! text. Every document of a stream is read, each with the line it starts on.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;
use std::sync::Arc;

use serde_json::Number;

use crate::tree::{Key as MapKey, Map, Tree};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// One document of a YAML stream.
#[derive(Debug, Clone, PartialEq)]
pub struct YamlDoc {
    /// The document as JSON data.
    pub value: Tree,
    /// The line (1-based) its content starts on.
    pub line: usize,
    /// What was accepted but deserves a word (keys repeated in a mapping).
    pub warnings: Vec<String>,
}

/// Every document of the stream, empty ones included as `null`.
pub fn load(text: &str) -> Result<Vec<YamlDoc>, String> {
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(text);
    if let Err(error) = parser.load(&mut builder, true) {
        let mark = error.marker();
        return Err(format!(
            "invalid YAML at line {} column {}: {}",
            mark.line(),
            mark.col() + 1,
            error.info()
        ));
    }
    if let Some(error) = builder.error {
        return Err(error);
    }
    // A block scalar running to the end of a text that has no final line break has none either (as
    // PyYAML reads it); the parser gives it one.
    if builder.last_was_block && !text.ends_with('\n') {
        if let Some(leaf) = builder
            .docs
            .last_mut()
            .and_then(|d| last_leaf(&mut d.value))
        {
            if let Some(cut) = leaf.as_str().and_then(|s| s.strip_suffix('\n')) {
                *leaf = Tree::string(cut);
            }
        }
    }
    Ok(builder.docs)
}

/// The last scalar of a document, in the order it was written.
fn last_leaf(value: &mut Tree) -> Option<&mut Tree> {
    match value {
        Tree::Object(map) => Arc::make_mut(map)
            .values_mut()
            .next_back()
            .and_then(last_leaf),
        Tree::Array(items) => Arc::make_mut(items).last_mut().and_then(last_leaf),
        other => Some(other),
    }
}

enum Frame {
    Seq {
        items: Vec<Tree>,
        anchor: usize,
    },
    Map {
        map: Map,
        key: Option<(Key, usize)>,
        merges: Vec<Tree>,
        anchor: usize,
    },
}

/// A mapping's pending key: a merge (`<<` written plain) or a name.
enum Key {
    Merge,
    Name(String),
}

#[derive(Default)]
struct Builder {
    docs: Vec<YamlDoc>,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Tree>,
    root: Option<Tree>,
    line: usize,
    warnings: Vec<String>,
    error: Option<String>,
    /// The last node read was a block scalar (`|` or `>`) value.
    last_was_block: bool,
}

/// The merge key, when written plain.
const MERGE: &str = "<<";

impl Builder {
    /// Places a finished node into its parent (or as the document's root).
    fn push(&mut self, value: Tree, anchor: usize, line: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, value.clone());
        }
        match self.stack.last_mut() {
            None => self.root = Some(value),
            Some(Frame::Seq { items, .. }) => items.push(value),
            Some(Frame::Map {
                map, key, merges, ..
            }) => match key.take() {
                None => *key = Some((Key::Name(key_text(&value)), line)),
                Some((Key::Merge, _)) => match value {
                    Tree::Array(sources) => merges.extend(sources.iter().cloned()),
                    other => merges.push(other),
                },
                Some((Key::Name(name), key_line)) => {
                    if map.insert(MapKey::from(name.as_str()), value).is_some() {
                        self.warnings.push(format!(
                            "line {key_line}: key {name:?} appears twice in one mapping; the last value counts \
                             (as PyYAML reads it)"
                        ));
                    }
                }
            },
        }
    }

    /// Whether the next node is a mapping key (keys keep their text; `<<` is a merge).
    fn expecting_key(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Map { key: None, .. }))
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        match &event {
            Event::Scalar(_, style, _, _) => {
                self.last_was_block = matches!(style, TScalarStyle::Literal | TScalarStyle::Folded)
                    && !self.expecting_key();
            }
            Event::SequenceEnd | Event::MappingEnd | Event::DocumentEnd | Event::StreamEnd => {}
            _ => self.last_was_block = false,
        }
        match event {
            Event::DocumentStart => {
                self.root = None;
                self.line = mark.line();
                self.anchors.clear();
            }
            Event::DocumentEnd => {
                let value = self.root.take().unwrap_or(Tree::Null);
                self.docs.push(YamlDoc {
                    value,
                    line: self.line,
                    warnings: std::mem::take(&mut self.warnings),
                });
            }
            Event::Alias(id) => match self.anchors.get(&id).cloned() {
                Some(value) => self.push(value, 0, mark.line()),
                None => {
                    self.error = Some(format!(
                        "invalid YAML at line {}: an alias names no anchor defined before it",
                        mark.line()
                    ))
                }
            },
            Event::Scalar(text, style, anchor, tag) => {
                if self.expecting_key() {
                    if style == TScalarStyle::Plain && tag.is_none() && text == MERGE {
                        if let Some(Frame::Map { key, .. }) = self.stack.last_mut() {
                            *key = Some((Key::Merge, mark.line()));
                        }
                        return;
                    }
                    // Keys keep their text (a quoted `<<` is an ordinary key).
                    self.push(Tree::from(text), anchor, mark.line());
                } else {
                    self.push(scalar(text, style, tag.as_ref()), anchor, mark.line());
                }
            }
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::Seq {
                items: Vec::new(),
                anchor,
            }),
            Event::SequenceEnd => {
                if let Some(Frame::Seq { items, anchor }) = self.stack.pop() {
                    self.push(Tree::array(items), anchor, mark.line());
                }
            }
            Event::MappingStart(anchor, _) => self.stack.push(Frame::Map {
                map: Map::default(),
                key: None,
                merges: Vec::new(),
                anchor,
            }),
            Event::MappingEnd => {
                if let Some(Frame::Map {
                    mut map,
                    merges,
                    anchor,
                    ..
                }) = self.stack.pop()
                {
                    let mut merged = Map::default();
                    for source in merges {
                        match source {
                            Tree::Object(source) => {
                                for (k, v) in source.iter() {
                                    // The first source that sets a key wins among sources.
                                    if !merged.contains_key(k) {
                                        merged.insert(k.clone(), v.clone());
                                    }
                                }
                            }
                            _ => {
                                self.error = Some(format!(
                                    "invalid YAML before line {}: a merge key `<<` takes a mapping or a list \
                                     of mappings",
                                    mark.line()
                                ));
                                return;
                            }
                        }
                    }
                    for (k, v) in merged.iter() {
                        if !map.contains_key(k) {
                            map.insert(k.clone(), v.clone());
                        }
                    }
                    self.push(Tree::object(map), anchor, mark.line());
                }
            }
            Event::StreamStart | Event::StreamEnd | Event::Nothing => {}
        }
    }
}

/// A mapping key as text (JSON keys are strings).
fn key_text(value: &Tree) -> String {
    match value {
        Tree::String(text) => text.to_string(),
        other => other.to_string(),
    }
}

/// A scalar read as PyYAML's resolver reads it.
fn scalar(text: String, style: TScalarStyle, tag: Option<&Tag>) -> Tree {
    let core = tag.filter(|t| t.handle == "!!" || t.handle == "tag:yaml.org,2002:");
    match core.map(|t| t.suffix.as_str()) {
        Some("str") => return Tree::from(text),
        Some("bool") => {
            return match boolean(&text) {
                Some(flag) => Tree::Bool(flag),
                None => Tree::from(text),
            }
        }
        Some("int") => return integer(&text).unwrap_or(Tree::from(text)),
        Some("float") => return float(&text).unwrap_or(Tree::from(text)),
        Some("null") => return Tree::Null,
        _ => {}
    }
    if style != TScalarStyle::Plain || tag.is_some() {
        return Tree::from(text);
    }
    if matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL") {
        return Tree::Null;
    }
    if let Some(flag) = boolean(&text) {
        return Tree::Bool(flag);
    }
    if let Some(number) = integer(&text) {
        return number;
    }
    if let Some(number) = float(&text) {
        return number;
    }
    Tree::from(text)
}

fn boolean(text: &str) -> Option<bool> {
    match text {
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => Some(true),
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    // The patterns are constants of this file, checked by the tests below.
    cell.get_or_init(|| Regex::new(pattern).expect("constant pattern"))
}

/// PyYAML's integers: binary, octal (leading 0), decimal, hexadecimal, base 60; `_` separators.
fn integer(text: &str) -> Option<Tree> {
    static INT: OnceLock<Regex> = OnceLock::new();
    let re = regex(
        &INT,
        r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
    );
    if !re.is_match(text) {
        return None;
    }
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    let (negative, digits) = match clean.strip_prefix('-') {
        Some(rest) => (true, rest.to_string()),
        None => (false, clean.trim_start_matches('+').to_string()),
    };
    let magnitude: i128 = if let Some(bin) = digits.strip_prefix("0b") {
        i128::from_str_radix(bin, 2).ok()?
    } else if let Some(hex) = digits.strip_prefix("0x") {
        i128::from_str_radix(hex, 16).ok()?
    } else if digits.contains(':') {
        digits.split(':').try_fold(0i128, |acc, part| {
            acc.checked_mul(60)?.checked_add(part.parse::<i128>().ok()?)
        })?
    } else if digits.len() > 1 && digits.starts_with('0') {
        i128::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse::<i128>().ok()?
    };
    let signed = if negative { -magnitude } else { magnitude };
    if let Ok(small) = i64::try_from(signed) {
        Some(Tree::Number(small.into()))
    } else {
        u64::try_from(signed)
            .ok()
            .map(|big| Tree::Number(big.into()))
    }
}

/// PyYAML's floats: a dot is required (`1e3` is text); infinities and NaN stay text (JSON has none).
fn float(text: &str) -> Option<Tree> {
    static FLOAT: OnceLock<Regex> = OnceLock::new();
    let re = regex(
        &FLOAT,
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?)$",
    );
    if !re.is_match(text) {
        return None;
    }
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    let number: f64 = clean.parse().ok()?;
    Number::from_f64(number).map(Tree::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(text: &str) -> Tree {
        let docs = load(text).unwrap();
        assert_eq!(docs.len(), 1, "{docs:?}");
        docs[0].value.clone()
    }

    #[test]
    fn a_block_scalar_at_the_end_of_a_text_without_a_final_line_break_has_none() {
        let doc = |text: &str| load(text).unwrap().remove(0).value;
        assert_eq!(doc("a: |\n  x\n  y"), json!({"a": "x\ny"}));
        assert_eq!(doc("a: |\n  x\n  y\n"), json!({"a": "x\ny\n"}));
        assert_eq!(doc("a: |\n  x\nb: 1"), json!({"a": "x\n", "b": 1}));
    }

    #[test]
    fn yaml_1_1_scalars() {
        let v = one(
            "a: yes\nb: On\nc: True\nd: 'yes'\ne: no\nf: off\ng: 010\nh: 0x1F\ni: 1_000\nj: 1:30\nk: 1e3\n\
             l: 1.5\nm: ~\nn:\no: !!str 12\np: y\nq: \"on\"\nr: -0b101\n",
        );
        assert_eq!(
            v,
            json!({"a": true, "b": true, "c": true, "d": "yes", "e": false, "f": false, "g": 8, "h": 31,
                   "i": 1000, "j": 90, "k": "1e3", "l": 1.5, "m": null, "n": null, "o": "12", "p": "y",
                   "q": "on", "r": -5})
        );
    }

    #[test]
    fn merge_keys_and_anchors() {
        let v = one(
            "base: &b {critical: true, depends_on: [x]}\nmore: &m {selectors: []}\n\
             g1:\n  <<: *b\n  name: g1\n  critical: false\ng2:\n  <<: [*m, *b]\n  name: g2\n\"<<\": kept\n",
        );
        assert_eq!(
            v["g1"],
            json!({"critical": false, "depends_on": ["x"], "name": "g1"})
        );
        assert_eq!(
            v["g2"],
            json!({"critical": true, "depends_on": ["x"], "name": "g2", "selectors": []})
        );
        assert_eq!(v["<<"], json!("kept"));
    }

    #[test]
    fn repeated_keys_keep_the_last_with_a_warning() {
        let docs = load("---\na: 1\nb: 2\na: 3\n---\nc: 4\n").unwrap();
        assert_eq!(docs[0].value, json!({"a": 3, "b": 2}));
        assert_eq!(docs[0].warnings.len(), 1);
        assert!(
            docs[0].warnings[0].contains("line 4"),
            "{:?}",
            docs[0].warnings
        );
        assert!(docs[1].warnings.is_empty());
        assert_eq!(docs[1].line, 5);
    }

    #[test]
    fn errors_name_the_line() {
        let error = load("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(error.contains("line"), "{error}");
        let error = load("a: *nothing\n").unwrap_err();
        assert!(error.contains("invalid YAML"), "{error}");
    }
}
