//! What stops a rendering: each error names the document(s), and where it matters the layer and the path.
//! The variants follow Deckhand's exceptions (`LayeringPolicyNotFound`, `InvalidDocumentLayer`, ...).

use thiserror::Error;

use crate::document::{DocRef, Origin};

/// A message prefixed with the text's name, when it has one.
fn named(name: &str, message: &str) -> String {
    if name.is_empty() {
        message.to_string()
    } else {
        format!("{name}: {message}")
    }
}

/// Why a set of documents cannot be rendered.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RenderError {
    /// A text is neither YAML nor JSON.
    #[error("{}", named(source_name, message))]
    Syntax {
        /// The text's name (empty for an unnamed text).
        source_name: String,
        /// What is wrong, with the line.
        message: String,
    },
    /// A document is not a mapping.
    #[error("{origin}: a document must be a mapping (schema, metadata, data)")]
    NotAMapping {
        /// Where it is.
        origin: Origin,
    },
    /// Two documents with the same schema, layer and name (Deckhand refuses the second when it is stored).
    #[error(
        "{document}: the same schema, layer and name as {first}; a site holds one document of each"
    )]
    DuplicateDocument {
        /// The second document.
        document: Box<DocRef>,
        /// The first one.
        first: Box<DocRef>,
    },
    /// No `deckhand/LayeringPolicy/v1` document among the documents.
    #[error("no layering policy (schema deckhand/LayeringPolicy/v1) among the documents, so they cannot be rendered")]
    LayeringPolicyNotFound,
    /// A field is not of the form Deckhand reads.
    #[error("{document}: {field}: {reason}")]
    InvalidField {
        /// The document.
        document: Box<DocRef>,
        /// The field, e.g. `metadata.substitutions[0].src.path`.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// A document's layer is not in the layering policy's `layerOrder`.
    #[error("{document}: layer {layer:?} is not in the layerOrder ({layer_order}) of the layering policy {policy}")]
    InvalidDocumentLayer {
        /// The document.
        document: Box<DocRef>,
        /// Its layer.
        layer: String,
        /// The policy's layers, joined.
        layer_order: String,
        /// The policy's name.
        policy: String,
    },
    /// A child's `parentSelector` selects a document it cannot be layered onto.
    #[error(
        "{document}: its parentSelector selects {parent}, which cannot be its parent: {reason}"
    )]
    InvalidDocumentParent {
        /// The child.
        document: Box<DocRef>,
        /// The selected document.
        parent: Box<DocRef>,
        /// Why not.
        reason: String,
    },
    /// A child's `parentSelector` selects several parents.
    #[error("{document}: {found} parent documents were found for it (its parentSelector matches them in its nearest layer); a document must have exactly one parent")]
    IndeterminateDocumentParent {
        /// The child.
        document: Box<DocRef>,
        /// How many parents were counted.
        found: usize,
    },
    /// A `replacement` rule is broken.
    #[error("{document}: {reason}")]
    InvalidDocumentReplacement {
        /// The document.
        document: Box<DocRef>,
        /// Which rule.
        reason: String,
    },
    /// The documents depend on each other in a cycle (parents and substitution sources).
    #[error("the documents depend on each other in a cycle (parents and substitution sources): {}", cycle.iter().map(ToString::to_string).collect::<Vec<_>>().join(" -> "))]
    SubstitutionDependencyCycle {
        /// The documents of the cycle, each depending on the next.
        cycle: Vec<DocRef>,
    },
    /// A layering action's method is not `merge`, `replace` or `delete`.
    #[error("{document}: layering action {index} has method {method:?}; the methods are merge, replace and delete")]
    UnsupportedActionMethod {
        /// The child.
        document: Box<DocRef>,
        /// The action's position (0-based).
        index: usize,
        /// The method as written.
        method: String,
    },
    /// A layering action's path is missing from the data it reads.
    #[error("{document}: layering action {method} {path}: {reason} (parent {parent})")]
    MissingDocumentKey {
        /// The child.
        document: Box<DocRef>,
        /// The parent.
        parent: Box<DocRef>,
        /// The action's method.
        method: String,
        /// The action's path as written.
        path: String,
        /// Which data lacks the path.
        reason: String,
    },
    /// A substitution names a source document that is not among the concrete documents.
    #[error("{document}: substitution {index} names the source [{src_schema}] {src_name}, which is not among the concrete documents")]
    SubstitutionSourceNotFound {
        /// The destination.
        document: Box<DocRef>,
        /// The substitution's position (0-based).
        index: usize,
        /// The source's schema.
        src_schema: String,
        /// The source's name.
        src_name: String,
    },
    /// A substitution's source path is missing from the source's data (or is null).
    #[error("{document}: substitution {index}: the source {source_doc} has no value at {path}")]
    SubstitutionSourceDataNotFound {
        /// The destination.
        document: Box<DocRef>,
        /// The substitution's position (0-based).
        index: usize,
        /// The source.
        source_doc: Box<DocRef>,
        /// The source path.
        path: String,
    },
    /// A substitution could not be done into the destination.
    #[error("{document}: substitution {index} from {source_doc} into {path}: {details}")]
    UnknownSubstitutionError {
        /// The destination.
        document: Box<DocRef>,
        /// The substitution's position (0-based).
        index: usize,
        /// The source.
        source_doc: Box<DocRef>,
        /// The destination path.
        path: String,
        /// What went wrong.
        details: String,
    },
}
