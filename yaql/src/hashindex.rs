//! Items filed by a 64-bit hash, built in one pass with a few allocations whatever the number of
//! items: the indexes a deployment keeps for `where($.key = Y)` and `X in P` over node lists, and
//! the expression cache's table.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for keys that are already hashes (nothing is hashed twice).
#[derive(Default)]
pub(crate) struct Prehashed(u64);

impl Hasher for Prehashed {
    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed here; anything else still gets a usable hash.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by hashes already computed.
pub(crate) type PrehashedMap<V> = HashMap<u64, V, BuildHasherDefault<Prehashed>>;

const NONE: u32 = u32::MAX;

/// The positions of items by their hash; each hash's positions in increasing order.
#[derive(Debug, Clone, Default)]
pub(crate) struct HashIndex {
    /// Hash → first position.
    heads: PrehashedMap<u32>,
    /// Position → the next position with the same hash (`NONE` at the end).
    next: Vec<u32>,
}

impl HashIndex {
    /// Files item `i` under `hashes[i]`; `None` for more than `u32::MAX - 1` items.
    pub(crate) fn build(hashes: &[u64]) -> Option<HashIndex> {
        let n = u32::try_from(hashes.len()).ok().filter(|n| *n < NONE)?;
        let mut heads = PrehashedMap::with_capacity_and_hasher(hashes.len(), Default::default());
        let mut next = vec![NONE; hashes.len()];
        // From the last item back, each one in front of its hash's chain: chains end up in order.
        for i in (0..n).rev() {
            if let Some(old) = heads.insert(hashes[i as usize], i) {
                next[i as usize] = old;
            }
        }
        Some(HashIndex { heads, next })
    }

    /// The positions of the items filed under `hash`, in order.
    pub(crate) fn get(&self, hash: u64) -> impl Iterator<Item = usize> + '_ {
        let mut at = self.heads.get(&hash).copied().unwrap_or(NONE);
        std::iter::from_fn(move || {
            if at == NONE {
                return None;
            }
            let here = at;
            at = self.next.get(here as usize).copied().unwrap_or(NONE);
            Some(here as usize)
        })
    }
}

/// Strings kept in one buffer, by position.
#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    text: String,
    ends: Vec<usize>,
}

impl Names {
    /// Room for `n` names.
    pub(crate) fn with_capacity(n: usize) -> Names {
        Names {
            text: String::with_capacity(n * 8),
            ends: Vec::with_capacity(n),
        }
    }

    /// Adds a name at the next position.
    pub(crate) fn push(&mut self, name: &str) {
        self.text.push_str(name);
        self.ends.push(self.text.len());
    }

    /// The name at position `i`.
    pub(crate) fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.text.get(start..end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_hash_gives_its_positions_in_order() {
        let index = HashIndex::build(&[7, 3, 7, 9, 7]).unwrap();
        assert_eq!(index.get(7).collect::<Vec<_>>(), vec![0, 2, 4]);
        assert_eq!(index.get(3).collect::<Vec<_>>(), vec![1]);
        assert_eq!(index.get(9).collect::<Vec<_>>(), vec![3]);
        assert_eq!(index.get(5).count(), 0);
        assert_eq!(HashIndex::build(&[]).unwrap().get(7).count(), 0);
    }

    #[test]
    fn names_come_back_by_position() {
        let mut names = Names::with_capacity(2);
        for n in ["node-1", "", "node-22"] {
            names.push(n);
        }
        assert_eq!(names.get(0), Some("node-1"));
        assert_eq!(names.get(1), Some(""));
        assert_eq!(names.get(2), Some("node-22"));
        assert_eq!(names.get(3), None);
    }
}
