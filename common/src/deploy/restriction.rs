//! Nailgun's restriction and limit conditions (`settings:storage.volumes_lvm.value == false`,
//! `not ('advanced' in version:feature_groups)`) read into YAQL: each `model:path` reference is replaced
//! by the value it names (null when the path is missing, as Nailgun's non-strict evaluation does), and
//! `==` becomes YAQL's `=`. The rest of the grammar (`and`, `or`, `not`, `in`, `!=`, parentheses,
//! literals) is YAQL's already.

use serde_json::Value;

/// Rewrites a Nailgun condition as a YAQL expression over `models` (`settings`, `cluster`, `release`,
/// `version`, ...), or says which reference cannot be written.
pub fn restriction_to_yaql(condition: &str, models: &Value) -> Result<String, String> {
    let mut out = String::with_capacity(condition.len());
    let chars: Vec<char> = condition.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' || c == '"' {
            let start = i;
            i += 1;
            while i < chars.len() && chars[i] != c {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i = (i + 1).min(chars.len());
            out.extend(&chars[start..i]);
            continue;
        }
        if c == '=' && chars.get(i + 1) == Some(&'=') {
            out.push('=');
            i += 2;
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            if chars.get(i) == Some(&':') {
                i += 1;
                let path_start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '_' | '.' | '-'))
                {
                    i += 1;
                }
                let path: String = chars[path_start..i].iter().collect();
                let mut value = models.get(&word).unwrap_or(&Value::Null);
                for part in path.split('.').filter(|p| !p.is_empty()) {
                    value = value.get(part).unwrap_or(&Value::Null);
                }
                out.push_str(&literal(value)?);
                continue;
            }
            out.push_str(&word);
            continue;
        }
        out.push(c);
        i += 1;
    }
    Ok(out)
}

/// A JSON value as a YAQL literal.
fn literal(value: &Value) -> Result<String, String> {
    Ok(match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        Value::Array(items) => {
            let parts: Result<Vec<String>, String> = items.iter().map(literal).collect();
            format!("[{}]", parts?.join(", "))
        }
        Value::Object(map) => {
            let parts: Result<Vec<String>, String> = map
                .iter()
                .map(|(k, v)| {
                    Ok(format!(
                        "{} => {}",
                        literal(&Value::String(k.clone()))?,
                        literal(v)?
                    ))
                })
                .collect();
            format!("{{{}}}", parts?.join(", "))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_become_values() {
        let models = json!({"settings": {"storage": {"volumes_lvm": {"value": false}}},
                            "version": {"feature_groups": ["experimental"]}});
        assert_eq!(
            restriction_to_yaql("settings:storage.volumes_lvm.value == false", &models).unwrap(),
            "false = false"
        );
        assert_eq!(
            restriction_to_yaql("not ('advanced' in version:feature_groups)", &models).unwrap(),
            "not ('advanced' in ['experimental'])"
        );
        assert_eq!(
            restriction_to_yaql("settings:missing.value == 'a:b'", &models).unwrap(),
            "null = 'a:b'"
        );
    }
}
