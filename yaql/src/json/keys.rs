//! Sharing what the trees of one build have in common: map keys, maps' key orders (their shapes), and
//! lists and maps written alike.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use foldhash::fast::RandomState;

use super::{Json, Key, Shape};

/// What one build of [`super::Json`] trees has written so far: each distinct key is held once and
/// shared by every map that has it, so is each order of keys (a map's shape), and each list or map
/// equal to one built before (the same items, in the same order) is that one, shared. A fleet's facts
/// differ in names, MACs and serials, and are alike in the rest (the operating system, the CPU, a
/// disk's model, the loopback interface): those parts are held once for the fleet. Dropped with the
/// build, so nothing a node made up outlives it.
#[derive(Debug, Default)]
pub struct Keys {
    seen: HashSet<Arc<str>, RandomState>,
    /// Shapes by where their keys are held: keys come from `seen`, so equal keys are one `Arc`
    /// (a key made elsewhere only misses the sharing). The shape holds its keys, so the addresses
    /// stay theirs while the table lives.
    shapes: HashMap<Box<[usize]>, Shape, RandomState>,
    shared: HashSet<Shallow, RandomState>,
    /// Hashes a list's or a map's own items, once, when it is looked up.
    items: RandomState,
    /// Reused to look a shape up without allocating.
    scratch: Vec<usize>,
}

/// Where a key is held.
fn key_addr(key: &Key) -> usize {
    Arc::as_ptr(key) as *const u8 as usize
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

    /// The shape of maps with these keys in this order (none twice), held once.
    pub(crate) fn shape(&mut self, names: Vec<Key>) -> Shape {
        self.scratch.clear();
        self.scratch.extend(names.iter().map(key_addr));
        if let Some(shape) = self.shapes.get(self.scratch.as_slice()) {
            return shape.clone();
        }
        let shape = Shape::new(names);
        self.shapes
            .insert(self.scratch.as_slice().into(), shape.clone());
        shape
    }

    /// `value`, or the equal list or map built before it through these keys. Scalars are returned
    /// as they are. Lists and maps are compared with their items, which were shared first, by where
    /// they are held: so the lookup reads only `value`'s own items, never the tree below them.
    pub fn share(&mut self, value: Json) -> Json {
        if !matches!(value, Json::Array(_) | Json::Object(_)) {
            return value;
        }
        let value = Shallow {
            hash: self.items.hash_one(Items(&value)),
            value,
        };
        if let Some(held) = self.shared.get(&value) {
            return held.value.clone();
        }
        let out = value.value.clone();
        self.shared.insert(value);
        out
    }
}

/// A list or map as the sharing table holds it: hashed and compared by its own items, scalars by
/// value and lists or maps by address, and a map's keys by its shape. Two trees equal under this
/// comparison are equal as JSON (the converse fails only for parts not built through the same
/// [`Keys`], which then are simply not shared).
///
/// Its hash is computed once and kept: the table rehashes every entry as it grows, which would
/// otherwise read each list and map again, all over the heap.
#[derive(Debug)]
struct Shallow {
    hash: u64,
    value: Json,
}

/// A list's or a map's own items, to hash.
struct Items<'v>(&'v Json);

/// An item's address, for lists and maps; `None` for a scalar.
fn addr(item: &Json) -> Option<usize> {
    match item {
        Json::Array(a) => Some(Arc::as_ptr(a) as *const () as usize),
        Json::Object(m) => Some(m.addr()),
        _ => None,
    }
}

fn hash_item<H: Hasher>(item: &Json, h: &mut H) {
    std::mem::discriminant(item).hash(h);
    match item {
        Json::Null => {}
        Json::Bool(b) => b.hash(h),
        Json::Number(n) => n.hash(h),
        Json::String(s) => s.as_str().hash(h),
        Json::Array(_) | Json::Object(_) => addr(item).hash(h),
    }
}

fn same_item(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Array(_) | Json::Object(_), _) => addr(a).is_some() && addr(a) == addr(b),
        _ => a == b,
    }
}

impl Hash for Shallow {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(self.hash);
    }
}

impl Hash for Items<'_> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        match self.0 {
            Json::Array(items) => {
                (0u8, items.len()).hash(h);
                items.iter().for_each(|item| hash_item(item, h));
            }
            Json::Object(m) => {
                (1u8, m.shape().addr()).hash(h);
                m.values().for_each(|v| hash_item(v, h));
            }
            other => hash_item(other, h),
        }
    }
}

impl PartialEq for Shallow {
    fn eq(&self, other: &Shallow) -> bool {
        if self.hash != other.hash {
            return false;
        }
        match (&self.value, &other.value) {
            (Json::Array(a), Json::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| same_item(x, y))
            }
            (Json::Object(a), Json::Object(b)) => {
                a.shape().same(b.shape())
                    && a.values().zip(b.values()).all(|(x, y)| same_item(x, y))
            }
            (a, b) => same_item(a, b),
        }
    }
}

impl Eq for Shallow {}
