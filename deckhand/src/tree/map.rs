//! [`Map`]: a mapping's keys and values in the order written.
//!
//! A document's mappings are small (a handful of keys), and rendering looks keys up far more often than
//! it adds them. Up to [`INDEXED`] keys a lookup compares the key with each key in turn (lengths first,
//! which a key's pointer holds, so most keys are passed over without reading them); a larger mapping
//! also holds an index from key to position.

use std::collections::HashMap;

use foldhash::fast::RandomState;

use super::{Key, Tree};

/// Mappings with more keys than this hold an index.
pub const INDEXED: usize = 16;

/// A mapping: keys in the order written, each once.
#[derive(Default)]
pub struct Map {
    entries: Vec<(Key, Tree)>,
    /// Each key's position, for mappings of more than [`INDEXED`] keys (boxed: the mappings without one,
    /// nearly all, stay a pointer smaller).
    #[allow(clippy::box_collection)]
    index: Option<Box<HashMap<Key, usize, RandomState>>>,
}

/// A copy keeps the room the mapping had for more keys: a mapping is copied to be written (copy on
/// write), and writes often add keys.
impl Clone for Map {
    fn clone(&self) -> Map {
        let mut entries = Vec::with_capacity(self.entries.capacity());
        entries.extend_from_slice(&self.entries);
        Map {
            entries,
            index: self.index.clone(),
        }
    }
}

/// The entries of a [`Map`], in order.
pub type Iter<'a> =
    std::iter::Map<std::slice::Iter<'a, (Key, Tree)>, fn(&'a (Key, Tree)) -> (&'a Key, &'a Tree)>;

impl Map {
    /// An empty mapping.
    pub fn new() -> Map {
        Map::default()
    }

    /// An empty mapping with room for `n` keys.
    pub fn with_capacity(n: usize) -> Map {
        Map {
            entries: Vec::with_capacity(n),
            index: None,
        }
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No keys.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The position of a key.
    pub fn get_index_of(&self, key: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self.entries.iter().position(|(k, _)| same_text(k, key)),
        }
    }

    /// A copy sharing nothing with this mapping (see [`Tree::deep_clone`]), with the same room for
    /// more keys.
    pub fn deep_clone(&self) -> Map {
        let mut entries = Vec::with_capacity(self.entries.capacity());
        entries.extend(
            self.entries
                .iter()
                .map(|(k, v)| (k.clone(), v.deep_clone())),
        );
        Map {
            entries,
            index: self.index.clone(),
        }
    }

    /// The value of a key.
    pub fn get(&self, key: &str) -> Option<&Tree> {
        self.get_index_of(key).map(|at| &self.entries[at].1)
    }

    /// The value of a key, to change.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Tree> {
        self.get_index_of(key).map(|at| &mut self.entries[at].1)
    }

    /// Whether the mapping has the key.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get_index_of(key).is_some()
    }

    /// The key and value at a position.
    pub fn get_index(&self, at: usize) -> Option<(&Key, &Tree)> {
        self.entries.get(at).map(|(k, v)| (k, v))
    }

    /// The key and value at a position, the value to change.
    pub fn get_index_mut(&mut self, at: usize) -> Option<(&Key, &mut Tree)> {
        self.entries.get_mut(at).map(|(k, v)| (&*k, v))
    }

    /// Sets a key's value: in its place when the key is there (giving the value it had), else at the end.
    pub fn insert(&mut self, key: Key, value: Tree) -> Option<Tree> {
        self.insert_full(key, value).1
    }

    /// [`Map::insert`], with the key's position.
    pub fn insert_full(&mut self, key: Key, value: Tree) -> (usize, Option<Tree>) {
        if let Some(at) = self.get_index_of(&key) {
            return (at, Some(std::mem::replace(&mut self.entries[at].1, value)));
        }
        (self.push_new(key, value), None)
    }

    /// Adds a key the mapping does not have, at the end; gives its position.
    fn push_new(&mut self, key: Key, value: Tree) -> usize {
        let at = self.entries.len();
        match &mut self.index {
            Some(index) => {
                index.insert(key.clone(), at);
            }
            None if at == INDEXED => {
                let mut index = HashMap::with_capacity_and_hasher(at * 2, RandomState::default());
                for (n, (k, _)) in self.entries.iter().enumerate() {
                    index.insert(k.clone(), n);
                }
                index.insert(key.clone(), at);
                self.index = Some(Box::new(index));
            }
            None => {}
        }
        self.entries.push((key, value));
        at
    }

    /// The value of a key, added at the end (made by `make`) when the mapping does not have it.
    pub fn get_or_insert_with(&mut self, key: &str, make: impl FnOnce() -> Tree) -> &mut Tree {
        self.get_or_insert_full(key, make).1
    }

    /// [`Map::get_or_insert_with`], with the key's position.
    pub fn get_or_insert_full(
        &mut self,
        key: &str,
        make: impl FnOnce() -> Tree,
    ) -> (usize, &mut Tree) {
        let at = match self.get_index_of(key) {
            Some(at) => at,
            None => self.push_new(Key::from(key), make()),
        };
        (at, &mut self.entries[at].1)
    }

    /// Removes the entry at a position; the later ones move up.
    pub fn shift_remove_index(&mut self, at: usize) -> Option<(Key, Tree)> {
        if at >= self.entries.len() {
            return None;
        }
        let removed = self.entries.remove(at);
        if let Some(index) = &mut self.index {
            index.remove(&removed.0);
            for (n, (k, _)) in self.entries.iter().enumerate().skip(at) {
                index.insert(k.clone(), n);
            }
        }
        Some(removed)
    }

    /// The entries in order.
    pub fn iter(&self) -> Iter<'_> {
        fn pair(entry: &(Key, Tree)) -> (&Key, &Tree) {
            (&entry.0, &entry.1)
        }
        self.entries.iter().map(pair)
    }

    /// The keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Key> + ExactSizeIterator {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The values in order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Tree> + ExactSizeIterator {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The values in order, to change.
    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut Tree> + ExactSizeIterator {
        self.entries.iter_mut().map(|(_, v)| v)
    }
}

/// Whether two texts are the same, without a library call for the short ones (nearly every key): the
/// lengths, then the first and last eight (or four) bytes, which together cover up to sixteen.
#[inline]
fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_ne_bytes(w)
    };
    let half = |s: &[u8], at: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&s[at..at + 4]);
        u32::from_ne_bytes(w)
    };
    match n {
        0..=3 => a == b,
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => word(a, 0) == word(b, 0) && a == b,
    }
}

impl<'a> IntoIterator for &'a Map {
    type Item = (&'a Key, &'a Tree);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl std::fmt::Debug for Map {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A key given twice keeps its first place and its last value.
impl FromIterator<(Key, Tree)> for Map {
    fn from_iter<I: IntoIterator<Item = (Key, Tree)>>(items: I) -> Map {
        let items = items.into_iter();
        let mut map = Map::with_capacity(items.size_hint().0);
        for (k, v) in items {
            map.insert(k, v);
        }
        map
    }
}

/// Equal keys with equal values, in any order.
impl PartialEq for Map {
    fn eq(&self, other: &Map) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: usize) -> Key {
        Key::from(format!("key{n}").as_str())
    }

    #[test]
    fn texts_of_every_length_compare_as_texts() {
        let text = "abcdefghijklmnopqrstuvwxyz0123456789";
        for n in 0..text.len() {
            let a = &text[..n];
            assert!(same_text(a, String::from(a).as_str()));
            for at in 0..n {
                let mut other = a.as_bytes().to_vec();
                other[at] = b'_';
                let other = String::from_utf8(other).unwrap();
                assert!(!same_text(a, &other), "{a} {other}");
            }
            assert!(!same_text(a, &text[..n + 1]));
        }
    }

    #[test]
    fn copies_keep_the_room_for_more_keys() {
        let mut map = Map::new();
        for n in 0..5 {
            map.insert(key(n), Tree::from(n == 0));
        }
        let room = map.entries.capacity();
        assert!(room > 5);
        assert_eq!(map.clone().entries.capacity(), room);
        let copy = map.deep_clone();
        assert_eq!(copy.entries.capacity(), room);
        assert_eq!(copy, map);
    }

    #[test]
    fn small_and_indexed_mappings_find_replace_and_remove_alike() {
        for size in [3, INDEXED, INDEXED + 1, 100] {
            let mut map: Map = (0..size).map(|n| (key(n), Tree::from(n == 0))).collect();
            assert_eq!(map.len(), size);
            assert_eq!(map.get_index_of("key2"), Some(2), "{size}");
            assert_eq!(map.insert(key(1), Tree::Null), Some(Tree::Bool(false)));
            assert_eq!(map.get_index_of("key1"), Some(1));
            assert_eq!(map.shift_remove_index(0).map(|e| e.0), Some(key(0)));
            assert_eq!(map.get("key0"), None);
            assert_eq!(map.get_index_of("key1"), Some(0), "{size}");
            assert_eq!(
                map.get_index_of(&format!("key{}", size - 1)),
                Some(size - 2)
            );
            assert_eq!(map.insert_full(key(0), Tree::Null), (size - 1, None));
            assert_eq!(map.keys().last(), Some(&key(0)));
        }
    }
}
