//! Sharing map keys between the maps of one build.

use std::collections::HashSet;
use std::sync::Arc;

use super::Key;

/// The keys written so far in one build of [`super::Json`] trees: each distinct key is held once and
/// shared by every map that has it. Dropped with the build, so keys a node made up do not outlive it.
#[derive(Debug, Default)]
pub struct Keys {
    seen: HashSet<Arc<str>>,
}

impl Keys {
    /// The shared copy of `key`.
    pub fn key(&mut self, key: &str) -> Key {
        if let Some(k) = self.seen.get(key) {
            return k.clone();
        }
        let k: Arc<str> = Arc::from(key);
        self.seen.insert(k.clone());
        k
    }
}
