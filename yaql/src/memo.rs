//! What evaluations remember about the nodes of an expression: which registry entry a call
//! resolved to, so that the name is looked up once per engine rather than at every evaluation;
//! where in a large JSON object a constant key was found last, so that the next evaluation
//! reads that entry (checking its key) instead of hashing the key again with the object's
//! SipHash.
//!
//! Each evaluated expression gets one word per node, made on its first evaluation (parsing
//! allocates nothing for it). A word names the engine that filled it: an engine gets a new
//! identity whenever its registry changes, so a word filled by another engine, or by this one
//! before a change, is ignored and filled again. Words are read and written with relaxed atomic
//! operations: an expression is shared by the threads of a deployment, and every word is
//! checked before use, so a stale or concurrent one costs a lookup, never a wrong answer.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::json::{Json as J, Object as Map};

use super::ast::Node;
use super::value::{json_get, str_eq};

/// A word's two top bits say what it holds.
const TAG_MASK: u64 = 3 << 62;
/// A registry entry: the engine's identity above the entry's position.
const TAG_ENTRY: u64 = 1 << 62;
/// A position in a JSON object (the low 32 bits).
const TAG_POSITION: u64 = 2 << 62;
/// Bits of a word that hold the entry's position in its engine's registry.
const INDEX_BITS: u32 = 24;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;
/// Bits of an engine identity kept in a word.
const ID_MASK: u64 = (1 << (62 - INDEX_BITS)) - 1;

/// A new engine identity (never 0). 38 bits are kept in a word: an identity comes back only
/// after 2^38 registry changes in one process.
pub(crate) fn new_engine_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    (id & ID_MASK).max(1)
}

/// The registry position `word` holds for engine `engine`, if it holds one.
#[inline]
pub(crate) fn entry(word: &AtomicU64, engine: u64) -> Option<u32> {
    let w = word.load(Ordering::Relaxed);
    // `w & INDEX_MASK` is below 2^24 and fits in a `u32`.
    (w & TAG_MASK == TAG_ENTRY && (w >> INDEX_BITS) & ID_MASK == engine)
        .then_some((w & INDEX_MASK) as u32)
}

/// Remembers registry position `index` of engine `engine` (positions beyond 24 bits are not
/// remembered).
#[inline]
pub(crate) fn set_entry(word: &AtomicU64, engine: u64, index: u32) {
    if u64::from(index) <= INDEX_MASK {
        let w = TAG_ENTRY | (engine & ID_MASK) << INDEX_BITS | u64::from(index);
        word.store(w, Ordering::Relaxed);
    }
}

/// Objects with more keys than this are read through the remembered position; smaller ones are
/// scanned (cheaper than hashing the key), as [`json_get`] does.
const SCAN_MAX: usize = 16;

/// `m[key]`, for the constant key of node `at`: a large object is first read at the position
/// where the key was found last (if the key there is `key`, that is its entry: keys are
/// unique), and otherwise looked up in its index, remembering where the key was found.
#[inline]
pub(crate) fn json_get_at<'j>(m: &'j Map, key: &str, at: Node<'_>) -> Option<&'j J> {
    if m.len() <= SCAN_MAX {
        return json_get(m, key);
    }
    let word = at.memo();
    let w = word.load(Ordering::Relaxed);
    if w & TAG_MASK == TAG_POSITION {
        // The low 32 bits are the position.
        let i = (w & u64::from(u32::MAX)) as usize;
        if let Some((k, v)) = m.get_index(i) {
            if str_eq(k, key) {
                return Some(v);
            }
        }
    }
    let i = m.position(key)?;
    if let Ok(i32) = u32::try_from(i) {
        word.store(TAG_POSITION | u64::from(i32), Ordering::Relaxed);
    }
    m.get_index(i).map(|(_, v)| v)
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

    #[test]
    fn a_large_object_is_read_where_the_key_was_found_last() {
        let tree = crate::Expression::parse("$.k").unwrap();
        let at = tree.root();
        let big = |order: &[usize]| {
            let m = J::object(
                order
                    .iter()
                    .map(|i| (crate::json::Key::from(format!("k{i}")), J::from(*i as i64))),
            );
            match m {
                J::Object(m) => m,
                _ => unreachable!("J::object makes an object"),
            }
        };
        let forward: Vec<usize> = (0..40).collect();
        let backward: Vec<usize> = (0..40).rev().collect();
        let (a, b) = (big(&forward), big(&backward));
        assert_eq!(json_get_at(&a, "k30", at), Some(&J::from(30)));
        assert_eq!(at.memo().load(Ordering::Relaxed), TAG_POSITION | 30);
        assert_eq!(json_get_at(&a, "k30", at), Some(&J::from(30)));
        // Another object with the key elsewhere: found, and its place remembered instead.
        assert_eq!(json_get_at(&b, "k30", at), Some(&J::from(30)));
        assert_eq!(at.memo().load(Ordering::Relaxed), TAG_POSITION | 9);
        assert_eq!(json_get_at(&b, "k40", at), None);
        assert_eq!(json_get_at(&a, "k1", at), Some(&J::from(1)));
        // A registry entry in the same word is not taken for a position, nor the reverse.
        set_entry(at.memo(), 5, 3);
        assert_eq!(json_get_at(&a, "k2", at), Some(&J::from(2)));
        assert_eq!(entry(at.memo(), 5), None);
    }
}
