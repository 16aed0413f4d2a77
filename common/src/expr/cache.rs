//! A thread-safe cache of parsed expressions keyed by their text.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::engine::Expression;
use super::errors::ParseError;

/// Texts come from graphs an operator loaded, not from the network: a fast hasher is enough.
type Fx = std::hash::BuildHasherDefault<super::value::FxHasher>;

/// Parsed expressions by text, shareable across threads (parse each text once).
#[derive(Debug, Default)]
pub struct ExprCache {
    map: RwLock<HashMap<String, Arc<Expression>, Fx>>,
}

impl ExprCache {
    /// An empty cache.
    pub fn new() -> ExprCache {
        ExprCache::default()
    }

    /// The parsed expression for `text`, parsing it on first use. Parse errors are not cached.
    pub fn get_or_parse(&self, text: &str) -> Result<Arc<Expression>, ParseError> {
        {
            let map = self.map.read().unwrap_or_else(|p| p.into_inner());
            if let Some(e) = map.get(text) {
                return Ok(e.clone());
            }
        }
        let parsed = Arc::new(Expression::parse(text)?);
        let mut map = self.map.write().unwrap_or_else(|p| p.into_inner());
        Ok(map.entry(text.to_string()).or_insert(parsed).clone())
    }

    /// How many expressions are cached.
    pub fn len(&self) -> usize {
        self.map.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every cached expression.
    pub fn clear(&self) {
        self.map.write().unwrap_or_else(|p| p.into_inner()).clear();
    }
}
