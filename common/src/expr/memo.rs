//! What evaluations remember about the nodes of an expression: which registry entry a call
//! resolved to, so that the name is looked up once per engine rather than at every evaluation.
//!
//! Each evaluated expression gets one word per node, made on its first evaluation (parsing
//! allocates nothing for it). A word names the engine that filled it: an engine gets a new
//! identity whenever its registry changes, so a word filled by another engine, or by this one
//! before a change, is ignored and filled again. Words are read and written with relaxed atomic
//! operations: an expression is shared by the threads of a deployment, and every word is
//! checked before use, so a stale or concurrent one costs a lookup, never a wrong answer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// One word per node of a tree, made on first use.
#[derive(Debug, Default)]
pub(crate) struct Memo(OnceLock<Box<[AtomicU64]>>);

impl Clone for Memo {
    /// A copy of a tree starts with nothing remembered.
    fn clone(&self) -> Self {
        Memo::default()
    }
}

impl Memo {
    /// The word of node `id` of a tree of `len` entries.
    #[inline]
    pub(crate) fn word(&self, id: u32, len: usize) -> &AtomicU64 {
        let words = self
            .0
            .get_or_init(|| (0..len).map(|_| AtomicU64::new(0)).collect());
        &words[id as usize]
    }
}

/// Bits of a word that hold the entry's position in its engine's registry.
const INDEX_BITS: u32 = 24;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;

/// A new engine identity (never 0, so that an empty word names no engine). 40 bits are kept in a
/// word: an identity comes back only after 2^40 registry changes in one process.
pub(crate) fn new_engine_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    (id & ((1 << (64 - INDEX_BITS)) - 1)).max(1)
}

/// The registry position `word` holds for engine `engine`, if it holds one.
#[inline]
pub(crate) fn entry(word: &AtomicU64, engine: u64) -> Option<u32> {
    let w = word.load(Ordering::Relaxed);
    // `w & INDEX_MASK` is below 2^24 and fits in a `u32`.
    (w != 0 && w >> INDEX_BITS == engine).then_some((w & INDEX_MASK) as u32)
}

/// Remembers registry position `index` of engine `engine` (positions beyond 24 bits are not
/// remembered).
#[inline]
pub(crate) fn set_entry(word: &AtomicU64, engine: u64, index: u32) {
    if u64::from(index) <= INDEX_MASK {
        word.store(engine << INDEX_BITS | u64::from(index), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_answers_only_the_engine_that_filled_it() {
        let (a, b) = (new_engine_id(), new_engine_id());
        let word = AtomicU64::new(0);
        assert_eq!(entry(&word, a), None);
        set_entry(&word, a, 7);
        assert_eq!(entry(&word, a), Some(7));
        assert_eq!(entry(&word, b), None);
        set_entry(&word, b, 1 << 24);
        assert_eq!(entry(&word, b), None, "too large a position is not kept");
        assert_eq!(entry(&word, a), Some(7));
    }
}
