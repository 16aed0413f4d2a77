//! Bytes of a qcow2 image read before anything said what they are: kept (all-zero pieces as their
//! length alone) until the tables that map them arrive, or until every table has been read and nothing
//! more can be mapped.

use std::collections::BTreeMap;

/// Pieces no larger than this are zero-checked one by one.
const PIECE: usize = 64 * 1024;

enum Piece {
    Zero(u64),
    Data(Vec<u8>),
}

impl Piece {
    fn len(&self) -> u64 {
        match self {
            Piece::Zero(len) => *len,
            Piece::Data(d) => d.len() as u64,
        }
    }
}

/// The kept bytes, by their offset in the image.
#[derive(Default)]
pub(crate) struct Stash {
    pieces: BTreeMap<u64, Piece>,
    /// Bytes held in memory.
    held: u64,
}

impl Stash {
    /// Bytes held in memory.
    pub(crate) fn held(&self) -> u64 {
        self.held
    }

    /// Keeps `bytes`, which were at `offset` in the image.
    pub(crate) fn put(&mut self, offset: u64, bytes: &[u8]) {
        let mut at = 0;
        while at < bytes.len() {
            let n = PIECE.min(bytes.len() - at);
            let piece = &bytes[at..at + n];
            let here = offset + at as u64;
            if super::super::writer::is_zero(piece) {
                // Extend the zero piece just before, when there is one.
                if let Some((&start, Piece::Zero(len))) = self.pieces.range_mut(..here).next_back()
                {
                    if start + *len == here {
                        *len += n as u64;
                        at += n;
                        continue;
                    }
                }
                self.pieces.insert(here, Piece::Zero(n as u64));
            } else {
                self.held += n as u64;
                self.pieces.insert(here, Piece::Data(piece.to_vec()));
            }
            at += n;
        }
    }

    /// The kept bytes from `offset` on, at most `len` of them, as far as they run without a gap; `None`
    /// when nothing is kept at `offset`.
    pub(crate) fn get(&self, offset: u64, len: u64) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let mut at = offset;
        let end = offset + len;
        let (&first, _) = self.pieces.range(..=offset).next_back()?;
        for (&start, piece) in self.pieces.range(first..) {
            if start + piece.len() <= at {
                continue;
            }
            if start > at || at >= end {
                break;
            }
            let from = (at - start) as usize;
            let n = (piece.len() - from as u64).min(end - at) as usize;
            match piece {
                Piece::Zero(_) => out.resize(out.len() + n, 0),
                Piece::Data(d) => out.extend_from_slice(&d[from..from + n]),
            }
            at += n as u64;
        }
        (!out.is_empty()).then_some(out)
    }

    /// Drops everything.
    pub(crate) fn clear(&mut self) {
        self.pieces.clear();
        self.held = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_bytes_come_back_across_pieces_and_zero_runs_cost_nothing() {
        let mut stash = Stash::default();
        let mut data = vec![0u8; 300 * 1024];
        data[200 * 1024] = 7;
        stash.put(4096, &data);
        assert_eq!(stash.held(), 64 * 1024);
        let got = stash.get(4096 + 100 * 1024, 150 * 1024).unwrap();
        assert_eq!(got, &data[100 * 1024..250 * 1024]);
        // A range running past what is kept stops at the gap.
        assert_eq!(
            stash.get(4096 + 290 * 1024, 64 * 1024).unwrap().len(),
            10 * 1024
        );
        assert!(stash.get(0, 10).is_none());
        assert!(stash.get(4096 + 300 * 1024, 10).is_none());
        stash.clear();
        assert!(stash.get(4096, 10).is_none());
    }
}
