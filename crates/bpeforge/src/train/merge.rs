//! Phase 2 of training: the merge loop over the distinct pre-tokens.
//!
//! State kept between merges, so that a merge costs time in proportion to the
//! words it touches, never to the corpus:
//! - `pair_counts`: the live count of every adjacent pair, weighted by word count;
//! - `pair_words`: for each pair, the words that may hold it (may list a word
//!   twice or one that lost the pair; the merge skips a word it has already
//!   visited, by a per-word stamp instead of sorting the list, and re-checks);
//! - `queue`: a max-heap of candidates with lazy invalidation. Only pairs that
//!   hold the new symbol can gain count, and they are pushed when they do; every
//!   other entry's count can only be too high, so a popped entry whose count is
//!   stale is pushed back with the live count and the true maximum surfaces.
//!
//! Symbols are identified by their bytes, as in the CS336 reference (which
//! keys pairs by `(bytes, bytes)`): when a merge creates bytes that already
//! name a symbol (`ab`+`c` and `a`+`bc` both give `abc`), the existing symbol
//! id is reused, so both spellings count as one.

use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::queue::{Candidate, MergeQueue};
use super::table::PretokenCounts;
use super::word::{merge_symbols, Pair, WordStore};
use crate::error::Error;
use crate::progress::{Observer, Phase};

/// Merges held by at least this many words update them in parallel; for
/// fewer, handing out the work costs more than it saves.
const PARALLEL_MIN_WORDS: usize = 4096;
const WORDS_PER_TASK: usize = 1024;

/// One learned merge: the bytes of its left and right tokens.
pub type Merge = (Arc<[u8]>, Arc<[u8]>);

/// Options users expect from other trainers, off by default (CS336 has neither).
#[derive(Debug, Clone, Copy, Default)]
pub struct MergeLimits {
    /// Stop once the best pair occurs fewer times than this.
    pub min_frequency: u64,
    /// Never merge into a token longer than this many bytes.
    pub max_token_length: Option<usize>,
}

/// Learn up to `max_merges` merges from the pre-token table, in order. A
/// merge held by many words updates them on every thread of `pool`; the
/// result is the same for any number of threads (see `apply_parallel`).
pub fn learn_merges(
    counts: PretokenCounts,
    max_merges: usize,
    limits: MergeLimits,
    pool: &rayon::ThreadPool,
    observer: &dyn Observer,
) -> Result<Vec<Merge>, Error> {
    let mut state = MergeState::new(counts, limits.max_token_length);
    // `max_merges` comes from the user's vocab_size: never size memory by it
    // (a vocab_size of 2**32 would ask for 32 GB up front).
    let mut merges = Vec::with_capacity(max_merges.min(1 << 16));
    while merges.len() < max_merges {
        let Some((pair, count)) = state.pop_best() else { break };
        if count < limits.min_frequency {
            break;
        }
        merges.push((state.symbols[pair.0 as usize].clone(), state.symbols[pair.1 as usize].clone()));
        state.apply(pair, pool);
        if merges.len() % 64 == 0 {
            observer.progress(Phase::Merge, merges.len() as u64, max_merges as u64)?;
        }
    }
    // The phase is complete: when the corpus ran out of pairs early, that is
    // fewer merges than asked for, which the summary reports.
    observer.progress(Phase::Merge, merges.len() as u64, merges.len() as u64)?;
    Ok(merges)
}

struct MergeState {
    words: WordStore,
    word_counts: Vec<u64>,
    /// Per word, 1 + the number of the last merge that visited it.
    visited: Vec<u32>,
    merges_done: u32,
    /// Pair count changes of the merge being applied (kept to reuse its memory).
    deltas: FxHashMap<Pair, i64>,
    pair_counts: FxHashMap<Pair, i64>,
    pair_words: FxHashMap<Pair, Vec<u32>>,
    queue: MergeQueue,
    /// Symbol id -> bytes; ids 0..256 are the single bytes.
    symbols: Vec<Arc<[u8]>>,
    symbol_ids: FxHashMap<Arc<[u8]>, u32>,
    max_token_length: usize,
}

impl MergeState {
    fn new(counts: PretokenCounts, max_token_length: Option<usize>) -> Self {
        // A one-byte pre-token holds no pair and can never change: leave it out.
        let mut words = WordStore::default();
        let mut word_counts = Vec::with_capacity(counts.len());
        counts.for_each(|bytes, n| {
            if bytes.len() > 1 {
                words.push_bytes(bytes);
                word_counts.push(n);
            }
        });
        drop(counts);
        let visited = vec![0; words.len()];
        let symbols: Vec<Arc<[u8]>> = (0..=255u8).map(|b| Arc::from([b].as_slice())).collect();
        let symbol_ids = symbols.iter().enumerate().map(|(id, bytes)| (bytes.clone(), id as u32)).collect();
        let mut state = Self {
            words,
            word_counts,
            visited,
            merges_done: 0,
            deltas: FxHashMap::default(),
            pair_counts: FxHashMap::default(),
            pair_words: FxHashMap::default(),
            queue: MergeQueue::new(),
            symbols,
            symbol_ids,
            max_token_length: max_token_length.unwrap_or(usize::MAX),
        };
        state.count_initial_pairs();
        state
    }

    fn count_initial_pairs(&mut self) {
        for index in 0..self.words.len() as u32 {
            let count = self.word_counts[index as usize] as i64;
            for pair in self.words.pairs(index) {
                *self.pair_counts.entry(pair).or_insert(0) += count;
                let holders = self.pair_words.entry(pair).or_default();
                if holders.last() != Some(&index) {
                    holders.push(index);
                }
            }
        }
        let candidates: Vec<Candidate> =
            self.pair_counts.iter().map(|(&pair, &count)| self.candidate(pair, count as u64)).collect();
        self.queue = MergeQueue::from(candidates);
    }

    fn candidate(&self, pair: Pair, count: u64) -> Candidate {
        Candidate::new(count, pair, self.symbols[pair.0 as usize].clone(), self.symbols[pair.1 as usize].clone())
    }

    /// The pair to merge next and its count, or `None` when no pair is left.
    /// A pair that would make a token longer than the limit is dropped for
    /// good: it holds only existing symbols, so its count can never grow again.
    fn pop_best(&mut self) -> Option<(Pair, u64)> {
        while let Some(mut top) = self.queue.pop() {
            if top.left().len() + top.right().len() > self.max_token_length {
                continue;
            }
            let live = self.pair_counts.get(&top.pair).copied().unwrap_or(0);
            if live == top.count as i64 {
                return Some((top.pair, top.count));
            }
            if live > 0 {
                top.count = live as u64;
                self.queue.push(top);
            }
        }
        None
    }

    /// Merge `pair` in every word that holds it and update the counts.
    fn apply(&mut self, pair: Pair, pool: &rayon::ThreadPool) {
        let new = self.symbol_for_merge(pair);
        let holders = self.pair_words.remove(&pair).unwrap_or_default();
        self.merges_done += 1;
        if holders.len() >= PARALLEL_MIN_WORDS && pool.current_num_threads() > 1 {
            self.apply_parallel(pair, new, holders, pool);
        } else {
            self.apply_serial(pair, new, &holders);
        }
        self.pair_counts.remove(&pair);
        let mut deltas = std::mem::take(&mut self.deltas);
        for (changed, delta) in deltas.drain() {
            if changed != pair && delta != 0 {
                self.apply_delta(changed, delta);
            }
        }
        self.deltas = deltas;
    }

    fn apply_serial(&mut self, pair: Pair, new: u32, holders: &[u32]) {
        let stamp = self.merges_done;
        let Self { words, word_counts, pair_words, visited, deltas, .. } = self;
        for &index in holders {
            if std::mem::replace(&mut visited[index as usize], stamp) == stamp {
                continue;
            }
            let count = word_counts[index as usize] as i64;
            words.merge(index, pair, new, |changed, delta| {
                *deltas.entry(changed).or_insert(0) += delta * count;
                if delta > 0 {
                    record_holder(pair_words, changed, index);
                }
            });
        }
    }

    /// `apply_serial` with the words merged on every thread: each task
    /// merges a run of words into buffers of its own (`WordUpdates`), and the
    /// updates are then written back one run after the other, in the order
    /// of `holders`. So the store, the counts and every holder list end up
    /// exactly as the serial loop leaves them, for any number of threads.
    /// Early merges touch a large share of the words (profiled at 100 MB /
    /// 10k: scanning the words for the pair was 44% of the merge loop,
    /// reading their spans and stamps 18%), so that scan runs in parallel.
    /// Measured there on this 2-core VM: the merges held by 4096 words or
    /// more took 0.15-0.22 s of work on 1 thread, 0.13-0.155 s on 2 (the
    /// scan waits on memory), and they are a third of the loop; the rest is
    /// the tail of small merges, serial.
    fn apply_parallel(&mut self, pair: Pair, new: u32, holders: Vec<u32>, pool: &rayon::ThreadPool) {
        let stamp = self.merges_done;
        let visited = &mut self.visited;
        let unique: Vec<u32> = holders
            .into_iter()
            .filter(|&index| std::mem::replace(&mut visited[index as usize], stamp) != stamp)
            .collect();
        let (words, word_counts) = (&self.words, &self.word_counts);
        let updates: Vec<WordUpdates> = pool.install(|| {
            let per_task = (unique.len() / (4 * pool.current_num_threads())).max(WORDS_PER_TASK);
            unique.par_chunks(per_task).map(|run| WordUpdates::new(words, word_counts, run, pair, new)).collect()
        });
        for update in updates {
            update.write_back(self);
        }
    }

    fn apply_delta(&mut self, pair: Pair, delta: i64) {
        let live = self.pair_counts.entry(pair).or_insert(0);
        *live += delta;
        let live = *live;
        if live <= 0 {
            self.pair_counts.remove(&pair);
            self.pair_words.remove(&pair);
        } else if delta > 0 {
            self.queue.push(self.candidate(pair, live as u64));
        }
    }

    /// The symbol for the merge of `pair`: an existing one with the same
    /// bytes, else a new one.
    fn symbol_for_merge(&mut self, (left, right): Pair) -> u32 {
        let bytes: Arc<[u8]> = [&*self.symbols[left as usize], &*self.symbols[right as usize]].concat().into();
        if let Some(&id) = self.symbol_ids.get(&bytes) {
            return id;
        }
        let id = self.symbols.len() as u32;
        self.symbols.push(bytes.clone());
        self.symbol_ids.insert(bytes, id);
        id
    }
}

/// Remember that `word` now holds `pair` (once, if it was the last one added).
fn record_holder(pair_words: &mut FxHashMap<Pair, Vec<u32>>, pair: Pair, word: u32) {
    let holders = pair_words.entry(pair).or_default();
    if holders.last() != Some(&word) {
        holders.push(word);
    }
}

/// What merging one pair does to a run of words, computed without writing
/// to the store (so that runs can be computed on several threads at once).
struct WordUpdates {
    /// Words the merge changed, with their new length; their symbols follow
    /// one another in `symbols`.
    changed_words: Vec<(u32, usize)>,
    symbols: Vec<u32>,
    deltas: FxHashMap<Pair, i64>,
    /// `(pair, word)`: the word gained the pair, in the serial loop's order.
    gained: Vec<(Pair, u32)>,
}

impl WordUpdates {
    fn new(words: &WordStore, word_counts: &[u64], run: &[u32], pair: Pair, new: u32) -> Self {
        let mut updates =
            Self { changed_words: Vec::new(), symbols: Vec::new(), deltas: FxHashMap::default(), gained: Vec::new() };
        for &index in run {
            let count = word_counts[index as usize] as i64;
            let original = words.symbols(index);
            let start = updates.symbols.len();
            updates.symbols.extend_from_slice(original);
            let Self { symbols, deltas, gained, .. } = &mut updates;
            let len = merge_symbols(&mut symbols[start..], pair, new, |changed, delta| {
                *deltas.entry(changed).or_insert(0) += delta * count;
                if delta > 0 {
                    gained.push((changed, index));
                }
            });
            if len == original.len() {
                updates.symbols.truncate(start);
            } else {
                updates.symbols.truncate(start + len);
                updates.changed_words.push((index, len));
            }
        }
        updates
    }

    fn write_back(self, state: &mut MergeState) {
        let mut offset = 0;
        for (index, len) in self.changed_words {
            state.words.replace(index, &self.symbols[offset..offset + len]);
            offset += len;
        }
        for (changed, delta) in self.deltas {
            *state.deltas.entry(changed).or_insert(0) += delta;
        }
        for (pair, word) in self.gained {
            record_holder(&mut state.pair_words, pair, word);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Silent;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap()
    }

    #[test]
    fn same_merges_for_any_number_of_threads() {
        // 30,000 words of four letters: each early pair is held by a third of
        // them, far more than PARALLEL_MIN_WORDS, so those merges run in parallel.
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        let mut counts = PretokenCounts::default();
        for _ in 0..30_000 {
            let word: Vec<u8> = (0..3 + next() % 9).map(|_| b"abcd"[next() % 4]).collect();
            counts.insert(&word, 1 + (next() % 50) as u64);
        }
        let learn = |threads| learn_merges(counts.clone(), 400, MergeLimits::default(), &pool(threads), &Silent);
        let serial = learn(1).unwrap();
        assert_eq!(serial.len(), 400);
        for threads in [2, 3, 8] {
            assert_eq!(learn(threads).unwrap(), serial, "{threads} threads");
        }
    }

    fn table(words: &[(&str, u64)]) -> PretokenCounts {
        let mut table = PretokenCounts::default();
        for &(word, n) in words {
            table.insert(word.as_bytes(), n);
        }
        table
    }

    fn learned(words: &[(&str, u64)], max_merges: usize) -> Vec<(String, String)> {
        let merges = learn_merges(table(words), max_merges, MergeLimits::default(), &pool(1), &Silent).unwrap();
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
            let merges = learn_merges(table(&words), 12, limits, &pool(1), &Silent).unwrap();
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

    #[test]
    fn stops_when_no_pair_is_left() {
        // "ab" x3: one merge, then the only word is one symbol.
        assert_eq!(learned(&[("ab", 3), ("c", 9)], 10), [("a".to_string(), "b".to_string())]);
    }
}
