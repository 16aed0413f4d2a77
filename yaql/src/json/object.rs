//! [`Object`]: a JSON map held as its values beside a [`Shape`], its keys in the order written. Maps
//! built through one [`Keys`] with the same keys in the same order share one shape: a fleet's facts
//! and node records have the same keys on every node, held once, and each map holds only its values
//! (24 bytes each, where a key and its value took 40).

use std::fmt;
use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};
use triomphe::ThinArc;

use super::{str_eq, Json, Key, Keys, INDEXED};

/// The order a large map's index keeps its keys in: by length, then by bytes (keys of different
/// lengths compare without reading them).
fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// A map's keys, in the order written (no key twice), and for more than [`INDEXED`] of them the
/// order a lookup searches them in.
#[derive(Clone, Debug)]
pub struct Shape {
    keys: Arc<[Key]>,
    /// For each place in key order, the key's position; `None` for a small map, which is scanned.
    sorted: Option<Arc<[u32]>>,
}

impl Shape {
    /// The shape of maps with these keys, in this order, which has none twice.
    pub(crate) fn new(keys: Vec<Key>) -> Shape {
        let sorted = (keys.len() > INDEXED).then(|| {
            let mut sorted: Vec<u32> = (0..keys.len() as u32).collect();
            sorted.sort_unstable_by(|a, b| key_order(&keys[*a as usize], &keys[*b as usize]));
            Arc::from(sorted)
        });
        Shape {
            keys: keys.into(),
            sorted,
        }
    }

    /// The keys, in the order written.
    pub(crate) fn keys(&self) -> &[Key] {
        &self.keys
    }

    /// Whether `other` is this very shape (held once), not only an equal one.
    pub(crate) fn same(&self, other: &Shape) -> bool {
        Arc::ptr_eq(&self.keys, &other.keys)
    }

    /// Where its keys are held.
    pub(crate) fn addr(&self) -> usize {
        Arc::as_ptr(&self.keys) as *const () as usize
    }

    /// Where `key` is.
    fn position(&self, key: &str) -> Option<usize> {
        match &self.sorted {
            None => self.keys.iter().position(|k| str_eq(k, key)),
            Some(sorted) => sorted
                .binary_search_by(|at| key_order(&self.keys[*at as usize], key))
                .ok()
                .map(|i| sorted[i] as usize),
        }
    }
}

/// A JSON map, in the order its keys were written. Cloning it is cheap (it is shared, read-only). Its
/// shape and its values are one allocation behind a thin pointer: a lookup reads the shape's keys
/// (shared, so mostly in the cache) and the value beside them.
#[derive(Clone)]
pub struct Object(ThinArc<Shape, Json>);

impl Object {
    /// A map of these entries, which have no key twice (the caller's promise; a later duplicate would
    /// never be found by [`Object::get`]); its shape shared through `keys` when given.
    pub(crate) fn from_unique(entries: Vec<(Key, Json)>, keys: Option<&mut Keys>) -> Object {
        let (names, values): (Vec<Key>, Vec<Json>) = entries.into_iter().unzip();
        Object::from_parts(names, values, keys)
    }

    /// A map of these keys (none twice: the caller's promise) and their values, in this order.
    pub(crate) fn from_parts(
        names: Vec<Key>,
        values: Vec<Json>,
        keys: Option<&mut Keys>,
    ) -> Object {
        debug_assert_eq!(names.len(), values.len());
        let shape = match keys {
            Some(keys) => keys.shape(names),
            None => Shape::new(names),
        };
        Object(ThinArc::from_header_and_iter(shape, values.into_iter()))
    }

    /// A copy with the value under `key` replaced, its keys shared with this one; `None` when it has
    /// no such key.
    pub fn with(&self, key: &str, value: Json) -> Option<Object> {
        let at = self.position(key)?;
        let mut value = Some(value);
        let values = self.values().enumerate().map(|(i, v)| match i == at {
            true => value.take().unwrap_or_default(),
            false => v.clone(),
        });
        Some(Object(ThinArc::from_header_and_iter(
            self.shape().clone(),
            values,
        )))
    }

    /// Its entries, to build another map from (keys, lists and maps are shared, not copied).
    pub fn to_entries(&self) -> Vec<(Key, Json)> {
        let keys = self.shape().keys();
        keys.iter()
            .cloned()
            .zip(self.slice().iter().cloned())
            .collect()
    }

    /// Its shape.
    pub(crate) fn shape(&self) -> &Shape {
        &self.0.header.header
    }

    /// The values, in the order written, as a slice.
    fn slice(&self) -> &[Json] {
        &self.0.slice
    }

    /// Where its values are held: maps built alike through one [`Keys`] are held once.
    pub(crate) fn addr(&self) -> usize {
        self.0.as_ptr() as usize
    }

    /// Where `key` is among the entries.
    pub fn position(&self, key: &str) -> Option<usize> {
        self.shape().position(key)
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&Json> {
        self.position(key).map(|at| &self.slice()[at])
    }

    /// The entry at `at`, in the order written.
    pub fn get_index(&self, at: usize) -> Option<(&str, &Json)> {
        let key = self.shape().keys().get(at)?;
        Some((key, self.slice().get(at)?))
    }

    /// The stored key and its value.
    pub fn get_key_value(&self, key: &str) -> Option<(&Key, &Json)> {
        self.position(key)
            .map(|at| (&self.shape().keys()[at], &self.slice()[at]))
    }

    /// Whether `key` is there.
    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.slice().len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.slice().is_empty()
    }

    /// The entries as `(key, value)`, in the order written.
    pub fn iter<'o>(&'o self) -> Iter<'o> {
        fn entry<'o>((k, v): (&'o Key, &'o Json)) -> (&'o str, &'o Json) {
            (k, v)
        }
        self.shape()
            .keys()
            .iter()
            .zip(self.slice().iter())
            .map(entry as fn((&'o Key, &'o Json)) -> (&'o str, &'o Json))
    }

    /// The keys, in the order written.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> + Clone {
        self.shape().keys().iter().map(|k| &**k)
    }

    /// The values, in the order written.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &Json> + Clone {
        self.slice().iter()
    }
}

/// The entries of an [`Object`] as `(key, value)`, in the order written.
pub type Iter<'o> = std::iter::Map<
    std::iter::Zip<std::slice::Iter<'o, Key>, std::slice::Iter<'o, Json>>,
    fn((&'o Key, &'o Json)) -> (&'o str, &'o Json),
>;

impl<'o> IntoIterator for &'o Object {
    type Item = (&'o str, &'o Json);
    type IntoIter = Iter<'o>;

    fn into_iter(self) -> Iter<'o> {
        self.iter()
    }
}

impl Default for Object {
    fn default() -> Object {
        Object::from_unique(Vec::new(), None)
    }
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl PartialEq for Object {
    /// Equal maps have the same keys with equal values, in whatever order (as `serde_json`'s).
    fn eq(&self, other: &Object) -> bool {
        if self.len() != other.len() {
            return false;
        }
        if self.shape().same(other.shape()) {
            return self.slice() == other.slice();
        }
        self.iter().enumerate().all(|(at, (k, v))| {
            // Maps built alike have their keys in the same places: try that first.
            match other.get_index(at) {
                Some((ok, ov)) if ok == k => ov == v,
                _ => other.get(k) == Some(v),
            }
        })
    }
}

impl Serialize for Object {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}
