//! Reading YAML or JSON text into documents, with error messages that say where the text is wrong.

use serde::de::DeserializeOwned;

/// Whether the text looks like JSON (its first non-blank character opens an object or an array).
pub(crate) fn looks_like_json(text: &str) -> bool {
    matches!(text.trim_start().chars().next(), Some('{') | Some('['))
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
    fn typed_reading_reports_the_line() {
        let error = from_yaml_or_json::<Vec<u32>>("- 1\n- x\n").unwrap_err();
        assert!(error.contains("line 2"), "{error}");
    }
}
