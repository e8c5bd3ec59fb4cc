//! The last few pre-tokens too long for the long-piece table (over
//! `LONG_PIECE_MAX` bytes), kept whole with their ids, per thread.
//!
//! The long-piece table leaves such pieces out: they are rare, and hashing and
//! keeping them costs about what merging them does, except for the runs no
//! chunking makes cheap (a megabyte of random digits under GPT-2 is one
//! `\p{N}+` piece, 44 ms of merges). A text that comes again (the same page,
//! a repeated call) then merged it again, where keeping its ids costs a
//! comparison of its bytes. A few entries and `HUGE_BYTES_MAX` bytes of
//! pieces at most, the oldest replaced first; a piece larger than that is
//! never kept. States that promise flat memory (streaming, file workers) keep
//! none.

use std::collections::VecDeque;

/// The bytes of pieces a state keeps, at most (their ids add up to 4x that).
pub const HUGE_BYTES_MAX: usize = 4 << 20;
/// Pieces kept at most.
const HUGE_ENTRIES_MAX: usize = 4;

struct Entry {
    hash: u64,
    piece: Box<[u8]>,
    ids: Box<[u32]>,
}

pub struct HugePieces {
    entries: VecDeque<Entry>,
    bytes: usize,
    max_bytes: usize,
}

impl Default for HugePieces {
    fn default() -> Self {
        Self::with_max_bytes(HUGE_BYTES_MAX)
    }
}

impl HugePieces {
    /// Keeping at most `max_bytes` of pieces (0: none).
    pub fn with_max_bytes(max_bytes: usize) -> Self {
        Self { entries: VecDeque::new(), bytes: 0, max_bytes }
    }

    /// Append the ids of `piece` (whose `hash_long` is `hash`) to `out`, if it is kept.
    pub fn get(&self, piece: &[u8], hash: u64, out: &mut Vec<u32>) -> bool {
        let found = self.entries.iter().find(|entry| entry.hash == hash && *entry.piece == *piece);
        found.inspect(|entry| out.extend_from_slice(&entry.ids)).is_some()
    }

    /// Keep `piece` and its `ids`, replacing the oldest pieces to make room;
    /// a piece over the budget is not kept.
    pub fn insert(&mut self, piece: &[u8], hash: u64, ids: &[u32]) {
        if piece.len() > self.max_bytes {
            return;
        }
        while self.entries.len() >= HUGE_ENTRIES_MAX || self.bytes + piece.len() > self.max_bytes {
            let Some(oldest) = self.entries.pop_front() else { break };
            self.bytes -= oldest.piece.len();
        }
        self.bytes += piece.len();
        self.entries.push_back(Entry { hash, piece: piece.into(), ids: ids.into() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_latest_pieces_within_the_budget() {
        let mut kept = HugePieces::with_max_bytes(10);
        kept.insert(b"aaaa", 1, &[7]);
        kept.insert(b"bbbb", 2, &[8, 9]);
        let mut out = vec![];
        assert!(kept.get(b"aaaa", 1, &mut out) && kept.get(b"bbbb", 2, &mut out));
        assert_eq!(out, [7, 8, 9]);
        assert!(!kept.get(b"aaab", 1, &mut out), "the same hash with other bytes is no hit");
        kept.insert(b"cccc", 3, &[1]); // 12 bytes: the oldest goes
        assert!(!kept.get(b"aaaa", 1, &mut out) && kept.get(b"cccc", 3, &mut out));
        kept.insert(b"far too long", 4, &[2]);
        assert!(!kept.get(b"far too long", 4, &mut out), "over the budget: not kept");
        let none = HugePieces::with_max_bytes(0);
        assert!(!none.get(b"cccc", 3, &mut out));
    }
}
