//! Phase 2 of training: the merge loop over the distinct pre-tokens.
//!
//! State kept between merges, so that a merge costs time in proportion to the
//! words it touches, never to the corpus:
//! - `pairs`: the live count of every adjacent pair, weighted by word count,
//!   and the words that may hold it (`pairs.rs`; a list may name a word that
//!   lost the pair, or rarely a word twice: the merge re-checks each word, and
//!   a word visited again no longer holds the pair);
//! - `queue`: a max-heap of candidates with lazy invalidation. Only pairs that
//!   hold the new symbol can gain count, and they are pushed when they do; every
//!   other entry's count can only be too high, so a popped entry whose count is
//!   stale is pushed back with the live count and the true maximum surfaces.
//!   The heap holds only the pairs that reach its floor (`queue.rs`), and is
//!   refilled from `pairs` when it runs dry.
//!
//! Symbols are identified by their bytes, as in the CS336 reference (which
//! keys pairs by `(bytes, bytes)`): when a merge creates bytes that already
//! name a symbol (`ab`+`c` and `a`+`bc` both give `abc`), the existing symbol
//! id is reused, so both spellings count as one.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::deltas::MergeDeltas;
use super::holder_walk::{walk, Walkers, SHARED_WALK};
use super::pairs::PairTable;
use super::queue::{Candidate, MergeQueue};
use super::table::PretokenCounts;
use super::word::{Pair, WordStore};
use crate::bpe::merges::Merge;
use crate::error::Error;
use crate::progress::{Observer, Phase};

/// Options users expect from other trainers, off by default (CS336 has neither).
#[derive(Debug, Clone, Copy, Default)]
pub struct MergeLimits {
    /// Stop once the best pair occurs fewer times than this.
    pub min_frequency: u64,
    /// Never merge into a token longer than this many bytes.
    pub max_token_length: Option<usize>,
}

/// Learn up to `max_merges` merges from the pre-token table, in order.
pub fn learn_merges(
    counts: PretokenCounts,
    max_merges: usize,
    limits: MergeLimits,
    observer: &dyn Observer,
) -> Result<Learned, Error> {
    learn_merges_from(Start::from_bytes(counts), max_merges, limits, observer)
}

/// What the merge loop learned, and the corpus's length in tokens before and after.
#[derive(Debug, Clone)]
pub struct Learned {
    pub merges: Vec<Merge>,
    /// The token each merge made, in merge order. It shares its bytes with
    /// the merges that use it as a side, so a vocabulary laid out from these
    /// holds each token's bytes once: on one long pre-token (a file of one
    /// letter), the tokens are most of the memory, and copying them to lay
    /// out the vocabulary doubled the peak.
    pub tokens: Vec<Arc<[u8]>>,
    /// Sum over pre-tokens of count x tokens, at the start and at the end.
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// Learn up to `max_merges` merges, continuing from `start`.
pub fn learn_merges_from(
    start: Start,
    max_merges: usize,
    limits: MergeLimits,
    observer: &dyn Observer,
) -> Result<Learned, Error> {
    learn_merges_accepting(start, max_merges, limits, |_, _| true, None, observer)
}

/// `learn_merges_from`, never merging a pair of tokens `accept` refuses (SuperBPE's
/// rules): the best pair it accepts wins. A pair's tokens are fixed bytes, so a
/// refusal is for good. With a `pool`, the pair table is built on its threads.
pub fn learn_merges_accepting(
    start: Start,
    max_merges: usize,
    limits: MergeLimits,
    accept: impl Fn(&[u8], &[u8]) -> bool,
    pool: Option<&rayon::ThreadPool>,
    observer: &dyn Observer,
) -> Result<Learned, Error> {
    let fixed_tokens = start.fixed_tokens;
    let mut state = MergeState::new(start, limits.max_token_length, pool);
    let tokens_before = fixed_tokens + state.tokens();
    // `max_merges` comes from the user's vocab_size: never size memory by it
    // (a vocab_size of 2**32 would ask for 32 GB up front).
    let mut merges = Vec::with_capacity(max_merges.min(1 << 16));
    let mut tokens = Vec::with_capacity(max_merges.min(1 << 16));
    while merges.len() < max_merges {
        let Some((pair, count)) = state.pop_best(&accept) else { break };
        if count < limits.min_frequency {
            break;
        }
        merges.push((state.symbols[pair.0 as usize].clone(), state.symbols[pair.1 as usize].clone()));
        let new = state.apply(pair);
        tokens.push(state.symbols[new as usize].clone());
        if merges.len() % 64 == 0 {
            observer.progress(Phase::Merge, merges.len() as u64, max_merges as u64)?;
        }
    }
    // The phase is complete: when the corpus ran out of pairs early, that is
    // fewer merges than asked for, which the summary reports.
    observer.progress(Phase::Merge, merges.len() as u64, merges.len() as u64)?;
    let tokens_after = fixed_tokens + state.tokens();
    Ok(Learned { merges, tokens, tokens_before, tokens_after })
}

/// Where the merge loop starts: the words that can still merge, as symbol
/// sequences, with their counts, and the bytes of every symbol.
#[derive(Debug, Clone, Default)]
pub struct Start {
    pub words: WordStore,
    pub word_counts: Vec<u64>,
    /// Symbol id -> bytes. Ids 0..256 must be the single bytes; no two symbols
    /// may have the same bytes (symbols are identified by their bytes).
    pub symbols: Vec<Arc<[u8]>>,
    /// Tokens of the pre-tokens left out because they are one symbol already
    /// (count x 1 each): only for the before/after figures.
    pub fixed_tokens: u64,
    /// Keep pairs that count 1 out of the pair table until no other is left
    /// (`pairs.rs`): for words that are nearly all distinct (SuperBPE's lines),
    /// where those pairs are most of the table and never merged.
    pub sparse_pairs: bool,
}

impl Start {
    /// From scratch: every pre-token as its bytes.
    pub fn from_bytes(counts: PretokenCounts) -> Self {
        let mut start = Self { symbols: byte_symbols(), ..Self::default() };
        start.word_counts.reserve(counts.len());
        counts.for_each(|bytes, n| {
            // A one-byte pre-token holds no pair and can never change: leave it out.
            if bytes.len() > 1 {
                start.words.push_bytes(bytes);
                start.word_counts.push(n);
            } else {
                start.fixed_tokens += n;
            }
        });
        start
    }
}

/// Symbols 0..256: the single bytes.
pub fn byte_symbols() -> Vec<Arc<[u8]>> {
    (0..=255u8).map(|b| Arc::from([b].as_slice())).collect()
}

struct MergeState<'p> {
    pool: Option<&'p rayon::ThreadPool>,
    words: WordStore,
    word_counts: Vec<u64>,
    /// Pair count changes of the merge being applied (kept to reuse its memory).
    deltas: MergeDeltas,
    /// The threads' holders and changes in a merge they share (`holder_walk.rs`).
    walkers: Walkers,
    pairs: PairTable,
    queue: MergeQueue,
    /// Symbol id -> bytes; ids 0..256 are the single bytes.
    symbols: Vec<Arc<[u8]>>,
    symbol_ids: FxHashMap<Arc<[u8]>, u32>,
    max_token_length: usize,
}

impl<'p> MergeState<'p> {
    fn new(start: Start, max_token_length: Option<usize>, pool: Option<&'p rayon::ThreadPool>) -> Self {
        let Start { words, word_counts, symbols, sparse_pairs, .. } = start;
        let symbol_ids = symbols.iter().enumerate().map(|(id, bytes)| (bytes.clone(), id as u32)).collect();
        let mut state = Self {
            pool,
            words,
            word_counts,
            deltas: MergeDeltas::default(),
            walkers: Walkers::default(),
            pairs: PairTable::default(),
            queue: MergeQueue::default(),
            symbols,
            symbol_ids,
            max_token_length: max_token_length.unwrap_or(usize::MAX),
        };
        state.pairs = state.pair_table(sparse_pairs);
        state
    }

    /// The pair table of the words, built on the pool's threads if any.
    fn pair_table(&self, sparse: bool) -> PairTable {
        let build = || PairTable::from_words(&self.words, &self.word_counts, sparse);
        match self.pool {
            Some(pool) => pool.install(build),
            None => build(),
        }
    }

    /// Sum over the words of count x length.
    fn tokens(&self) -> u64 {
        (0..self.words.len() as u32).map(|w| self.word_counts[w as usize] * self.words.symbols(w).len() as u64).sum()
    }

    fn candidate(&self, pair: Pair, count: u64) -> Candidate {
        Candidate::new(count, pair, self.symbols[pair.0 as usize].clone(), self.symbols[pair.1 as usize].clone())
    }

    /// The pair to merge next and its count, or `None` when no pair is left.
    /// A pair that would make a token longer than the limit is dropped for
    /// good: it holds only existing symbols, so its count can never grow again.
    /// A pair `accept` refuses leaves the table, so that no refill admits it
    /// again (should a merge that reuses a symbol bring it back, it is refused again).
    fn pop_best(&mut self, accept: &impl Fn(&[u8], &[u8]) -> bool) -> Option<(Pair, u64)> {
        loop {
            while let Some(mut top) = self.queue.pop() {
                if top.left().len() + top.right().len() > self.max_token_length {
                    continue;
                }
                let live = self.pairs.count(top.pair);
                if live == top.count as i64 {
                    if accept(top.left(), top.right()) {
                        return Some((top.pair, top.count));
                    }
                    self.pairs.remove(top.pair);
                    continue;
                }
                // Below the floor, the pair waits in `pairs` for a refill.
                if live > 0 && self.queue.admits(live as u64) {
                    top.count = live as u64;
                    self.queue.push(top);
                }
            }
            if !self.refill_queue() {
                return None;
            }
        }
    }

    /// Admit the next band of pairs into the dry queue; false when no pair
    /// that may still merge is left. A sparse table admits pairs counting 2 or
    /// more (a pair counting 1 may be missing, and could win a tie); with none
    /// left, the whole table is counted.
    fn refill_queue(&mut self) -> bool {
        if self.pairs.is_sparse() {
            if self.admit_band(2) {
                return true;
            }
            self.pairs = self.pair_table(false);
        }
        self.admit_band(1)
    }

    /// `refill_queue` among the pairs counting `least` or more.
    fn admit_band(&mut self, least: i64) -> bool {
        let fits = |&(left, right): &Pair| {
            self.symbols[left as usize].len() + self.symbols[right as usize].len() <= self.max_token_length
        };
        let pairs = self.pairs.counts().filter(|&(pair, count)| count >= least && fits(&pair));
        let pairs = pairs.map(|(pair, count)| (count as u64, pair));
        let pairs = pairs.collect();
        let mut queue = std::mem::take(&mut self.queue);
        let refilled = queue.refill(pairs, |pair, count| self.candidate(pair, count));
        self.queue = queue;
        refilled
    }

    /// Merge `pair` in every word that holds it and update the counts;
    /// returns the merged symbol.
    fn apply(&mut self, pair: Pair) -> u32 {
        let symbols = self.symbols.len();
        let new = self.symbol_for_merge(pair);
        // A symbol just made: the table holds no pair with it.
        let made = (new as usize >= symbols).then_some(new);
        if (new as usize) < symbols && self.pairs.is_sparse() {
            // An existing symbol: its pairs that count 1 are about to gain.
            self.pairs.add_missing(&self.words, &self.word_counts, new);
        }
        let taken = self.pairs.remove(pair);
        let Self { pool, words, word_counts, pairs, deltas, walkers, .. } = self;
        let holders = pairs.holders(taken);
        let shared_pool = pool.filter(|pool| pool.current_num_threads() > 1 && holders.len() >= SHARED_WALK);
        let removed = match shared_pool {
            Some(pool) => walkers.walk_shared(pool, &words.shared(), word_counts, holders, pair, new, deltas),
            // SAFETY: one thread merges every word.
            None => unsafe { walk(&words.shared(), word_counts, holders, pair, new, deltas) },
        };
        words.forget_removed(removed);
        let mut deltas = std::mem::take(&mut self.deltas);
        match shared_pool {
            Some(pool) => deltas.drain_all(|changes| {
                for (changed, count) in self.pairs.change_all(changes, made, pool) {
                    self.offer(changed, count);
                }
            }),
            None => deltas.drain(|changed, delta, gained| self.apply_delta(changed, delta, gained, made)),
        }
        self.deltas = deltas;
        self.words.compact_if_sparse();
        new
    }

    /// One pair's total change in a merge, with the words that gained it.
    fn apply_delta(&mut self, pair: Pair, delta: i64, gained: &[u32], made: Option<u32>) {
        let live = self.pairs.change(pair, delta, gained, made);
        if delta > 0 {
            self.offer(pair, live);
        }
    }

    /// Queue `pair`, whose count grew to `count`, if the queue takes it.
    fn offer(&mut self, pair: Pair, count: i64) {
        if self.queue.admits(count as u64) {
            self.queue.push(self.candidate(pair, count as u64));
        }
    }

    /// The symbol for the merge of `pair`: an existing one with the same
    /// bytes, else a new one.
    fn symbol_for_merge(&mut self, (left, right): Pair) -> u32 {
        let bytes = concat(&self.symbols[left as usize], &self.symbols[right as usize]);
        if let Some(&id) = self.symbol_ids.get(&bytes) {
            return id;
        }
        let id = self.symbols.len() as u32;
        self.symbols.push(bytes.clone());
        self.symbol_ids.insert(bytes, id);
        id
    }
}

/// `left` then `right` in one new allocation. Not `concat().into()`: that
/// copies into a `Vec` and again into the `Arc`, and each freed `Vec` left a
/// hole that the next, longer token could not use: on one long pre-token,
/// whose tokens double in length, the holes added up to the tokens' size.
pub(super) fn concat(left: &[u8], right: &[u8]) -> Arc<[u8]> {
    // An iterator of known length: the `Arc` is allocated once, at its size.
    left.iter().chain(right).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Silent;

    fn table(words: &[(&str, u64)]) -> PretokenCounts {
        let mut table = PretokenCounts::default();
        for &(word, n) in words {
            table.insert(word.as_bytes(), n);
        }
        table
    }

    fn learned(words: &[(&str, u64)], max_merges: usize) -> Vec<(String, String)> {
        let merges = learn_merges(table(words), max_merges, MergeLimits::default(), &Silent).unwrap().merges;
        merges
            .iter()
            .map(|(l, r)| (String::from_utf8(l.to_vec()).unwrap(), String::from_utf8(r.to_vec()).unwrap()))
            .collect()
    }

    #[test]
    fn cs336_worked_example() {
        // DESIGN §1.1: {low: 5, lower: 2, widest: 3, newest: 6}, whitespace pre-tokens.
        let merges = learned(&[("low", 5), ("lower", 2), ("widest", 3), ("newest", 6)], 12);
        let expected = [
            ("s", "t"),
            ("e", "st"),
            ("o", "w"),
            ("l", "ow"),
            ("w", "est"),
            ("n", "e"),
            ("ne", "west"),
            ("w", "i"),
            ("wi", "d"),
            ("wid", "est"),
            ("low", "e"),
            ("lowe", "r"),
        ];
        let expected: Vec<(String, String)> = expected.iter().map(|(l, r)| (l.to_string(), r.to_string())).collect();
        assert_eq!(merges, expected);
    }

    #[test]
    fn limits_stop_early_or_skip_long_tokens() {
        let words = [("low", 5), ("lower", 2), ("widest", 3), ("newest", 6)];
        let limited = |limits| {
            let merges = learn_merges(table(&words), 12, limits, &Silent).unwrap().merges;
            merges.iter().map(|(l, r)| [&**l, &**r].concat()).collect::<Vec<_>>()
        };
        // Counts of the CS336 example's merges: st 9, est 9, ow 7, low 7, west 6, ne 6, ...
        let frequent = limited(MergeLimits { min_frequency: 7, max_token_length: None });
        assert_eq!(frequent, [b"st".to_vec(), b"est".to_vec(), b"ow".to_vec(), b"low".to_vec()]);
        // No token over 3 bytes: "west", "newest", "lowe", ... are never made.
        let short = limited(MergeLimits { min_frequency: 0, max_token_length: Some(3) });
        assert!(short.iter().all(|token| token.len() <= 3), "{short:?}");
        assert!(short.contains(&b"est".to_vec()) && short.contains(&b"low".to_vec()));
    }

    /// The CS336 loop written plainly: recount every pair, take the greatest
    /// `(count, left bytes, right bytes)`, merge it everywhere.
    fn naive_merges(words: &[(Vec<u8>, u64)], max_merges: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut words: Vec<(Vec<Vec<u8>>, u64)> =
            words.iter().map(|(bytes, n)| (bytes.iter().map(|&b| vec![b]).collect(), *n)).collect();
        let mut merges = Vec::new();
        while merges.len() < max_merges {
            let mut counts: std::collections::HashMap<(Vec<u8>, Vec<u8>), u64> = Default::default();
            for (tokens, n) in &words {
                for pair in tokens.windows(2) {
                    *counts.entry((pair[0].clone(), pair[1].clone())).or_insert(0) += n;
                }
            }
            let Some((best, _)) = counts.into_iter().max_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0))) else { break };
            for (tokens, _) in &mut words {
                let mut merged = Vec::with_capacity(tokens.len());
                let mut i = 0;
                while i < tokens.len() {
                    if i + 1 < tokens.len() && tokens[i] == best.0 && tokens[i + 1] == best.1 {
                        merged.push([&best.0[..], &best.1[..]].concat());
                        i += 2;
                    } else {
                        merged.push(tokens[i].clone());
                        i += 1;
                    }
                }
                *tokens = merged;
            }
            merges.push(best);
        }
        merges
    }

    #[test]
    fn equals_the_naive_loop_on_random_words() {
        // Few letters, so that pairs repeat, overlap (`aaa`) and two merges
        // can spell one token; counts from 1 to 1000, so that the queue's
        // floor falls many times (a refill whenever the band runs dry).
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        };
        for round in 0..4 {
            let mut words = Vec::new();
            for _ in 0..300 {
                let len = 2 + next(9) as usize;
                let bytes: Vec<u8> = (0..len).map(|_| b"abcde"[next(2 + round as u64) as usize]).collect();
                let n = if next(4) == 0 { 1 + next(1000) } else { 1 + next(5) };
                words.push((bytes, n));
            }
            let mut counts = PretokenCounts::default();
            for (bytes, n) in &words {
                counts.insert(bytes, *n);
            }
            // Duplicate words were added up by the table; the naive loop sees them apart, which is the same.
            let expected = naive_merges(&words, 400);
            // The sparse pair table (pairs counting 1 left out until needed) learns the same merges:
            // few letters, so merges spell existing symbols, and the run goes on to pairs counting 1.
            for sparse_pairs in [false, true] {
                let start = Start { sparse_pairs, ..Start::from_bytes(counts.clone()) };
                let fast = learn_merges_from(start, 400, MergeLimits::default(), &Silent).unwrap().merges;
                let fast: Vec<(Vec<u8>, Vec<u8>)> = fast.iter().map(|(l, r)| (l.to_vec(), r.to_vec())).collect();
                assert_eq!(fast, expected, "round {round}, sparse {sparse_pairs}");
            }
        }
    }

    #[test]
    fn a_spelling_met_again_reuses_its_symbol_and_extends_its_holders() {
        // Symbols "ab" (256) and "bc" (257) to start from, as a continued
        // training has: "abc" is made as ab+c first, then again as a+bc.
        let [a, c, d] = [b'a', b'c', b'd'].map(u32::from);
        let mut start = Start { symbols: byte_symbols(), ..Start::default() };
        start.symbols.extend([Arc::from(&b"ab"[..]), Arc::from(&b"bc"[..])]);
        for (word, n) in [(vec![256, c], 10), (vec![a, 257, d], 5), (vec![256, c, d], 3), (vec![a, 257], 2)] {
            start.words.push_symbols(&word);
            start.word_counts.push(n);
        }
        // (ab, c) 13 -> abc. (a, bc) 7 -> abc again: the words a.bc.d now
        // hold (abc, d) too, which already listed ab.c.d: 3 + 5 = 8.
        let sparse =
            learn_merges_from(Start { sparse_pairs: true, ..start.clone() }, 10, MergeLimits::default(), &Silent);
        let learned = learn_merges_from(start, 10, MergeLimits::default(), &Silent).unwrap();
        assert_eq!(sparse.unwrap().merges, learned.merges);
        let merges: Vec<(&[u8], &[u8])> = learned.merges.iter().map(|(l, r)| (&**l, &**r)).collect();
        assert_eq!(merges, [(&b"ab"[..], &b"c"[..]), (b"a", b"bc"), (b"abc", b"d")]);
        assert_eq!((learned.tokens_before, learned.tokens_after), (10 * 2 + 5 * 3 + 3 * 3 + 2 * 2, 10 + 5 + 3 + 2));
    }

    #[test]
    fn a_sparse_table_counts_the_pairs_of_a_symbol_spelled_again() {
        // "abc" is made as ab+c, then as a+bc: each time one (abc, x) appears,
        // counting 1, which a sparse table leaves out until the second spelling.
        let [a, c, x, zero, one] = [b'a', b'c', b'x', b'0', b'1'].map(u32::from);
        let mut start = Start { symbols: byte_symbols(), ..Start::default() };
        start.symbols.extend([Arc::from(&b"ab"[..]), Arc::from(&b"bc"[..])]);
        let words: [(&[u32], u64); 5] =
            [(&[256, c], 10), (&[a, 257], 7), (&[256, c, x], 1), (&[a, 257, x], 1), (&[zero, one], 2)];
        for (word, n) in words {
            start.words.push_symbols(word);
            start.word_counts.push(n);
        }
        // Then (abc, x) and (0, 1) both count 2: the greater bytes, "abc", first.
        let expected: [(&[u8], &[u8]); 4] = [(b"ab", b"c"), (b"a", b"bc"), (b"abc", b"x"), (b"0", b"1")];
        for sparse_pairs in [false, true] {
            let start = Start { sparse_pairs, ..start.clone() };
            let learned = learn_merges_from(start, 4, MergeLimits::default(), &Silent).unwrap();
            let merges: Vec<(&[u8], &[u8])> = learned.merges.iter().map(|(l, r)| (&**l, &**r)).collect();
            assert_eq!(merges, expected, "sparse {sparse_pairs}");
        }
    }

    #[test]
    fn stops_when_no_pair_is_left() {
        // "ab" x3: one merge, then the only word is one symbol.
        assert_eq!(learned(&[("ab", 3), ("c", 9)], 10), [("a".to_string(), "b".to_string())]);
    }
}
