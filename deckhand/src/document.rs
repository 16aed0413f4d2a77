//! A document as read ([`Document`]: the value and where it is, [`Origin`]) and the accessors for the
//! fields Deckhand reads, each defaulting as Deckhand's `DocumentDict` does (an absent or empty field reads
//! as empty).

use std::fmt;

use crate::tree::{Map, Tree};

/// Where a document is: its file (empty for an unnamed text), its position in that file and its line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Origin {
    /// The file's name as given (empty for text without a name).
    pub file: String,
    /// 1-based position of the document in its file.
    pub index: usize,
    /// The line the document starts on.
    pub line: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.file.is_empty() {
            write!(f, "document {} (line {})", self.index, self.line)
        } else {
            write!(
                f,
                "{} document {} (line {})",
                self.file, self.index, self.line
            )
        }
    }
}

/// A document as read, with where it came from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Document {
    /// The document: `schema`, `metadata`, `data`.
    pub value: Tree,
    /// Where it is.
    pub origin: Origin,
}

/// The schema prefix of the layering policy.
pub const LAYERING_POLICY_SCHEMA: &str = "deckhand/LayeringPolicy";

/// A control document's `metadata.schema`.
fn is_control_schema(metadata_schema: &str) -> bool {
    metadata_schema.starts_with("metadata/Control")
}

/// The empty mapping absent fields read as.
fn empty() -> &'static Map {
    static EMPTY: std::sync::OnceLock<Map> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Map::default)
}

impl Document {
    /// A document from a value (a [`Tree`] or a `serde_json::Value`), with an origin.
    pub fn new(value: impl Into<Tree>, origin: Origin) -> Document {
        Document {
            value: value.into(),
            origin,
        }
    }

    /// The fields rendering reads, each defaulting as below.
    fn header(&self) -> Header<'_> {
        Header::of(self)
    }

    /// `schema` (empty when absent).
    pub fn schema(&self) -> &str {
        self.header().schema
    }

    /// `metadata.name` (empty when absent).
    pub fn name(&self) -> &str {
        self.header().name
    }

    /// `metadata.schema`, e.g. `metadata/Document/v1` (empty when absent).
    pub fn metadata_schema(&self) -> &str {
        self.header().metadata_schema
    }

    /// `metadata.layeringDefinition.layer` (empty when absent).
    pub fn layer(&self) -> &str {
        self.header().layer
    }

    /// `metadata.layeringDefinition.abstract` is `true`.
    pub fn is_abstract(&self) -> bool {
        self.header().is_abstract
    }

    /// `metadata.replacement` is `true`.
    pub fn is_replacement(&self) -> bool {
        self.header().is_replacement
    }

    /// A control document (`metadata.schema` starting with `metadata/Control`): never layered nor
    /// substituted, returned as it is.
    pub fn is_control(&self) -> bool {
        // Read alone (not through the whole header): rendering asks it of every document first.
        self.value
            .get("metadata")
            .and_then(|m| m.get("schema"))
            .and_then(Tree::as_str)
            .is_some_and(is_control_schema)
    }

    /// A layering policy (`schema` starting with `deckhand/LayeringPolicy`).
    pub fn is_layering_policy(&self) -> bool {
        self.header().is_layering_policy()
    }

    /// `metadata.labels` (empty when absent).
    pub fn labels(&self) -> &Map {
        self.header().labels
    }

    /// `metadata.layeringDefinition.parentSelector` (empty when absent).
    pub fn parent_selector(&self) -> &Map {
        self.header().parent_selector
    }

    /// `metadata.layeringDefinition.actions`, as written (absent reads as `null`).
    pub fn actions(&self) -> &Tree {
        self.header().actions
    }

    /// `metadata.substitutions`, as written (absent reads as `null`).
    pub fn substitutions(&self) -> &Tree {
        self.header().substitutions
    }

    /// `metadata.storagePolicy` (empty when absent).
    pub fn storage_policy(&self) -> &str {
        self.header().storage_policy
    }

    /// `metadata.storagePolicy` is `encrypted`.
    pub fn is_encrypted(&self) -> bool {
        self.header().is_encrypted
    }

    /// `data` (absent reads as `null`).
    pub fn data(&self) -> &Tree {
        self.value.get("data").unwrap_or(&Tree::Null)
    }

    /// The document named for messages: schema, name, layer and origin.
    pub fn reference(&self) -> Box<DocRef> {
        Box::new(DocRef {
            schema: self.schema().to_string(),
            name: self.name().to_string(),
            layer: self.layer().to_string(),
            origin: self.origin.clone(),
        })
    }
}

/// The fields rendering reads of a document, read in one walk through its mappings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header<'a> {
    pub schema: &'a str,
    pub name: &'a str,
    pub metadata_schema: &'a str,
    pub storage_policy: &'a str,
    pub layer: &'a str,
    pub is_abstract: bool,
    pub is_control: bool,
    pub is_replacement: bool,
    pub is_encrypted: bool,
    pub labels: &'a Map,
    pub parent_selector: &'a Map,
    /// `metadata.layeringDefinition.actions` as written (`null` when absent).
    pub actions: &'a Tree,
    /// `metadata.substitutions` as written (`null` when absent).
    pub substitutions: &'a Tree,
}

impl<'a> Header<'a> {
    /// The header of a document: an absent or empty field reads as empty (`""`, an empty mapping,
    /// `null`, `false`), as Deckhand's `DocumentDict` reads it.
    pub fn of(doc: &'a Document) -> Header<'a> {
        static NULL: Tree = Tree::Null;
        let map = |v: Option<&'a Tree>| v.and_then(Tree::as_object).unwrap_or_else(|| empty());
        let text = |v: Option<&'a Tree>| v.and_then(Tree::as_str).unwrap_or("");
        let yes = |v: Option<&'a Tree>| v.and_then(Tree::as_bool) == Some(true);
        // Each mapping's keys read in one pass.
        let (mut schema, mut metadata) = (None, None);
        for (k, v) in doc.value.as_object().into_iter().flatten() {
            match k.as_str() {
                "schema" => schema = Some(v),
                "metadata" => metadata = Some(v),
                _ => {}
            }
        }
        let mut fields: [Option<&'a Tree>; 7] = [None; 7];
        for (k, v) in map(metadata) {
            let at = match k.as_str() {
                "name" => 0,
                "schema" => 1,
                "layeringDefinition" => 2,
                "replacement" => 3,
                "storagePolicy" => 4,
                "labels" => 5,
                "substitutions" => 6,
                _ => continue,
            };
            fields[at] = Some(v);
        }
        let [name, meta_schema, layering, replacement, storage, labels, substitutions] = fields;
        let mut layered: [Option<&'a Tree>; 4] = [None; 4];
        for (k, v) in map(layering) {
            let at = match k.as_str() {
                "layer" => 0,
                "abstract" => 1,
                "parentSelector" => 2,
                "actions" => 3,
                _ => continue,
            };
            layered[at] = Some(v);
        }
        let [layer, is_abstract, parent_selector, actions] = layered;
        Header {
            schema: text(schema),
            name: text(name),
            layer: text(layer),
            is_abstract: yes(is_abstract),
            metadata_schema: text(meta_schema),
            storage_policy: text(storage),
            is_control: is_control_schema(text(meta_schema)),
            is_replacement: yes(replacement),
            is_encrypted: text(storage) == "encrypted",
            labels: map(labels),
            parent_selector: map(parent_selector),
            actions: actions.unwrap_or(&NULL),
            substitutions: substitutions.unwrap_or(&NULL),
        }
    }

    /// A layering policy (`schema` starting with `deckhand/LayeringPolicy`).
    pub fn is_layering_policy(&self) -> bool {
        self.schema.starts_with(LAYERING_POLICY_SCHEMA)
    }

    /// A secret document: one of Deckhand's secret schemas, or encrypted.
    pub fn is_secret(&self) -> bool {
        self.is_encrypted || crate::secrets::is_secret_schema(self.schema)
    }
}

/// A document named in an error or a warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocRef {
    /// Its schema.
    pub schema: String,
    /// Its `metadata.name`.
    pub name: String,
    /// Its layer (empty when it has none).
    pub layer: String,
    /// Where it is.
    pub origin: Origin,
}

impl fmt::Display for DocRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let schema = if self.schema.is_empty() {
            "(no schema)"
        } else {
            &self.schema
        };
        let name = if self.name.is_empty() {
            "(unnamed)"
        } else {
            &self.name
        };
        if self.layer.is_empty() {
            write!(f, "[{schema}] {name} ({})", self.origin)
        } else {
            write!(
                f,
                "[{schema}] {name} ({} layer, {})",
                self.layer, self.origin
            )
        }
    }
}
