//! The live pairs of the merge loop: for each pair, its count over the words
//! (weighted by word count) and the words that may hold it.
//!
//! Count and holder list share one map entry: a merge's changes to a pair
//! (its new count, the words that gained it, or its removal) cost one probe
//! of a table of 100 K+ pairs, a cache miss, instead of one per map.
//!
//! Every holder list lives in one arena of word indices, as a span. A pair
//! gains holders only in the merge that creates its newer symbol (only pairs
//! with the new symbol gain count), so a list is written once, whole, when
//! that merge ends (`change`), and only read after. A `Vec` per pair cost a
//! `malloc` per new pair, a probe of the map per occurrence of the new symbol,
//! and a `free` per list (40 ms at 500 MB / 32k just to drop them at the end).
//!
//! Lists may hold words that lost the pair since (the merge re-checks each
//! word). A list that is taken or dropped leaves its span in the arena as
//! garbage; when the garbage outweighs the live lists, the arena is compacted
//! so that memory stays in proportion to the live lists.

use rustc_hash::FxHashMap;

use super::word::Pair;

/// Below this many entries, the arena is never compacted.
const MIN_COMPACT: usize = 1 << 20;

/// Where a pair's holder list lies in the arena.
#[derive(Debug, Clone, Copy, Default)]
pub struct Span {
    start: usize,
    len: usize,
}

impl Span {
    pub fn range(self) -> std::ops::Range<usize> {
        self.start..self.start + self.len
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    /// Always positive: a pair whose count falls to 0 leaves the table.
    count: i64,
    holders: Span,
}

#[derive(Debug, Default)]
pub struct PairTable {
    entries: FxHashMap<Pair, Entry>,
    arena: Vec<u32>,
    /// Entries of the arena in lists (the rest is garbage).
    live: usize,
}

impl PairTable {
    /// From the first count of the words: each pair's count and holders.
    pub fn from_counts(counts: FxHashMap<Pair, (i64, Vec<u32>)>) -> Self {
        let mut table = Self::default();
        table.arena.reserve(counts.values().map(|(_, words)| words.len()).sum());
        for (pair, (count, words)) in counts {
            table.change(pair, count, &words);
        }
        table
    }

    /// The live count of `pair` (0 if none).
    pub fn count(&self, pair: Pair) -> i64 {
        self.entries.get(&pair).map_or(0, |entry| entry.count)
    }

    /// Every live pair with its count, in no particular order.
    pub fn counts(&self) -> impl Iterator<Item = (Pair, i64)> + '_ {
        self.entries.iter().map(|(&pair, entry)| (pair, entry.count))
    }

    /// The arena, for reading a span returned by `remove`.
    pub fn arena(&self) -> &[u32] {
        &self.arena
    }

    /// Remove `pair` (when it is merged) and return where its holder list
    /// lies; the list stays readable until the next `change` (which may
    /// compact the arena).
    pub fn remove(&mut self, pair: Pair) -> Span {
        let entry = self.entries.remove(&pair).unwrap_or_default();
        self.live -= entry.holders.len;
        entry.holders
    }

    /// Add `delta` to `pair`'s count and `gained` to its holders; returns the
    /// new count. A pair whose count reaches 0 leaves the table. A pair that
    /// had holders already (a merge that reuses an existing symbol, see
    /// `merge.rs`) gets a new list: the old list's words, then the new ones.
    pub fn change(&mut self, pair: Pair, delta: i64, gained: &[u32]) -> i64 {
        if !gained.is_empty() && self.arena.len() > MIN_COMPACT && self.arena.len() > 2 * self.live {
            self.compact();
        }
        let entry = self.entries.entry(pair).or_default();
        entry.count += delta;
        let count = entry.count;
        if count <= 0 {
            self.live -= entry.holders.len;
            self.entries.remove(&pair);
        } else if !gained.is_empty() {
            let old = std::mem::replace(&mut entry.holders, Span { start: self.arena.len(), len: 0 });
            self.arena.extend_from_within(old.range());
            self.arena.extend_from_slice(gained);
            entry.holders.len = old.len + gained.len();
            self.live += gained.len();
        }
        count
    }

    /// Rewrite the live lists into a fresh arena, dropping the garbage.
    fn compact(&mut self) {
        let mut arena = Vec::with_capacity(2 * self.live);
        for entry in self.entries.values_mut() {
            let start = arena.len();
            arena.extend_from_slice(&self.arena[entry.holders.range()]);
            entry.holders.start = start;
        }
        self.arena = arena;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holders(table: &PairTable, pair: Pair) -> Vec<u32> {
        table.entries.get(&pair).map(|entry| table.arena[entry.holders.range()].to_vec()).unwrap_or_default()
    }

    #[test]
    fn counts_and_holders_change_together() {
        let mut table = PairTable::from_counts([((1, 2), (10, vec![0, 3, 5]))].into_iter().collect());
        assert_eq!(table.change((2, 7), 4, &[3, 4]), 4);
        assert_eq!((table.count((1, 2)), holders(&table, (1, 2))), (10, vec![0, 3, 5]));
        // A pair with a list already: the old words, then the new.
        assert_eq!(table.change((2, 7), 2, &[9]), 6);
        assert_eq!(holders(&table, (2, 7)), [3, 4, 9]);
        // Losing count keeps the list; reaching 0 drops the pair.
        assert_eq!(table.change((2, 7), -5, &[]), 1);
        assert_eq!(holders(&table, (2, 7)), [3, 4, 9]);
        assert_eq!(table.change((2, 7), -1, &[]), 0);
        assert_eq!((table.count((2, 7)), holders(&table, (2, 7))), (0, vec![]));
        let span = table.remove((1, 2));
        assert_eq!(table.arena()[span.range()], [0, 3, 5]);
        assert_eq!(table.count((1, 2)), 0);
        assert_eq!(table.live, 0);
    }

    #[test]
    fn compaction_keeps_every_live_list() {
        let mut table = PairTable::default();
        let words: Vec<u32> = (0..1000).collect();
        // Lists of 1,000 words, each dropped but the last 10: the arena
        // compacts several times on the way.
        for pair in 0..5000u32 {
            table.change((pair, pair), 1, &words);
            if pair < 4990 {
                table.remove((pair, pair));
            }
        }
        assert!(table.arena.len() <= 2 * MIN_COMPACT + words.len());
        for pair in 4990..5000u32 {
            assert_eq!(holders(&table, (pair, pair)), words);
        }
    }
}
