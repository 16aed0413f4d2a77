//! Deckhand's rendering, one module a subject, in one test binary.
//!
//! One subject: `cargo test -p plinth-deckhand --test deckhand MODULE::`.

mod layering;
mod negative;
mod replacement;
mod substitution;
mod support;
mod treasuremap;
