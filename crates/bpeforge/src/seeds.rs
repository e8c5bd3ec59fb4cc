//! The vocabulary's tokens that a thread's piece table starts with
//! (`PieceTable::plant`), so that a first call finds the pieces that are
//! whole tokens (" the", "ing", ", and" is not one) without merging them.
//!
//! Why: of the 74 K distinct pre-tokens of 10 MB of Gutenberg, 22 K are
//! single GPT-2 tokens, and a first call merges and stores every distinct
//! piece. Seeded, the Python first call on 10 MB took 47 instead of 52 ms
//! on Gutenberg with GPT-2, 49 instead of 55 with cl100k, 54 instead of 61
//! with o200k, and 7-10% less on 20news (medians of four; docs/design.md,
//! fourteenth session). gigatoken seeds its table at load too (its
//! `pretoken_cache.rs`).
//!
//! A seed is a token whose bytes are valid UTF-8, pack into a key (2-15
//! bytes), are one pre-token of the encoder's pattern (otherwise no text
//! ever asks for it) and encode to the token itself. The last is checked
//! token by token with the encoder's own merges: expected of vocabularies
//! taken from tiktoken rank files (each token's split is recovered by BPE
//! below its rank), but not promised by every merge list, and a seed that
//! broke it would change ids.

use crate::bpe::{encode_piece, Scratch};
use crate::packed::pack;
use crate::pattern::Pattern;
use crate::vocab::Vocabulary;

/// The most seeds: the tokens of lowest id (rank) that qualify, as many as
/// a table holds (`piece_table::MAX_BUCKETS`, two ways). Each costs a BPE
/// when the encoder is built (GPT-2's 49.6 K: 12 ms; o200k's 193 K: 62 ms,
/// one core), and pays: with o200k's first 64 K only, the first call on 10
/// MB of 20news took 79 ms (median of five), with all 193 K 64 ms, with none
/// 84 ms. One core and no thread pool: rayon's threads made GPT-2's 17.6
/// ms on a pinned core against 12 in a loop.
pub const SEEDS_MAX: usize = crate::piece_table::MAX_BUCKETS * 2;

/// The seeds of `vocab` under `pattern` (see the top): at most `max` ids,
/// lowest first.
pub fn vocabulary_seeds(vocab: &Vocabulary, pattern: &Pattern, max: usize) -> Vec<u32> {
    let (mut scratch, mut ids) = (Scratch::default(), Vec::new());
    let mut encodes_to_itself = |id: u32, token: &[u8]| {
        ids.clear();
        encode_piece(token, vocab, &mut scratch, &mut ids);
        ids[..] == [id]
    };
    vocab
        .tokens()
        .filter(|(_, token)| pack(token).is_some() && token.len() >= 2 && is_one_piece(token, pattern))
        .take(max)
        .filter(|&(id, token)| encodes_to_itself(id, token))
        .map(|(id, _)| id)
        .collect()
}

/// Whether `token` is valid UTF-8 that `pattern` leaves in one pre-token.
fn is_one_piece(token: &[u8], pattern: &Pattern) -> bool {
    let Ok(text) = std::str::from_utf8(token) else { return false };
    let mut pieces = 0;
    // A preset's scanner never fails; a custom pattern that does on a token
    // leaves that token out.
    pattern.for_each_piece(text, |_| pieces += 1).is_ok() && pieces == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes, then "ab", "abc" and "cab" by merges; "ab c" is two pieces and
    /// "ca" + "b" merges to "cab" only if no lower merge takes "ab" first,
    /// which here one does ("a b" is rank 0): "cab" encodes to "c" "ab", and
    /// is no seed.
    #[test]
    fn seeds_are_whole_pieces_that_encode_to_themselves() {
        let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
        for (id, token) in [(256, "ab"), (257, "ca"), (258, "cab"), (259, "abc"), (260, "b c"), (261, " c")] {
            entries.push((id, token.as_bytes().to_vec()));
        }
        let merges: Vec<(&[u8], &[u8])> =
            vec![(b"a", b"b"), (b"c", b"a"), (b"ca", b"b"), (b"ab", b"c"), (b" ", b"c"), (b"b", b" c")];
        let vocab = Vocabulary::new(entries, &merges).unwrap();
        let seeds = vocabulary_seeds(&vocab, &Pattern::Gpt2, SEEDS_MAX);
        // "ab", "abc" and " c" are; "ca" merges to itself too; "cab" is not
        // (c + ab); "b c" is two pre-tokens.
        assert_eq!(seeds, [256, 257, 259, 261]);
        assert_eq!(vocabulary_seeds(&vocab, &Pattern::Gpt2, 2), [256, 257]);
    }
}
