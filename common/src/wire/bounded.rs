//! Cutting a result's structured `details` down to size without losing what it counted.
//!
//! A task type may report large structures (a `sync` that removed 60,000 paths lists them all). The
//! result must still fit one request, so lists keep their first [`KEEP_ITEMS`] items, strings their
//! first [`KEEP_STRING_BYTES`] bytes, and `truncated` records, for each place cut, its JSON pointer and
//! original length. When that is still too large, only the top level's scalars and the lengths of its
//! lists and maps remain.

use super::results::{json_len, MAX_DETAILS_BYTES};
use serde_json::{Map, Value};

/// Items a cut list keeps.
pub const KEEP_ITEMS: usize = 20;
/// Bytes a cut string keeps.
pub const KEEP_STRING_BYTES: usize = 512;

/// `details` cut to fit [`MAX_DETAILS_BYTES`]; see the module documentation.
pub fn bound_details(details: Value) -> Value {
    let original = json_len(&details);
    let mut cuts = Map::new();
    let mut value = details;
    cut(&mut value, String::new(), &mut cuts);
    let mut out = match value {
        Value::Object(map) => map,
        other => {
            let mut map = Map::new();
            map.insert("value".into(), other);
            map
        }
    };
    out.insert("truncated".into(), Value::Object(cuts));
    let out = Value::Object(out);
    if json_len(&out) <= MAX_DETAILS_BYTES {
        return out;
    }
    summary(&out, original)
}

fn cut(value: &mut Value, pointer: String, cuts: &mut Map<String, Value>) {
    match value {
        Value::Array(items) => {
            if items.len() > KEEP_ITEMS {
                cuts.insert(pointer.clone(), Value::from(items.len()));
                items.truncate(KEEP_ITEMS);
            }
            for (i, item) in items.iter_mut().enumerate() {
                cut(item, format!("{pointer}/{i}"), cuts);
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                let escaped = key.replace('~', "~0").replace('/', "~1");
                cut(item, format!("{pointer}/{escaped}"), cuts);
            }
        }
        Value::String(s) if s.len() > KEEP_STRING_BYTES => {
            cuts.insert(pointer, Value::from(s.len()));
            let mut end = KEEP_STRING_BYTES;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s.truncate(end);
            s.push('…');
        }
        _ => {}
    }
}

/// The top level's scalars and the sizes of its lists and maps: what is left when even the cut
/// details are too large (very many keys, or deep nesting).
fn summary(details: &Value, original: usize) -> Value {
    let mut out = Map::new();
    let mut sizes = Map::new();
    if let Value::Object(map) = details {
        for (key, item) in map {
            if out.len() + sizes.len() >= 64 {
                break;
            }
            match item {
                Value::Array(a) => {
                    sizes.insert(key.clone(), Value::from(a.len()));
                }
                Value::Object(o) if key != "truncated" => {
                    sizes.insert(key.clone(), Value::from(o.len()));
                }
                Value::Object(_) => {}
                Value::String(s) if s.len() > KEEP_STRING_BYTES => {
                    sizes.insert(key.clone(), Value::from(s.len()));
                }
                scalar => {
                    out.insert(key.clone(), scalar.clone());
                }
            }
        }
    }
    out.insert(
        "truncated".into(),
        serde_json::json!({"original_bytes": original, "sizes": sizes}),
    );
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{ResultStatus, TaskResult, MAX_RESULT_BYTES};
    use serde_json::json;

    fn result(details: Value) -> TaskResult {
        TaskResult {
            deployment_id: 1,
            revision: 1,
            task_id: "sync".into(),
            attempt: 1,
            status: ResultStatus::Succeeded,
            last: true,
            exit_code: None,
            started_at_ms: 0,
            duration_ms: 0,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
            message: String::new(),
            details,
        }
    }

    #[test]
    fn a_sync_that_removed_sixty_thousand_paths_fits_and_keeps_its_counts() {
        let removed: Vec<String> = (0..60_000)
            .map(|i| format!("/srv/data/some/long/path/file-{i:06}.bin"))
            .collect();
        let r = result(json!({"removed": removed, "written": 3, "unchanged": 10})).bounded();
        assert!(json_len(&r) <= MAX_RESULT_BYTES);
        assert_eq!(r.details["written"], 3);
        assert_eq!(
            r.details["removed"].as_array().map(Vec::len),
            Some(KEEP_ITEMS)
        );
        assert_eq!(r.details["truncated"]["/removed"], 60_000);
    }

    #[test]
    fn very_wide_details_fall_back_to_a_summary() {
        let mut wide = Map::new();
        for i in 0..5_000 {
            wide.insert(format!("key-{i:05}"), Value::from(vec![i; 30]));
        }
        let r = result(Value::Object(wide)).bounded();
        assert!(json_len(&r) <= MAX_RESULT_BYTES);
        assert!(r.details["truncated"]["original_bytes"].as_u64().unwrap() > 100_000);
    }

    #[test]
    fn escaped_output_and_long_messages_are_cut_to_fit() {
        let mut r = result(Value::Null);
        r.stdout_tail = "\u{1}".repeat(16 * 1024);
        r.stderr_tail = "\u{2}".repeat(16 * 1024);
        r.message = "é".repeat(10_000);
        let r = r.bounded();
        assert!(json_len(&r) <= MAX_RESULT_BYTES, "{}", json_len(&r));
        assert!(r.message.len() <= crate::wire::MAX_MESSAGE_BYTES);
        assert!(!r.stdout_tail.is_empty());
    }

    #[test]
    fn a_result_that_fits_is_unchanged() {
        let r = result(json!({"a": [1, 2, 3]}));
        assert_eq!(r.clone().bounded(), r);
    }
}
