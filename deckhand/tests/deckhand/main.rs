//! Deckhand's rendering, one module a subject, in one test binary: layering, replacement and substitution
//! cases taken from Deckhand's own tests (each named after Deckhand's test), the negative ones, secrets and
//! redaction, the whole treasuremap v1.9 site read from the corpus (its facts, and its data against
//! Deckhand's own rendering of it), the generated benchmark site, the API, and random sites (no panic).
//!
//! One subject: `cargo test -p plinth-deckhand --test deckhand MODULE::`.

mod api;
mod conformance;
mod generated;
mod layering;
mod negative;
mod replacement;
mod robustness;
mod secrets;
mod substitution;
mod support;
mod treasuremap;
