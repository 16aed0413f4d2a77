//! [`Provenance`]: where a rendered document's data came from, in words when it is shown.
//!
//! Rendering records, for each document, a [`Trail`]: its own document, the parent it was layered onto
//! (and that parent's trail at the time), the documents values were substituted from. The words (`site.yaml
//! document 3 (line 40) (site layer; merge .b), layered onto global.yaml document 1 (line 1) (global
//! layer); substituted from [deckhand/Passphrase/v1] pw`) are written only when asked for.

use std::fmt;
use std::sync::Arc;

use crate::document::{Document, Header};
use crate::layering;

/// Where a rendered document's data came from (`Display` writes it out).
#[derive(Clone)]
pub struct Provenance {
    trails: Arc<Trails>,
    at: usize,
}

/// Every trail recorded while rendering, and the documents they name.
pub(crate) struct Trails {
    /// The documents rendered (a copy of a document shares its data).
    pub docs: Vec<Document>,
    pub trails: Vec<Trail>,
}

/// How one document's data came to be.
pub(crate) struct Trail {
    /// The document (an index into [`Trails::docs`]).
    pub doc: usize,
    pub how: How,
    /// The documents values were substituted from, each once, in order.
    pub from: Vec<usize>,
}

/// What a document's data was made from.
#[derive(Clone, Copy)]
pub(crate) enum How {
    /// Its own data.
    Own,
    /// Its own data: it has a parent but no actions.
    NoActions {
        /// The parent document.
        parent: usize,
    },
    /// Its parent's data with its actions applied.
    Layered {
        /// The parent's trail when the document was layered.
        parent: usize,
        /// A replacement of its parent.
        replacing: bool,
    },
}

impl Provenance {
    /// The provenance of trail `at`.
    pub(crate) fn new(trails: Arc<Trails>, at: usize) -> Provenance {
        Provenance { trails, at }
    }
}

impl Trails {
    fn write(&self, f: &mut fmt::Formatter<'_>, at: usize) -> fmt::Result {
        let Some(trail) = self.trails.get(at) else {
            return Ok(());
        };
        let Some(doc) = self.docs.get(trail.doc) else {
            return Ok(());
        };
        let header = Header::of(doc);
        match trail.how {
            How::Own => own(f, doc, header.layer, "")?,
            How::NoActions { parent } => {
                let parent = self
                    .docs
                    .get(parent)
                    .map(|p| p.reference().to_string())
                    .unwrap_or_default();
                own(
                    f,
                    doc,
                    header.layer,
                    &format!("no actions: its own data, not its parent's {parent}"),
                )?
            }
            How::Layered { parent, replacing } => {
                let how: Vec<String> = layering::actions(doc, header.actions)
                    .unwrap_or_default()
                    .iter()
                    .map(|a| format!("{} {}", a.method, a.path))
                    .collect();
                own(f, doc, header.layer, &how.join(", "))?;
                let relation = if replacing {
                    "replacing"
                } else {
                    "layered onto"
                };
                write!(f, ", {relation} ")?;
                self.write(f, parent)?;
            }
        }
        for (n, source) in trail
            .from
            .iter()
            .filter_map(|s| self.docs.get(*s))
            .enumerate()
        {
            let header = Header::of(source);
            let lead = if n == 0 { "; substituted from " } else { ", " };
            write!(f, "{lead}[{}] {}", header.schema, header.name)?;
        }
        Ok(())
    }
}

/// `file document N (line L) (site layer; what was done)`.
fn own(f: &mut fmt::Formatter<'_>, doc: &Document, layer: &str, how: &str) -> fmt::Result {
    match (layer.is_empty(), how.is_empty()) {
        (true, true) => write!(f, "{}", doc.origin),
        (true, false) => write!(f, "{} ({how})", doc.origin),
        (false, true) => write!(f, "{} ({layer} layer)", doc.origin),
        (false, false) => write!(f, "{} ({layer} layer; {how})", doc.origin),
    }
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.trails.write(f, self.at)
    }
}

impl fmt::Debug for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string())
    }
}

/// The same words.
impl PartialEq for Provenance {
    fn eq(&self, other: &Provenance) -> bool {
        (Arc::ptr_eq(&self.trails, &other.trails) && self.at == other.at)
            || self.to_string() == other.to_string()
    }
}
