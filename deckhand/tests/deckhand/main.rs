//! Deckhand's rendering, one module a subject, in one test binary: layering, replacement and substitution
//! cases taken from Deckhand's own tests (each named after Deckhand's test), the negative ones, secrets and
//! redaction, and the whole treasuremap v1.9 site read from the corpus.
//!
//! One subject: `cargo test -p plinth-deckhand --test deckhand MODULE::`.

mod api;
mod generated;
mod layering;
mod negative;
mod replacement;
mod robustness;
mod secrets;
mod substitution;
mod support;
mod treasuremap;
