//! SuperBPE's stage-2 pieces (whole lines) as one arena of byte positions,
//! so that a merge touches only the occurrences of its pair, not the whole
//! lines that hold them.
//!
//! Slot `p` of the arena is byte `p` of the pieces laid end to end, each
//! after a separator. A token starting at `p` covering `len` bytes holds its
//! id in slot `p`; its other slots are dead, the last one holding how far
//! back the token starts. So the token after the one at `p` starts at
//! `p + len` (no next link), the one before at the slot before `p` or as far
//! back as that slot says (no prev link): 4 bytes a byte of text, as a plain
//! array of symbols was. A pair occurrence is known by the position of its
//! left token, which merges never move.
//!
//! The pieces are laid out by count, so a position's count is a binary
//! search over a few ranges, not a per-position word index.

use crate::error::Error;

use super::table::PretokenCounts;

/// Between pieces (and before the first): no token spans it.
const SEP: u32 = u32::MAX;
/// Set in a dead slot (inside a token); the rest is its distance back to
/// the token's start (read in a token's last slot only).
const DEAD: u32 = 1 << 31;

/// The pieces as token ids at byte positions (see the module comment).
pub struct Occurrences {
    slots: Vec<u32>,
    /// Where each piece's first byte is, ascending.
    starts: Vec<u32>,
    /// (first position, count) of each run of pieces that share a count, ascending.
    runs: Vec<(u32, i64)>,
}

impl Occurrences {
    /// The pieces of `counts` as single bytes, `byte_id` giving each byte's id.
    pub fn new(counts: &PretokenCounts, byte_id: impl Fn(u8) -> u32) -> Result<Self, Error> {
        // Group the pieces by count, in one pass to size the groups and one to fill them.
        let mut sizes: rustc_hash::FxHashMap<u64, usize> = Default::default();
        counts.for_each(|bytes, n| *sizes.entry(n).or_default() += bytes.len() + 1);
        let total = 1 + sizes.values().sum::<usize>();
        if total >= DEAD as usize {
            return Err(Error::InvalidArgument(format!(
                "SuperBPE's second stage holds at most {} bytes of distinct pieces, not {total}: \
                 train on a smaller sample",
                DEAD - 1
            )));
        }
        let mut by_count: Vec<(u64, usize)> = sizes.into_iter().collect();
        by_count.sort_unstable();
        let (mut cursors, mut runs) = (rustc_hash::FxHashMap::default(), Vec::with_capacity(by_count.len()));
        let mut at = 1;
        for (n, size) in by_count {
            cursors.insert(n, at);
            runs.push((at as u32, n as i64));
            at += size;
        }
        // Merges visit it at random, a TLB miss a visit on 4 KiB pages.
        let mut slots = crate::util::huge_pages::vec_with_capacity(total);
        slots.resize(total, SEP);
        counts.for_each(|bytes, n| {
            let at = cursors.get_mut(&n).expect("every count was sized");
            for (slot, &byte) in slots[*at..*at + bytes.len()].iter_mut().zip(bytes) {
                *slot = byte_id(byte);
            }
            *at += bytes.len() + 1;
        });
        let starts = (1..total).filter(|&p| slots[p - 1] == SEP && slots[p] != SEP).map(|p| p as u32).collect();
        Ok(Self { slots, starts, runs })
    }

    /// Every position, ascending, with the token there (dead slots and separators skipped).
    pub fn tokens<'a>(&'a self, len: impl Fn(u32) -> u32 + 'a) -> impl Iterator<Item = (u32, u32)> + 'a {
        let mut p = 0usize;
        std::iter::from_fn(move || loop {
            let token = *self.slots.get(p)?;
            let here = p as u32;
            p += if token == SEP { 1 } else { len(token) as usize };
            if token != SEP {
                return Some((here, token));
            }
        })
    }

    /// Each pair of adjacent tokens, as (position of its left token, pair), ascending.
    pub fn pairs<'a>(&'a self, len: impl Fn(u32) -> u32 + Copy + 'a) -> impl Iterator<Item = (u32, (u32, u32))> + 'a {
        self.tokens(len).filter_map(move |(p, token)| self.token_at(p + len(token)).map(|next| (p, (token, next))))
    }

    /// The count of the piece holding position `p`.
    #[inline]
    pub fn count_at(&self, p: u32) -> i64 {
        // Most positions are in the first run (the pieces seen once).
        if self.runs.len() < 2 || p < self.runs[1].0 {
            return self.runs[0].1;
        }
        let run = self.runs.partition_point(|&(start, _)| start <= p);
        self.runs[run - 1].1
    }

    /// Sum over the pieces of count x tokens.
    pub fn total_tokens(&self, len: impl Fn(u32) -> u32) -> u64 {
        self.tokens(len).map(|(p, _)| self.count_at(p) as u64).sum()
    }

    /// The first position of the piece holding `p`.
    pub fn piece_start(&self, p: u32) -> u32 {
        self.starts[self.starts.partition_point(|&start| start <= p) - 1]
    }

    /// The token at `p` if `p` starts one (not dead, not a separator).
    #[inline]
    pub fn token_at(&self, p: u32) -> Option<u32> {
        let token = self.slots[p as usize];
        (token & DEAD == 0).then_some(token)
    }

    /// The raw slot at `p`: a token id, or a value with the top bit set.
    #[inline]
    pub fn slot(&self, p: u32) -> u32 {
        self.slots[p as usize]
    }

    /// Ask for the slot at `p` to be cached.
    #[inline]
    pub fn prefetch(&self, p: u32) {
        if let Some(slot) = self.slots.get(p as usize) {
            crate::util::prefetch::prefetch(slot);
        }
    }

    /// The position and token before the token at `p`, in its piece.
    #[inline]
    pub fn before(&self, p: u32) -> Option<(u32, u32)> {
        let q = p - 1;
        let slot = self.slots[q as usize];
        let start = match slot {
            SEP => return None,
            _ if slot & DEAD != 0 => q - (slot & !DEAD),
            _ => q,
        };
        Some((start, self.slots[start as usize]))
    }

    /// Join the token at `p` (`left_len` bytes) and the one after it
    /// (`right_len` bytes) into `new`.
    #[inline]
    pub fn join(&mut self, p: u32, left_len: u32, right_len: u32, new: u32) {
        let (p, right) = (p as usize, (p + left_len) as usize);
        let last = right + right_len as usize - 1;
        self.slots[p] = new;
        self.slots[right] = DEAD | (right - p) as u32;
        self.slots[last] = DEAD | (last - p) as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arena(words: &[(&str, u64)]) -> Occurrences {
        let mut table = PretokenCounts::default();
        words.iter().for_each(|&(word, n)| table.insert(word.as_bytes(), n));
        Occurrences::new(&table, u32::from).unwrap()
    }

    #[test]
    fn pieces_lie_by_count_and_joins_keep_before_and_after() {
        // 256 + 1 is "ab", 258 is "abc": lengths by id.
        let len = |id: u32| match id {
            257 => 2,
            258 => 3,
            _ => 1,
        };
        let mut arena = arena(&[("xabcd", 2), ("q", 5)]);
        let pieces: Vec<(u32, u32)> = arena.tokens(len).collect();
        // "xabcd" (count 2) first, then "q" (count 5).
        assert_eq!(pieces.iter().map(|&(_, t)| t as u8 as char).collect::<String>(), "xabcdq");
        assert_eq!((arena.count_at(1), arena.count_at(5), arena.count_at(7)), (2, 2, 5));
        assert_eq!(arena.total_tokens(len), 5 * 2 + 5);
        // Join a+b at 2, then ab+c.
        arena.join(2, 1, 1, 257);
        arena.join(2, 2, 1, 258);
        let tokens: Vec<(u32, u32)> = arena.tokens(len).collect();
        assert_eq!(tokens[..3], [(1, u32::from(b'x')), (2, 258), (5, u32::from(b'd'))]);
        assert_eq!(arena.before(5), Some((2, 258)));
        assert_eq!(arena.before(2), Some((1, u32::from(b'x'))));
        assert_eq!(arena.before(1), None);
        assert_eq!((arena.token_at(3), arena.token_at(4)), (None, None));
        assert_eq!((arena.piece_start(4), arena.piece_start(7)), (1, 7));
        assert_eq!(arena.total_tokens(len), 3 * 2 + 5);
    }
}
