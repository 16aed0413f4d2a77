//! Reading YAML or JSON text into documents, with error messages that say where the text is wrong.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

/// Whether the text looks like JSON (its first non-blank character opens an object or an array).
fn looks_like_json(text: &str) -> bool {
    matches!(text.trim_start().chars().next(), Some('{') | Some('['))
}

/// Every document in the text. JSON text is one document; YAML text may hold several (`---`).
/// Empty YAML documents are left out.
pub(crate) fn documents(text: &str) -> Result<Vec<Value>, String> {
    let mut json_error = None;
    if looks_like_json(text) {
        match serde_json::from_str::<Value>(text) {
            Ok(value) => return Ok(vec![value]),
            // YAML flow style also starts this way; try it before giving up.
            Err(error) => json_error = Some(format!("invalid JSON: {error}")),
        }
    }
    let mut docs = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        match Value::deserialize(document) {
            Ok(Value::Null) => {}
            Ok(value) => docs.push(value),
            Err(error) => {
                return Err(json_error.unwrap_or_else(|| format!("invalid YAML: {error}")))
            }
        }
    }
    Ok(docs)
}

/// The text (YAML or JSON) read as one value of type `T`.
pub(crate) fn from_yaml_or_json<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    if looks_like_json(text) {
        if let Ok(value) = serde_json::from_str::<T>(text) {
            return Ok(value);
        }
    }
    serde_yaml_ng::from_str::<T>(text).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_yaml_and_streams() {
        assert_eq!(
            documents("{\"a\":\t1}").unwrap(),
            vec![serde_json::json!({"a": 1})]
        );
        assert_eq!(
            documents("a: 1\n").unwrap(),
            vec![serde_json::json!({"a": 1})]
        );
        assert_eq!(documents("---\na: 1\n---\nb: 2\n").unwrap().len(), 2);
        assert!(documents("").unwrap().is_empty());
        let error = documents("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(error.contains("line"), "{error}");
    }

    #[test]
    fn typed_reading_reports_the_line() {
        let error = from_yaml_or_json::<Vec<u32>>("- 1\n- x\n").unwrap_err();
        assert!(error.contains("line 2"), "{error}");
    }
}
