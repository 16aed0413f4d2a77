//! Where a key is written: the line of a path of keys and list positions in a YAML (or JSON) text.
//! serde's YAML loader gives no positions once a document is read, so the text is read a second time
//! with `yaml-rust2`'s event parser, keeping each key's line. Aliases carry the lines of their anchor;
//! a key a merge (`<<: *anchor`) brings is found under the anchor it came from.

use std::collections::HashMap;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// One step of a path into a document.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathStep {
    /// A mapping's key.
    Key(String),
    /// A list's position, from 0.
    Index(usize),
}

/// A document with the line (1-based) of every key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Marked {
    /// A mapping: each key with its line and value, in the text's order.
    Map(Vec<(String, usize, Marked)>),
    /// A list.
    Seq(Vec<Marked>),
    /// Anything else.
    Scalar,
}

/// The merge key, as YAML 1.1 writes it.
const MERGE: &str = "<<";

/// The most nodes a document may unfold to, its aliases copied where they stand: aliases of aliases
/// could otherwise make a small text an exponentially large tree.
const MAX_NODES: usize = 1 << 20;

impl Marked {
    /// Reads the first document of `text`; `None` when the text is no YAML.
    pub(crate) fn parse(text: &str) -> Option<Marked> {
        let mut builder = Builder::default();
        let mut parser = Parser::new_from_str(text);
        parser.load(&mut builder, false).ok()?;
        if builder.nodes > MAX_NODES {
            return None;
        }
        builder.root
    }

    /// How many nodes the tree holds.
    fn size(&self) -> usize {
        1 + match self {
            Marked::Map(entries) => entries.iter().map(|(_, _, v)| v.size()).sum(),
            Marked::Seq(items) => items.iter().map(Marked::size).sum(),
            Marked::Scalar => 0,
        }
    }

    /// The line of the last key of `path` (a repeated key: its last writing, the one that counts).
    pub(crate) fn line_of(&self, path: &[PathStep]) -> Option<usize> {
        let (first, rest) = path.split_first()?;
        match (self, first) {
            (Marked::Seq(items), PathStep::Index(i)) => items.get(*i)?.line_of(rest),
            (Marked::Map(_), PathStep::Key(key)) => {
                let (line, value) = self.entry(key, 0)?;
                if rest.is_empty() {
                    Some(line)
                } else {
                    value.line_of(rest)
                }
            }
            _ => None,
        }
    }

    /// A mapping's entry for `key`, its own or one a merge brings (bounded depth).
    fn entry(&self, key: &str, depth: usize) -> Option<(usize, &Marked)> {
        let Marked::Map(entries) = self else {
            return None;
        };
        if let Some((_, line, value)) = entries.iter().rev().find(|(k, _, _)| k == key) {
            return Some((*line, value));
        }
        if depth > 16 {
            return None;
        }
        entries
            .iter()
            .filter(|(k, _, _)| k == MERGE)
            .find_map(|(_, _, source)| match source {
                Marked::Seq(sources) => sources.iter().find_map(|s| s.entry(key, depth + 1)),
                other => other.entry(key, depth + 1),
            })
    }
}

enum Frame {
    Seq(Vec<Marked>, usize),
    Map {
        entries: Vec<(String, usize, Marked)>,
        key: Option<(String, usize)>,
        anchor: usize,
    },
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    /// Each anchor's node and its size.
    anchors: HashMap<usize, (Marked, usize)>,
    root: Option<Marked>,
    /// The nodes so far, aliases counted at their anchor's size; past [`MAX_NODES`] nothing is built.
    nodes: usize,
}

impl Builder {
    fn push(&mut self, node: Marked, anchor: usize, key_text: Option<String>, line: usize) {
        if anchor > 0 {
            let size = node.size();
            self.anchors.insert(anchor, (node.clone(), size));
        }
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
            Some(Frame::Seq(items, _)) => items.push(node),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                None => *key = Some((key_text.unwrap_or_default(), line)),
                Some((name, key_line)) => entries.push((name, key_line, node)),
            },
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, mark: Marker) {
        if self.nodes > MAX_NODES {
            return;
        }
        self.nodes += 1;
        let line = mark.line();
        match event {
            Event::Scalar(text, _, anchor, _) => {
                self.push(Marked::Scalar, anchor, Some(text), line)
            }
            Event::Alias(id) => {
                let (node, size) = self
                    .anchors
                    .get(&id)
                    .cloned()
                    .unwrap_or((Marked::Scalar, 1));
                self.nodes = self.nodes.saturating_add(size);
                if self.nodes > MAX_NODES {
                    return;
                }
                self.push(node, 0, None, line);
            }
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::Seq(Vec::new(), anchor)),
            Event::SequenceEnd => {
                if let Some(Frame::Seq(items, anchor)) = self.stack.pop() {
                    self.push(Marked::Seq(items), anchor, None, line);
                }
            }
            Event::MappingStart(anchor, _) => self.stack.push(Frame::Map {
                entries: Vec::new(),
                key: None,
                anchor,
            }),
            Event::MappingEnd => {
                if let Some(Frame::Map {
                    entries, anchor, ..
                }) = self.stack.pop()
                {
                    self.push(Marked::Map(entries), anchor, None, line);
                }
            }
            Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd
            | Event::Nothing => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> PathStep {
        PathStep::Key(k.into())
    }

    #[test]
    fn keys_of_block_and_flow_yaml_and_json_have_their_lines() {
        let text = "\
- id: a
  type: shell
  parameters:
    cmd: x
    timout: 10
- {id: b, requries: [a]}
";
        let doc = Marked::parse(text).expect("parses");
        let at = |p: &[PathStep]| doc.line_of(p);
        assert_eq!(
            at(&[PathStep::Index(0), key("parameters"), key("timout")]),
            Some(5)
        );
        assert_eq!(at(&[PathStep::Index(1), key("requries")]), Some(6));
        assert_eq!(at(&[PathStep::Index(2), key("id")]), None);
        let json = "{\n  \"nodes\": [\n    {\"id\": 1,\n     \"pending_roels\": []}\n  ]\n}\n";
        let doc = Marked::parse(json).expect("parses");
        assert_eq!(
            doc.line_of(&[key("nodes"), PathStep::Index(0), key("pending_roels")]),
            Some(4)
        );
    }

    #[test]
    fn aliases_and_merges_point_at_their_anchor() {
        let text = "\
base: &b
  timout: 1
one: *b
two:
  <<: *b
  cmd: x
";
        let doc = Marked::parse(text).expect("parses");
        assert_eq!(doc.line_of(&[key("one"), key("timout")]), Some(2));
        assert_eq!(doc.line_of(&[key("two"), key("timout")]), Some(2));
        assert_eq!(doc.line_of(&[key("two"), key("cmd")]), Some(6));
        assert!(Marked::parse("a: [").is_none());
    }

    #[test]
    fn aliases_of_aliases_do_not_unfold_without_bound() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        assert!(Marked::parse(&text).is_none());
        assert!(Marked::parse("a: &a [x]\nb: [*a, *a]\n").is_some());
    }
}
