//! SuperBPE's second stage with CS336's conventions (`tie_break = "cs336"`,
//! the default): tokens are known by their bytes, a tie of counts goes to the
//! greater pair of byte strings (DESIGN §1.1.4), and every inherited merge is
//! kept, so that `transition` merges of stage 1 and the new ones make exactly
//! `vocab_size` tokens with the bytes and the specials.
//!
//! The inherited merges are replayed as the result will encode the pieces:
//! each distinct piece is encoded with them by rank, in parallel
//! (`extend::start_from_base`), which is what applying them one after
//! another in creation order gives (`extend.rs` says why). That costs one
//! encoding a piece, where replaying merge by merge visits the occurrences of
//! every inherited pair, and it leaves the pieces as tokens, about a quarter
//! of their bytes. The CS336 merge loop (`merge.rs`) then goes on over them,
//! never merging a pair whose token the rules refuse.

use super::extend::start_from_base;
use super::merge::{learn_merges_accepting, Learned, MergeLimits};
use super::superword::SuperwordRules;
use super::table::PretokenCounts;
use crate::bpe::merges::Merge;
use crate::bpe::vocab::Vocabulary;
use crate::error::Error;
use crate::progress::Observer;

/// Replay `inherited` on the pieces of `counts`, then learn up to
/// `new_merges` merges that `rules` allow. The learned merges are the new
/// ones only; its token counts are the pieces' length after the replay and
/// at the end. `counts` is dropped once the pieces are tokens: it holds every
/// distinct line, about the corpus's size.
pub fn learn_superwords_cs336(
    counts: PretokenCounts,
    inherited: &[Merge],
    rules: &SuperwordRules,
    limits: MergeLimits,
    new_merges: usize,
    pool: &rayon::ThreadPool,
    observer: &dyn Observer,
) -> Result<Learned, Error> {
    let mut start = start_from_base(&counts, &inherited_vocabulary(inherited)?, pool);
    drop(counts);
    // Nearly every line is distinct, and so are most pairs of its tokens.
    start.sparse_pairs = true;
    let accept = |left: &[u8], right: &[u8]| rules.allows_pair(left, right);
    learn_merges_accepting(start, new_merges, limits, accept, Some(pool), observer)
}

/// The bytes, then one token per inherited merge, ranked in their order.
fn inherited_vocabulary(inherited: &[Merge]) -> Result<Vocabulary, Error> {
    let bytes = (0..=255u8).map(|b| (u32::from(b), vec![b]));
    let merged = inherited.iter().enumerate().map(|(rank, (l, r))| (256 + rank as u32, [&**l, &**r].concat()));
    Vocabulary::new(bytes.chain(merged).collect(), inherited)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Silent;
    use std::sync::Arc;

    fn merge(left: &str, right: &str) -> Merge {
        (Arc::from(left.as_bytes()), Arc::from(right.as_bytes()))
    }

    fn learned(lines: &[(&str, u64)], inherited: &[Merge], rules: &SuperwordRules, new: usize) -> Learned {
        let mut table = PretokenCounts::default();
        lines.iter().for_each(|&(line, n)| table.insert(line.as_bytes(), n));
        let pool = crate::train::build_pool(Some(1)).unwrap();
        learn_superwords_cs336(table, inherited, rules, MergeLimits::default(), new, &pool, &Silent).unwrap()
    }

    fn spelled(learned: &Learned) -> Vec<String> {
        learned
            .merges
            .iter()
            .map(|(l, r)| format!("{}+{}", String::from_utf8_lossy(l), String::from_utf8_lossy(r)))
            .collect()
    }

    #[test]
    fn ties_go_to_the_greater_pair_of_bytes_after_the_replay() {
        // After t.o and " ".to: " to" x2, "be" x2 (b.e is not inherited), " or"...
        let inherited = [merge("t", "o"), merge(" ", "to"), merge("x", "y")];
        let rules = SuperwordRules { max_words: 0, forbid: vec![] };
        let result = learned(&[("to be or not to be", 1)], &inherited, &rules, 2);
        // Counted after the replay: 18 bytes, t.o twice and " to" once: 15 tokens.
        assert_eq!(result.tokens_before, 15);
        // Pairs seen twice: (b, e) and (" ", b); CS336 takes the greater: (b, e) (b > ' ').
        assert_eq!(spelled(&result), ["b+e", " +be"]);
    }

    #[test]
    fn refused_tokens_are_never_made() {
        let rules = SuperwordRules { max_words: 1, forbid: vec![b": ".to_vec()] };
        let lines = [("a: b c\n", 5), ("a: b c\n", 1)];
        let result = learned(&lines, &[], &rules, 20);
        let tokens: Vec<Vec<u8>> = result.merges.iter().map(|(l, r)| [&**l, &**r].concat()).collect();
        assert!(!tokens.is_empty());
        for token in &tokens {
            assert!(rules.allows(token), "{:?}", String::from_utf8_lossy(token));
        }
    }
}
