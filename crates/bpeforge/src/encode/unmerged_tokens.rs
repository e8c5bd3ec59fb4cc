//! HF's `ignore_merges` in the encoder: a piece that is a whole token is
//! that token. The merges give the same for nearly every token; the tokens
//! they do not rebuild (588 of Llama 3's 128 K: " việc", "ektedir", ...)
//! are kept here, and a piece merged on a miss of the caches is first
//! looked for among them. So the caches hold each piece's ids as the
//! pipeline gives them, and the warm path pays nothing for the option.
//! (Taken out of the pieces before their lookups, a bitmap over each
//! piece's length and end bytes, they cost a sixth of Llama 3's warm time.)
//!
//! The parts of a long piece (`parts.rs`) share the caches with pieces but
//! are merged, never taken whole: a part that is one of these tokens is
//! merged on its own, past the caches (`Encoder::encode_part`). Every other
//! part's merges equal its ids as a piece, so the caches serve both.

use rustc_hash::FxHashMap;

use super::Encoder;
use crate::bpe::vocab::Vocabulary;
use crate::bpe::{encode_piece, Scratch};
use crate::encode::cache::seeds::{seeds_among, tokens_encoding_to_themselves, SEEDS_MAX};

const FILTER_BITS: usize = 1 << 16;

#[derive(Debug, Clone)]
pub struct UnmergedTokens {
    ids: FxHashMap<Box<[u8]>, u32>,
    /// The shortest and longest of them, in bytes (Llama 3's: 5 and 128; most pieces are shorter).
    lengths: (usize, usize),
    /// Bit `filter_index(token)` is set for each token of `ids`.
    filter: Box<[u64; FILTER_BITS / 64]>,
}

impl UnmergedTokens {
    /// The tokens of `vocab` that its merges do not make of their own bytes
    /// (`itself`: whether each id's bytes encode to it, as
    /// `tokens_encoding_to_themselves` says); `None` when there are none
    /// (then `ignore_merges` changes no id).
    pub fn of(vocab: &Vocabulary, itself: &[bool]) -> Option<Self> {
        let mut ids = FxHashMap::default();
        let mut filter = Box::new([0u64; FILTER_BITS / 64]);
        let mut lengths = (usize::MAX, 0);
        for (id, bytes) in vocab.tokens().filter(|&(id, _)| itself.get(id as usize) != Some(&true)) {
            let bit = filter_index(bytes);
            filter[bit / 64] |= 1 << (bit % 64);
            ids.insert(Box::from(bytes), id);
            lengths = (lengths.0.min(bytes.len()), lengths.1.max(bytes.len()));
        }
        (!ids.is_empty()).then_some(Self { ids, lengths, filter })
    }

    /// Whether a piece of `len` bytes may be one of them.
    #[inline(always)]
    fn may_be(&self, len: usize) -> bool {
        len.wrapping_sub(self.lengths.0) <= self.lengths.1 - self.lengths.0
    }

    /// The token `piece` is, when the merges would not make it.
    #[inline]
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

impl Encoder {
    /// Give each piece that is a token that token, whatever the merges make
    /// of its bytes, as HF's `ignore_merges` does (see the module's note).
    pub fn ignore_merges(&mut self) {
        let itself = tokens_encoding_to_themselves(&self.vocab);
        self.unmerged = UnmergedTokens::of(&self.vocab, &itself).map(Box::new);
        // The seeds need the same answers (a BPE of each token, unless the merges tell).
        let _ = self.seeds.set(seeds_among(&self.vocab, SEEDS_MAX, &itself));
    }

    /// The ids of a whole piece the caches lack: its token when it is one
    /// the merges do not make and merges are ignored, else its merges.
    #[inline]
    pub(super) fn merge_piece(&self, piece: &[u8], scratch: &mut Scratch, out: &mut Vec<u32>) {
        match self.unmerged_token(piece) {
            Some(id) => out.push(id),
            None => encode_piece(piece, &self.vocab, scratch, out),
        }
    }

    /// The token `piece` is, when merges are ignored and they do not make it.
    #[inline]
    pub(super) fn unmerged_token(&self, piece: &[u8]) -> Option<u32> {
        self.unmerged.as_ref().and_then(|unmerged| unmerged.get(piece))
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

    /// Tokens "yz", "xy", "wv", "zwv", and "xyzwv", which no merge makes: the
    /// merges make [x, yz, wv] of its bytes, and every byte of it may be
    /// joined to the next, so a long piece "xyzwvxyzwv..." cuts into parts
    /// that are its bytes (`parts.rs`).
    fn parted(ignore_merges: bool) -> HfTokenizer {
        let doc = serde_json::json!({
            "model": {"type": "BPE", "ignore_merges": ignore_merges, "merges": ["y z", "x y", "w v", "z wv"],
                      "vocab": {"v": 0, "w": 1, "x": 2, "y": 3, "z": 4, "Ġ": 5, "yz": 6, "xy": 7, "wv": 8,
                                "zwv": 9, "xyzwv": 10}},
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
            "decoder": {"type": "ByteLevel"},
        });
        HfTokenizer::from_json(&doc.to_string()).unwrap()
    }

    #[test]
    fn hf_ignore_merges_takes_a_piece_whole_but_merges_the_parts_of_a_long_one() {
        let (whole, merged) = (parted(true), parted(false));
        let text = "xyzwv xyzwvxyzwvxyzwvxyzwv xyzwv";
        let long_piece = [5].into_iter().chain([2, 6, 8].repeat(4));
        let expected: Vec<u32> = [10].into_iter().chain(long_piece).chain([5, 2, 6, 8]).collect();
        for _ in 0..3 {
            // Again and again: the piece "xyzwv" is in the caches as [10] once the first call is done, and the
            // long piece's parts must still be merged.
            assert_eq!(whole.encode(text, false).unwrap(), expected);
            let batch = ["xyzwv", " xyzwvxyzwvxyzwvxyzwv"];
            let (mut out, mut ends) = (Vec::new(), Vec::new());
            whole.encode_batch_into(&batch, false, &mut out, &mut ends).unwrap();
            assert_eq!(out, expected[..14]);
            assert_eq!(ends, [1, 14]);
            assert_eq!(merged.encode("xyzwv", false).unwrap(), [2, 6, 8]);
        }
    }

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
