//! A thread-safe cache of parsed expressions keyed by their text.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, RwLock};

use super::errors::ParseError;
use super::hashindex::PrehashedMap;
use super::parser::Expression;
use super::value::FxHasher;

/// Hashes a text once (texts come from graphs an operator loaded, not from the network: a fast
/// hasher is enough).
fn text_hash(text: &str) -> u64 {
    let mut h = FxHasher::default();
    text.hash(&mut h);
    h.finish()
}

/// The cached expressions: by the hash of their text (each expression keeps its own text, no
/// second copy), and the rare ones whose hash another text took first.
#[derive(Debug, Default)]
struct Table {
    by_hash: PrehashedMap<Arc<Expression>>,
    collided: Vec<Arc<Expression>>,
}

impl Table {
    fn get(&self, hash: u64, text: &str) -> Option<&Arc<Expression>> {
        match self.by_hash.get(&hash) {
            Some(e) if e.source() == text => Some(e),
            Some(_) => self.collided.iter().find(|e| e.source() == text),
            None => None,
        }
    }

    fn insert(&mut self, hash: u64, e: Arc<Expression>) {
        match self.by_hash.entry(hash) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(e);
            }
            std::collections::hash_map::Entry::Occupied(_) => self.collided.push(e),
        }
    }

    fn len(&self) -> usize {
        self.by_hash.len() + self.collided.len()
    }
}

/// Parsed expressions by text, shareable across threads (parse each text once).
#[derive(Debug, Default)]
pub struct ExprCache {
    map: RwLock<Table>,
}

impl ExprCache {
    /// An empty cache.
    pub fn new() -> ExprCache {
        ExprCache::default()
    }

    /// The parsed expression for `text`, parsing it on first use. Parse errors are not cached.
    pub fn get_or_parse(&self, text: &str) -> Result<Arc<Expression>, ParseError> {
        let hash = text_hash(text);
        {
            let map = self.map.read().unwrap_or_else(|p| p.into_inner());
            if let Some(e) = map.get(hash, text) {
                return Ok(e.clone());
            }
        }
        let parsed = Arc::new(Expression::parse(text)?);
        let mut map = self.map.write().unwrap_or_else(|p| p.into_inner());
        // Another thread may have parsed the same text meanwhile: keep the first.
        if let Some(e) = map.get(hash, text) {
            return Ok(e.clone());
        }
        map.insert(hash, parsed.clone());
        Ok(parsed)
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
        let mut map = self.map.write().unwrap_or_else(|p| p.into_inner());
        map.by_hash.clear();
        map.collided.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_with_one_hash_are_kept_apart() {
        // Force a collision: two texts filed under the same hash.
        let cache = ExprCache::new();
        let a = Arc::new(Expression::parse("1 + 1").unwrap());
        let b = Arc::new(Expression::parse("2 + 2").unwrap());
        {
            let mut map = cache.map.write().unwrap();
            map.insert(7, a);
            map.insert(7, b);
        }
        let map = cache.map.read().unwrap();
        assert_eq!(map.get(7, "2 + 2").map(|e| e.to_string()), Some("4".into()));
        assert_eq!(map.get(7, "1 + 1").map(|e| e.to_string()), Some("2".into()));
        assert!(map.get(7, "3 + 3").is_none());
        assert_eq!(map.len(), 2);
    }
}
