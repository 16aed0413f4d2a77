//! `Json`: a compact, read-only JSON tree, the form a deployment's data is held in while expressions
//! read it.
//!
//! A `serde_json::Value` is 72 bytes, and each key of a map costs 104 bytes more plus its own string and
//! the map's hash table. A deployment at 100,000 nodes holds every node's record and facts in one tree
//! that every expression may read, so that shape dominated a deployment's start. Here a value is 24
//! bytes, a list and a map are sized to their items, and a map's key is an `Arc<str>` shared by every
//! map built in one go (a [`Keys`]), so `"hostname"` is held once for the whole fleet.
//!
//! What stays as in `serde_json` (with its `preserve_order` feature, which Plinth uses): maps keep their
//! keys in the order written, serialize in that order (so a tree written here reads as the same text,
//! and hashes the same, as the `serde_json::Value` it was made from), and compare equal regardless of
//! order. Numbers are `serde_json::Number`.
//!
//! A map of more than [`INDEXED`] keys also holds its keys' sorted order (by length, then bytes), so a
//! lookup is a binary search rather than a scan (`network_metadata.nodes` is keyed by every node's name).

mod de;
mod keys;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;

pub use compact_str::CompactString;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
pub use serde_json::Number;

pub use de::SharedKeys;
pub use keys::Keys;

/// A map's key.
pub type Key = Arc<str>;

/// String equality without a library call for short strings (keys, statuses, roles).
#[inline]
pub fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let n = a.len();
    // Words, not bytes: the first and last eight (overlapping when shorter than sixteen), and
    // the middle eight up to twenty-four; fours and bytes below eight.
    let word = |s: &[u8], i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[i..i + 8]);
        u64::from_le_bytes(w)
    };
    let half = |s: &[u8], i: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&s[i..i + 4]);
        u32::from_le_bytes(w)
    };
    match n {
        0 => true,
        1..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        17..=24 => {
            word(a, 0) == word(b, 0) && word(a, 8) == word(b, 8) && word(a, n - 8) == word(b, n - 8)
        }
        _ => a == b,
    }
}

// A value is three words: a string of up to 24 bytes sits in it, and the enum's tag in what
// `CompactString` leaves free of its last byte.
const _: () = assert!(std::mem::size_of::<Json>() == 24);

/// Maps with more keys than this are indexed (see the module's documentation).
pub const INDEXED: usize = 16;

/// A JSON value held compactly. Read-only: build a `serde_json::Value` and convert it.
#[derive(Clone, Debug, Default)]
pub enum Json {
    /// `null`
    #[default]
    Null,
    /// `true` or `false`
    Bool(bool),
    /// A number, as `serde_json` holds it.
    Number(Number),
    /// A string: up to 24 bytes held in the value itself, longer ones on the heap.
    String(CompactString),
    /// A list (shared: a build through [`Keys`] holds equal lists once).
    Array(Arc<[Json]>),
    /// A map, in the order its keys were written.
    Object(Object),
}

/// The order a large map's index keeps its keys in: by length, then by bytes (keys of different
/// lengths compare without reading them).
fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// A JSON map: its entries in the order written, and for a large one their sorted order.
#[derive(Clone)]
pub struct Object(Repr);

#[derive(Clone)]
enum Repr {
    /// Up to [`INDEXED`] entries, found by a scan.
    Small(Arc<[(Key, Json)]>),
    /// More: the entries and, for each place in key order, the entry's position.
    Large(Arc<Large>),
}

#[derive(Clone)]
struct Large {
    entries: Box<[(Key, Json)]>,
    sorted: Box<[u32]>,
}

impl Object {
    /// A map of these entries, which have no key twice (the caller's promise; a later duplicate would
    /// never be found by [`Object::get`]).
    fn from_unique(entries: Vec<(Key, Json)>) -> Object {
        if entries.len() <= INDEXED {
            return Object(Repr::Small(entries.into()));
        }
        let entries = entries.into_boxed_slice();
        let mut sorted: Vec<u32> = (0..entries.len() as u32).collect();
        sorted.sort_unstable_by(|a, b| key_order(&entries[*a as usize].0, &entries[*b as usize].0));
        Object(Repr::Large(Arc::new(Large {
            entries,
            sorted: sorted.into_boxed_slice(),
        })))
    }

    /// Its entries, to build another map from (a copy of each entry: keys, lists and maps are
    /// shared, not copied).
    pub fn into_entries(self) -> Vec<(Key, Json)> {
        self.entries().to_vec()
    }

    /// Where its entries are held: maps built alike through one [`Keys`] are held once.
    pub(crate) fn addr(&self) -> usize {
        match &self.0 {
            Repr::Small(e) => Arc::as_ptr(e) as *const () as usize,
            Repr::Large(l) => Arc::as_ptr(l) as usize,
        }
    }

    /// The entries, in the order written.
    pub fn entries(&self) -> &[(Key, Json)] {
        match &self.0 {
            Repr::Small(e) => e,
            Repr::Large(l) => &l.entries,
        }
    }

    /// Where `key` is among the entries.
    pub fn position(&self, key: &str) -> Option<usize> {
        match &self.0 {
            Repr::Small(e) => e.iter().position(|(k, _)| str_eq(k, key)),
            Repr::Large(l) => l
                .sorted
                .binary_search_by(|at| key_order(&l.entries[*at as usize].0, key))
                .ok()
                .map(|i| l.sorted[i] as usize),
        }
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&Json> {
        self.position(key).map(|at| &self.entries()[at].1)
    }

    /// The entry at `at`, in the order written.
    pub fn get_index(&self, at: usize) -> Option<(&str, &Json)> {
        self.entries().get(at).map(|(k, v)| (&**k, v))
    }

    /// The stored key and its value.
    pub fn get_key_value(&self, key: &str) -> Option<(&Key, &Json)> {
        self.position(key)
            .map(|at| (&self.entries()[at].0, &self.entries()[at].1))
    }

    /// Whether `key` is there.
    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }

    /// The entries as `(key, value)`, in the order written.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Json)> + Clone {
        self.entries().iter().map(|(k, v)| (&**k, v))
    }

    /// The keys, in the order written.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> + Clone {
        self.entries().iter().map(|(k, _)| &**k)
    }

    /// The values, in the order written.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &Json> + Clone {
        self.entries().iter().map(|(_, v)| v)
    }
}

impl Default for Object {
    fn default() -> Object {
        Object(Repr::Small(Arc::new([])))
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
        self.len() == other.len()
            && self.iter().enumerate().all(|(at, (k, v))| {
                // Maps built alike have their keys in the same places: try that first.
                match other.get_index(at) {
                    Some((ok, ov)) if ok == k => ov == v,
                    _ => other.get(k) == Some(v),
                }
            })
    }
}

impl PartialEq for Json {
    fn eq(&self, other: &Json) -> bool {
        match (self, other) {
            (Json::Null, Json::Null) => true,
            (Json::Bool(a), Json::Bool(b)) => a == b,
            (Json::Number(a), Json::Number(b)) => a == b,
            (Json::String(a), Json::String(b)) => a == b,
            (Json::Array(a), Json::Array(b)) => a == b,
            (Json::Object(a), Json::Object(b)) => a == b,
            _ => false,
        }
    }
}

/// What [`Json::get`] looks up: a key of a map or a place in a list.
pub trait JsonIndex {
    /// The value at this index of `v`, if any.
    fn index_into<'v>(&self, v: &'v Json) -> Option<&'v Json>;
}

impl JsonIndex for str {
    fn index_into<'v>(&self, v: &'v Json) -> Option<&'v Json> {
        v.as_object()?.get(self)
    }
}

impl JsonIndex for String {
    fn index_into<'v>(&self, v: &'v Json) -> Option<&'v Json> {
        self.as_str().index_into(v)
    }
}

impl JsonIndex for usize {
    fn index_into<'v>(&self, v: &'v Json) -> Option<&'v Json> {
        v.as_array()?.get(*self)
    }
}

impl<T: JsonIndex + ?Sized> JsonIndex for &T {
    fn index_into<'v>(&self, v: &'v Json) -> Option<&'v Json> {
        (**self).index_into(v)
    }
}

impl Json {
    /// The value under a map's key or at a list's place, as `serde_json::Value::get`.
    pub fn get<I: JsonIndex>(&self, index: I) -> Option<&Json> {
        index.index_into(self)
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// The list's items, if this is a list.
    pub fn as_array(&self) -> Option<&[Json]> {
        match self {
            Json::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The map, if this is one.
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Json::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number as `i64`, if it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Json::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    /// The number as `u64`, if it is a non-negative integer that fits.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    /// The number as `f64`, if this is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Json::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    /// Whether this is a map.
    pub fn is_object(&self) -> bool {
        matches!(self, Json::Object(_))
    }

    /// Whether this is a list.
    pub fn is_array(&self) -> bool {
        matches!(self, Json::Array(_))
    }

    /// Whether this is a string.
    pub fn is_string(&self) -> bool {
        matches!(self, Json::String(_))
    }

    /// A map of these entries, in this order; a key given twice keeps its first place and its last
    /// value, as `serde_json`'s maps do.
    pub fn object(entries: impl IntoIterator<Item = (Key, Json)>) -> Json {
        let entries: Vec<(Key, Json)> = entries.into_iter().collect();
        let twice = if entries.len() <= INDEXED {
            (1..entries.len()).any(|i| entries[..i].iter().any(|(k, _)| *k == entries[i].0))
        } else {
            let mut sorted: Vec<&str> = entries.iter().map(|(k, _)| &**k).collect();
            sorted.sort_unstable();
            sorted.windows(2).any(|w| w[0] == w[1])
        };
        if !twice {
            return Json::Object(Object::from_unique(entries));
        }
        let mut out: indexmap::IndexMap<Key, Json> = indexmap::IndexMap::new();
        for (k, v) in entries {
            out.insert(k, v);
        }
        Json::Object(Object::from_unique(out.into_iter().collect()))
    }

    /// Converts a `serde_json` value, taking it apart as it goes (each part is freed once converted),
    /// sharing keys through `keys`.
    pub fn from_value_with(v: serde_json::Value, keys: &mut Keys) -> Json {
        match v {
            serde_json::Value::Null => Json::Null,
            serde_json::Value::Bool(b) => Json::Bool(b),
            serde_json::Value::Number(n) => Json::Number(n),
            serde_json::Value::String(s) => Json::String(s.into()),
            serde_json::Value::Array(a) => {
                let items = a
                    .into_iter()
                    .map(|item| Json::from_value_with(item, keys))
                    .collect();
                keys.share(Json::Array(items))
            }
            serde_json::Value::Object(m) => {
                let entries = m
                    .into_iter()
                    .map(|(k, v)| (keys.key(&k), Json::from_value_with(v, keys)))
                    .collect();
                keys.share(Json::Object(Object::from_unique(entries)))
            }
        }
    }

    /// Converts a borrowed `serde_json` value, sharing keys through `keys`.
    pub fn from_ref_with(v: &serde_json::Value, keys: &mut Keys) -> Json {
        match v {
            serde_json::Value::Null => Json::Null,
            serde_json::Value::Bool(b) => Json::Bool(*b),
            serde_json::Value::Number(n) => Json::Number(n.clone()),
            serde_json::Value::String(s) => Json::String(s.as_str().into()),
            serde_json::Value::Array(a) => {
                let items = a
                    .iter()
                    .map(|item| Json::from_ref_with(item, keys))
                    .collect();
                keys.share(Json::Array(items))
            }
            serde_json::Value::Object(m) => {
                let entries = m
                    .iter()
                    .map(|(k, v)| (keys.key(k), Json::from_ref_with(v, keys)))
                    .collect();
                keys.share(Json::Object(Object::from_unique(entries)))
            }
        }
    }

    /// The same value as a `serde_json::Value`.
    pub fn to_value(&self) -> serde_json::Value {
        match self {
            Json::Null => serde_json::Value::Null,
            Json::Bool(b) => serde_json::Value::Bool(*b),
            Json::Number(n) => serde_json::Value::Number(n.clone()),
            Json::String(s) => serde_json::Value::String(s.to_string()),
            Json::Array(a) => serde_json::Value::Array(a.iter().map(Json::to_value).collect()),
            Json::Object(m) => serde_json::Value::Object(
                m.iter()
                    .map(|(k, v)| (k.to_string(), v.to_value()))
                    .collect(),
            ),
        }
    }
}

impl From<i64> for Json {
    fn from(n: i64) -> Json {
        Json::Number(n.into())
    }
}

impl From<f64> for Json {
    /// A float JSON cannot write (NaN, infinity) is `null`, as in `serde_json`.
    fn from(x: f64) -> Json {
        Number::from_f64(x).map_or(Json::Null, Json::Number)
    }
}

impl From<bool> for Json {
    fn from(b: bool) -> Json {
        Json::Bool(b)
    }
}

impl From<&str> for Json {
    fn from(s: &str) -> Json {
        Json::String(s.into())
    }
}

/// What a missing key or place reads as through `[]`.
static NULL: Json = Json::Null;

impl<I: JsonIndex> std::ops::Index<I> for Json {
    type Output = Json;

    /// As `serde_json`'s: `null` for a key or place that is not there.
    fn index(&self, index: I) -> &Json {
        index.index_into(self).unwrap_or(&NULL)
    }
}

impl<'o> IntoIterator for &'o Object {
    type Item = (&'o str, &'o Json);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'o, (Key, Json)>,
        fn(&'o (Key, Json)) -> (&'o str, &'o Json),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.entries().iter().map(|(k, v)| (&**k, v))
    }
}

impl From<serde_json::Value> for Json {
    fn from(v: serde_json::Value) -> Json {
        Json::from_value_with(v, &mut Keys::default())
    }
}

impl From<&serde_json::Value> for Json {
    fn from(v: &serde_json::Value) -> Json {
        Json::from_ref_with(v, &mut Keys::default())
    }
}

impl From<&Json> for serde_json::Value {
    fn from(v: &Json) -> serde_json::Value {
        v.to_value()
    }
}

impl PartialEq<serde_json::Value> for Json {
    fn eq(&self, other: &serde_json::Value) -> bool {
        match (self, other) {
            (Json::Null, serde_json::Value::Null) => true,
            (Json::Bool(a), serde_json::Value::Bool(b)) => a == b,
            (Json::Number(a), serde_json::Value::Number(b)) => a == b,
            (Json::String(a), serde_json::Value::String(b)) => **a == **b,
            (Json::Array(a), serde_json::Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
            }
            (Json::Object(a), serde_json::Value::Object(b)) => {
                a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| v == w))
            }
            _ => false,
        }
    }
}

impl PartialEq<Json> for serde_json::Value {
    fn eq(&self, other: &Json) -> bool {
        other == self
    }
}

impl PartialEq<str> for Json {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == Some(other)
    }
}

impl PartialEq<&str> for Json {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(text) => s.serialize_str(text),
            Json::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items.iter() {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(m) => m.serialize(s),
        }
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

impl fmt::Display for Json {
    /// Compact JSON text, as `serde_json::Value`'s.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}
