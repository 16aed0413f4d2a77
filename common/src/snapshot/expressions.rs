//! The expression engine resolution uses: YAQL's standard library, Nailgun's deployment helpers, and the
//! helpers Plinth adds through the engine's registry (the core is not touched). The controller keeps one
//! for its lifetime; `plinthctl` makes one per command.

use crate::expr::{Engine, ExprCache, Form};
use std::sync::Arc;

/// One engine and one parse cache, shared across threads.
#[derive(Clone)]
pub struct Expressions {
    /// The engine with every registered function.
    pub engine: Arc<Engine>,
    /// Parsed expressions by text.
    pub cache: Arc<ExprCache>,
}

impl std::fmt::Debug for Expressions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expressions")
            .field("cached", &self.cache.len())
            .finish()
    }
}

impl Default for Expressions {
    fn default() -> Self {
        Self::standard()
    }
}

impl Expressions {
    /// YAQL, the deployment helpers, and Plinth's own helpers (see [`register_helpers`]).
    pub fn standard() -> Expressions {
        let mut engine = Engine::new();
        register_helpers(&mut engine);
        Expressions {
            engine: Arc::new(engine),
            cache: Arc::new(ExprCache::new()),
        }
    }
}

/// Plinth's helpers:
/// - `versionCompare(a, b)`: -1, 0 or 1 comparing dotted versions part by part, numerically where both
///   parts are numbers (`versionCompare('1.10', '1.9') = 1`).
pub fn register_helpers(engine: &mut Engine) {
    engine.register_json("versionCompare", Form::Function, |args| {
        let [a, b] = args else {
            return Err("versionCompare takes two versions".into());
        };
        let text = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => Ok(s.clone()),
            serde_json::Value::Number(n) => Ok(n.to_string()),
            other => Err(format!("versionCompare: {other} is not a version")),
        };
        let (a, b) = (text(a)?, text(b)?);
        let parts = |s: &str| -> Vec<String> { s.split(['.', '-']).map(str::to_string).collect() };
        let (pa, pb) = (parts(&a), parts(&b));
        for i in 0..pa.len().max(pb.len()) {
            let x = pa.get(i).map(String::as_str).unwrap_or("0");
            let y = pb.get(i).map(String::as_str).unwrap_or("0");
            let ord = match (x.parse::<u64>(), y.parse::<u64>()) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                _ => x.cmp(y),
            };
            if ord != std::cmp::Ordering::Equal {
                return Ok(serde_json::json!(if ord.is_lt() { -1 } else { 1 }));
            }
        }
        Ok(serde_json::json!(0))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn helpers_are_registered_beside_yaqls_library() {
        let e = Expressions::standard();
        let v = e
            .engine
            .eval_str(
                "versionCompare('1.10', '1.9') + versionCompare('2', '2.0')",
                &json!({}),
            )
            .unwrap();
        assert_eq!(v, json!(1));
        let v = e
            .engine
            .eval_str("$.where($ > 1).len()", &json!([1, 2, 3]))
            .unwrap();
        assert_eq!(v, json!(2));
    }
}
