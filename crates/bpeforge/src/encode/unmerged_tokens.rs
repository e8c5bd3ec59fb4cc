//! `ignore_merges` on the encoder's caches: a piece that is a whole token is
//! that token. The merges give the same for nearly every token, so the
//! caches (which hold what the merges make of a piece) stay exact if the
//! pieces that are tokens the merges do not rebuild (588 of Llama 3's 128 K:
//! " việc", "ektedir", ...) are taken out before the lookups and given their
//! token here. A bitmap over a piece's length and end bytes answers "not one
//! of them" for nearly every piece without hashing it.

use rustc_hash::FxHashMap;

use crate::bpe::vocab::Vocabulary;
use crate::bpe::{encode_piece, Scratch};

const FILTER_BITS: usize = 1 << 16;

pub struct WholeTokens {
    ids: FxHashMap<Box<[u8]>, u32>,
    /// The shortest and longest of them, in bytes (Llama 3's: 5 and 128; most pieces are shorter).
    lengths: (usize, usize),
    /// Bit `filter_index(token)` is set for each token of `ids`.
    filter: Box<[u64; FILTER_BITS / 64]>,
}

impl WholeTokens {
    /// The tokens of `vocab` that its merges do not make of their own bytes;
    /// `None` when there are none (then `ignore_merges` changes no id).
    pub fn of(vocab: &Vocabulary) -> Option<Self> {
        let mut scratch = Scratch::default();
        let mut merged = Vec::new();
        let mut ids = FxHashMap::default();
        let mut filter = Box::new([0u64; FILTER_BITS / 64]);
        let mut lengths = (usize::MAX, 0);
        for (id, bytes) in vocab.tokens() {
            merged.clear();
            encode_piece(bytes, vocab, &mut scratch, &mut merged);
            if merged[..] != [id] {
                let bit = filter_index(bytes);
                filter[bit / 64] |= 1 << (bit % 64);
                ids.insert(Box::from(bytes), id);
                lengths = (lengths.0.min(bytes.len()), lengths.1.max(bytes.len()));
            }
        }
        (!ids.is_empty()).then_some(Self { ids, lengths, filter })
    }

    /// Whether a piece of `len` bytes may be one of them.
    #[inline(always)]
    pub fn may_be(&self, len: usize) -> bool {
        len.wrapping_sub(self.lengths.0) <= self.lengths.1 - self.lengths.0
    }

    /// The token `piece` is, when the merges would not make it.
    #[inline(always)]
    pub fn get(&self, piece: &[u8]) -> Option<u32> {
        if !self.may_be(piece.len()) {
            return None;
        }
        let bit = filter_index(piece);
        if self.filter[bit / 64] & (1 << (bit % 64)) == 0 {
            return None;
        }
        self.ids.get(piece).copied()
    }
}

#[inline(always)]
fn filter_index(piece: &[u8]) -> usize {
    if piece.is_empty() {
        return 0;
    }
    let (first, second, last) = (piece[0], piece[piece.len().min(2) - 1], piece[piece.len() - 1]);
    let ends = u32::from(first) << 16 | u32::from(second) << 8 | u32::from(last);
    let mixed = (piece.len() as u32).wrapping_mul(0x9E37_79B1) ^ ends.wrapping_mul(0x27D4_EB2F);
    (mixed.wrapping_mul(0x85EB_CA6B) >> 16) as usize % FILTER_BITS
}

#[cfg(test)]
mod tests {
    use crate::hf::HfTokenizer;

    fn tokenizer(ignore_merges: bool) -> HfTokenizer {
        let doc = serde_json::json!({
            "model": {"type": "BPE", "ignore_merges": ignore_merges, "merges": ["a b"],
                      "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4, "Ġ": 5}},
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
            "decoder": {"type": "ByteLevel"},
        });
        HfTokenizer::from_json(&doc.to_string()).unwrap()
    }

    #[test]
    fn hf_ignore_merges_gives_a_piece_its_token_even_when_the_merges_do_not_make_it() {
        // "abc" is a token no merge makes: with ignore_merges the piece "abc" is it, " abc" is merged.
        let (whole, merged) = (tokenizer(true), tokenizer(false));
        for _ in 0..2 {
            // Twice: the second call reads the encoder's caches, which must not hold "abc" as merged.
            assert_eq!(whole.encode("abc abc", false).unwrap(), [4, 5, 3, 2]);
            assert_eq!(merged.encode("abc abc", false).unwrap(), [3, 2, 5, 3, 2]);
        }
    }
}
