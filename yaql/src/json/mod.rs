//! `Json`: a compact, read-only JSON tree, the form a deployment's data is held in while expressions
//! read it.
//!
//! A `serde_json::Value` is 72 bytes, and each key of a map costs 104 bytes more plus its own string and
//! the map's hash table. A deployment at 100,000 nodes holds every node's record and facts in one tree
//! that every expression may read, so that shape dominated a deployment's start. Here:
//!
//! - a value is 24 bytes, and a string of up to 24 bytes (a name, a MAC, an address) is held in it;
//! - lists and maps are shared (`Arc`): cloning one copies a pointer;
//! - a map holds its values and a [`Shape`]: its keys in order, each an `Arc<str>`; every map built
//!   through one [`Keys`] with the same keys in the same order shares one shape, so a fleet's node
//!   records and facts hold their keys once, not once per node;
//! - a list or map built through a [`Keys`] that equals one built there before (the same items, in
//!   the same order) is that one: what a fleet's machines have alike (operating system, CPU, the
//!   loopback interface) is held once.
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
mod object;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;

pub use compact_str::CompactString;
use serde::ser::{Serialize, SerializeSeq, Serializer};
pub use serde_json::Number;

pub use de::SharedKeys;
pub use keys::Keys;
pub use object::Shape;
pub use object::{Iter as ObjectIter, Object};

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
        Json::object_in(entries.into_iter().collect(), None)
    }

    /// As [`Json::object`], its keys' order (its shape) shared through `keys` with every map built
    /// there with the same keys in the same order. (The map itself is not looked up among the equal
    /// ones: [`Keys::share`] does that.)
    pub fn object_with(entries: impl IntoIterator<Item = (Key, Json)>, keys: &mut Keys) -> Json {
        Json::object_in(entries.into_iter().collect(), Some(keys))
    }

    fn object_in(entries: Vec<(Key, Json)>, keys: Option<&mut Keys>) -> Json {
        let twice = if entries.len() <= INDEXED {
            (1..entries.len()).any(|i| entries[..i].iter().any(|(k, _)| *k == entries[i].0))
        } else {
            let mut sorted: Vec<&str> = entries.iter().map(|(k, _)| &**k).collect();
            sorted.sort_unstable();
            sorted.windows(2).any(|w| w[0] == w[1])
        };
        if !twice {
            return Json::Object(Object::from_unique(entries, keys));
        }
        let mut out: indexmap::IndexMap<Key, Json> = indexmap::IndexMap::new();
        for (k, v) in entries {
            out.insert(k, v);
        }
        Json::Object(Object::from_unique(out.into_iter().collect(), keys))
    }

    /// A map of these entries, each value converted by `convert`, its keys and shape shared through
    /// `keys`, and itself shared when an equal one was built there.
    fn map_through<K: AsRef<str>, V>(
        entries: impl IntoIterator<Item = (K, V), IntoIter: ExactSizeIterator>,
        keys: &mut Keys,
        convert: fn(V, &mut Keys) -> Json,
    ) -> Json {
        let entries = entries.into_iter();
        let (mut names, mut values) = (
            Vec::with_capacity(entries.len()),
            Vec::with_capacity(entries.len()),
        );
        for (k, v) in entries {
            names.push(keys.key(k.as_ref()));
            values.push(convert(v, keys));
        }
        let map = Object::from_parts(names, values, Some(&mut *keys));
        keys.share(Json::Object(map))
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
            serde_json::Value::Object(m) => Json::map_through(m, keys, Json::from_value_with),
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
            serde_json::Value::Object(m) => Json::map_through(m, keys, Json::from_ref_with),
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

impl fmt::Display for Json {
    /// Compact JSON text, as `serde_json::Value`'s.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}
