//! Reading task parameters: each reader names the task and the parameter in its error.

use super::ParamError;
use plinth_common::wire::TaskSpec;
use serde_json::Value;

/// A parameter error for `task`'s `field`.
pub fn error(task: &TaskSpec, field: &str, message: impl Into<String>) -> ParamError {
    ParamError {
        task: task.id.clone(),
        field: field.to_string(),
        message: message.into(),
    }
}

/// A required non-empty string without NUL bytes.
pub fn required_string(task: &TaskSpec, field: &str) -> Result<String, ParamError> {
    match optional_string(task, field)? {
        Some(s) => Ok(s),
        None => Err(error(
            task,
            field,
            format!("is required for {} tasks", super::kind_name(task.kind)),
        )),
    }
}

/// An optional non-empty string without NUL bytes (absent or null is `None`).
pub fn optional_string(task: &TaskSpec, field: &str) -> Result<Option<String>, ParamError> {
    match task.parameters.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Err(error(task, field, "is empty")),
        Some(Value::String(s)) if s.contains('\0') => {
            Err(error(task, field, "contains a NUL byte"))
        }
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(error(
            task,
            field,
            format!("must be a string, got {}", kind_of(other)),
        )),
    }
}

/// An optional boolean (`true`/`false`, or the strings `"true"`/`"false"`).
pub fn optional_bool(task: &TaskSpec, field: &str) -> Result<Option<bool>, ParamError> {
    match task.parameters.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s == "true" => Ok(Some(true)),
        Some(Value::String(s)) if s == "false" => Ok(Some(false)),
        Some(other) => Err(error(
            task,
            field,
            format!("must be true or false, got {other}"),
        )),
    }
}

/// Unix permission bits written in octal: a string (`"0644"`, `"644"`, `"0o644"`) or a number whose
/// decimal digits are the octal digits (`644`), as Fuel's tasks write them. Every digit must be 0 to 7.
pub fn optional_mode(task: &TaskSpec, field: &str) -> Result<Option<u32>, ParamError> {
    let text = match task.parameters.get(field) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Number(n)) => n.to_string(),
        Some(other) => {
            return Err(error(
                task,
                field,
                format!("must be octal permissions such as \"0644\", got {other}"),
            ))
        }
    };
    parse_mode(&text).map(Some).ok_or_else(|| {
        error(
            task,
            field,
            format!("{text:?} is not octal permissions such as \"0644\""),
        )
    })
}

/// Parses octal permission digits (at most `7777`).
pub fn parse_mode(text: &str) -> Option<u32> {
    let digits = text.strip_prefix("0o").unwrap_or(text);
    if digits.is_empty() || digits.len() > 5 || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        return None;
    }
    u32::from_str_radix(digits, 8).ok().filter(|m| *m <= 0o7777)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_octal_digits() {
        assert_eq!(parse_mode("0644"), Some(0o644));
        assert_eq!(parse_mode("755"), Some(0o755));
        assert_eq!(parse_mode("0o600"), Some(0o600));
        assert_eq!(parse_mode("4755"), Some(0o4755));
        for bad in ["", "rw-r--r--", "0988", "77777", "-1", "0x1"] {
            assert_eq!(parse_mode(bad), None, "{bad}");
        }
    }
}
