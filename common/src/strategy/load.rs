//! Loading a strategy from one or several texts (files): YAML as Shipyard reads it, or JSON; a single
//! document in either form, or a site design stream whose concrete, layered `DeploymentStrategy` is picked.
//! What was accepted but deserves a word comes back as warnings; where the document came from, as
//! provenance.

use serde::Serialize;
use serde_json::Value;

use super::finding::{Finding, StrategyError};
use super::model::{Strategy, SHIPYARD_SCHEMA};
use super::parse::read_document;
use plinth_deckhand::{Document, Options, Rendered};

/// One text to read: its name (a file name, or empty) and its content.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The name messages use for it (empty for an unnamed text).
    pub name: &'a str,
    /// The YAML or JSON text.
    pub text: &'a str,
}

impl<'a> Source<'a> {
    /// A named text.
    pub fn new(name: &'a str, text: &'a str) -> Source<'a> {
        Source { name, text }
    }
}

/// A strategy as loaded: the strategy, the document it was read from, warnings and provenance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadedStrategy {
    /// The validated strategy.
    pub strategy: Strategy,
    /// The document as uploaded (Shipyard's envelope and metadata, unknown fields kept); for a layered
    /// stream, the concrete document with its layered `data`.
    pub document: Value,
    /// Accepted but worth a word: unknown fields (kept, not used), keys repeated in a mapping.
    pub warnings: Vec<Finding>,
    /// Where the strategy's document and its data came from, in words.
    pub provenance: String,
}

/// Every document of every source, in order, with where it is; repeated keys become warnings.
pub(crate) fn read_sources(
    sources: &[Source<'_>],
    warnings: &mut Vec<Finding>,
) -> Result<Vec<Document>, StrategyError> {
    let texts: Vec<(&str, &str)> = sources.iter().map(|s| (s.name, s.text)).collect();
    let (docs, notes) = plinth_deckhand::read_sources_noting(&texts)
        .map_err(|e| StrategyError::Syntax(e.to_string()))?;
    warnings.extend(notes.into_iter().map(|note| Finding::new(None, "", note)));
    Ok(docs)
}

/// The concrete documents of the given schema in the site as Deckhand renders it (every document layered
/// and substituted; secrets redacted). Deckhand's warnings become warnings.
pub(crate) fn concrete(
    docs: &[Document],
    schema: &str,
    warnings: &mut Vec<Finding>,
) -> Result<Vec<Rendered>, StrategyError> {
    let rendering = plinth_deckhand::render(docs, &Options::default())
        .map_err(|e| StrategyError::Syntax(e.to_string()))?;
    warnings.extend(
        rendering
            .warnings
            .iter()
            .map(|w| Finding::new(None, "", format!("{}: {}", w.document, w.message))),
    );
    Ok(rendering
        .documents
        .into_iter()
        .filter(|doc| doc.value["schema"] == schema)
        .collect())
}

/// Loads a strategy from one or several texts (each YAML or JSON, each one document or a stream).
///
/// A lone document is read as it is (Shipyard's form or the plain form). Otherwise the documents are a
/// site rendered as Deckhand renders it ([`plinth_deckhand::render`]: layering, replacement, substitution)
/// and exactly one concrete document must have `schema: shipyard/DeploymentStrategy/v1`.
pub fn load_strategy(sources: &[Source<'_>]) -> Result<LoadedStrategy, StrategyError> {
    let mut warnings = Vec::new();
    let docs = read_sources(sources, &mut warnings)?;
    let (document, provenance) = match docs.as_slice() {
        [] => {
            return Err(StrategyError::Syntax(
                "the text holds no document".to_string(),
            ))
        }
        [only] => {
            if only.is_abstract() && only.schema() == SHIPYARD_SCHEMA {
                return Err(StrategyError::Syntax(format!(
                    "{} is abstract (metadata.layeringDefinition.abstract: true): it is only a parent for \
                     other documents and is never deployed itself",
                    only.origin
                )));
            }
            if only
                .substitutions()
                .as_array()
                .is_some_and(|s| !s.is_empty())
            {
                return Err(StrategyError::Syntax(format!(
                    "{} asks for substitutions (values from other documents): give the whole site (its \
                     layering policy and the source documents) so that it is rendered as Deckhand renders it",
                    only.origin
                )));
            }
            (only.value.to_value(), only.origin.to_string())
        }
        _ => {
            let count = docs.len();
            let strategies = concrete(&docs, SHIPYARD_SCHEMA, &mut warnings)?;
            match strategies.as_slice() {
                [only] => (only.value.to_value(), only.provenance.to_string()),
                [] => {
                    return Err(StrategyError::Syntax(format!(
                        "the text holds {count} documents and no concrete one has schema {SHIPYARD_SCHEMA}"
                    )))
                }
                several => {
                    let names: Vec<String> = several
                        .iter()
                        .map(|doc| {
                            format!(
                                "{} at {}",
                                doc.value["metadata"]["name"]
                                    .as_str()
                                    .unwrap_or("(unnamed)"),
                                doc.origin
                            )
                        })
                        .collect();
                    return Err(StrategyError::Syntax(format!(
                        "the text holds {} concrete documents with schema {SHIPYARD_SCHEMA} ({}); give one",
                        several.len(),
                        names.join(", ")
                    )));
                }
            }
        }
    };
    let (strategy, mut unknown) = read_document(&document)?;
    warnings.append(&mut unknown);
    Ok(LoadedStrategy {
        strategy,
        document,
        warnings,
        provenance,
    })
}
