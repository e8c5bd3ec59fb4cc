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
//!
//! A sparse table leaves out pairs that count 1. SuperBPE's pieces are whole
//! lines, nearly all distinct, and most of their pairs (60% at 30 MB of
//! Gutenberg) occur once; yet the merge loop ends long before it takes a pair
//! counted once. Left out, they make the table less than half as large, and
//! its look-ups, cache misses each, fewer. What stays exact: every pair that
//! counts 2 or more is in the table with its count, and a pair that is in the
//! table has its count. A pair not in the table can gain only when a merge
//! spells an existing symbol (a new symbol's pairs are new), so the merge loop
//! adds that symbol's pairs first (`add_missing`); and when no pair counts 2
//! or more, it asks for the whole table (`from_words`, not sparse).

use rustc_hash::FxHashMap;

use super::word::{Pair, WordStore};

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
    /// Pairs that count 1 may be left out (see the module comment).
    sparse: bool,
}

impl PairTable {
    /// Every pair of `words` (word `w` counted `counts[w]` times) with its
    /// count and holders, in two passes over the words: the first counts each
    /// pair and its holders, the second writes the holder lists in place in
    /// one arena. No list is a `Vec` of its own: with millions of distinct
    /// pairs (SuperBPE's whole lines), a `Vec` each, and moving them into the
    /// table, were most of the time. A `sparse` table leaves out the pairs
    /// that count 1 (see the module comment).
    pub fn from_words(words: &WordStore, counts: &[u64], sparse: bool) -> Self {
        let mut table = Self { sparse, ..Self::default() };
        // First pass: counts, and holders counted in `len`; `start` keeps the
        // last word seen + 1, so that a word holding a pair twice counts once.
        for word in 0..words.len() as u32 {
            let count = counts[word as usize] as i64;
            for pair in words.pairs(word) {
                let entry = table.entries.entry(pair).or_default();
                entry.count += count;
                if entry.holders.start != word as usize + 1 {
                    entry.holders = Span { start: word as usize + 1, len: entry.holders.len + 1 };
                }
            }
        }
        if sparse {
            table.entries.retain(|_, entry| entry.count > 1);
            table.entries.shrink_to_fit();
        }
        // Each list's place in the arena; `len` counts the holders written.
        let mut at = 0;
        for entry in table.entries.values_mut() {
            let holders = entry.holders.len;
            entry.holders = Span { start: at, len: 0 };
            at += holders;
        }
        table.arena = vec![0; at];
        table.live = at;
        for word in 0..words.len() as u32 {
            for pair in words.pairs(word) {
                let Some(entry) = table.entries.get_mut(&pair) else { continue };
                let Span { start, len } = entry.holders;
                if len == 0 || table.arena[start + len - 1] != word {
                    table.arena[start + len] = word;
                    entry.holders.len += 1;
                }
            }
        }
        table
    }

    /// Whether pairs that count 1 may be missing.
    pub fn is_sparse(&self) -> bool {
        self.sparse
    }

    /// Add every pair of `words` with `symbol` on one side that the table
    /// lacks, with its count and holders, so that a merge that spells
    /// `symbol` again finds the counts it adds to. One pass over the words.
    pub fn add_missing(&mut self, words: &WordStore, counts: &[u64], symbol: u32) {
        let mut missing: FxHashMap<Pair, (i64, Vec<u32>)> = FxHashMap::default();
        for word in 0..words.len() as u32 {
            for pair in words.pairs(word) {
                if (pair.0 == symbol || pair.1 == symbol) && !self.entries.contains_key(&pair) {
                    let (count, holders) = missing.entry(pair).or_default();
                    *count += counts[word as usize] as i64;
                    if holders.last() != Some(&word) {
                        holders.push(word);
                    }
                }
            }
        }
        for (pair, (count, holders)) in missing {
            self.add(pair, count, &holders);
        }
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
    /// A sparse table does not take in a pair that would count 1 (it is new,
    /// see the module comment), nor one that loses what it does not hold.
    pub fn change(&mut self, pair: Pair, delta: i64, gained: &[u32]) -> i64 {
        if self.sparse && delta < 2 && !self.entries.contains_key(&pair) {
            return delta.max(0);
        }
        self.add(pair, delta, gained)
    }

    /// `change`, taking in any pair.
    fn add(&mut self, pair: Pair, delta: i64, gained: &[u32]) -> i64 {
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

    fn words(words: &[&[u32]]) -> WordStore {
        let mut store = WordStore::default();
        words.iter().for_each(|word| {
            store.push_symbols(word);
        });
        store
    }

    #[test]
    fn from_words_counts_each_pair_and_its_holders_once_a_word() {
        // (1, 2) twice in word 0, once in word 2; (2, 1) once in word 0.
        let store = words(&[&[1, 2, 1, 2], &[3, 4], &[1, 2]]);
        let table = PairTable::from_words(&store, &[5, 1, 2], false);
        assert_eq!((table.count((1, 2)), holders(&table, (1, 2))), (2 * 5 + 2, vec![0, 2]));
        assert_eq!((table.count((2, 1)), table.count((3, 4)), holders(&table, (3, 4))), (5, 1, vec![1]));
        assert_eq!(table.live, 4);
        // Sparse: (3, 4) counts 1 and is left out; the rest as before.
        let sparse = PairTable::from_words(&store, &[5, 1, 2], true);
        assert_eq!((sparse.count((3, 4)), sparse.entries.len(), sparse.live), (0, 2, 3));
        assert_eq!(holders(&sparse, (1, 2)), [0, 2]);
    }

    #[test]
    fn a_sparse_table_takes_in_no_pair_that_counts_1_until_asked() {
        let store = words(&[&[1, 2], &[1, 3], &[7, 1, 3]]);
        let mut table = PairTable::from_words(&store, &[1, 1, 1], true);
        assert_eq!((table.count((1, 2)), table.count((1, 3))), (0, 2));
        // A new pair counting 1 stays out; one counting 2 comes in; losses of absent pairs do nothing.
        assert_eq!((table.change((9, 9), 1, &[0]), table.count((9, 9))), (1, 0));
        assert_eq!((table.change((8, 8), 2, &[1, 2]), holders(&table, (8, 8))), (2, vec![1, 2]));
        assert_eq!((table.change((1, 2), -1, &[]), table.count((1, 2))), (0, 0));
        // The pairs of symbol 1 the table lacks, with their counts: (1, 2) and (7, 1).
        table.add_missing(&store, &[1, 1, 1], 1);
        assert_eq!((table.count((1, 2)), holders(&table, (1, 2))), (1, vec![0]));
        assert_eq!((table.count((7, 1)), holders(&table, (7, 1))), (1, vec![2]));
        assert_eq!((table.count((1, 3)), holders(&table, (1, 3))), (2, vec![1, 2]));
        // Present, a pair counting 1 changes as in a full table.
        assert_eq!(table.change((1, 2), 1, &[5]), 2);
    }

    #[test]
    fn counts_and_holders_change_together() {
        let mut table = PairTable::default();
        table.change((1, 2), 10, &[0, 3, 5]);
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
