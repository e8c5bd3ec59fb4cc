//! The merge loop of HF `tokenizers`' `BpeTrainer`, step for step, for
//! `tie_break = "hf"`: its merges, in its order, on byte-level pre-tokens.
//!
//! It is a port, not a variant of `merge.rs`, because HF's loop has quirks
//! that decide its output whenever a merge makes a token that already exists
//! (`ab`+`c` after `a`+`bc`), and an "exact" loop would differ there:
//! - token ids: the special tokens first, then every byte seen, ordered by
//!   the code point of its byte-level char, then new tokens in creation
//!   order; a merge that spells an existing token (a special token's text
//!   included) reuses its id, so the vocabulary does not grow;
//! - ties: the highest count, then the smallest `(left id, right id)`;
//! - a queue entry carries the words it was pushed for; a popped entry whose
//!   count is stale is pushed back with the live count and its old words;
//!   one whose count is live merges in its own words only;
//! - a merged pair keeps its count (never zeroed), and a new pair is not
//!   counted when its two sides together reach `max_token_length`;
//! - it stops when the vocabulary (specials + alphabet + new tokens) reaches
//!   `vocab_size`, or the best count is under `min_frequency` or 1.
//!
//! A pair merged twice appears once in HF's saved merges, at its later rank
//! (its `merges` is a map from pair to rank): `saved_order` does the same.

use std::collections::BinaryHeap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::hf_ids::HfIds;
use super::hf_loop::{self, HfLoop};
use super::table::PretokenCounts;
use crate::bpe::merges::Merge;
use crate::error::Error;
use crate::progress::Observer;
use crate::util::prefetch::prefetch;

/// How many words ahead `HfState::merge_words` prefetches.
const PREFETCH_AHEAD: usize = 8;

pub(super) type Pair = (u32, u32);

/// A queue entry (`hf_loop.rs`): its `at` is the words it was pushed for,
/// each once (HF's set: a word's changes come together, so a repeat is always
/// the last one pushed).
pub(super) type Entry = hf_loop::Entry<Vec<u32>>;

/// What HF's loop learned.
pub struct HfLearned {
    /// The merges as HF saves them (a pair merged twice once, at its later rank).
    pub merges: Vec<Merge>,
    /// The token each of `merges` makes.
    pub tokens: Vec<Arc<[u8]>>,
}

/// HF's limits: `vocab_size` counts specials + alphabet + new tokens.
#[derive(Debug, Clone, Copy)]
pub struct HfLimits {
    pub vocab_size: usize,
    pub min_frequency: u64,
    pub max_token_length: Option<usize>,
}

/// Learn merges from the pre-token table as HF's `BpeTrainer` does.
pub fn learn_merges_hf(
    counts: &PretokenCounts,
    specials: &[String],
    limits: HfLimits,
    observer: &dyn Observer,
) -> Result<HfLearned, Error> {
    let (mut state, holders) = HfState::new(counts, specials);
    let entries = state.entries(holders);
    state.queue.extend(entries);
    let mut made = Vec::new();
    hf_loop::learn(&mut state, limits, |_| true, &mut made, observer)?;
    Ok(state.learned(&made))
}

/// Where a word's symbols are in `HfState::symbols`, and its count.
struct Span {
    start: usize,
    len: usize,
    count: i64,
}

/// Pair -> the words that gained it in a step.
pub(super) type Holders = FxHashMap<Pair, Vec<u32>>;

/// HF's trainer between steps: its ids, its words as ids, its pair counts
/// (a merged pair's never zeroed) and its queue.
pub(super) struct HfState {
    pub ids: HfIds,
    /// Every word's symbols, one after another: a visit is one cache miss
    /// for its span and one for its symbols (a `Vec` per word was three).
    symbols: Vec<u32>,
    spans: Vec<Span>,
    pair_counts: FxHashMap<Pair, i64>,
    pub queue: BinaryHeap<Entry>,
}

impl HfState {
    /// The words of `counts` as ids, with every pair counted; returns the
    /// words that hold each pair, for the caller's queue.
    pub fn new(counts: &PretokenCounts, specials: &[String]) -> (Self, Holders) {
        let mut seen = [false; 256];
        counts.for_each(|bytes, _| bytes.iter().for_each(|&b| seen[usize::from(b)] = true));
        let ids = HfIds::new(specials, &seen);
        let (mut symbols, mut spans) = (Vec::new(), Vec::with_capacity(counts.len()));
        counts.for_each(|bytes, n| {
            spans.push(Span { start: symbols.len(), len: bytes.len(), count: n as i64 });
            symbols.extend(bytes.iter().map(|&b| ids.of_byte(b)));
        });
        let mut state = Self { ids, symbols, spans, pair_counts: FxHashMap::default(), queue: BinaryHeap::new() };
        let mut holders = Holders::default();
        for (index, span) in state.spans.iter().enumerate() {
            for window in state.symbols[span.start..span.start + span.len].windows(2) {
                let pair = (window[0], window[1]);
                *state.pair_counts.entry(pair).or_default() += span.count;
                add_holder(holders.entry(pair).or_default(), index as u32);
            }
        }
        (state, holders)
    }

    /// An entry for each pair of `holders` whose count is positive.
    pub fn entries(&self, holders: Holders) -> Vec<Entry> {
        let positive = holders.into_iter().filter(|(pair, _)| self.pair_counts[pair] > 0);
        positive.map(|(pair, at)| Entry { pair, count: self.pair_counts[&pair] as u64, at }).collect()
    }

    /// The live count of `pair`.
    pub fn count(&self, pair: Pair) -> u64 {
        self.pair_counts[&pair] as u64
    }

    /// Merge `pair` into `new` in `words` (HF's `Word::merge`, in one pass
    /// per word: HF shifts the word at each occurrence); returns the words
    /// that gained each pair.
    pub fn merge_words(&mut self, (left, right): Pair, words: &[u32], new: u32, max_length: usize) -> Holders {
        let new_len = self.ids.len_of(left) + self.ids.len_of(right);
        let mut gained = Holders::default();
        // The visits are scattered cache misses, most of the time on whole
        // lines (SuperBPE): prefetch a word's span, then its symbols, ahead.
        // The order of the visits changes nothing: changes add up, words are sets.
        for (i, &index) in words.iter().enumerate() {
            if let Some(&ahead) = words.get(i + 2 * PREFETCH_AHEAD) {
                prefetch(&self.spans[ahead as usize]);
            }
            if let Some(&ahead) = words.get(i + PREFETCH_AHEAD) {
                if let Some(first) = self.symbols.get(self.spans[ahead as usize].start) {
                    prefetch(first);
                }
            }
            let span = &mut self.spans[index as usize];
            let count = span.count;
            let word = &mut self.symbols[span.start..span.start + span.len];
            let mut change = |pair: Pair, delta: i64| {
                *self.pair_counts.entry(pair).or_default() += delta * count;
                if delta > 0 {
                    add_holder(gained.entry(pair).or_default(), index);
                }
            };
            let (mut read, mut write) = (0, 0);
            while read < word.len() {
                if word[read] == left && read + 1 < word.len() && word[read + 1] == right {
                    // The symbol before is the merged one when the last step merged.
                    if write > 0 {
                        let before = word[write - 1];
                        change((before, left), -1);
                        if self.ids.len_of(before) + new_len < max_length {
                            change((before, new), 1);
                        }
                    }
                    if let Some(&after) = word.get(read + 2) {
                        change((right, after), -1);
                        if self.ids.len_of(after) + new_len < max_length {
                            change((new, after), 1);
                        }
                    }
                    (word[write], read) = (new, read + 2);
                } else {
                    (word[write], read) = (word[read], read + 1);
                }
                write += 1;
            }
            span.len = write;
        }
        gained
    }

    /// `made` as HF saves it, in bytes.
    pub fn learned(&self, made: &[(Pair, u32)]) -> HfLearned {
        let saved = saved_order(made).into_iter().map(|(pair, new)| self.ids.merge_and_token(pair, new));
        let (merges, tokens) = saved.unzip();
        HfLearned { merges, tokens }
    }
}

impl HfLoop for HfState {
    type At = Vec<u32>;

    fn ids(&mut self) -> &mut HfIds {
        &mut self.ids
    }

    fn pop(&mut self) -> Option<Entry> {
        self.queue.pop()
    }

    fn push(&mut self, entry: Entry) {
        self.queue.push(entry);
    }

    fn live_count(&self, pair: Pair) -> u64 {
        self.count(pair)
    }

    fn merge(&mut self, entry: Entry, new: u32, max_length: usize) {
        let gained = self.merge_words(entry.pair, &entry.at, new, max_length);
        let entries = self.entries(gained);
        self.queue.extend(entries);
    }
}

/// Add `word` to a pair's words unless it is the last one added: all of a
/// word's changes come together, so that keeps each word once.
fn add_holder(words: &mut Vec<u32>, word: u32) {
    if words.last() != Some(&word) {
        words.push(word);
    }
}

/// The merges in HF's saved order: a pair merged more than once keeps only
/// its last rank.
pub(super) fn saved_order(made: &[(Pair, u32)]) -> Vec<(Pair, u32)> {
    let last: FxHashMap<Pair, usize> = made.iter().enumerate().map(|(rank, &(pair, _))| (pair, rank)).collect();
    made.iter().enumerate().filter(|&(rank, (pair, _))| last[pair] == rank).map(|(_, &m)| m).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Silent;

    fn learned(words: &[(&str, u64)], specials: &[&str], vocab_size: usize) -> Vec<(String, String)> {
        let mut table = PretokenCounts::default();
        words.iter().for_each(|&(word, n)| table.insert(word.as_bytes(), n));
        let specials: Vec<String> = specials.iter().map(|s| s.to_string()).collect();
        let limits = HfLimits { vocab_size, min_frequency: 0, max_token_length: None };
        let merges = learn_merges_hf(&table, &specials, limits, &Silent).unwrap().merges;
        let text = |b: &Arc<[u8]>| String::from_utf8(b.to_vec()).unwrap();
        merges.iter().map(|(l, r)| (text(l), text(r))).collect()
    }

    #[test]
    fn ties_go_to_the_smallest_ids_and_vocab_size_counts_the_alphabet() {
        // CS336 would merge (s, t) first among the 9s by bytes; HF takes the
        // smallest ids, i.e. the chars' order: (e, s) < (s, t).
        // Alphabet d e i l n o r s t w: 10 ids, + 1 special, so 14 allows 3 merges.
        let merges = learned(&[("low", 5), ("lower", 2), ("widest", 3), ("newest", 6)], &["<s>"], 14);
        let expected = [("e", "s"), ("es", "t"), ("l", "o")];
        assert_eq!(merges, expected.map(|(l, r)| (l.to_string(), r.to_string())));
    }

    #[test]
    fn stops_when_the_vocabulary_is_full_or_no_pair_is_left() {
        assert!(learned(&[("ab", 3)], &[], 2).is_empty());
        assert_eq!(learned(&[("ab", 3)], &[], 100), [("a".to_string(), "b".to_string())]);
    }

    #[test]
    fn a_pair_merged_twice_is_saved_once_at_its_later_rank() {
        let made = [((1, 2), 5), ((3, 4), 6), ((1, 2), 5)];
        assert_eq!(saved_order(&made), [((3, 4), 6), ((1, 2), 5)]);
    }
}
