//! Layering: which document is each child's parent, and the child's actions applied to its parent's data.
//!
//! Parents are found as Deckhand finds them: layer by layer from the highest, every document whose labels
//! hold all of a child's `parentSelector` pairs is counted as one of its parents; a parent in a nearer
//! layer takes the place of the one found before (which is then not counted). A child counting more than
//! one parent is an error; a child whose selector matches nothing keeps its own data. A selected parent
//! of another schema, or in a layer not above the child's, is an error.

use std::collections::HashMap;

use std::sync::Arc;

use crate::tree::{Map, Tree};

use foldhash::fast::RandomState;

use crate::document::{Document, Header};
use crate::error::RenderError;
use crate::path::{layering_path, write, Path, Walked, Write};
use crate::policy::LayerOrder;

/// Each document's parent (an index into `docs`), or none.
pub fn parents(
    docs: &[&Document],
    headers: &[Header<'_>],
    order: &LayerOrder,
) -> Result<Vec<Option<usize>>, RenderError> {
    // The children that could be selected by a label: (key, value) -> documents whose parentSelector
    // holds that pair.
    let selectors: Vec<&Map> = headers.iter().map(|h| h.parent_selector).collect();
    let mut by_pair: HashMap<(&str, Label<'_>), Vec<usize>, RandomState> = HashMap::default();
    for (child, selector) in selectors.iter().enumerate() {
        for (k, v) in selector.iter() {
            by_pair.entry((&**k, Label::of(v))).or_default().push(child);
        }
    }
    let layers: Vec<&str> = headers.iter().map(|h| h.layer).collect();
    let mut parent: Vec<Option<usize>> = vec![None; docs.len()];
    let mut count = vec![0usize; docs.len()];
    let mut candidates = Vec::new();
    for (rank, layer) in order.layers.iter().enumerate() {
        for (candidate, doc) in docs.iter().enumerate() {
            if layers[candidate] != layer {
                continue;
            }
            let labels = headers[candidate].labels;
            candidates.clear();
            for (k, v) in labels.iter() {
                if let Some(children) = by_pair.get(&(&**k, Label::of(v))) {
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
                if headers[child].schema != headers[candidate].schema {
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

/// A label's value as a key: its text when it is a string (as nearly all are), else its JSON.
#[derive(PartialEq, Eq, Hash)]
enum Label<'a> {
    Text(&'a str),
    Json(String),
}

impl<'a> Label<'a> {
    fn of(value: &'a Tree) -> Label<'a> {
        match value {
            Tree::String(s) => Label::Text(s),
            other => Label::Json(other.to_string()),
        }
    }
}

/// A layering action as written (borrowing the document's text).
#[derive(Debug, Clone)]
pub struct Action<'a> {
    /// `merge`, `replace` or `delete`.
    pub method: &'a str,
    /// The path as written.
    pub path: &'a str,
}

/// A child's actions, read from `metadata.layeringDefinition.actions` (absent or null: none).
pub fn actions<'a>(doc: &Document, written: &'a Tree) -> Result<Vec<Action<'a>>, RenderError> {
    let invalid = |field: String, reason: &str| RenderError::InvalidField {
        document: doc.reference(),
        field,
        reason: reason.to_string(),
    };
    let items = match written {
        Tree::Null => return Ok(Vec::new()),
        Tree::Array(items) => items,
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
            let method = item.get("method").and_then(Tree::as_str);
            let path = item.get("path").and_then(Tree::as_str);
            match (method, path) {
                (None, _) => Err(invalid(field("method"), "must be merge, replace or delete")),
                (_, None) => Err(invalid(field("path"), "must be a path such as .a.b")),
                (Some(method), Some(path)) => Ok(Action { method, path }),
            }
        })
        .collect()
}

/// Applies the child's actions to a copy of its parent's data, in order; returns the child's new data.
pub fn apply_actions(
    child: &Document,
    child_data: &Tree,
    parent: &Document,
    parent_data: &Tree,
    actions: &[Action<'_>],
) -> Result<Tree, RenderError> {
    let mut data = parent_data.clone();
    for (index, action) in actions.iter().enumerate() {
        let missing = |reason: &str| RenderError::MissingDocumentKey {
            document: child.reference(),
            parent: parent.reference(),
            method: action.method.to_string(),
            path: action.path.to_string(),
            reason: reason.to_string(),
        };
        if !matches!(action.method, "merge" | "replace" | "delete") {
            return Err(RenderError::UnsupportedActionMethod {
                document: child.reference(),
                index,
                method: action.method.to_string(),
            });
        }
        let normalized = layering_path(action.path);
        let path = Path::parse(&normalized).map_err(|reason| RenderError::InvalidField {
            document: child.reference(),
            field: format!("metadata.layeringDefinition.actions[{index}].path"),
            reason,
        })?;
        let put = |data: &mut Tree, value: Tree| {
            write(
                data,
                &path,
                value,
                Write {
                    pattern: None,
                    pattern_text: "",
                    recurse: None,
                },
                // Actions delete and merge too: each write walks its whole path.
                &mut Walked::default(),
            )
            .map_err(|reason| missing(&reason))
        };
        match action.method {
            "delete" => {
                if normalized == "." {
                    data = Tree::empty_object();
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
                match (path.get(&data).is_some_and(Tree::is_object), from_child) {
                    (true, Tree::Object(theirs)) => {
                        // Merged in place: only the mappings the child changes are copied.
                        if let Tree::Object(ours) =
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

/// Deckhand's merge: mapping into mapping key by key, recursively; anything else is replaced. What
/// the child gives is shared, not copied; a mapping of the target is copied only when it changes.
fn deep_merge_from(target: &mut Arc<Map>, child: &Map) {
    for (k, v) in child {
        if target.get(k).is_some_and(|ours| ours.same(v)) {
            continue;
        }
        let target = Arc::make_mut(target);
        match (target.get_mut(k), v) {
            (Some(Tree::Object(ours)), Tree::Object(theirs)) => deep_merge_from(ours, theirs),
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
pub fn deep_delete(target: &Tree, data: &mut Tree) -> bool {
    if data == target {
        return false;
    }
    delete_within(target, data)
}

fn delete_within(target: &Tree, container: &mut Tree) -> bool {
    match container {
        Tree::Object(map) => match first_holding(map.values(), target) {
            Some((at, true)) => {
                Arc::make_mut(map).shift_remove_index(at);
                true
            }
            Some((at, false)) => Arc::make_mut(map)
                .get_index_mut(at)
                .is_some_and(|(_, v)| delete_within(target, v)),
            None => false,
        },
        Tree::Array(items) => match first_holding(items.iter(), target) {
            Some((at, true)) => {
                Arc::make_mut(items).remove(at);
                true
            }
            Some((at, false)) => Arc::make_mut(items)
                .get_mut(at)
                .is_some_and(|v| delete_within(target, v)),
            None => false,
        },
        _ => false,
    }
}

/// Where the first value equal to `target` is, searching depth first: the position of the value that is
/// it (`true`) or that holds it somewhere below (`false`).
fn first_holding<'a>(
    values: impl Iterator<Item = &'a Tree>,
    target: &Tree,
) -> Option<(usize, bool)> {
    values.enumerate().find_map(|(at, v)| {
        if v == target {
            Some((at, true))
        } else {
            holds(v, target).then_some((at, false))
        }
    })
}

/// Whether a value equal to `target` lies below `container`.
fn holds(container: &Tree, target: &Tree) -> bool {
    match container {
        Tree::Object(map) => map.values().any(|v| v == target || holds(v, target)),
        Tree::Array(items) => items.iter().any(|v| v == target || holds(v, target)),
        _ => false,
    }
}
