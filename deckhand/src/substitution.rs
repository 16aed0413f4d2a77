//! Substitution: `metadata.substitutions` read, and each one done as Deckhand does it: the source is the
//! concrete document of that schema and name (its replacement when it is replaced), its value at
//! `src.path` (its whole data when the data is not a mapping), optionally cut by `src.pattern` and
//! `src.match_group`, written at each `dest.path` (in place, or replacing `dest.pattern`, or with `recurse`
//! inside every string below).

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use foldhash::fast::RandomState;
use smallvec::SmallVec;

use regex::Regex;

use crate::document::Document;
use crate::error::RenderError;
use crate::path::{write, Path, Pattern, Walked, Write};
use crate::render::Warning;
use crate::tree::Tree;

/// One substitution as written (borrowing the document's text).
#[derive(Debug, Clone)]
pub struct Substitution<'a> {
    /// `src.schema`.
    pub src_schema: &'a str,
    /// `src.name`.
    pub src_name: &'a str,
    /// `src.path`.
    pub src_path: &'a str,
    /// `src.pattern`: a regular expression searched in the source value.
    pub src_pattern: Option<&'a str>,
    /// `src.match_group`: the group of `src.pattern` taken (0: the whole match).
    pub match_group: usize,
    /// `dest`, one or a list (held in place when one).
    pub dests: SmallVec<[Dest<'a>; 1]>,
    /// The source document (an index of the renderer's), once resolved.
    pub source: Option<usize>,
}

/// One destination of a substitution.
#[derive(Debug, Clone)]
pub struct Dest<'a> {
    /// `dest.path`.
    pub path: &'a Arc<str>,
    /// `dest.pattern`.
    pub pattern: Option<&'a str>,
    /// `dest.recurse.depth` when `recurse` is given (`-1` when it has no depth).
    pub recurse: Option<i64>,
}

/// The document's substitutions (absent, null or empty: none).
pub fn read<'a>(doc: &Document, written: &'a Tree) -> Result<Vec<Substitution<'a>>, RenderError> {
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
                "metadata.substitutions".into(),
                "must be a list of {src, dest}",
            ))
        }
    };
    let mut subs = Vec::with_capacity(items.len());
    for (n, item) in items.iter().enumerate() {
        let field = |f: &str| format!("metadata.substitutions[{n}].{f}");
        let text = |v: Option<&'a Tree>, f: &str| -> Result<&'a str, RenderError> {
            v.and_then(Tree::as_str)
                .ok_or_else(|| invalid(field(f), "must be a string"))
        };
        // Each mapping's keys read in one pass.
        let (mut src, mut dest) = (None, None);
        for (k, v) in item.as_object().into_iter().flatten() {
            match k.as_str() {
                "src" => src = Some(v),
                "dest" => dest = Some(v),
                _ => {}
            }
        }
        let (mut src_schema, mut src_name, mut src_path, mut src_pattern, mut src_group) =
            (None, None, None, None, None);
        for (k, v) in src.and_then(Tree::as_object).into_iter().flatten() {
            match k.as_str() {
                "schema" => src_schema = Some(v),
                "name" => src_name = Some(v),
                "path" => src_path = Some(v),
                "pattern" => src_pattern = Some(v),
                "match_group" => src_group = Some(v),
                _ => {}
            }
        }
        let src_pattern = match src_pattern {
            None | Some(Tree::Null) => None,
            Some(Tree::String(p)) => Some(&**p),
            Some(_) => return Err(invalid(field("src.pattern"), "must be a string")),
        };
        let match_group = match src_group {
            None | Some(Tree::Null) => 0,
            Some(v) => v
                .as_u64()
                .and_then(|g| usize::try_from(g).ok())
                .ok_or_else(|| invalid(field("src.match_group"), "must be a group number"))?,
        };
        let dest_items: &'a [Tree] = match dest {
            Some(Tree::Array(list)) => list,
            Some(one @ Tree::Object(_)) => std::slice::from_ref(one),
            _ => {
                return Err(invalid(
                    field("dest"),
                    "must be {path, pattern?} or a list of them",
                ))
            }
        };
        let mut dests = SmallVec::with_capacity(dest_items.len());
        for (d, dest) in dest_items.iter().enumerate() {
            let dfield = |f: &str| field(&format!("dest[{d}].{f}"));
            let (mut path, mut pattern, mut recurse) = (None, None, None);
            for (k, v) in dest.as_object().into_iter().flatten() {
                match k.as_str() {
                    "path" => path = Some(v),
                    "pattern" => pattern = Some(v),
                    "recurse" => recurse = Some(v),
                    _ => {}
                }
            }
            let Some(Tree::String(path)) = path else {
                return Err(invalid(dfield("path"), "must be a string"));
            };
            let pattern = match pattern {
                None | Some(Tree::Null) => None,
                Some(Tree::String(p)) if p.is_empty() => None,
                Some(Tree::String(p)) => Some(&**p),
                Some(_) => return Err(invalid(dfield("pattern"), "must be a string")),
            };
            let recurse = match recurse {
                None | Some(Tree::Null) => None,
                Some(Tree::Object(r)) if r.is_empty() => None,
                Some(Tree::Object(r)) => Some(match r.get("depth") {
                    None => -1,
                    Some(d) => d
                        .as_i64()
                        .ok_or_else(|| invalid(dfield("recurse.depth"), "must be a number"))?,
                }),
                Some(_) => return Err(invalid(dfield("recurse"), "must be {depth: N}")),
            };
            dests.push(Dest {
                path,
                pattern,
                recurse,
            });
        }
        subs.push(Substitution {
            src_schema: text(src_schema, "src.schema")?,
            src_name: text(src_name, "src.name")?,
            src_path: text(src_path, "src.path")?,
            src_pattern,
            match_group,
            dests,
            source: None,
        });
    }
    Ok(subs)
}

/// A value written into a destination: from which source, and (for a secret source) where and what is
/// there after the write.
#[derive(Debug, Clone)]
pub struct Written {
    /// The source document (index).
    pub source: usize,
    /// The destination path (its text) and the value there after the write, when the source is
    /// secret.
    pub secret: Option<(Arc<str>, Tree)>,
}

/// The source of a substitution as the renderer resolved it: the document and its current data.
pub struct Source<'a> {
    /// The source document's index.
    pub index: usize,
    /// The document.
    pub doc: &'a Document,
    /// Its data as rendered so far.
    pub data: &'a Tree,
    /// Its data is secret, or holds values substituted from a secret.
    pub secret: bool,
}

/// The patterns of a rendering, by their text: each read once per rendering, each regular expression
/// compiled once per process (as Python's `re` keeps the patterns it compiled).
#[derive(Default)]
pub struct Patterns<'a>(HashMap<&'a str, Pattern<'a>, RandomState>);

impl<'a> Patterns<'a> {
    /// The pattern as a regular expression (a source pattern's groups are taken).
    fn regex(&mut self, pattern: &'a str) -> Result<&Regex, regex::Error> {
        let slot = match self.0.entry(pattern) {
            Entry::Occupied(found) => found.into_mut(),
            Entry::Vacant(slot) => slot.insert(Pattern::Text(pattern)),
        };
        if let Pattern::Text(_) = slot {
            *slot = Pattern::Regex(compiled(pattern)?);
        }
        match slot {
            Pattern::Regex(re) => Ok(re),
            // Made a regular expression just above.
            Pattern::Text(_) => Err(regex::Error::Syntax(pattern.to_string())),
        }
    }

    /// The pattern, as text when it is plain text.
    fn get(&mut self, pattern: &'a str) -> Result<&Pattern<'a>, regex::Error> {
        match self.0.entry(pattern) {
            Entry::Occupied(found) => Ok(found.into_mut()),
            Entry::Vacant(slot) => Ok(slot.insert(match Pattern::text(pattern) {
                Some(text) => text,
                None => Pattern::Regex(compiled(pattern)?),
            })),
        }
    }
}

/// The regular expression, compiled once per process (up to 512 are kept, as Python's `re` keeps them).
fn compiled(pattern: &str) -> Result<Arc<Regex>, regex::Error> {
    const KEPT: usize = 512;
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Regex>, RandomState>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    // A panic while the lock was held cannot leave the map inconsistent: it is only read and written
    // whole entries at a time.
    let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(re) = cache.get(pattern) {
        return Ok(re.clone());
    }
    let re = Arc::new(Regex::new(pattern)?);
    if cache.len() >= KEPT {
        cache.clear();
    }
    cache.insert(pattern.to_string(), re.clone());
    Ok(re)
}

/// Does the document's substitutions into `data`. `source` gives a resolved source (`Substitution::source`).
pub fn substitute<'a, 's>(
    doc: &Document,
    data: &mut Tree,
    subs: &[Substitution<'s>],
    source: &dyn Fn(usize) -> Source<'a>,
    patterns: &mut Patterns<'s>,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<Written>, RenderError> {
    let mut written = Vec::with_capacity(subs.iter().map(|s| s.dests.len()).sum());
    // The data is written only here, each path starting where it parts from the last one.
    let mut walked = Walked::default();
    for (index, sub) in subs.iter().enumerate() {
        let src =
            sub.source
                .map(source)
                .ok_or_else(|| RenderError::SubstitutionSourceNotFound {
                    document: doc.reference(),
                    index,
                    src_schema: sub.src_schema.to_string(),
                    src_name: sub.src_name.to_string(),
                })?;
        let value = if src.data.is_object() {
            let path = Path::parse(sub.src_path).map_err(|reason| RenderError::InvalidField {
                document: doc.reference(),
                field: format!("metadata.substitutions[{index}].src.path"),
                reason,
            })?;
            path.get(src.data).cloned()
        } else if src.data.is_null() {
            None
        } else {
            Some(src.data.clone())
        };
        let mut value = value.ok_or_else(|| RenderError::SubstitutionSourceDataNotFound {
            document: doc.reference(),
            index,
            source_doc: src.doc.reference(),
            path: sub.src_path.to_string(),
        })?;
        let failed = |path: &str, details: String| RenderError::UnknownSubstitutionError {
            document: doc.reference(),
            index,
            source_doc: src.doc.reference(),
            path: path.to_string(),
            details,
        };
        if let Some(pattern) = sub.src_pattern {
            let Tree::String(text) = &value else {
                return Err(failed(
                    sub.src_path,
                    format!(
                        "src.pattern needs a string, the source value is {}",
                        value.kind()
                    ),
                ));
            };
            let re = patterns
                .regex(pattern)
                .map_err(|e| failed(sub.src_path, format!("src.pattern {pattern:?}: {e}")))?;
            match re.captures(text) {
                None => warnings.push(Warning::about(
                    doc,
                    format!(
                        "substitution {index}: src.pattern {pattern:?} does not match the value of {} at {}; \
                         the whole value is used",
                        src.doc.reference(),
                        sub.src_path
                    ),
                )),
                Some(captures) => {
                    value = captures
                        .get(sub.match_group)
                        .map(|m| Tree::string(m.as_str()))
                        .unwrap_or(Tree::Null);
                }
            }
        }
        for dest in &sub.dests {
            let path = Path::parse(dest.path).map_err(|reason| failed(dest.path, reason))?;
            let pattern = match dest.pattern {
                Some(p) => Some(
                    patterns
                        .get(p)
                        .map_err(|e| failed(dest.path, format!("dest.pattern {p:?}: {e}")))?,
                ),
                None => None,
            };
            let how = Write {
                pattern,
                pattern_text: dest.pattern.unwrap_or(""),
                recurse: dest.recurse,
            };
            if path.steps.is_empty() {
                let mut result = data.clone();
                let whole = &mut Walked::default();
                write(&mut result, &path, value.clone(), how, whole)
                    .map_err(|e| failed(dest.path, e))?;
                // The data is replaced: nothing walked before is where it was.
                walked = Walked::default();
                match (&mut *data, result) {
                    (Tree::Object(map), Tree::Object(new)) => {
                        let map = Arc::make_mut(map);
                        for (k, v) in new.iter() {
                            map.insert(k.clone(), v.clone());
                        }
                    }
                    (_, result) if truthy(&result) => *data = result,
                    _ => return Err(failed(
                        dest.path,
                        "the value substituted at the whole data is empty; no data was substituted"
                            .to_string(),
                    )),
                }
            } else {
                write(data, &path, value.clone(), how, &mut walked)
                    .map_err(|e| failed(dest.path, e))?;
            }
            let secret = if src.secret {
                path.find(data).cloned().map(|now| (dest.path.clone(), now))
            } else {
                None
            };
            written.push(Written {
                source: src.index,
                secret,
            });
        }
    }
    Ok(written)
}

/// Python's truth of a value.
fn truthy(value: &Tree) -> bool {
    match value {
        Tree::Null => false,
        Tree::Bool(b) => *b,
        Tree::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Tree::String(s) => !s.is_empty(),
        Tree::Array(a) => !a.is_empty(),
        Tree::Object(o) => !o.is_empty(),
    }
}
