//! The parts of a long pre-token (`Encoder::encode_in_parts`): where no merge
//! joins two bytes (`Vocabulary::can_cut_between`). A piece that fits the
//! long-piece table is cut a byte at a time (`part_ends`). A longer one is cut
//! a window of `WINDOW` bytes at a time (`PartWindow`): first where the
//! window's parts end, as bits of one mask, then each part packed, hashed and
//! its bucket of the thread's table prefetched, before the first is looked up,
//! as a batch of pieces is (`piece_batch.rs`).
//!
//! Why windows: cl100k keeps 1 MB of CJK without spaces as one pre-token, cut
//! into 130 K parts of one to five chars. Cut byte by byte and looked up one
//! after another, each part waited on its bucket's line, and 1 MB took 4-6x
//! the time of 0.25 MB.

use crate::bpe::vocab::Vocabulary;
use crate::encode::cache::long_pieces::{hash_long, LongPieceTable, LONG_PIECE_MAX};
use crate::encode::cache::piece_table::Probe;
use crate::util::packed_key::{hash_packed, pack_at};
use crate::util::prefetch::L1;

/// Bytes a window: one bit of the mask each.
pub(super) const WINDOW: usize = 64;

/// A part as cut: packed, or too long to pack (looked up by its bytes in the
/// long-piece table), with the hash it is looked up by; or too long for
/// that table too (a run of digits under GPT-2 is one part), merged.
#[derive(Clone, Copy)]
pub(super) enum Part {
    Packed { key: u128, hash: u64 },
    Long { hash: u64 },
    Unkept,
}

/// One window's parts: where each ends, and how it is looked up. Two arrays,
/// not one of `(end, part)` pairs: those are 64 bytes each (a `Part` is
/// aligned to 16), and cl100k's run of one multi-byte char took 5% longer.
#[derive(Clone, Copy)]
pub struct PartWindow {
    ends: [usize; WINDOW],
    parts: [Part; WINDOW],
    len: usize,
    /// Where its last part ends, or where its first would have started
    /// when it has none: where the next window's first part starts.
    end: usize,
}

/// Two windows: the parts of one are looked up while the buckets of the
/// next one's are on their way (a window's own lookups came too soon after
/// its prefetches: a quarter of `encode_pretoken` still waited on them).
/// Kept in the state (`EncodeState::parts`) rather than made for each long
/// piece.
pub type PartWindows = [PartWindow; 2];

impl Default for PartWindow {
    fn default() -> Self {
        Self { ends: [0; WINDOW], parts: [Part::Long { hash: 0 }; WINDOW], len: 0, end: 0 }
    }
}

impl PartWindow {
    /// The parts of `piece` that end in the window from byte `window` (cut
    /// where no merge of `vocab` joins two bytes,
    /// `Vocabulary::can_cut_between`, and at the piece's end), the first
    /// starting at `start`, each packed or hashed and where it will be looked
    /// up prefetched: its bucket of `table`, or its slot of `long`. A part
    /// that runs past the window ends in a later one, so a window may hold no
    /// part.
    #[inline]
    pub(super) fn cut(
        &mut self,
        piece: &[u8],
        start: usize,
        window: usize,
        vocab: &Vocabulary,
        table: Probe<'_>,
        long: &LongPieceTable,
    ) {
        let mut ends = cut_mask(piece, window, vocab);
        (self.len, self.end) = (0, start);
        while ends != 0 {
            let end = window + ends.trailing_zeros() as usize + 1;
            ends &= ends - 1;
            let part = match pack_at(piece, self.end, end) {
                Some(key) => {
                    let hash = hash_packed(key);
                    table.prefetch_at::<L1>(table.bucket_index(hash));
                    Part::Packed { key, hash }
                }
                None if end - self.end > LONG_PIECE_MAX => Part::Unkept,
                None => {
                    let hash = hash_long(&piece[self.end..end]);
                    long.prefetch(hash);
                    Part::Long { hash }
                }
            };
            (self.ends[self.len], self.parts[self.len]) = (end, part);
            self.len += 1;
            self.end = end;
        }
    }

    /// Where the next window's first part starts.
    pub(super) fn end(&self) -> usize {
        self.end
    }

    /// Each part of the window: where it ends, and how it is looked up.
    pub(super) fn parts(&self) -> impl Iterator<Item = (usize, Part)> + '_ {
        self.ends[..self.len].iter().copied().zip(self.parts[..self.len].iter().copied())
    }
}

/// The window of `piece` from byte `window` on, as a mask whose bit `i` says
/// that a part ends after byte `window + i`: the pair of it and the next
/// byte is in no token, or it is the piece's last byte. Without a branch a
/// byte: where a CJK part ends is as good as random, and a branch there
/// mispredicted once a part.
#[inline]
fn cut_mask(piece: &[u8], window: usize, vocab: &Vocabulary) -> u64 {
    let last = piece.len() - 1;
    let bytes = (last - window).min(WINDOW);
    let mut mask = 0;
    for (i, pair) in piece[window..window + bytes + 1].windows(2).enumerate() {
        mask |= (vocab.can_cut_between(pair[0], pair[1]) as u64) << i;
    }
    if bytes < WINDOW {
        mask |= 1 << bytes;
    }
    mask
}

/// Where each part of `piece` ends, found a byte at a time: the cut of
/// pieces that fit the long-piece table, and the reference for `cut_mask`.
pub(super) fn part_ends<'a>(piece: &'a [u8], vocab: &'a Vocabulary) -> impl Iterator<Item = usize> + 'a {
    (1..=piece.len()).filter(|&end| end == piece.len() || vocab.can_cut_between(piece[end - 1], piece[end]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::cache::seeds::vocabulary_with_a_token_bpe_never_makes;
    use crate::util::packed_key::pack;
    use crate::util::test_rng::XorShift;

    fn parts_by_windows(piece: &[u8], vocab: &Vocabulary) -> Vec<usize> {
        let (table, long) = (crate::encode::cache::piece_table::PieceTable::default(), LongPieceTable::default());
        let mut window = PartWindow::default();
        let mut ends = Vec::new();
        let mut start = 0;
        for at in (0..piece.len()).step_by(WINDOW) {
            window.cut(piece, start, at, vocab, table.probe(), &long);
            for (end, part) in window.parts() {
                let bytes = &piece[start..end];
                match part {
                    Part::Packed { key, hash } => assert_eq!((Some(key), hash), (pack(bytes), hash_packed(key))),
                    Part::Long { hash } => assert_eq!((pack(bytes), hash), (None, hash_long(bytes))),
                    Part::Unkept => assert!(bytes.len() > LONG_PIECE_MAX),
                }
                ends.push(end);
                start = end;
            }
            assert_eq!(window.end(), start);
        }
        ends
    }

    #[test]
    fn windows_cut_where_the_byte_by_byte_cut_does_at_every_length() {
        // Its tokens join "a", "b", "c" and " " in some orders, not in others.
        let vocab = vocabulary_with_a_token_bpe_never_makes();
        let mut rng = XorShift(7);
        for len in 1..300 {
            let piece: Vec<u8> = (0..len).map(|_| b"abc d"[rng.below(5)]).collect();
            assert_eq!(parts_by_windows(&piece, &vocab), part_ends(&piece, &vocab).collect::<Vec<_>>(), "{piece:?}");
        }
        // "ca", "ab" and "bc" are all in tokens: "cab" repeated is one part,
        // here longer than the long-piece table keeps, between short ones.
        let piece = [&b"a d"[..], &b"cab".repeat(500), b" dd", &b"cab".repeat(30), b"d"].concat();
        let ends = parts_by_windows(&piece, &vocab);
        assert_eq!(ends, part_ends(&piece, &vocab).collect::<Vec<_>>());
        assert!(ends.windows(2).any(|part| part[1] - part[0] > LONG_PIECE_MAX));
    }
}
