//! Computed fields: a value that is the mapping `{yaql_exp: EXPR}` is an expression to evaluate.

use serde_json::Value;

/// The key that marks a computed value.
pub const YAQL_KEY: &str = "yaql_exp";

/// The expression when `value` is a computed value: a mapping whose single key is `yaql_exp` with a string.
pub fn yaql_expression(value: &Value) -> Option<&str> {
    match value {
        Value::Object(map) if map.len() == 1 => map.get(YAQL_KEY).and_then(Value::as_str),
        _ => None,
    }
}

/// True when `value` is, or holds at any depth, a computed value.
pub fn contains_expression(value: &Value) -> bool {
    if yaql_expression(value).is_some() {
        return true;
    }
    match value {
        Value::Object(map) => map.values().any(contains_expression),
        Value::Array(items) => items.iter().any(contains_expression),
        _ => false,
    }
}
