//! The vocabulary's tokens that a thread's piece table starts with
//! (`PieceTable::plant`), so that a first call finds the pieces that are whole
//! tokens (" the", "ing") without merging them: 22 K of the 74 K distinct
//! pre-tokens of 10 MB of English are single GPT-2 tokens, and seeding made a
//! first call about a tenth faster. gigatoken seeds its table at load too.
//!
//! A seed is a token whose bytes are valid UTF-8 (a pre-token always is), pack
//! into a key (2-15 bytes) and encode to the token itself. The last is
//! expected of vocabularies taken from tiktoken rank files (`made_by_merges`
//! says why), but not promised by every merge list, and a seed that broke it
//! would change ids: it is found from the merge list (`whole_tokens.rs`), or
//! where that cannot tell, checked token by token with a BPE.
//!
//! Whether a seed is one pre-token of the encoder's pattern is not asked: a
//! seed that no text asks for changes no id and only takes an empty way, and
//! all but 11 of o200k's 192,823 candidates are one (all of GPT-2's and
//! cl100k's), while running the pattern over each token was a tenth of loading
//! o200k (and a custom regex runs on fancy-regex).

use crate::bpe::vocab::Vocabulary;
use crate::bpe::{encode_piece, Scratch};
use crate::encode::cache::whole_tokens::tokens_that_encode_to_themselves;
use crate::util::packed_key::pack;

/// The most seeds: the tokens of lowest id (rank) that qualify, as many as
/// a table holds when they are planted (`piece_table::SEEDED_BUCKETS`, two
/// ways). Each costs a BPE
/// when the encoder is built (GPT-2's 49.6 K: 12 ms; o200k's 193 K: 62 ms,
/// on one core; spread over the cores there are), and pays: with o200k's
/// first 64 K only, the first call on 10 MB of 20news took 79 ms (median of
/// five), with all 193 K 64 ms, with none 84 ms.
pub const SEEDS_MAX: usize = crate::encode::cache::piece_table::SEEDED_BUCKETS * 2;

/// The seeds of `vocab` (see the top): at most `max` ids, lowest first.
pub fn vocabulary_seeds(vocab: &Vocabulary, max: usize) -> Vec<u32> {
    let fits = |token: &[u8]| token.len() >= 2 && pack(token).is_some() && std::str::from_utf8(token).is_ok();
    let candidates: Vec<(u32, &[u8])> = vocab.tokens().filter(|&(_, token)| fits(token)).collect();
    let candidates = &candidates[..candidates.len().min(max)];
    if vocab.merges_from_ranks() {
        return made_by_merges(vocab, candidates);
    }
    if let Some(whole) = tokens_that_encode_to_themselves(vocab) {
        return candidates.iter().map(|&(id, _)| id).filter(|&id| whole[id as usize]).collect();
    }
    in_parallel(candidates, |chunk| {
        let (mut scratch, mut ids) = (Scratch::default(), Vec::new());
        let mut encodes_to_itself = |id: u32, token: &[u8]| {
            ids.clear();
            encode_piece(token, vocab, &mut scratch, &mut ids);
            ids[..] == [id]
        };
        chunk.iter().filter(|&&(id, token)| encodes_to_itself(id, token)).map(|&(id, _)| id).collect()
    })
}

/// For each id of `vocab`, whether BPE over its bytes gives exactly that id
/// (`false` for a gap in the ids): from the merge list where it can tell
/// (`made_by_merges`, `whole_tokens.rs`), else a BPE of each token, on the
/// cores. For HF's `ignore_merges` (`unmerged_tokens.rs`), which needs every
/// token's answer and shares it with the seeds (`seeds_among`): each once
/// took a BPE of Llama 3's 128 K tokens, a third of building its encoder.
/// Where the merge list implies the ranks, a token no merge makes (a byte)
/// is counted as not encoding to itself: callers take that as "maybe not".
pub fn tokens_encoding_to_themselves(vocab: &Vocabulary) -> Vec<bool> {
    let ids = vocab.tokens().map(|(id, _)| id as usize + 1).max().unwrap_or(0);
    if vocab.merges_from_ranks() {
        let mut merged = vec![false; ids.max(vocab.len())];
        vocab.merged_ids().for_each(|id| merged[id as usize] = true);
        return merged;
    }
    if let Some(whole) = tokens_that_encode_to_themselves(vocab) {
        return whole;
    }
    let tokens: Vec<(u32, &[u8])> = vocab.tokens().collect();
    let encoding = in_parallel(&tokens, |chunk| {
        let (mut scratch, mut ids) = (Scratch::default(), Vec::new());
        let mut encodes_to_itself = |id: u32, token: &[u8]| {
            ids.clear();
            encode_piece(token, vocab, &mut scratch, &mut ids);
            ids[..] == [id]
        };
        chunk.iter().map(|&(id, token)| encodes_to_itself(id, token)).collect()
    });
    let mut itself = vec![false; ids];
    for (&(id, _), encodes) in tokens.iter().zip(encoding) {
        itself[id as usize] = encodes;
    }
    itself
}

/// `vocabulary_seeds` with each token's answer known (`tokens_encoding_to_themselves`).
pub fn seeds_among(vocab: &Vocabulary, max: usize, itself: &[bool]) -> Vec<u32> {
    let fits = |token: &[u8]| token.len() >= 2 && pack(token).is_some() && std::str::from_utf8(token).is_ok();
    let candidates = vocab.tokens().filter(|&(_, token)| fits(token)).take(max);
    candidates.map(|(id, _)| id).filter(|&id| itself.get(id as usize) == Some(&true)).collect()
}

/// The `candidates` that a merge makes, for a vocabulary whose
/// merges a tiktoken rank table implies (`Vocabulary::merges_from_ranks`):
/// each such token encodes to itself, so no BPE checks it (the BPE of each
/// candidate was a fifth of loading o200k).
///
/// Why: a token T of rank r was split (`formats/rank_merges.rs`) by BPE over
/// its bytes with the ranks below r alone, which stopped at two parts L + R.
/// The full BPE of T's bytes takes the same steps while some pair ranks
/// below r (the lowest rank is then below r), so it reaches L + R, whose one
/// pair is T: it ends at [T]. That is tiktoken's BPE (any pair whose
/// concatenation is a token); bpeforge merges only the listed pairs, and
/// takes the same steps: a pair (a, b) that tiktoken merges into a token X
/// lies inside X's bytes, which no merge has crossed, and the merges inside
/// them follow the ranks as in X's own BPE, whose one state of two parts is
/// X's listed merge. A token no merge makes (a special token) is no seed.
fn made_by_merges(vocab: &Vocabulary, candidates: &[(u32, &[u8])]) -> Vec<u32> {
    let mut merged = vec![false; vocab.len()];
    vocab.merged_ids().for_each(|id| merged[id as usize] = true);
    candidates.iter().map(|&(id, _)| id).filter(|&id| merged[id as usize]).collect()
}

/// `work` on consecutive chunks of `items`, one a core (at most
/// `MAX_THREADS`), the results concatenated in order. Plain scoped threads,
/// not rayon's pool: the pool's start cost more than the work on one core.
fn in_parallel<T: Sync, R: Send>(items: &[T], work: impl Fn(&[T]) -> Vec<R> + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(MAX_THREADS).min(items.len() / MIN_ITEMS_A_THREAD).max(1);
    if threads == 1 {
        return work(items);
    }
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            items.chunks(items.len().div_ceil(threads)).map(|chunk| scope.spawn(move || work(chunk))).collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    })
}

const MAX_THREADS: usize = 8;
const MIN_ITEMS_A_THREAD: usize = 4096;

/// Bytes, then (ids 256-262) "ab", "ca", "cab" = "ca" + "b", "abc", " c",
/// " cab" and "b c", each made by a merge in that order. "cab" is a token
/// that BPE never makes: "a b" is the lowest merge, so its bytes encode as
/// "c" "ab". For the tests of the seeds and of the encoder seeded with them.
#[cfg(test)]
pub(crate) fn vocabulary_with_a_token_bpe_never_makes() -> Vocabulary {
    let tokens = ["ab", "ca", "cab", "abc", " c", " cab", "b c"];
    let merges = [("a", "b"), ("c", "a"), ("ca", "b"), ("ab", "c"), (" ", "c"), (" c", "ab"), ("b", " c")];
    let bytes = (0..=255u8).map(|b| vec![b]);
    let entries = bytes.chain(tokens.iter().map(|token| token.as_bytes().to_vec())).enumerate();
    let merges: Vec<(&[u8], &[u8])> = merges.iter().map(|(left, right)| (left.as_bytes(), right.as_bytes())).collect();
    Vocabulary::new(entries.map(|(id, token)| (id as u32, token)).collect(), &merges).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_in_parallel_keeps_the_order() {
        let items: Vec<u32> = (0..100_000).collect();
        let odd_squares = |chunk: &[u32]| chunk.iter().filter(|&&i| i % 2 == 1).map(|&i| i as u64 * i as u64).collect();
        assert_eq!(in_parallel(&items, odd_squares), odd_squares(&items));
        assert_eq!(in_parallel(&items[..10], odd_squares), [1, 9, 25, 49, 81]);
    }

    #[test]
    fn seeds_are_tokens_that_encode_to_themselves() {
        let vocab = vocabulary_with_a_token_bpe_never_makes();
        // "ab", "ca", "abc", " c", " cab" and "b c" are; "cab" is not (c + ab).
        assert_eq!(vocabulary_seeds(&vocab, SEEDS_MAX), [256, 257, 259, 260, 261, 262]);
        assert_eq!(vocabulary_seeds(&vocab, 2), [256, 257]);
        let itself = tokens_encoding_to_themselves(&vocab);
        assert_eq!(itself.iter().filter(|&&encodes| !encodes).count(), 1, "\"cab\" only");
        assert!(!itself[258]);
        assert_eq!(seeds_among(&vocab, SEEDS_MAX, &itself), vocabulary_seeds(&vocab, SEEDS_MAX));
        assert_eq!(seeds_among(&vocab, 2, &itself), [256, 257]);
    }
}
