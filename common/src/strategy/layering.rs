//! Deckhand's layering of a site design, as far as a strategy needs it: the concrete documents of a stream,
//! each child layered onto its parent (`layeringDefinition.parentSelector`) with the `merge`, `replace` and
//! `delete` actions on `data` paths, `replacement: true` documents taking the place of the parent of the
//! same schema and name, and where every rendered document came from. Substitution from secrets is not
//! done: a document that asks for it is refused with a message saying so.

use std::fmt;

use serde_json::{Map, Value};

/// A document as read, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct SourcedDoc {
    /// The document.
    pub value: Value,
    /// Where it is.
    pub origin: Origin,
}

/// Where a document is: its file (empty for an unnamed text), its position in that file and its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file's name as given (empty for text without a name).
    pub file: String,
    /// 1-based position of the document in its file.
    pub index: usize,
    /// The line the document starts on.
    pub line: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.file.is_empty() {
            write!(f, "document {} (line {})", self.index, self.line)
        } else {
            write!(
                f,
                "{} document {} (line {})",
                self.file, self.index, self.line
            )
        }
    }
}

/// A concrete document after layering, with a sentence saying where its data came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The document: the child's envelope and metadata, with the layered `data`.
    pub value: Value,
    /// Where the document itself is.
    pub origin: Origin,
    /// Where its data came from, in words.
    pub provenance: String,
    /// When the document or one of its parents asks for substitutions, which Plinth does not render: the
    /// sentence saying so. Such a document's data is not usable as it is.
    pub unrendered: Option<String>,
}

const LAYERING_POLICY: &str = "deckhand/LayeringPolicy/v1";
const DEFAULT_LAYERS: &[&str] = &["global", "region", "site"];

fn text<'a>(doc: &'a Value, pointer: &str) -> Option<&'a str> {
    doc.pointer(pointer).and_then(Value::as_str)
}

fn label(doc: &SourcedDoc) -> String {
    format!(
        "{} {:?} ({})",
        text(&doc.value, "/schema").unwrap_or("(no schema)"),
        text(&doc.value, "/metadata/name").unwrap_or("(unnamed)"),
        doc.origin
    )
}

/// Renders the concrete documents of a stream: abstract documents and replaced parents are left out, every
/// child is layered onto its parent. The order of the stream is kept.
pub fn render(docs: &[SourcedDoc]) -> Result<Vec<Rendered>, String> {
    let layers = layer_order(docs)?;
    let substitutes = |doc: &SourcedDoc| {
        doc.value
            .pointer("/metadata/substitutions")
            .and_then(Value::as_array)
            .is_some_and(|s| !s.is_empty())
    };
    let layer_of = |doc: &SourcedDoc| -> Result<Option<usize>, String> {
        match doc.value.pointer("/metadata/layeringDefinition/layer") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(layer)) => layers
                .iter()
                .position(|l| l == layer)
                .map(Some)
                .ok_or_else(|| {
                    format!(
                        "{}: layer {layer:?} is not in the layer order ({})",
                        label(doc),
                        layers.join(", ")
                    )
                }),
            Some(other) => Err(format!(
                "{}: metadata.layeringDefinition.layer must be a string, found {other}",
                label(doc)
            )),
        }
    };
    let parents: Vec<Option<usize>> = docs
        .iter()
        .enumerate()
        .map(|(index, _)| parent_of(docs, index, &layer_of))
        .collect::<Result<_, _>>()?;
    let mut replaced = vec![false; docs.len()];
    for (index, doc) in docs.iter().enumerate() {
        if doc.value.pointer("/metadata/replacement") == Some(&Value::Bool(true)) {
            let parent = parents[index].ok_or_else(|| {
                format!(
                    "{} says `replacement: true` but has no parent (a `parentSelector` matching a document of \
                     the same schema and name in a higher layer)",
                    label(doc)
                )
            })?;
            let same = |p: &str| text(&docs[parent].value, p) == text(&doc.value, p);
            if !same("/schema") || !same("/metadata/name") {
                return Err(format!(
                    "{} says `replacement: true`, but its parent {} has another schema or name; a replacement \
                     must have the schema and name of the document it replaces",
                    label(doc),
                    label(&docs[parent])
                ));
            }
            replaced[parent] = true;
        }
    }
    let mut out = Vec::new();
    for (index, doc) in docs.iter().enumerate() {
        let schema = text(&doc.value, "/schema").unwrap_or("");
        let is_abstract =
            doc.value.pointer("/metadata/layeringDefinition/abstract") == Some(&Value::Bool(true));
        if is_abstract || replaced[index] || schema == LAYERING_POLICY {
            continue;
        }
        let (data, provenance) = layered_data(docs, &parents, index, 0)?;
        let mut lineage = Some(index);
        let mut asking = None;
        let mut steps = 0;
        while let (Some(at), None) = (lineage, asking) {
            if substitutes(&docs[at]) {
                asking = Some(at);
            }
            lineage = parents[at];
            steps += 1;
            if steps > docs.len() {
                break;
            }
        }
        let unrendered = asking.map(|at| {
            format!(
                "{} asks for substitutions (values from secrets or other documents); Plinth does not render \
                 substitutions: render the site with Deckhand first, or write the values in the document",
                label(&docs[at])
            )
        });
        let mut value = doc.value.clone();
        if let Some(map) = value.as_object_mut() {
            map.insert("data".to_string(), data);
        }
        out.push(Rendered {
            value,
            origin: doc.origin.clone(),
            provenance,
            unrendered,
        });
    }
    Ok(out)
}

/// The layer order: the stream's LayeringPolicy's `data.layerOrder`, else `global, region, site`.
fn layer_order(docs: &[SourcedDoc]) -> Result<Vec<String>, String> {
    let policies: Vec<&SourcedDoc> = docs
        .iter()
        .filter(|d| text(&d.value, "/schema") == Some(LAYERING_POLICY))
        .collect();
    match policies.as_slice() {
        [] => Ok(DEFAULT_LAYERS.iter().map(|l| l.to_string()).collect()),
        [policy] => match policy.value.pointer("/data/layerOrder") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_str().map(str::to_string).ok_or_else(|| {
                        format!("{}: data.layerOrder must list layer names", label(policy))
                    })
                })
                .collect(),
            _ => Err(format!(
                "{}: data.layerOrder (a list of layer names) is missing",
                label(policy)
            )),
        },
        several => Err(format!(
            "the stream holds {} layering policies ({}); give one",
            several.len(),
            several
                .iter()
                .map(|p| p.origin.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The document `index`'s parent: the document of the same schema in a higher layer whose labels hold every
/// pair of its `parentSelector` (the nearest layer wins; two candidates there are an error).
fn parent_of(
    docs: &[SourcedDoc],
    index: usize,
    layer_of: &dyn Fn(&SourcedDoc) -> Result<Option<usize>, String>,
) -> Result<Option<usize>, String> {
    let doc = &docs[index];
    let selector = match doc
        .value
        .pointer("/metadata/layeringDefinition/parentSelector")
    {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(selector)) if !selector.is_empty() => selector,
        Some(_) => {
            return Err(format!(
                "{}: parentSelector must be a mapping of label: value pairs",
                label(doc)
            ))
        }
    };
    let Some(own_layer) = layer_of(doc)? else {
        return Err(format!(
            "{} has a parentSelector but no metadata.layeringDefinition.layer",
            label(doc)
        ));
    };
    let schema = text(&doc.value, "/schema");
    let mut best: Option<(usize, usize)> = None;
    let mut tie = None;
    for (other, candidate) in docs.iter().enumerate() {
        if other == index || text(&candidate.value, "/schema") != schema {
            continue;
        }
        let Some(layer) = layer_of(candidate)? else {
            continue;
        };
        if layer >= own_layer {
            continue;
        }
        let labels = candidate.value.pointer("/metadata/labels");
        let matches = selector
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
        if !matches {
            continue;
        }
        match best {
            Some((_, best_layer)) if best_layer > layer => {}
            Some((_, best_layer)) if best_layer == layer => tie = Some(other),
            _ => {
                best = Some((other, layer));
                tie = None;
            }
        }
    }
    if let (Some((first, _)), Some(second)) = (best, tie) {
        return Err(format!(
            "{}: its parentSelector matches two documents in the same layer: {} and {}",
            label(doc),
            label(&docs[first]),
            label(&docs[second])
        ));
    }
    match best {
        Some((parent, _)) => Ok(Some(parent)),
        None => Err(format!(
            "{}: no document of schema {} in a higher layer has the labels of its parentSelector ({})",
            label(doc),
            schema.unwrap_or("(none)"),
            Value::Object(selector.clone())
        )),
    }
}

/// The document's data after layering onto its ancestors, and the sentence saying where it came from.
fn layered_data(
    docs: &[SourcedDoc],
    parents: &[Option<usize>],
    index: usize,
    depth: usize,
) -> Result<(Value, String), String> {
    let doc = &docs[index];
    let own = doc.value.get("data").cloned().unwrap_or(Value::Null);
    let layer = text(&doc.value, "/metadata/layeringDefinition/layer").unwrap_or("no layer");
    let Some(parent) = parents[index] else {
        return Ok((own, format!("{} ({layer} layer)", doc.origin)));
    };
    if depth > docs.len() {
        return Err(format!("{}: its parents form a cycle", label(doc)));
    }
    let (mut data, parent_story) = layered_data(docs, parents, parent, depth + 1)?;
    let actions = match doc.value.pointer("/metadata/layeringDefinition/actions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(actions)) => actions.clone(),
        Some(_) => {
            return Err(format!(
                "{}: layeringDefinition.actions must be a list",
                label(doc)
            ))
        }
    };
    let mut done = Vec::new();
    for (position, action) in actions.iter().enumerate() {
        let method = action.get("method").and_then(Value::as_str);
        let path = action.get("path").and_then(Value::as_str);
        let (Some(method), Some(path)) = (method, path) else {
            return Err(format!(
                "{}: layeringDefinition.actions[{position}] needs `method` (merge, replace or delete) and `path`",
                label(doc)
            ));
        };
        let segments = parse_path(path).map_err(|e| {
            format!(
                "{}: layeringDefinition.actions[{position}].path {path:?}: {e}",
                label(doc)
            )
        })?;
        let fail = |what: &str| {
            format!(
                "{}: layeringDefinition.actions[{position}] ({method} {path}): {what}",
                label(doc)
            )
        };
        match method {
            "replace" | "merge" => {
                let child = get(&own, &segments)
                    .ok_or_else(|| fail("the document has no data at this path"))?
                    .clone();
                let slot = get_mut_or_create(&mut data, &segments)
                    .ok_or_else(|| fail("the parent's data has no place at this path"))?;
                if method == "replace" {
                    *slot = child;
                } else {
                    deep_merge(slot, child);
                }
            }
            "delete" => {
                if !delete(&mut data, &segments) {
                    return Err(fail("the parent's data has nothing at this path"));
                }
            }
            other => {
                return Err(fail(&format!(
                    "unknown method {other:?}; expected merge, replace or delete"
                )))
            }
        }
        done.push(format!("{method} {path}"));
    }
    let how = if done.is_empty() {
        "no actions: the parent's data as is".to_string()
    } else {
        done.join(", ")
    };
    let replacing = if doc.value.pointer("/metadata/replacement") == Some(&Value::Bool(true)) {
        "replacing"
    } else {
        "layered onto"
    };
    Ok((
        data,
        format!(
            "{} ({layer} layer; {how}), {replacing} {}",
            doc.origin, parent_story
        ),
    ))
}

/// One step of a data path.
#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// Deckhand's paths: `.` is the whole data; `.a.b[0].c` steps into mappings and lists.
fn parse_path(path: &str) -> Result<Vec<Segment>, String> {
    let rest = path
        .strip_prefix('.')
        .ok_or("a path starts with `.` (`.` alone is the whole data)")?;
    let mut segments = Vec::new();
    if rest.is_empty() {
        return Ok(segments);
    }
    for part in rest.split('.') {
        let (key, mut tail) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if key.is_empty() && tail.is_empty() {
            return Err("an empty step".to_string());
        }
        if !key.is_empty() {
            segments.push(Segment::Key(key.to_string()));
        }
        while let Some(inner) = tail.strip_prefix('[') {
            let end = inner.find(']').ok_or("an unclosed `[`")?;
            let index = inner[..end]
                .parse::<usize>()
                .map_err(|_| format!("{:?} is not a list position", &inner[..end]))?;
            segments.push(Segment::Index(index));
            tail = &inner[end + 1..];
        }
        if !tail.is_empty() {
            return Err(format!("unexpected {tail:?}"));
        }
    }
    Ok(segments)
}

fn get<'a>(value: &'a Value, path: &[Segment]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, s| match s {
        Segment::Key(k) => v.get(k),
        Segment::Index(i) => v.get(i),
    })
}

/// The place at `path`, creating missing mapping entries on the way (a merge or replace may add data).
fn get_mut_or_create<'a>(value: &'a mut Value, path: &[Segment]) -> Option<&'a mut Value> {
    let mut current = value;
    for segment in path {
        current = match segment {
            Segment::Key(k) => {
                if current.is_null() {
                    *current = Value::Object(Map::new());
                }
                current
                    .as_object_mut()?
                    .entry(k.clone())
                    .or_insert(Value::Null)
            }
            Segment::Index(i) => current.as_array_mut()?.get_mut(*i)?,
        };
    }
    Some(current)
}

fn delete(value: &mut Value, path: &[Segment]) -> bool {
    let Some((last, parent_path)) = path.split_last() else {
        *value = Value::Object(Map::new());
        return true;
    };
    let Some(parent) = get_mut_or_create_existing(value, parent_path) else {
        return false;
    };
    match (last, parent) {
        (Segment::Key(k), Value::Object(map)) => map.remove(k).is_some(),
        (Segment::Index(i), Value::Array(items)) if *i < items.len() => {
            items.remove(*i);
            true
        }
        _ => false,
    }
}

fn get_mut_or_create_existing<'a>(value: &'a mut Value, path: &[Segment]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |v, s| match s {
        Segment::Key(k) => v.get_mut(k),
        Segment::Index(i) => v.get_mut(*i),
    })
}

/// Deckhand's merge: mappings merge key by key, recursively; anything else (lists included) is replaced by
/// the child's value.
fn deep_merge(target: &mut Value, child: Value) {
    match (target, child) {
        (Value::Object(target), Value::Object(child)) => {
            for (k, v) in child {
                match target.get_mut(&k) {
                    Some(existing) => deep_merge(existing, v),
                    None => {
                        target.insert(k, v);
                    }
                }
            }
        }
        (target, child) => *target = child,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(value: Value, index: usize) -> SourcedDoc {
        SourcedDoc {
            value,
            origin: Origin {
                file: "f.yaml".into(),
                index,
                line: 1,
            },
        }
    }

    fn global() -> Value {
        json!({"schema": "s/S/v1", "metadata": {"name": "n", "labels": {"k": "g"},
               "layeringDefinition": {"layer": "global"}},
               "data": {"a": {"x": 1, "y": [1, 2]}, "b": 2, "c": 3}})
    }

    fn site(actions: Value, replacement: bool, data: Value) -> Value {
        json!({"schema": "s/S/v1", "metadata": {"name": "n", "replacement": replacement,
               "layeringDefinition": {"layer": "site", "parentSelector": {"k": "g"}, "actions": actions}},
               "data": data})
    }

    #[test]
    fn merge_replace_delete_on_paths() {
        let child = site(
            json!([{"method": "merge", "path": ".a"}, {"method": "replace", "path": ".b"},
                   {"method": "delete", "path": ".c"}]),
            true,
            json!({"a": {"y": [3], "z": 4}, "b": 20}),
        );
        let out = render(&[doc(global(), 1), doc(child, 2)]).unwrap();
        assert_eq!(out.len(), 1, "the replaced global document is gone");
        assert_eq!(
            out[0].value["data"],
            json!({"a": {"x": 1, "y": [3], "z": 4}, "b": 20})
        );
        assert!(
            out[0]
                .provenance
                .contains("merge .a, replace .b, delete .c"),
            "{}",
            out[0].provenance
        );
        assert!(out[0].provenance.contains("replacing f.yaml document 1"));
    }

    #[test]
    fn abstract_documents_and_children_without_replacement() {
        let mut parent = global();
        parent["metadata"]["layeringDefinition"]["abstract"] = json!(true);
        let mut child = site(
            json!([{"method": "replace", "path": "."}]),
            false,
            json!({"b": 9}),
        );
        child["metadata"]["name"] = json!("other");
        let out = render(&[doc(parent, 1), doc(child, 2)]).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].value["data"], json!({"b": 9}));
    }

    #[test]
    fn refusals_say_why() {
        let mut subs = global();
        subs["metadata"]["substitutions"] = json!([{"src": {"schema": "deckhand/Passphrase/v1"}}]);
        let out = render(&[doc(subs, 1)]).unwrap();
        let e = out[0].unrendered.as_deref().unwrap();
        assert!(e.contains("does not render substitutions"), "{e}");
        let orphan = site(json!([]), true, json!({}));
        let e = render(&[doc(orphan, 1)]).unwrap_err();
        assert!(e.contains("no document of schema s/S/v1"), "{e}");
        let mut renamed = site(json!([]), true, json!({}));
        renamed["metadata"]["name"] = json!("m");
        let e = render(&[doc(global(), 1), doc(renamed, 2)]).unwrap_err();
        assert!(
            e.contains("schema and name of the document it replaces"),
            "{e}"
        );
        let bad = site(json!([{"method": "merge", "path": ".q"}]), false, json!({}));
        let e = render(&[doc(global(), 1), doc(bad, 2)]).unwrap_err();
        assert!(e.contains("no data at this path"), "{e}");
        assert!(parse_path("a").is_err());
        assert_eq!(
            parse_path(".a[1].b").unwrap(),
            [
                Segment::Key("a".into()),
                Segment::Index(1),
                Segment::Key("b".into())
            ]
        );
    }
}
