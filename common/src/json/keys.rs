//! Sharing what the trees of one build have in common: map keys, and lists and maps written alike.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::{Json, Key};

/// What one build of [`super::Json`] trees has written so far: each distinct key is held once and
/// shared by every map that has it, and each list or map equal to one built before (the same items,
/// in the same order) is that one, shared. A fleet's facts differ in names, MACs and serials, and
/// are alike in the rest (the operating system, the CPU, a disk's model, the loopback interface):
/// those parts are held once for the fleet. Dropped with the build, so nothing a node made up
/// outlives it.
#[derive(Debug, Default)]
pub struct Keys {
    seen: HashSet<Arc<str>>,
    shared: HashSet<Shallow>,
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

    /// `value`, or the equal list or map built before it through these keys. Scalars are returned
    /// as they are. Lists and maps are compared with their items, which were shared first, by where
    /// they are held: so the lookup reads only `value`'s own items, never the tree below them.
    pub fn share(&mut self, value: Json) -> Json {
        if !matches!(value, Json::Array(_) | Json::Object(_)) {
            return value;
        }
        let value = Shallow(value);
        if let Some(held) = self.shared.get(&value) {
            return held.0.clone();
        }
        let out = value.0.clone();
        self.shared.insert(value);
        out
    }
}

/// A list or map as the sharing table holds it: hashed and compared by its own items, scalars by
/// value and lists or maps by address. Two trees equal under this comparison are equal as JSON
/// (the converse fails only for items not built through the same [`Keys`], which then are simply
/// not shared).
#[derive(Debug)]
struct Shallow(Json);

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
        match &self.0 {
            Json::Array(items) => {
                (0u8, items.len()).hash(h);
                items.iter().for_each(|item| hash_item(item, h));
            }
            Json::Object(m) => {
                (1u8, m.len()).hash(h);
                for (k, v) in m.iter() {
                    k.hash(h);
                    hash_item(v, h);
                }
            }
            other => hash_item(other, h),
        }
    }
}

impl PartialEq for Shallow {
    fn eq(&self, other: &Shallow) -> bool {
        match (&self.0, &other.0) {
            (Json::Array(a), Json::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| same_item(x, y))
            }
            (Json::Object(a), Json::Object(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b.iter())
                        .all(|((ka, va), (kb, vb))| ka == kb && same_item(va, vb))
            }
            (a, b) => same_item(a, b),
        }
    }
}

impl Eq for Shallow {}
