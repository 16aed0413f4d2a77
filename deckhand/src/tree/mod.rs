//! [`Tree`]: the JSON data of a document, shared where it is not changed.
//!
//! Rendering a site is mostly copying: a layered child starts from its parent's data, a substituted
//! value is put into another document, and every rendered document is its input with new `data`. In
//! a `Tree` lists, mappings and strings are reference-counted, so a copy is a pointer, and writing
//! into a tree (through [`Tree::as_object_mut`], [`Tree::as_array_mut`] or [`crate::path::Path::place`])
//! copies only the mappings and lists on the way to the place written, and only those still shared
//! with another tree. What rendering does not change, it does not copy.
//!
//! As `serde_json` with its `preserve_order` feature: mappings keep their keys in the order written
//! (and serialize in that order), compare equal regardless of order, numbers are
//! `serde_json::Number`. [`Tree::from`] a `serde_json::Value` and [`Tree::to_value`] convert.

use std::fmt;
use std::ops::Index;
use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Number, Value};

/// A mapping's key: up to 24 bytes held in place (nearly every key), so that comparing keys reads no
/// other memory and copying a mapping touches no shared counter.
pub type Key = compact_str::CompactString;

mod map;

pub use map::{Iter, Map, INDEXED};

/// A JSON value whose strings, lists and mappings are shared (see the module's documentation).
#[derive(Clone, Default)]
pub enum Tree {
    /// `null`
    #[default]
    Null,
    /// `true` or `false`
    Bool(bool),
    /// A number.
    Number(Number),
    /// A string.
    String(Arc<str>),
    /// A list.
    Array(Arc<Vec<Tree>>),
    /// A mapping.
    Object(Arc<Map>),
}

/// What an absent key or position reads as through `tree["key"]`.
static NULL: Tree = Tree::Null;

impl Tree {
    /// A string.
    pub fn string(text: &str) -> Tree {
        Tree::String(Arc::from(text))
    }

    /// A mapping.
    pub fn object(map: Map) -> Tree {
        Tree::Object(Arc::new(map))
    }

    /// A list.
    pub fn array(items: Vec<Tree>) -> Tree {
        Tree::Array(Arc::new(items))
    }

    /// An empty mapping.
    pub fn empty_object() -> Tree {
        Tree::object(Map::new())
    }

    /// The value at a mapping's key (nothing when this is not a mapping or has no such key).
    pub fn get(&self, key: &str) -> Option<&Tree> {
        match self {
            Tree::Object(map) => map.get(key),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Tree::String(s) => Some(s),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Tree::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number as an `i64`, if it is one that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Tree::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    /// The number as a `u64`, if it is one that fits.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Tree::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    /// The number as an `f64`, if this is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Tree::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    /// The list's items, if this is a list.
    pub fn as_array(&self) -> Option<&[Tree]> {
        match self {
            Tree::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The mapping, if this is one.
    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Tree::Object(map) => Some(map),
            _ => None,
        }
    }

    /// The list, to change (copied first if it is shared), if this is a list.
    pub fn as_array_mut(&mut self) -> Option<&mut Vec<Tree>> {
        match self {
            Tree::Array(items) => Some(Arc::make_mut(items)),
            _ => None,
        }
    }

    /// The mapping, to change (copied first if it is shared), if this is one.
    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Tree::Object(map) => Some(Arc::make_mut(map)),
            _ => None,
        }
    }

    /// `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Tree::Null)
    }

    /// A mapping.
    pub fn is_object(&self) -> bool {
        matches!(self, Tree::Object(_))
    }

    /// A list.
    pub fn is_array(&self) -> bool {
        matches!(self, Tree::Array(_))
    }

    /// A string.
    pub fn is_string(&self) -> bool {
        matches!(self, Tree::String(_))
    }

    /// The value's kind in words (`a mapping`, `a list`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Tree::Null => "null",
            Tree::Bool(_) => "a boolean",
            Tree::Number(_) => "a number",
            Tree::String(_) => "a string",
            Tree::Array(_) => "a list",
            Tree::Object(_) => "a mapping",
        }
    }

    /// The same tree with the same sharing: equal and, below here, the very same strings, lists and
    /// mappings (a comparison in constant time).
    pub fn same(&self, other: &Tree) -> bool {
        match (self, other) {
            (Tree::String(a), Tree::String(b)) => Arc::ptr_eq(a, b),
            (Tree::Array(a), Tree::Array(b)) => Arc::ptr_eq(a, b),
            (Tree::Object(a), Tree::Object(b)) => Arc::ptr_eq(a, b),
            (Tree::Null, Tree::Null) => true,
            (Tree::Bool(a), Tree::Bool(b)) => a == b,
            (Tree::Number(a), Tree::Number(b)) => a == b,
            _ => false,
        }
    }

    /// A copy sharing nothing with this tree (every string, list and mapping copied, each mapping with
    /// the room it had for more keys), as Python's `copy.deepcopy` copies.
    pub fn deep_clone(&self) -> Tree {
        match self {
            Tree::String(s) => Tree::string(s),
            Tree::Array(items) => Tree::array(items.iter().map(Tree::deep_clone).collect()),
            Tree::Object(map) => Tree::object(map.deep_clone()),
            other => other.clone(),
        }
    }

    /// Where a shared string, list or mapping is held (the same for every copy of it); nothing for the
    /// values held in place.
    pub fn address(&self) -> Option<usize> {
        match self {
            Tree::String(s) => Some(Arc::as_ptr(s).cast::<u8>() as usize),
            Tree::Array(items) => Some(Arc::as_ptr(items) as usize),
            Tree::Object(map) => Some(Arc::as_ptr(map) as usize),
            _ => None,
        }
    }

    /// The tree as a `serde_json::Value` (a copy).
    pub fn to_value(&self) -> Value {
        Value::from(self)
    }
}

impl PartialEq for Tree {
    fn eq(&self, other: &Tree) -> bool {
        match (self, other) {
            (Tree::Null, Tree::Null) => true,
            (Tree::Bool(a), Tree::Bool(b)) => a == b,
            (Tree::Number(a), Tree::Number(b)) => a == b,
            (Tree::String(a), Tree::String(b)) => Arc::ptr_eq(a, b) || a == b,
            (Tree::Array(a), Tree::Array(b)) => Arc::ptr_eq(a, b) || a == b,
            (Tree::Object(a), Tree::Object(b)) => Arc::ptr_eq(a, b) || a == b,
            _ => false,
        }
    }
}

impl PartialEq<Value> for Tree {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Tree::Null, Value::Null) => true,
            (Tree::Bool(a), Value::Bool(b)) => a == b,
            (Tree::Number(a), Value::Number(b)) => a == b,
            (Tree::String(a), Value::String(b)) => **a == **b,
            (Tree::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
            }
            (Tree::Object(a), Value::Object(b)) => {
                a.len() == b.len() && a.iter().all(|(k, v)| b.get(&**k).is_some_and(|w| v == w))
            }
            _ => false,
        }
    }
}

impl PartialEq<Tree> for Value {
    fn eq(&self, other: &Tree) -> bool {
        other == self
    }
}

impl PartialEq<str> for Tree {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == Some(other)
    }
}

impl PartialEq<&str> for Tree {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}

impl Index<&str> for Tree {
    type Output = Tree;

    /// The value at a mapping's key, `null` when there is none.
    fn index(&self, key: &str) -> &Tree {
        self.get(key).unwrap_or(&NULL)
    }
}

impl Index<usize> for Tree {
    type Output = Tree;

    /// A list's item, `null` when there is none.
    fn index(&self, at: usize) -> &Tree {
        self.as_array().and_then(|a| a.get(at)).unwrap_or(&NULL)
    }
}

impl From<Value> for Tree {
    fn from(value: Value) -> Tree {
        Tree::from(&value)
    }
}

impl From<&Value> for Tree {
    fn from(value: &Value) -> Tree {
        match value {
            Value::Null => Tree::Null,
            Value::Bool(b) => Tree::Bool(*b),
            Value::Number(n) => Tree::Number(n.clone()),
            Value::String(s) => Tree::string(s),
            Value::Array(items) => Tree::array(items.iter().map(Tree::from).collect()),
            Value::Object(map) => Tree::object(
                map.iter()
                    .map(|(k, v)| (Key::from(k.as_str()), Tree::from(v)))
                    .collect(),
            ),
        }
    }
}

impl From<&Tree> for Value {
    fn from(tree: &Tree) -> Value {
        match tree {
            Tree::Null => Value::Null,
            Tree::Bool(b) => Value::Bool(*b),
            Tree::Number(n) => Value::Number(n.clone()),
            Tree::String(s) => Value::String(s.to_string()),
            Tree::Array(items) => Value::Array(items.iter().map(Value::from).collect()),
            Tree::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.to_string(), Value::from(v)))
                    .collect(),
            ),
        }
    }
}

impl From<&str> for Tree {
    fn from(text: &str) -> Tree {
        Tree::string(text)
    }
}

impl From<String> for Tree {
    fn from(text: String) -> Tree {
        Tree::String(Arc::from(text))
    }
}

impl From<bool> for Tree {
    fn from(b: bool) -> Tree {
        Tree::Bool(b)
    }
}

impl Serialize for Tree {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Tree::Null => serializer.serialize_unit(),
            Tree::Bool(b) => serializer.serialize_bool(*b),
            Tree::Number(n) => n.serialize(serializer),
            Tree::String(s) => serializer.serialize_str(s),
            Tree::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items.iter() {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Tree::Object(map) => {
                let mut out = serializer.serialize_map(Some(map.len()))?;
                for (k, v) in map.iter() {
                    out.serialize_entry(&**k, v)?;
                }
                out.end()
            }
        }
    }
}

impl fmt::Debug for Tree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Compact JSON.
impl fmt::Display for Tree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn converts_both_ways_keeping_the_order_of_keys() {
        let value = json!({"b": [1, 2.5, "x", null, true], "a": {"z": {}, "y": []}});
        let tree = Tree::from(&value);
        assert_eq!(tree.to_value(), value);
        assert_eq!(tree, value);
        assert_eq!(tree.to_string(), value.to_string());
        assert_eq!(Tree::from(value.clone()), tree);
    }

    #[test]
    fn writing_copies_only_what_is_shared() {
        let original = Tree::from(json!({"a": {"b": 1}, "c": {"d": 2}}));
        let mut copy = original.clone();
        let a = copy.as_object_mut().and_then(|m| m.get_mut("a"));
        if let Some(a) = a.and_then(Tree::as_object_mut) {
            a.insert(Key::from("e"), Tree::Bool(true));
        }
        assert_eq!(original, json!({"a": {"b": 1}, "c": {"d": 2}}));
        assert_eq!(copy, json!({"a": {"b": 1, "e": true}, "c": {"d": 2}}));
        // What was not written is still the very same mapping.
        assert!(copy["c"].same(&original["c"]));
        assert!(!copy["a"].same(&original["a"]));
    }

    #[test]
    fn mappings_compare_regardless_of_order() {
        assert_eq!(
            Tree::from(json!({"a": 1, "b": 2})),
            Tree::from(json!({"b": 2, "a": 1}))
        );
        assert_eq!(Tree::from(json!({"a": 1}))["missing"], Tree::Null);
        assert_eq!(Tree::from(json!(["x"]))[0], "x");
    }
}
