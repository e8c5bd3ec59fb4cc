//! The live pairs of the merge loop: for each pair, its count over the words
//! (weighted by word count) and the words that may hold it.
//!
//! Count and holder list share one map entry: a merge's changes to a pair
//! (its new count, the words that gained it, or its removal) cost one probe
//! of a table of 100 K+ pairs, a cache miss, instead of one per map.
//!
//! The table is in shards (`shard_of`), each a map and an arena, so that it
//! is built a shard at a time, from the occurrences of its pairs alone, on
//! several threads (`pair_build.rs`), and a merge's changes are applied by
//! shard on several threads (`change_all`).
//!
//! Every holder list lives in its shard's arena of word indices, as a span. A pair
//! gains holders only in the merge that creates its newer symbol (only pairs
//! with the new symbol gain count), so a list is written once, whole, when
//! that merge ends (`change`), and only read after. A `Vec` per pair cost a
//! `malloc` per new pair, a probe of the map per occurrence of the new symbol,
//! and a `free` per list (40 ms at 500 MB / 32k just to drop them at the end).
//!
//! Lists may hold words that lost the pair since (the merge re-checks each
//! word). A list that is taken or dropped leaves its span in the arena as
//! garbage; when the garbage outweighs the live lists, the shard's arena is
//! compacted so that memory stays in proportion to the live lists.
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

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::pair_build;
use super::word::{Pair, WordStore};

/// Below this many entries, a shard's arena is never compacted (a table
/// has up to 4,096 shards: their garbage stays below 64 MiB).
const MIN_COMPACT: usize = 1 << 12;

/// Where a pair's holder list lies in its shard's arena.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Span {
    pub start: u32,
    pub len: u32,
}

impl Span {
    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Entry {
    /// Always positive: a pair whose count falls to 0 leaves the table.
    pub count: i64,
    pub holders: Span,
}

/// The pairs whose `shard_of` is one number, with their holder lists. A
/// shard is built alone (`pair_build.rs`), small enough that its map stays
/// in cache while it is built, and by any thread.
#[derive(Debug, Default)]
pub(super) struct Shard {
    pub entries: FxHashMap<Pair, Entry>,
    pub arena: Vec<u32>,
    /// Entries of the arena in lists (the rest is garbage).
    pub live: usize,
}

/// A holder list taken out of the table by `remove`.
#[derive(Debug, Clone, Copy)]
pub struct Taken {
    shard: usize,
    span: Span,
}

#[derive(Debug)]
pub struct PairTable {
    shards: Vec<Shard>,
    /// `shards.len()` is `1 << shard_bits`.
    shard_bits: u32,
    /// Pairs that count 1 may be left out (see the module comment).
    sparse: bool,
}

impl Default for PairTable {
    fn default() -> Self {
        Self { shards: vec![Shard::default()], shard_bits: 0, sparse: false }
    }
}

/// Which of `1 << bits` shards holds `pair`: the top bits of a
/// multiplicative hash, another function than the maps' own (FxHash), whose
/// top bits, the same in every pair of a shard, would then tell nothing.
#[inline]
pub(super) fn shard_of(pair: Pair, bits: u32) -> usize {
    let key = (u64::from(pair.0) << 32 | u64::from(pair.1)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    key.checked_shr(64 - bits).unwrap_or(0) as usize
}

impl PairTable {
    /// Every pair of `words` (word `w` counted `counts[w]` times) with its
    /// count and holders (`pair_build.rs`: by shard, on the threads of the
    /// rayon pool the call runs in, if any). A `sparse` table leaves out the
    /// pairs that count 1 (see the module comment).
    pub fn from_words(words: &WordStore, counts: &[u64], sparse: bool) -> Self {
        let (shards, shard_bits) = pair_build::build_shards(words, counts, sparse);
        Self { shards, shard_bits, sparse }
    }

    fn shard(&self, pair: Pair) -> &Shard {
        &self.shards[shard_of(pair, self.shard_bits)]
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
                if (pair.0 == symbol || pair.1 == symbol) && !self.shard(pair).entries.contains_key(&pair) {
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
        self.shard(pair).entries.get(&pair).map_or(0, |entry| entry.count)
    }

    /// Every live pair with its count, in no particular order.
    pub fn counts(&self) -> impl Iterator<Item = (Pair, i64)> + '_ {
        self.shards.iter().flat_map(|shard| shard.entries.iter().map(|(&pair, entry)| (pair, entry.count)))
    }

    /// The holder list `remove` took; readable until the next `change`
    /// (which may compact the arena).
    pub fn holders(&self, taken: Taken) -> &[u32] {
        &self.shards[taken.shard].arena[taken.span.range()]
    }

    /// Remove `pair` (when it is merged) and return its holder list, to
    /// read with `holders`.
    pub fn remove(&mut self, pair: Pair) -> Taken {
        let index = shard_of(pair, self.shard_bits);
        let shard = &mut self.shards[index];
        let entry = shard.entries.remove(&pair).unwrap_or_default();
        shard.live -= entry.holders.len as usize;
        Taken { shard: index, span: entry.holders }
    }

    /// Add `delta` to `pair`'s count and `gained` to its holders; returns the
    /// new count. A pair whose count reaches 0 leaves the table. A pair that
    /// had holders already (a merge that reuses an existing symbol, see
    /// `merge.rs`) gets a new list: the old list's words, then the new ones.
    /// A sparse table does not take in a pair that would count 1 (it is new,
    /// see the module comment), nor one that loses what it does not hold.
    /// `made` is a symbol the merge being applied made, so that the table
    /// holds no pair with it yet: a sparse table then skips the look-up of a
    /// pair with it that counts 1 (most of a merge's changes, on lines).
    pub fn change(&mut self, pair: Pair, delta: i64, gained: &[u32], made: Option<u32>) -> i64 {
        let sparse = self.sparse;
        self.shards[shard_of(pair, self.shard_bits)].change(pair, delta, gained, sparse, made)
    }

    /// `change` for each of `changes` (distinct pairs), on the threads of
    /// `pool`, each changing its own run of shards; returns the pairs whose
    /// count grew, with their new count.
    pub fn change_all(
        &mut self,
        changes: &[(Pair, i64, &[u32])],
        made: Option<u32>,
        pool: &rayon::ThreadPool,
    ) -> Vec<(Pair, i64)> {
        let (bits, sparse) = (self.shard_bits, self.sparse);
        let per_thread = self.shards.len().div_ceil(pool.current_num_threads());
        let grown: Vec<Vec<(Pair, i64)>> = pool.install(|| {
            let runs = self.shards.par_chunks_mut(per_thread).enumerate();
            runs.map(|(run, shards)| {
                let first = run * per_thread;
                let mut grown = Vec::new();
                for &(pair, delta, gained) in changes {
                    let Some(shard) = shards.get_mut(shard_of(pair, bits).wrapping_sub(first)) else { continue };
                    let count = shard.change(pair, delta, gained, sparse, made);
                    if delta > 0 {
                        grown.push((pair, count));
                    }
                }
                grown
            })
            .collect()
        });
        grown.concat()
    }

    /// `change`, taking in any pair.
    fn add(&mut self, pair: Pair, delta: i64, gained: &[u32]) -> i64 {
        self.shards[shard_of(pair, self.shard_bits)].add(pair, delta, gained)
    }
}

impl Shard {
    /// `PairTable::change` in this shard.
    fn change(&mut self, pair: Pair, delta: i64, gained: &[u32], sparse: bool, made: Option<u32>) -> i64 {
        let absent = |pair: Pair| made.is_some_and(|made| pair.0 == made || pair.1 == made);
        if sparse && delta < 2 && (absent(pair) || !self.entries.contains_key(&pair)) {
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
            self.live -= entry.holders.len as usize;
            self.entries.remove(&pair);
        } else if !gained.is_empty() {
            let start = u32::try_from(self.arena.len()).expect("a shard's holder lists fit u32 indices");
            let old = std::mem::replace(&mut entry.holders, Span { start, len: 0 });
            self.arena.extend_from_within(old.range());
            self.arena.extend_from_slice(gained);
            entry.holders.len = old.len + gained.len() as u32;
            self.live += gained.len();
        }
        count
    }

    /// Rewrite the live lists into a fresh arena, dropping the garbage.
    fn compact(&mut self) {
        let mut arena = Vec::with_capacity(2 * self.live);
        for entry in self.entries.values_mut() {
            let start = arena.len() as u32;
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
        let shard = table.shard(pair);
        shard.entries.get(&pair).map(|entry| shard.arena[entry.holders.range()].to_vec()).unwrap_or_default()
    }

    fn live(table: &PairTable) -> usize {
        table.shards.iter().map(|shard| shard.live).sum()
    }

    fn len(table: &PairTable) -> usize {
        table.shards.iter().map(|shard| shard.entries.len()).sum()
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
        assert_eq!(live(&table), 4);
        // Sparse: (3, 4) counts 1 and is left out; the rest as before.
        let sparse = PairTable::from_words(&store, &[5, 1, 2], true);
        assert_eq!((sparse.count((3, 4)), len(&sparse), live(&sparse)), (0, 2, 3));
        assert_eq!(holders(&sparse, (1, 2)), [0, 2]);
    }

    #[test]
    fn a_sparse_table_takes_in_no_pair_that_counts_1_until_asked() {
        let store = words(&[&[1, 2], &[1, 3], &[7, 1, 3]]);
        let mut table = PairTable::from_words(&store, &[1, 1, 1], true);
        assert_eq!((table.count((1, 2)), table.count((1, 3))), (0, 2));
        // A new pair counting 1 stays out; one counting 2 comes in; losses of absent pairs do nothing.
        assert_eq!((table.change((9, 9), 1, &[0], None), table.count((9, 9))), (1, 0));
        assert_eq!((table.change((8, 8), 2, &[1, 2], None), holders(&table, (8, 8))), (2, vec![1, 2]));
        assert_eq!((table.change((1, 2), -1, &[], None), table.count((1, 2))), (0, 0));
        // Pairs with a symbol just made (9): one counting 1 is skipped unlooked, one counting 2 comes in.
        assert_eq!((table.change((3, 9), 1, &[2], Some(9)), table.count((3, 9))), (1, 0));
        assert_eq!((table.change((9, 3), 2, &[0, 2], Some(9)), holders(&table, (9, 3))), (2, vec![0, 2]));
        // The pairs of symbol 1 the table lacks, with their counts: (1, 2) and (7, 1).
        table.add_missing(&store, &[1, 1, 1], 1);
        assert_eq!((table.count((1, 2)), holders(&table, (1, 2))), (1, vec![0]));
        assert_eq!((table.count((7, 1)), holders(&table, (7, 1))), (1, vec![2]));
        assert_eq!((table.count((1, 3)), holders(&table, (1, 3))), (2, vec![1, 2]));
        // Present, a pair counting 1 changes as in a full table.
        assert_eq!(table.change((1, 2), 1, &[5], None), 2);
    }

    #[test]
    fn counts_and_holders_change_together() {
        let mut table = PairTable::default();
        table.change((1, 2), 10, &[0, 3, 5], None);
        assert_eq!(table.change((2, 7), 4, &[3, 4], None), 4);
        assert_eq!((table.count((1, 2)), holders(&table, (1, 2))), (10, vec![0, 3, 5]));
        // A pair with a list already: the old words, then the new.
        assert_eq!(table.change((2, 7), 2, &[9], None), 6);
        assert_eq!(holders(&table, (2, 7)), [3, 4, 9]);
        // Losing count keeps the list; reaching 0 drops the pair.
        assert_eq!(table.change((2, 7), -5, &[], None), 1);
        assert_eq!(holders(&table, (2, 7)), [3, 4, 9]);
        assert_eq!(table.change((2, 7), -1, &[], None), 0);
        assert_eq!((table.count((2, 7)), holders(&table, (2, 7))), (0, vec![]));
        let taken = table.remove((1, 2));
        assert_eq!(table.holders(taken), [0, 3, 5]);
        assert_eq!(table.count((1, 2)), 0);
        assert_eq!(live(&table), 0);
    }

    #[test]
    fn compaction_keeps_every_live_list() {
        let mut table = PairTable::default();
        let words: Vec<u32> = (0..1000).collect();
        // Lists of 1,000 words, each dropped but the last 10: the arena
        // compacts several times on the way.
        for pair in 0..500u32 {
            table.change((pair, pair), 1, &words, None);
            if pair < 490 {
                table.remove((pair, pair));
            }
        }
        let shard = &table.shards[0];
        assert!(shard.arena.len() <= 2 * MIN_COMPACT.max(shard.live) + words.len());
        for pair in 490..500u32 {
            assert_eq!(holders(&table, (pair, pair)), words);
        }
    }
}
