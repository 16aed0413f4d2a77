//! Checking a cluster's settings (Nailgun's editable attributes) against its release's
//! `attributes_metadata.editable`, as Nailgun's attributes validator does: each attribute the release
//! describes keeps the type its `type` names (`checkbox` a boolean, `text`/`password`/`textarea`/
//! `file` text, `hidden` anything, `text_list`/`textarea_list` a list of texts, `number` a number, `select`/`radio`
//! one of its `values`), non-empty text matches its `regex.source` with the message in `regex.error`, and a
//! `text_list` has between `min` and `max` entries. Sections and attributes the release does not
//! describe (a plugin's, or data an operator supplies for Fuel's graph) are kept unchecked.

use serde_json::Value;

/// One broken rule: which attribute (`storage.osd_pool_size`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingProblem {
    /// `section.attribute`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for SettingProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Every problem of `settings` against `metadata` (the release's `attributes_metadata.editable`).
pub fn check_settings(metadata: &Value, settings: &Value) -> Vec<SettingProblem> {
    let mut out = Vec::new();
    let Value::Object(sections) = settings else {
        out.push(SettingProblem {
            path: "editable".into(),
            message: "settings are a mapping of sections".into(),
        });
        return out;
    };
    for (section_name, section) in sections {
        let Some(meta_section) = metadata.get(section_name) else {
            continue;
        };
        let Value::Object(attrs) = section else {
            out.push(SettingProblem {
                path: section_name.clone(),
                message: "a section is a mapping of attributes".into(),
            });
            continue;
        };
        for (attr_name, attr) in attrs {
            if attr_name == "metadata" {
                continue;
            }
            let Some(meta) = meta_section.get(attr_name) else {
                continue;
            };
            let path = format!("{section_name}.{attr_name}");
            let Some(value) = attr.get("value") else {
                if meta.get("value").is_some() {
                    out.push(SettingProblem {
                        path,
                        message: "an attribute is written {value: ...}".into(),
                    });
                }
                continue;
            };
            if let Some(message) = check_value(meta, value) {
                out.push(SettingProblem { path, message });
            }
        }
    }
    out
}

fn check_value(meta: &Value, value: &Value) -> Option<String> {
    let kind = meta.get("type").and_then(Value::as_str).unwrap_or("");
    let type_error = |want: &str| Some(format!("{kind} wants {want}, not {value}"));
    match kind {
        "checkbox" | "toggleable" if !value.is_boolean() => return type_error("true or false"),
        "text" | "password" | "textarea" | "file" if !value.is_string() => {
            return type_error("text")
        }
        "number" if !value.is_number() => return type_error("a number"),
        "text_list" | "textarea_list" => {
            let Some(items) = value.as_array() else {
                return type_error("a list of texts");
            };
            if items.iter().any(|i| !i.is_string()) {
                return type_error("a list of texts");
            }
            let count = items.len() as u64;
            if let Some(min) = meta.get("min").and_then(Value::as_u64) {
                if count < min {
                    return Some(format!("at least {min} entries, {count} given"));
                }
            }
            if let Some(max) = meta.get("max").and_then(Value::as_u64) {
                if count > max {
                    return Some(format!("at most {max} entries, {count} given"));
                }
            }
            for item in items {
                if let Some(m) = regex_problem(meta, item) {
                    return Some(m);
                }
            }
            return None;
        }
        "select" | "radio" => {
            let allowed: Vec<&Value> = meta
                .get("values")
                .and_then(Value::as_array)
                .map(|vs| vs.iter().filter_map(|v| v.get("data")).collect())
                .unwrap_or_default();
            if !allowed.is_empty() && !allowed.contains(&value) {
                let names: Vec<String> = allowed.iter().map(|v| v.to_string()).collect();
                return Some(format!("{value} is not one of {}", names.join(", ")));
            }
            return None;
        }
        _ => {}
    }
    regex_problem(meta, value)
}

/// Text that does not match the attribute's `regex.source`. Empty text is not checked (Fuel's release
/// leaves the settings of features that are off empty, as `external_mongo.hosts_ip`). A pattern Rust's regex engine cannot
/// compile (Python's look-arounds) is not checked.
fn regex_problem(meta: &Value, value: &Value) -> Option<String> {
    let text = value.as_str().filter(|t| !t.is_empty())?;
    let source = meta.pointer("/regex/source").and_then(Value::as_str)?;
    let re = regex::Regex::new(source).ok()?;
    if re.is_match(text) {
        return None;
    }
    let error = meta
        .pointer("/regex/error")
        .and_then(Value::as_str)
        .unwrap_or("does not match");
    Some(format!("{error} ({text:?} does not match {source:?})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_keep_their_types_and_patterns() {
        let meta = json!({
            "storage": {
                "osd_pool_size": {"type": "text", "value": "3", "regex": {"source": "^[1-9]\\d*$", "error": "Invalid number"}},
                "volumes_lvm": {"type": "checkbox", "value": true}
            },
            "dns": {"list": {"type": "text_list", "min": 1, "max": 2, "value": ["1.1.1.1"]}},
            "mode": {"kind": {"type": "radio", "value": "a", "values": [{"data": "a"}, {"data": "b"}]}}
        });
        let ok = json!({"storage": {"osd_pool_size": {"value": "2"}, "volumes_lvm": {"value": false}},
                        "dns": {"list": {"value": ["8.8.8.8"]}}, "mode": {"kind": {"value": "b"}},
                        "network_scheme": {"roles": {}}});
        assert!(check_settings(&meta, &ok).is_empty());
        let bad = json!({"storage": {"osd_pool_size": {"value": "zero"}, "volumes_lvm": {"value": "yes"}},
                         "dns": {"list": {"value": []}}, "mode": {"kind": {"value": "c"}}});
        let problems: Vec<String> = check_settings(&meta, &bad)
            .iter()
            .map(|p| p.to_string())
            .collect();
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems
            .iter()
            .any(|p| p.starts_with("storage.osd_pool_size: Invalid number")));
        assert!(problems
            .iter()
            .any(|p| p.starts_with("storage.volumes_lvm: checkbox wants true or false")));
        assert!(problems
            .iter()
            .any(|p| p == "dns.list: at least 1 entries, 0 given"));
        assert!(problems
            .iter()
            .any(|p| p.starts_with("mode.kind: \"c\" is not one of")));
    }
}
