//! Loading a strategy from one or several texts (files): YAML as Shipyard reads it, or JSON; a single
//! document in either form, or a site design stream whose concrete, layered `DeploymentStrategy` is picked.
//! What was accepted but deserves a word comes back as warnings; where the document came from, as
//! provenance.

use serde::Serialize;
use serde_json::Value;

use super::finding::{Finding, StrategyError};
use super::layering::{self, Origin, SourcedDoc};
use super::model::{Strategy, SHIPYARD_SCHEMA};
use super::parse::read_document;
use super::text::looks_like_json;
use super::yaml11;

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
) -> Result<Vec<SourcedDoc>, StrategyError> {
    let mut docs = Vec::new();
    for source in sources {
        let named = |message: String| {
            if source.name.is_empty() {
                message
            } else {
                format!("{}: {message}", source.name)
            }
        };
        if looks_like_json(source.text) {
            if let Ok(value) = serde_json::from_str::<Value>(source.text) {
                docs.push(SourcedDoc {
                    value,
                    origin: Origin {
                        file: source.name.to_string(),
                        index: 1,
                        line: 1,
                    },
                });
                continue;
            }
        }
        let loaded = yaml11::load(source.text).map_err(|e| StrategyError::Syntax(named(e)))?;
        let mut index = 0;
        for doc in loaded {
            for warning in doc.warnings {
                warnings.push(Finding::new(None, "", named(warning)));
            }
            if doc.value.is_null() {
                continue;
            }
            index += 1;
            docs.push(SourcedDoc {
                value: doc.value,
                origin: Origin {
                    file: source.name.to_string(),
                    index,
                    line: doc.line,
                },
            });
        }
    }
    Ok(docs)
}

/// The concrete documents of the given schema after layering. A document asking for substitutions (which
/// Plinth does not render) is refused when it is one of them, and named in a warning otherwise.
pub(crate) fn concrete(
    docs: &[SourcedDoc],
    schema: &str,
    warnings: &mut Vec<Finding>,
) -> Result<Vec<layering::Rendered>, StrategyError> {
    let rendered = layering::render(docs).map_err(StrategyError::Syntax)?;
    let mut wanted = Vec::new();
    for doc in rendered {
        let is_wanted = doc.value.get("schema").and_then(Value::as_str) == Some(schema);
        match (&doc.unrendered, is_wanted) {
            (Some(why), true) => return Err(StrategyError::Syntax(why.clone())),
            (Some(why), false) => warnings.push(Finding::new(
                None,
                "",
                format!("{why} (not needed here: it is not a {schema} document)"),
            )),
            (None, true) => wanted.push(doc),
            (None, false) => {}
        }
    }
    Ok(wanted)
}

/// Loads a strategy from one or several texts (each YAML or JSON, each one document or a stream).
///
/// A lone document is read as it is (Shipyard's form or the plain form). Otherwise the documents are
/// layered as Deckhand does ([`layering`](super::layering)) and exactly one concrete document must have
/// `schema: shipyard/DeploymentStrategy/v1`.
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
            // Substitutions and abstract documents are refused even alone.
            let rendered = layering::render(docs.as_slice()).map_err(StrategyError::Syntax)?;
            if let Some(why) = rendered.first().and_then(|r| r.unrendered.clone()) {
                return Err(StrategyError::Syntax(why));
            }
            if rendered.is_empty()
                && only.value.get("schema").and_then(Value::as_str) == Some(SHIPYARD_SCHEMA)
            {
                return Err(StrategyError::Syntax(format!(
                    "{} is abstract (metadata.layeringDefinition.abstract: true): it is only a parent for \
                     other documents and is never deployed itself",
                    only.origin
                )));
            }
            (only.value.clone(), only.origin.to_string())
        }
        _ => {
            let count = docs.len();
            let strategies = concrete(&docs, SHIPYARD_SCHEMA, &mut warnings)?;
            match strategies.as_slice() {
                [only] => (only.value.clone(), only.provenance.clone()),
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
                                doc.value
                                    .pointer("/metadata/name")
                                    .and_then(Value::as_str)
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
