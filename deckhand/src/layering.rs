//! Layering: which document is each child's parent, and the child's actions applied to its parent's data.
//!
//! Parents are found as Deckhand finds them: layer by layer from the highest, every document whose labels
//! hold all of a child's `parentSelector` pairs is counted as one of its parents; a parent in a nearer
//! layer takes the place of the one found before (which is then not counted). A child counting more than
//! one parent is an error; a child whose selector matches nothing keeps its own data. A selected parent
//! of another schema, or in a layer not above the child's, is an error.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::document::Document;
use crate::error::RenderError;
use crate::path::{layering_path, write, Path, Write};
use crate::policy::LayerOrder;

/// Each document's parent (an index into `docs`), or none.
pub fn parents(docs: &[&Document], order: &LayerOrder) -> Result<Vec<Option<usize>>, RenderError> {
    // The children that could be selected by a label: (key, value) -> documents whose parentSelector
    // holds that pair.
    let selectors: Vec<&Map<String, Value>> = docs.iter().map(|d| d.parent_selector()).collect();
    let mut by_pair: HashMap<(&str, String), Vec<usize>> = HashMap::new();
    for (child, selector) in selectors.iter().enumerate() {
        for (k, v) in selector.iter() {
            by_pair
                .entry((k.as_str(), v.to_string()))
                .or_default()
                .push(child);
        }
    }
    let layers: Vec<&str> = docs.iter().map(|d| d.layer()).collect();
    let mut parent: Vec<Option<usize>> = vec![None; docs.len()];
    let mut count = vec![0usize; docs.len()];
    let mut candidates = Vec::new();
    for (rank, layer) in order.layers.iter().enumerate() {
        for (candidate, doc) in docs.iter().enumerate() {
            if layers[candidate] != layer {
                continue;
            }
            let labels = doc.labels();
            candidates.clear();
            for (k, v) in labels.iter() {
                if let Some(children) = by_pair.get(&(k.as_str(), v.to_string())) {
                    candidates.extend_from_slice(children);
                }
            }
            candidates.sort_unstable();
            candidates.dedup();
            for &child in &candidates {
                let other = docs[child];
                if child == candidate
                    || !selectors[child]
                        .iter()
                        .all(|(k, v)| labels.get(k) == Some(v))
                {
                    continue;
                }
                if other.schema() != doc.schema() {
                    return Err(RenderError::InvalidDocumentParent {
                        document: other.reference(),
                        parent: doc.reference(),
                        reason: "the child's parentSelector selects it, but their schemas differ"
                            .to_string(),
                    });
                }
                let child_rank = order.rank(layers[child]);
                if child_rank.is_none_or(|c| rank >= c) {
                    return Err(RenderError::InvalidDocumentParent {
                        document: other.reference(),
                        parent: doc.reference(),
                        reason: format!(
                            "the child's layer {:?} must be lower than the parent's layer {layer:?} in the \
                             layerOrder ({})",
                            layers[child],
                            order.layers.join(", ")
                        ),
                    });
                }
                count[child] += 1;
                match parent[child] {
                    Some(current) => {
                        let current_rank = order.rank(layers[current]).unwrap_or(0);
                        if rank > current_rank {
                            parent[child] = Some(candidate);
                            count[child] -= 1;
                        }
                    }
                    None => parent[child] = Some(candidate),
                }
            }
        }
    }
    let top = order.layers.first().map(String::as_str);
    for (child, doc) in docs.iter().enumerate() {
        if layers[child].is_empty() || Some(layers[child]) == top {
            continue;
        }
        if count[child] > 1 {
            return Err(RenderError::IndeterminateDocumentParent {
                document: doc.reference(),
                found: count[child],
            });
        }
    }
    Ok(parent)
}

/// A layering action as written.
#[derive(Debug, Clone)]
pub struct Action {
    /// `merge`, `replace` or `delete`.
    pub method: String,
    /// The path as written.
    pub path: String,
}

/// A child's actions, read from `metadata.layeringDefinition.actions` (absent or null: none).
pub fn actions(doc: &Document) -> Result<Vec<Action>, RenderError> {
    let invalid = |field: String, reason: &str| RenderError::InvalidField {
        document: doc.reference(),
        field,
        reason: reason.to_string(),
    };
    let items = match doc.actions() {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        _ => {
            return Err(invalid(
                "metadata.layeringDefinition.actions".into(),
                "must be a list of {method, path}",
            ))
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(n, item)| {
            let field = |f: &str| format!("metadata.layeringDefinition.actions[{n}].{f}");
            let method = item.get("method").and_then(Value::as_str);
            let path = item.get("path").and_then(Value::as_str);
            match (method, path) {
                (None, _) => Err(invalid(field("method"), "must be merge, replace or delete")),
                (_, None) => Err(invalid(field("path"), "must be a path such as .a.b")),
                (Some(method), Some(path)) => Ok(Action {
                    method: method.to_string(),
                    path: path.to_string(),
                }),
            }
        })
        .collect()
}

/// Applies the child's actions to a copy of its parent's data, in order; returns the child's new data.
pub fn apply_actions(
    child: &Document,
    child_data: &Value,
    parent: &Document,
    parent_data: &Value,
    actions: &[Action],
) -> Result<Value, RenderError> {
    let mut data = parent_data.clone();
    for (index, action) in actions.iter().enumerate() {
        let missing = |reason: &str| RenderError::MissingDocumentKey {
            document: child.reference(),
            parent: parent.reference(),
            method: action.method.clone(),
            path: action.path.clone(),
            reason: reason.to_string(),
        };
        if !matches!(action.method.as_str(), "merge" | "replace" | "delete") {
            return Err(RenderError::UnsupportedActionMethod {
                document: child.reference(),
                index,
                method: action.method.clone(),
            });
        }
        let normalized = layering_path(&action.path);
        let path = Path::parse(&normalized).map_err(|reason| RenderError::InvalidField {
            document: child.reference(),
            field: format!("metadata.layeringDefinition.actions[{index}].path"),
            reason,
        })?;
        let put = |data: &mut Value, value: Value| {
            write(
                data,
                &path,
                value,
                Write {
                    pattern: None,
                    pattern_text: "",
                    recurse: None,
                },
            )
            .map(drop)
            .map_err(|reason| missing(&reason))
        };
        match action.method.as_str() {
            "delete" => {
                if normalized == "." {
                    data = Value::Object(Map::new());
                } else {
                    let target = path
                        .get(&data)
                        .ok_or_else(|| missing("the parent's data has nothing at this path"))?
                        .clone();
                    deep_delete(&target, &mut data);
                }
            }
            "merge" => {
                let from_child = path
                    .get(child_data)
                    .ok_or_else(|| missing("the child's data has nothing at this path"))?;
                match (path.get(&data).is_some_and(Value::is_object), from_child) {
                    (true, Value::Object(theirs)) => {
                        // Merged in place: only what the child adds is copied.
                        if let Value::Object(ours) =
                            path.place(&mut data).map_err(|r| missing(&r))?
                        {
                            deep_merge_from(ours, theirs);
                        }
                    }
                    (_, from_child) => put(&mut data, from_child.clone())?,
                }
            }
            _ => {
                let from_child = path
                    .get(child_data)
                    .ok_or_else(|| missing("the child's data has nothing at this path"))?
                    .clone();
                put(&mut data, from_child)?;
            }
        }
    }
    Ok(data)
}

/// Deckhand's merge: mapping into mapping key by key, recursively; anything else is replaced. The
/// child's values are copied as they are inserted.
fn deep_merge_from(target: &mut Map<String, Value>, child: &Map<String, Value>) {
    for (k, v) in child {
        match (target.get_mut(k), v) {
            (Some(Value::Object(ours)), Value::Object(theirs)) => deep_merge_from(ours, theirs),
            (Some(slot), v) => *slot = v.clone(),
            (None, v) => {
                target.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Deckhand's delete: the first value equal to `target`, searching the data depth first (a mapping's
/// values in order, a list's items in order), is removed from its mapping or list. The whole data is
/// never removed this way.
pub fn deep_delete(target: &Value, data: &mut Value) -> bool {
    if data == target {
        return false;
    }
    delete_within(target, data)
}

fn delete_within(target: &Value, container: &mut Value) -> bool {
    match container {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                if map.get(&key) == Some(target) {
                    let first = map
                        .iter()
                        .find(|(_, v)| *v == target)
                        .map(|(k, _)| k.clone());
                    if let Some(first) = first {
                        map.shift_remove(&first);
                    }
                    return true;
                }
                if let Some(child) = map.get_mut(&key) {
                    if delete_within(target, child) {
                        return true;
                    }
                }
            }
            false
        }
        Value::Array(items) => {
            for at in 0..items.len() {
                if items[at] == *target {
                    items.remove(at);
                    return true;
                }
                if delete_within(target, &mut items[at]) {
                    return true;
                }
            }
            false
        }
        _ => false,
    }
}
