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

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use super::hf_ids::HfIds;
use super::table::PretokenCounts;
use crate::bpe::merges::Merge;
use crate::error::Error;
use crate::progress::{Observer, Phase};

type Pair = (u32, u32);

/// A queue entry: HF's `Merge`, ordered as HF orders it.
struct Entry {
    pair: Pair,
    count: u64,
    words: FxHashSet<u32>,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.count.cmp(&other.count).then_with(|| other.pair.cmp(&self.pair))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

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
    let mut words: Vec<Vec<u32>> = Vec::with_capacity(counts.len());
    let mut word_counts: Vec<i64> = Vec::with_capacity(counts.len());
    let mut seen = [false; 256];
    counts.for_each(|bytes, _| bytes.iter().for_each(|&b| seen[usize::from(b)] = true));
    let mut ids = HfIds::new(specials, &seen);
    counts.for_each(|bytes, n| {
        words.push(bytes.iter().map(|&b| ids.of_byte(b)).collect());
        word_counts.push(n as i64);
    });
    let max_length = limits.max_token_length.unwrap_or(usize::MAX);
    let mut loop_state = HfLoop { words, word_counts, pair_counts: FxHashMap::default(), queue: BinaryHeap::new() };
    loop_state.count_initial_pairs();
    let (start_len, wanted) = (ids.len(), limits.vocab_size.saturating_sub(ids.len()) as u64);
    let mut made: Vec<(Pair, u32)> = Vec::new();
    while ids.len() < limits.vocab_size {
        let Some(mut top) = loop_state.queue.pop() else { break };
        let live = loop_state.pair_counts[&top.pair] as u64;
        if top.count != live {
            top.count = live;
            loop_state.queue.push(top);
            continue;
        }
        if top.count < 1 || limits.min_frequency > top.count {
            break;
        }
        let token = ids.concat(top.pair);
        let new = ids.id_of_or_add(token);
        made.push((top.pair, new));
        loop_state.merge(&top, new, &ids, max_length);
        if made.len().is_multiple_of(64) {
            observer.progress(Phase::Merge, (ids.len() - start_len) as u64, wanted)?;
        }
    }
    observer.progress(Phase::Merge, made.len() as u64, made.len() as u64)?;
    let (merges, tokens) = saved_order(&made).into_iter().map(|(pair, new)| ids.merge_and_token(pair, new)).unzip();
    Ok(HfLearned { merges, tokens })
}

/// The merges in HF's saved order: a pair merged more than once keeps only
/// its last rank.
fn saved_order(made: &[(Pair, u32)]) -> Vec<(Pair, u32)> {
    let last: FxHashMap<Pair, usize> = made.iter().enumerate().map(|(rank, &(pair, _))| (pair, rank)).collect();
    made.iter().enumerate().filter(|&(rank, (pair, _))| last[pair] == rank).map(|(_, &m)| m).collect()
}

struct HfLoop {
    words: Vec<Vec<u32>>,
    word_counts: Vec<i64>,
    pair_counts: FxHashMap<Pair, i64>,
    queue: BinaryHeap<Entry>,
}

impl HfLoop {
    fn count_initial_pairs(&mut self) {
        let mut holders: FxHashMap<Pair, FxHashSet<u32>> = FxHashMap::default();
        for (index, word) in self.words.iter().enumerate() {
            for window in word.windows(2) {
                let pair = (window[0], window[1]);
                *self.pair_counts.entry(pair).or_default() += self.word_counts[index];
                holders.entry(pair).or_default().insert(index as u32);
            }
        }
        self.push_changed(holders);
    }

    /// Push an entry for every pair that gained words, if its count is positive.
    fn push_changed(&mut self, holders: FxHashMap<Pair, FxHashSet<u32>>) {
        for (pair, words) in holders {
            let count = self.pair_counts[&pair];
            if count > 0 {
                self.queue.push(Entry { pair, count: count as u64, words });
            }
        }
    }

    /// Merge `top.pair` into `new` in `top`'s words (HF's `Word::merge`).
    fn merge(&mut self, top: &Entry, new: u32, ids: &HfIds, max_length: usize) {
        let (left, right) = top.pair;
        let mut gained: FxHashMap<Pair, FxHashSet<u32>> = FxHashMap::default();
        for &index in &top.words {
            let count = self.word_counts[index as usize];
            let word = &mut self.words[index as usize];
            let mut change = |pair: Pair, delta: i64| {
                *self.pair_counts.entry(pair).or_default() += delta * count;
                if delta > 0 {
                    gained.entry(pair).or_default().insert(index);
                }
            };
            let mut i = 0;
            while i < word.len() {
                if word[i] == left && i + 1 < word.len() && word[i + 1] == right {
                    let new_len = ids.len_of(left) + ids.len_of(right);
                    if i > 0 {
                        change((word[i - 1], left), -1);
                        if ids.len_of(word[i - 1]) + new_len < max_length {
                            change((word[i - 1], new), 1);
                        }
                    }
                    word.splice(i..i + 2, [new]);
                    if i + 1 < word.len() {
                        change((right, word[i + 1]), -1);
                        if ids.len_of(word[i + 1]) + new_len < max_length {
                            change((new, word[i + 1]), 1);
                        }
                    }
                }
                i += 1;
            }
        }
        self.push_changed(gained);
    }
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
