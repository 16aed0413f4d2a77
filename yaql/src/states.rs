//! The states the deployment helpers read: the current one and the last deployed one, each given
//! whole or as two layers (the cluster part and the node's keys over it), read without merging.

use std::rc::Rc;

use crate::ast::Node;
use crate::json::Json as J;
use crate::memo::json_get_at;
use crate::value::{json_get, Value};

/// The deployment helpers' view of the states.
#[derive(Debug, Clone)]
pub struct States<'a> {
    /// The current state (`$` at the top of the evaluation).
    pub new: Option<Value<'a>>,
    /// The last deployed state, if any.
    pub old: Option<Value<'a>>,
    /// Forced deployment: everything counts as changed.
    pub forced: bool,
}

/// A JSON object.
pub type Map = crate::json::Object;

/// A state given as two layers: the cluster part and the node's keys over it. Nothing is merged
/// unless an expression needs the whole state as one value.
#[derive(Debug, Clone, Copy)]
pub struct Layers<'a> {
    /// The current state: (cluster part, node part).
    pub new: (&'a Map, &'a Map),
    /// The last deployed state, if any, as two layers.
    pub old: Option<(&'a Map, &'a Map)>,
    /// Whether the current and last cluster parts agree on every key that is not one of the
    /// node's own (listed), when known.
    pub same_outside: Option<(bool, &'a [String])>,
}

/// Looks a key up in two layers, the top first.
#[inline]
pub fn layered_get<'a>((base, top): (&'a Map, &'a Map), key: &str) -> Option<&'a J> {
    json_get(top, key).or_else(|| json_get(base, key))
}

/// [`layered_get`] for the constant key of node `at` (large layers read where the key was
/// found last: see `memo`).
#[inline]
pub(crate) fn layered_get_at<'a>(
    (base, top): (&'a Map, &'a Map),
    key: &str,
    at: Node<'_>,
) -> Option<&'a J> {
    json_get_at(top, key, at).or_else(|| json_get_at(base, key, at))
}

/// Two layers merged into one dictionary value.
pub fn merge_layers<'a>((base, top): (&'a Map, &'a Map)) -> Value<'a> {
    let mut out: indexmap::IndexMap<Value<'a>, Value<'a>> =
        indexmap::IndexMap::with_capacity(base.len() + top.len());
    for (k, v) in base.iter().chain(top.iter()) {
        out.insert(Value::Text(k), Value::from_json(v));
    }
    Value::Dict(Rc::new(out))
}

/// A state root a deployment helper binds `$` to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateRoot {
    /// The current state.
    New,
    /// The last deployed state.
    Old,
}
