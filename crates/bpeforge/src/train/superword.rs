//! SuperBPE's second stage (Liu et al., 2025), as the reference trainer
//! (`alisawuffles/tokenizers-superbpe`, `do_train_extend`) runs it, step for
//! step, on pieces that may span words (whole lines, cut only around digits).
//!
//! 1. Ids, words and pair counts as HF's trainer makes them, its loop run
//!    over occurrences (`hf_occurrences.rs`: the same merges, but a merge
//!    touches the occurrences of its pair, not the whole lines that hold
//!    them), but the queue is a map with one entry per pair: a step that adds
//!    words to a pair replaces its entry with one holding only the new words.
//! 2. The inherited merges are replayed in order. One whose sides are not
//!    tokens yet, or whose pair has no entry (it occurs nowhere, or its entry
//!    was used), is dropped; one whose entry is left, with any count, is
//!    applied to that entry's words and kept.
//! 3. The entries left become HF's heap, and HF's loop continues, skipping
//!    (for good, unless the pair gains words again) a merge whose token holds
//!    a forbidden string or more than `max_words` words (runs of bytes other
//!    than the space).

use rustc_hash::FxHashMap;

use super::hf_loop;
use super::hf_merge::{HfLearned, HfLimits, Pair};
use super::hf_occurrences::{Entry, OccurrenceState};
use super::positions::Positions;
use super::table::PretokenCounts;
use crate::bpe::merges::Merge;
use crate::error::Error;
use crate::progress::Observer;

/// Which superword tokens stage 2 may learn.
#[derive(Debug, Clone)]
pub struct SuperwordRules {
    /// A token may hold at most this many words (0: any number).
    pub max_words: usize,
    /// A token may hold none of these byte strings (the paper: `": "`).
    pub forbid: Vec<Vec<u8>>,
}

impl SuperwordRules {
    /// Whether stage 2 may learn `token`.
    pub fn allows(&self, token: &[u8]) -> bool {
        let words = token.split(|&b| b == b' ').filter(|word| !word.is_empty()).count();
        let forbidden = self.forbid.iter().any(|f| !f.is_empty() && token.windows(f.len()).any(|w| w == &f[..]));
        (self.max_words == 0 || words <= self.max_words) && !forbidden
    }

    /// Whether stage 2 may merge `left` and `right`.
    pub fn allows_pair(&self, left: &[u8], right: &[u8]) -> bool {
        self.allows(&[left, right].concat())
    }
}

/// Stage 2: replay `inherited` on the pieces of `counts`, then learn
/// superword merges until HF's vocabulary reaches `limits.vocab_size`, or,
/// with `new_tokens`, until it has grown by that many tokens past the replay
/// (extending a base tokenizer, whose size HF's count of the pieces' alphabet
/// and replayed tokens does not give). Returns the merges as the reference saves them (the inherited ones it
/// kept, then the new ones), and the pieces' length in tokens after the
/// replay and at the end.
pub fn learn_superwords(
    counts: PretokenCounts,
    specials: &[String],
    inherited: &[Merge],
    rules: &SuperwordRules,
    limits: HfLimits,
    new_tokens: Option<usize>,
    observer: &dyn Observer,
) -> Result<(HfLearned, u64, u64), Error> {
    let (mut state, entries) = OccurrenceState::new(&counts, specials)?;
    // The pieces are in the arena now; the table holds every distinct line.
    drop(counts);
    // The fork's map, one entry a pair; an entry's pair is its key only (millions of entries).
    let mut queue: FxHashMap<Pair, (u64, Positions)> = entries.into_iter().map(|e| (e.pair, (e.count, e.at))).collect();
    let max_length = limits.max_token_length.unwrap_or(usize::MAX);
    let mut made = Vec::with_capacity(inherited.len());
    for (left, right) in inherited {
        let (Some(left), Some(right)) = (state.ids.id_of(left), state.ids.id_of(right)) else { continue };
        let pair = (left, right);
        let Some((count, at)) = queue.remove(&pair) else { continue };
        let new = state.ids.id_of_or_add(state.ids.concat(pair));
        made.push((pair, new));
        let pushed = state.merge_occurrences(Entry { pair, count, at }, new, max_length);
        queue.extend(pushed.into_iter().map(|e| (e.pair, (e.count, e.at))));
    }
    state.start_queue(queue.into_iter().map(|(pair, (count, at))| Entry { pair, count, at }).collect());
    let replayed = state.tokens();
    let limits = match new_tokens {
        Some(n) => HfLimits { vocab_size: state.ids.len() + n, ..limits },
        None => limits,
    };
    hf_loop::learn(&mut state, limits, |token| rules.allows(token), &mut made, observer)?;
    Ok((state.learned(&made), replayed, state.tokens()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Silent;
    use std::sync::Arc;

    fn merge(left: &str, right: &str) -> Merge {
        (Arc::from(left.as_bytes()), Arc::from(right.as_bytes()))
    }

    #[test]
    fn rules_count_words_between_spaces_and_forbid_substrings() {
        let rules = SuperwordRules { max_words: 2, forbid: vec![b": ".to_vec()] };
        assert!(rules.allows(b" of the") && rules.allows(b"of the ") && rules.allows(b"  x"));
        assert!(!rules.allows(b" of the end") && !rules.allows(b"a: b"));
        assert!(rules.allows(b"a:b"));
    }

    #[test]
    fn inherited_merges_replay_in_order_and_absent_ones_are_dropped() {
        let mut table = PretokenCounts::default();
        table.insert(b"to be or not to be\n", 3);
        let inherited = [merge("t", "o"), merge("q", "u"), merge("b", "e"), merge("x", "y"), merge(" ", "to")];
        let rules = SuperwordRules { max_words: 4, forbid: vec![] };
        let limits = HfLimits { vocab_size: 16, min_frequency: 0, max_token_length: None };
        let (learned, replayed, learnt) =
            learn_superwords(table, &[], &inherited, &rules, limits, None, &Silent).unwrap();
        // 19 bytes; after t.o, b.e, " "+to: 14 symbols, x3; fewer at the end.
        assert_eq!(replayed, 14 * 3);
        assert!(learnt < replayed);
        let text = |b: &Arc<[u8]>| String::from_utf8(b.to_vec()).unwrap();
        let merges: Vec<(String, String)> = learned.merges.iter().map(|(l, r)| (text(l), text(r))).collect();
        // "q"/"x" occur nowhere: dropped. Then the alphabet (\n, ' ', b e n o r t: 8
        // ids) + to, be, " to" = 11; five new merges reach 16, spanning words.
        assert_eq!(&merges[..3], [("t", "o"), ("b", "e"), (" ", "to")].map(|(l, r)| (l.to_string(), r.to_string())));
        assert_eq!(merges.len(), 8);
        assert!(learned.tokens.iter().any(|t| t.contains(&b' ') && t.len() > 3), "{merges:?}");
    }

    #[test]
    fn new_tokens_counts_the_growth_past_the_replay_not_the_vocabulary() {
        let mut table = PretokenCounts::default();
        table.insert(b"to be or not to be\n", 3);
        let inherited = [merge("t", "o"), merge("b", "e")];
        let rules = SuperwordRules { max_words: 0, forbid: vec![] };
        // vocab_size 1 would learn nothing; new_tokens overrides it.
        let limits = HfLimits { vocab_size: 1, min_frequency: 0, max_token_length: None };
        let (learned, _, _) = learn_superwords(table, &[], &inherited, &rules, limits, Some(3), &Silent).unwrap();
        assert_eq!(learned.merges.len(), 2 + 3);
    }
}
