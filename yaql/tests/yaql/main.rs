//! The expression language's tests, one module a subject, in one test binary: the public API, YAQL's own
//! test suite (`conformance`, read from the corpus), dates and times, the fast path for simple
//! predicates against the interpreter, the layers of the crate's modules (`layers`: none imports one
//! above it), and properties. (`parse_allocations` is a binary of its own: it
//! counts allocations with a global allocator.)
//!
//! One subject: `cargo test -p plinth-yaql --test yaql MODULE::`.

mod api;
mod conformance;
mod datetime;
mod fastpath;
mod layers;
mod properties;
