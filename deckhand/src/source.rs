//! Reading texts into documents: each text is a YAML 1.1 stream (or one JSON document); every non-empty
//! document is kept, with its file, its position in the file and its line.

use serde_json::Value;

use crate::document::{Document, Origin};
use crate::error::RenderError;
use crate::yaml;

/// Every document of every text, in order (a text is `(name, content)`).
pub fn read_sources(sources: &[(&str, &str)]) -> Result<Vec<Document>, RenderError> {
    read_sources_noting(sources).map(|(docs, _)| docs)
}

/// As [`read_sources`], with what the YAML reader noticed (keys repeated in a mapping), each message
/// prefixed with the text's name.
pub fn read_sources_noting(
    sources: &[(&str, &str)],
) -> Result<(Vec<Document>, Vec<String>), RenderError> {
    let mut docs = Vec::new();
    let mut notes = Vec::new();
    for &(name, text) in sources {
        let named = |message: String| {
            if name.is_empty() {
                message
            } else {
                format!("{name}: {message}")
            }
        };
        if looks_like_json(text) {
            if let Ok(value) = serde_json::from_str::<Value>(text) {
                docs.push(Document::new(
                    value,
                    Origin {
                        file: name.to_string(),
                        index: 1,
                        line: 1,
                    },
                ));
                continue;
            }
        }
        let loaded = yaml::load(text).map_err(|message| RenderError::Syntax {
            source_name: name.to_string(),
            message,
        })?;
        let mut index = 0;
        for doc in loaded {
            notes.extend(doc.warnings.into_iter().map(named));
            if doc.value.is_null() {
                continue;
            }
            index += 1;
            docs.push(Document::new(
                doc.value,
                Origin {
                    file: name.to_string(),
                    index,
                    line: doc.line,
                },
            ));
        }
    }
    Ok((docs, notes))
}

/// A text whose first non-blank character opens a JSON object or list.
fn looks_like_json(text: &str) -> bool {
    matches!(text.trim_start().chars().next(), Some('{' | '['))
}
