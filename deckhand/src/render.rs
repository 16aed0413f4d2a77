//! The entry point: [`render`] takes every document of a site and gives its concrete documents, layered
//! and substituted in Deckhand's order (a document after its parent, its parent's replacement and its
//! substitution sources), with secrets redacted unless asked for in clear.

use std::collections::HashMap;
use std::sync::Arc;

use foldhash::fast::RandomState;
use smallvec::SmallVec;

use crate::document::{DocRef, Document, Header, Origin};
use crate::error::RenderError;
use crate::layering::{self, Action};
use crate::path::Path;
use crate::policy;
use crate::provenance::{How, Provenance, Trail, Trails};
use crate::secrets::{redact, Redactions};
use crate::substitution::{self, Patterns, Source, Substitution, Written};
use crate::tree::Tree;

/// How to render.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Show secrets in clear: a secret document's data and the values substituted from secrets. When
    /// false they are redacted as Deckhand redacts (the SHA-256 of the value's JSON).
    pub cleartext_secrets: bool,
}

/// A concrete document after rendering.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The whole document: its own envelope and metadata, with the layered and substituted `data`.
    pub value: Tree,
    /// Where the document is.
    pub origin: Origin,
    /// Where its data came from (written out in words by `Display`).
    pub provenance: Provenance,
    /// A secret document, or one holding data substituted from a secret.
    pub secret: bool,
}

/// Accepted but worth a word, as Deckhand logs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The document concerned: schema, name, origin.
    pub document: String,
    /// What was noticed.
    pub message: String,
}

impl Warning {
    /// A warning about a document.
    pub fn about(doc: &Document, message: String) -> Warning {
        Warning {
            document: doc.reference().to_string(),
            message,
        }
    }
}

/// The concrete documents of a site and the warnings.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rendering {
    /// The concrete documents (neither abstract nor replaced), control documents included, in input order.
    pub documents: Vec<Rendered>,
    /// What was accepted but deserves a word.
    pub warnings: Vec<Warning>,
}

impl Rendering {
    /// The documents whose schema starts with `schema_prefix` (`drydock/BaremetalNode` or a whole schema).
    pub fn find(&self, schema_prefix: &str) -> impl Iterator<Item = &Rendered> + '_ {
        let prefix = schema_prefix.to_string();
        self.documents.iter().filter(move |d| {
            d.value
                .get("schema")
                .and_then(Tree::as_str)
                .is_some_and(|s| s.starts_with(&prefix))
        })
    }
}

/// Each (schema, `metadata.name`) of the documents, numbered in the order first seen: the documents
/// are told apart by layer within one, replacements and substitution sources are found by them.
type Names<'a> = HashMap<(&'a str, &'a str), usize, RandomState>;

/// What each kept document needs while rendering.
struct Plan<'a> {
    docs: Vec<&'a Document>,
    meta: Vec<Header<'a>>,
    parents: Vec<Option<usize>>,
    replaced_by: Vec<Option<usize>>,
    actions: Vec<Vec<Action<'a>>>,
    subs: Vec<Vec<Substitution<'a>>>,
}

/// Renders the documents as Deckhand does. See the crate's README for the rules. The rendered
/// documents share with the input what rendering did not change.
pub fn render(input: &[Document], options: &Options) -> Result<Rendering, RenderError> {
    let mut parts = render_parts(input, Vec::new())?;
    let mut redactions = Redactions::default();
    let finished = parts
        .out
        .iter_mut()
        .map(|o| finish(input[o.input].clone(), o, options, &mut redactions))
        .collect();
    Ok(assemble(parts, finished, |at| input.get(at).cloned()))
}

/// [`render`] taking the documents, rendered in place as Deckhand's engine renders them: a document's
/// data is changed where it is, not copied first (unless it shares it with another document). The
/// result is the same.
pub fn render_owned(mut input: Vec<Document>, options: &Options) -> Result<Rendering, RenderError> {
    // Control documents keep their data (the layering policy is read there): they are never changed.
    let own: Vec<Option<Tree>> = input
        .iter_mut()
        .map(|doc| {
            if doc.is_control() {
                return None;
            }
            doc.value
                .as_object_mut()
                .and_then(|m| m.get_mut("data"))
                .map(std::mem::take)
        })
        .collect();
    let mut parts = render_parts(&input, own)?;
    let mut redactions = Redactions::default();
    let mut input: Vec<Option<Document>> = input.into_iter().map(Some).collect();
    let finished = parts
        .out
        .iter_mut()
        .filter_map(|o| {
            let doc = input.get_mut(o.input)?.take()?;
            Some(finish(doc, o, options, &mut redactions))
        })
        .collect();
    Ok(assemble(parts, finished, |at| {
        input.get(at).cloned().flatten()
    }))
}

/// The rendering from the concrete documents finished: each is given its provenance, read from the
/// trails and the documents they name (`unfinished` gives an input document that is not in the result).
fn assemble(
    parts: Parts,
    finished: Vec<(Document, bool)>,
    unfinished: impl Fn(usize) -> Option<Document>,
) -> Rendering {
    let mut named: Vec<Option<Document>> = vec![None; parts.positions.len()];
    for (o, (doc, _)) in parts.out.iter().zip(&finished) {
        named[o.plan] = Some(doc.clone());
    }
    let docs = named
        .into_iter()
        .zip(&parts.positions)
        .map(|(doc, &at)| doc.or_else(|| unfinished(at)).unwrap_or_default())
        .collect();
    let trails = Arc::new(Trails {
        docs,
        trails: parts.trails,
    });
    let documents = parts
        .out
        .iter()
        .zip(finished)
        .map(|(o, (doc, secret))| Rendered {
            value: doc.value,
            origin: doc.origin,
            provenance: Provenance::new(trails.clone(), o.trail),
            secret,
        })
        .collect();
    Rendering {
        documents,
        warnings: parts.warnings,
    }
}

/// What rendering found for one concrete document, before its envelope is put around it.
struct OutDoc {
    /// Its place in the input.
    input: usize,
    /// Its place among the documents rendered (duplicates dropped).
    plan: usize,
    /// Its rendered data, when it is not its own.
    data: Option<Tree>,
    /// Its trail (see [`Provenance`]).
    trail: usize,
    /// Values written from secrets: the path written (its text), with the value written.
    secret_values: Vec<(Arc<str>, Tree)>,
    /// Data substituted from an encrypted document.
    encrypted_dest: bool,
    /// A secret document itself.
    secret_doc: bool,
    /// A control document.
    control: bool,
}

/// The concrete documents' findings, in input order, and the warnings.
struct Parts {
    out: Vec<OutDoc>,
    warnings: Vec<Warning>,
    /// The trails the documents' provenances read, by rendered document.
    trails: Vec<Trail>,
    /// Each rendered document's place in the input.
    positions: Vec<usize>,
}

/// The document `doc` with its rendered data put in (its own when `o` has none), secrets redacted unless
/// asked for in clear; and whether it is secret.
fn finish(
    doc: Document,
    o: &mut OutDoc,
    options: &Options,
    redactions: &mut Redactions,
) -> (Document, bool) {
    let mut rendered = o.data.take().unwrap_or_else(|| doc.data().clone());
    let own_secret = o.secret_doc || o.encrypted_dest;
    // A value written from a secret is secret while it is still there (each path parsed when it was
    // written). To redact them, all are found before any is redacted.
    fn still_there<'a>(
        (path, v): &'a (Arc<str>, Tree),
        rendered: &Tree,
    ) -> Option<(Path<'a>, &'a Tree)> {
        let path = Path::parse(path).ok()?;
        (path.get(rendered) == Some(v)).then_some((path, v))
    }
    let secret_values: Vec<(Path<'_>, &Tree)> = match (own_secret, options.cleartext_secrets) {
        (true, _) => Vec::new(),
        (false, false) => o
            .secret_values
            .iter()
            .filter_map(|sv| still_there(sv, &rendered))
            .collect(),
        // In clear, one is enough to tell that the document is secret.
        (false, true) => o
            .secret_values
            .iter()
            .find_map(|sv| still_there(sv, &rendered))
            .into_iter()
            .collect(),
    };
    let secret = own_secret || !secret_values.is_empty();
    let control = o.control;
    let mut value = doc.value;
    if !options.cleartext_secrets {
        if own_secret {
            rendered = redactions.redact(&rendered);
            let meta = value
                .as_object_mut()
                .and_then(|m| m.get_mut("metadata"))
                .and_then(Tree::as_object_mut);
            if let Some(meta) = meta {
                if o.encrypted_dest {
                    meta.insert("storagePolicy".into(), Tree::string("encrypted"));
                }
                if let Some(subs) = meta.get_mut("substitutions").and_then(Tree::as_array_mut) {
                    redact_substitution_paths(subs);
                }
            }
        } else {
            for (path, v) in secret_values {
                if let Ok(place) = path.place(&mut rendered) {
                    *place = redactions.redact(v);
                }
            }
        }
    }
    let has_data = value.get("data").is_some();
    // The envelope is copied only when the data put in it is not the document's own.
    if (!control || has_data) && !value.get("data").is_some_and(|d| d.same(&rendered)) {
        if let Some(map) = value.as_object_mut() {
            map.insert("data".into(), rendered);
        }
    }
    (
        Document {
            value,
            origin: doc.origin,
        },
        secret,
    )
}

/// Everything rendering works out, with the input borrowed.
/// `own`: each input document's data, when it was taken out of it (empty: the data is read in the
/// documents).
fn render_parts(input: &[Document], mut own: Vec<Option<Tree>>) -> Result<Parts, RenderError> {
    for doc in input {
        if !doc.value.is_object() {
            return Err(RenderError::NotAMapping {
                origin: doc.origin.clone(),
            });
        }
    }
    let mut warnings = Vec::new();
    let headers: Vec<Header<'_>> = input.iter().map(Header::of).collect();
    let order = policy::layer_order(input, &headers, &mut warnings)?;
    let mut names = Names::with_capacity_and_hasher(input.len(), RandomState::default());
    // By name (its number in `names`): the layers it is in, each with its document.
    let mut layers: Vec<SmallVec<[(&str, usize); 1]>> = Vec::with_capacity(input.len());
    let mut docs: Vec<&Document> = Vec::with_capacity(input.len());
    let mut meta = Vec::with_capacity(input.len());
    let mut positions = Vec::with_capacity(input.len());
    let mut name_of = Vec::with_capacity(input.len());
    for (at, (doc, m)) in input.iter().zip(headers).enumerate() {
        let next = names.len();
        let name = *names.entry((m.schema, m.name)).or_insert(next);
        if name == layers.len() {
            layers.push(SmallVec::new());
        }
        match layers[name].iter().find(|(layer, _)| *layer == m.layer) {
            // The very same document twice is one document (Deckhand keeps the first).
            Some(&(_, first)) if docs[first].value == doc.value => {}
            Some(&(_, first)) => {
                return Err(RenderError::DuplicateDocument {
                    document: doc.reference(),
                    first: docs[first].reference(),
                })
            }
            None => {
                layers[name].push((m.layer, docs.len()));
                docs.push(doc);
                meta.push(m);
                positions.push(at);
                name_of.push(name);
            }
        }
    }
    let parents = layering::parents(&docs, &meta, &order)?;
    for (i, doc) in docs.iter().enumerate() {
        if !meta[i].parent_selector.is_empty() && parents[i].is_none() {
            warnings.push(Warning::about(
                doc,
                "its parentSelector matches no document in a higher layer: it keeps its own data"
                    .to_string(),
            ));
        }
    }
    let replaced_by = replacements(&docs, &meta, &parents, &name_of, names.len())?;
    let sources = substitution_sources(&docs, &meta, &replaced_by, &name_of, names.len())?;
    let actions = docs
        .iter()
        .zip(&meta)
        .map(|(d, m)| layering::actions(d, m.actions))
        .collect::<Result<Vec<_>, _>>()?;
    let mut subs = docs
        .iter()
        .zip(&meta)
        .map(|(d, m)| substitution::read(d, m.substitutions))
        .collect::<Result<Vec<_>, _>>()?;
    for sub in subs.iter_mut().flatten() {
        sub.source = names
            .get(&(sub.src_schema, sub.src_name))
            .and_then(|&name| sources[name]);
    }
    let plan = Plan {
        docs,
        meta,
        parents,
        replaced_by,
        actions,
        subs,
    };
    let sorted = dependency_order(&plan)?;
    // The data taken out of the documents, in the plan's order.
    let data: Vec<Option<Tree>> = if own.is_empty() {
        vec![None; positions.len()]
    } else {
        positions
            .iter()
            .map(|&at| own.get_mut(at).and_then(Option::take))
            .collect()
    };
    render_sorted(&plan, &sorted, positions, data, warnings)
}

/// Checks the replacement rules; returns each document's replacement.
/// `name_of` gives each document's (schema, name) as a number below `names` ([`Names`]).
fn replacements(
    docs: &[&Document],
    meta: &[Header<'_>],
    parents: &[Option<usize>],
    name_of: &[usize],
    names: usize,
) -> Result<Vec<Option<usize>>, RenderError> {
    let mut replaced_by = vec![None; docs.len()];
    // The document not replacing another that has each name.
    let mut named: Vec<Option<usize>> = vec![None; names];
    for (i, doc) in docs.iter().enumerate() {
        let parent = parents[i];
        let m = &meta[i];
        let same = |p: usize| name_of[p] == name_of[i];
        let refuse = |reason: &str| RenderError::InvalidDocumentReplacement {
            document: doc.reference(),
            reason: reason.to_string(),
        };
        if m.is_replacement {
            let Some(p) = parent else {
                return Err(refuse(
                    "a document with `replacement: true` must have a parent (a document its parentSelector \
                     selects in a higher layer)",
                ));
            };
            if !same(p) {
                return Err(refuse(&format!(
                    "a replacement must have the same schema and metadata.name as its parent {}",
                    docs[p].reference()
                )));
            }
            replaced_by[p] = Some(i);
        } else {
            if let Some(p) = parent.filter(|p| same(*p)) {
                return Err(refuse(&format!(
                    "it has the schema and metadata.name of its parent {} but not `replacement: true`: add \
                     `replacement: true` or give it another name",
                    docs[p].reference()
                )));
            }
            if !m.is_control {
                if let Some(first) = named[name_of[i]].replace(i) {
                    return Err(refuse(&format!(
                        "{} has the same schema and metadata.name and neither has `replacement: true`",
                        docs[first].reference()
                    )));
                }
            }
        }
    }
    Ok(replaced_by)
}

/// The substitution source of each (schema, name) (numbered as in [`Names`]): concrete documents, a
/// replaced one standing for its replacement.
fn substitution_sources(
    docs: &[&Document],
    meta: &[Header<'_>],
    replaced_by: &[Option<usize>],
    name_of: &[usize],
    names: usize,
) -> Result<Vec<Option<usize>>, RenderError> {
    let mut sources = vec![None; names];
    for (i, doc) in docs.iter().enumerate() {
        if meta[i].is_abstract {
            continue;
        }
        let mut source = i;
        if let Some(replacement) = replaced_by[i] {
            if meta[i].is_replacement {
                return Err(RenderError::InvalidDocumentReplacement {
                    document: doc.reference(),
                    reason: format!(
                        "a replacement cannot itself be replaced (by {})",
                        docs[replacement].reference()
                    ),
                });
            }
            source = replacement;
        }
        sources[name_of[source]] = Some(source);
    }
    Ok(sources)
}

/// Adds the documents document `i` waits for to `deps`: its parent (or the parent's replacement, unless
/// it is that replacement) and its substitution sources.
fn dependencies(plan: &Plan<'_>, i: usize, deps: &mut Vec<usize>) {
    if let Some(p) = plan.parents[i] {
        match plan.replaced_by[p] {
            Some(r) if r != i => deps.push(r),
            _ => deps.push(p),
        }
    }
    deps.extend(plan.subs[i].iter().filter_map(|sub| sub.source));
}

/// Every document after those it waits for; a cycle is an error naming its documents.
fn dependency_order(plan: &Plan<'_>) -> Result<Vec<usize>, RenderError> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let n = plan.docs.len();
    // Document `i` waits for `deps[starts[i]..starts[i + 1]]`.
    let mut deps = Vec::with_capacity(n + plan.subs.iter().map(Vec::len).sum::<usize>());
    let mut starts = Vec::with_capacity(n + 1);
    for i in 0..n {
        starts.push(deps.len());
        dependencies(plan, i, &mut deps);
    }
    starts.push(deps.len());
    let mut mark = vec![Mark::New; n];
    let mut sorted = Vec::with_capacity(n);
    // An explicit stack: (document, its next dependency to visit).
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for start in 0..n {
        if mark[start] != Mark::New {
            continue;
        }
        stack.push((start, starts[start]));
        mark[start] = Mark::Open;
        while let Some(&mut (at, ref mut next)) = stack.last_mut() {
            if *next < starts[at + 1] {
                let dep = deps[*next];
                *next += 1;
                match mark[dep] {
                    Mark::New => {
                        mark[dep] = Mark::Open;
                        stack.push((dep, starts[dep]));
                    }
                    Mark::Open => {
                        let from = stack.iter().position(|(d, _)| *d == dep).unwrap_or(0);
                        let mut cycle: Vec<DocRef> = stack[from..]
                            .iter()
                            .map(|(d, _)| *plan.docs[*d].reference())
                            .collect();
                        cycle.push(*plan.docs[dep].reference());
                        return Err(RenderError::SubstitutionDependencyCycle { cycle });
                    }
                    Mark::Done => {}
                }
            } else {
                mark[at] = Mark::Done;
                sorted.push(at);
                stack.pop();
            }
        }
    }
    Ok(sorted)
}

fn render_sorted(
    plan: &Plan<'_>,
    sorted: &[usize],
    positions: Vec<usize>,
    mut data: Vec<Option<Tree>>,
    mut warnings: Vec<Warning>,
) -> Result<Parts, RenderError> {
    let docs = &plan.docs;
    let n = docs.len();
    // Each document's data as rendered so far (`data`, when it is not the data in the document); a
    // layered document's is made from its parent's.
    let meta = &plan.meta;
    // Each document's trail: its own to begin with, a new one when it is layered, its replacement's
    // once it is replaced.
    // Room for a trail more for each layered document.
    let mut trails: Vec<Trail> = Vec::with_capacity(n + plan.parents.iter().flatten().count());
    trails.extend((0..n).map(|doc| Trail {
        doc,
        how: How::Own,
        from: Vec::new(),
    }));
    let mut trail_of: Vec<usize> = (0..n).collect();
    // Values written from secrets, per document, with the value written (still secret while unchanged).
    let mut secret_values: Vec<Vec<(Arc<str>, Tree)>> = vec![Vec::new(); n];
    let mut encrypted_dest = vec![false; n];
    let mut patterns = Patterns::default();
    for &i in sorted {
        let doc = docs[i];
        let m = &meta[i];
        if m.is_control {
            continue;
        }
        if let (Some(p), false) = (plan.parents[i], m.parent_selector.is_empty()) {
            let steps = &plan.actions[i];
            if steps.is_empty() {
                trails[trail_of[i]].how = How::NoActions { parent: p };
            } else {
                data[i] = Some(layering::apply_actions(
                    doc,
                    current(&data, docs, i),
                    docs[p],
                    current(&data, docs, p),
                    steps,
                )?);
                secret_values[i] = secret_values[p].clone();
                encrypted_dest[i] |= encrypted_dest[p];
                trails.push(Trail {
                    doc: i,
                    how: How::Layered {
                        parent: trail_of[p],
                        replacing: m.is_replacement,
                    },
                    from: Vec::new(),
                });
                trail_of[i] = trails.len() - 1;
            }
        }
        if !plan.subs[i].is_empty() {
            let mut own = data[i].take().unwrap_or_else(|| doc.data().clone());
            let result = {
                let lookup = |s: usize| Source {
                    index: s,
                    doc: docs[s],
                    data: current(&data, docs, s),
                    secret: meta[s].is_secret()
                        || !secret_values[s].is_empty()
                        || encrypted_dest[s],
                };
                substitution::substitute(
                    doc,
                    &mut own,
                    &plan.subs[i],
                    &lookup,
                    &mut patterns,
                    &mut warnings,
                )
            };
            data[i] = Some(own);
            let written: Vec<Written> = result?;
            let from = &mut trails[trail_of[i]].from;
            for w in written {
                if meta[w.source].is_encrypted {
                    encrypted_dest[i] = true;
                }
                if let Some(secret) = w.secret {
                    secret_values[i].push(secret);
                }
                if !from.contains(&w.source) {
                    from.push(w.source);
                }
            }
        }
        if let (true, Some(p)) = (m.is_replacement, plan.parents[i]) {
            data[p] = Some(current(&data, docs, i).clone());
            trail_of[p] = trail_of[i];
            secret_values[p] = secret_values[i].clone();
            encrypted_dest[p] = encrypted_dest[i];
        }
    }
    let mut out = Vec::new();
    for i in 0..n {
        if meta[i].is_abstract || plan.replaced_by[i].is_some() {
            continue;
        }
        out.push(OutDoc {
            input: positions[i],
            plan: i,
            data: data[i].take(),
            trail: trail_of[i],
            secret_values: std::mem::take(&mut secret_values[i]),
            encrypted_dest: encrypted_dest[i],
            secret_doc: meta[i].is_secret(),
            control: meta[i].is_control,
        });
    }
    Ok(Parts {
        out,
        warnings,
        trails,
        positions,
    })
}

/// Document `i`'s data as rendered so far: its own until something was made of it.
fn current<'a>(data: &'a [Option<Tree>], docs: &[&'a Document], i: usize) -> &'a Tree {
    data[i].as_ref().unwrap_or_else(|| docs[i].data())
}

/// An encrypted document's substitution paths, redacted as Deckhand redacts them.
fn redact_substitution_paths(subs: &mut [Tree]) {
    let hash = |holder: Option<&mut Tree>| {
        if let Some(path) = holder
            .and_then(Tree::as_object_mut)
            .and_then(|m| m.get_mut("path"))
        {
            *path = redact(path);
        }
    };
    for sub in subs {
        let Some(sub) = sub.as_object_mut() else {
            continue;
        };
        hash(sub.get_mut("src"));
        match sub.get_mut("dest") {
            Some(dest @ Tree::Object(_)) => hash(Some(dest)),
            Some(dests) => {
                for dest in dests.as_array_mut().into_iter().flatten() {
                    hash(Some(dest));
                }
            }
            None => {}
        }
    }
}
