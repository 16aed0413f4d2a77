#![warn(missing_docs)]
//! Airship Deckhand's rendering of a site design, in Rust: every document of every schema layered onto its
//! parent (`metadata.layeringDefinition`), replacements, substitutions (`metadata.substitutions`) in
//! Deckhand's order, and secrets redacted as Deckhand redacts them. It depends on no other Plinth crate.
//!
//! ```
//! use plinth_deckhand::{read_sources, render, Options};
//! let site = "
//! schema: deckhand/LayeringPolicy/v1
//! metadata: {schema: metadata/Control/v1, name: layering-policy}
//! data: {layerOrder: [global, site]}
//! ---
//! schema: example/Kind/v1
//! metadata:
//!   schema: metadata/Document/v1
//!   name: base
//!   labels: {role: base}
//!   layeringDefinition: {abstract: true, layer: global}
//! data: {a: 1, b: {c: 2}}
//! ---
//! schema: example/Kind/v1
//! metadata:
//!   schema: metadata/Document/v1
//!   name: child
//!   layeringDefinition:
//!     layer: site
//!     parentSelector: {role: base}
//!     actions: [{method: merge, path: .b}]
//! data: {b: {d: 3}}
//! ";
//! let docs = read_sources(&[("site.yaml", site)]).unwrap();
//! let rendering = render(&docs, &Options::default()).unwrap();
//! let child = rendering.find("example/Kind").next().unwrap();
//! assert_eq!(child.value["data"], serde_json::json!({"a": 1, "b": {"c": 2, "d": 3}}));
//! ```
//!
//! | module | owns |
//! |---|---|
//! | [`yaml`] | YAML 1.1 as PyYAML reads it (booleans, numbers, merge keys, repeated keys) |
//! | `source` | texts to documents with their origin ([`read_sources`]) |
//! | `document` | a document and the fields Deckhand reads ([`Document`], [`Origin`]) |
//! | [`path`] | Deckhand's data paths, read and written |
//! | `policy` | the layering policy and the layer order |
//! | [`tree`] | the data, shared where it is not changed ([`Tree`]) |
//! | `layering` | parents and the merge, replace and delete actions |
//! | `substitution` | `metadata.substitutions` |
//! | [`secrets`] | secret documents and redaction |
//! | `render` | the entry point ([`render`]) |
//! | `provenance` | where a rendered document's data came from ([`Provenance`]) |
//! | `error` | [`RenderError`] |
//! | [`generate`] | generated sites for benchmarks |

mod document;
mod error;
pub mod generate;
mod layering;
pub mod path;
mod policy;
mod provenance;
mod render;
pub mod secrets;
mod source;
mod substitution;
pub mod tree;
pub mod yaml;

pub use document::{DocRef, Document, Origin, LAYERING_POLICY_SCHEMA};
pub use error::RenderError;
pub use provenance::Provenance;
pub use render::{render, render_owned, Options, Rendered, Rendering, Warning};
pub use source::{read_sources, read_sources_noting};
pub use tree::Tree;
