//! Encoding text to ids and ids back to bytes.
//!
//! `encode`: split on special tokens (longest first), pre-tokenize each piece
//! of text with the GPT-2 scanner, then apply merges inside each pre-token
//! (`bpe.rs`). Tables are built once in `Encoder::new`; an `Encoder` is
//! immutable afterwards, so one instance serves any number of threads.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::bpe::{encode_piece, Scratch};
use crate::chunking::find_cut;
use crate::error::Error;
use crate::packed::pack;
use crate::pattern::Pattern;
use crate::specials::{Piece, SpecialSplitter};
use crate::vocab::Vocabulary;

#[derive(Debug, Clone)]
pub struct Encoder {
    vocab: Vocabulary,
    specials: SpecialSplitter,
    special_ids: Vec<u32>,
    pattern: Pattern,
}

impl Encoder {
    /// Every special token must already be in `vocab` (the Python layer
    /// appends missing ones with new ids).
    pub fn new(vocab: Vocabulary, special_tokens: &[String], pattern: Pattern) -> Result<Self, Error> {
        let specials = SpecialSplitter::new(special_tokens)?;
        let special_ids = special_tokens
            .iter()
            .map(|token| {
                vocab.id(token.as_bytes()).ok_or_else(|| {
                    Error::InvalidArgument(format!("special token {token:?} is not in the vocab; add it first"))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { vocab, specials, special_ids, pattern })
    }

    pub fn vocab(&self) -> &Vocabulary {
        &self.vocab
    }

    pub fn special_tokens(&self) -> &[String] {
        self.specials.tokens()
    }

    pub fn specials(&self) -> &SpecialSplitter {
        &self.specials
    }

    pub fn pattern(&self) -> &Pattern {
        &self.pattern
    }

    /// The ids of `text`. A custom pattern may fail on some input (its
    /// backtracking limit); the GPT-2 scanner and the presets do not.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, Error> {
        let mut out = Vec::with_capacity(text.len() / 4);
        self.encode_with(text, &mut EncodeState::default(), &mut out)?;
        Ok(out)
    }

    /// Encode with buffers and a piece cache kept from earlier calls: a worker
    /// that encodes many texts (a batch, the chunks of a file) keeps its cache
    /// warm instead of starting cold on every text.
    pub fn encode_with(&self, text: &str, state: &mut EncodeState, out: &mut Vec<u32>) -> Result<(), Error> {
        for piece in self.specials.split(text) {
            match piece {
                Piece::Special(index) => out.push(self.special_ids[index]),
                Piece::Text(document) => {
                    self.pattern.for_each_piece(document, |pretoken| {
                        self.encode_pretoken(pretoken.as_bytes(), state, out);
                    })?;
                }
            }
        }
        Ok(())
    }

    #[inline]
    fn encode_pretoken(&self, bytes: &[u8], state: &mut EncodeState, out: &mut Vec<u32>) {
        if bytes.len() == 1 {
            out.push(self.vocab.byte_id(bytes[0]));
            return;
        }
        let Some(key) = pack(bytes) else {
            return encode_piece(bytes, &self.vocab, &mut state.scratch, out);
        };
        if let Some(cached) = state.cache.get(key) {
            out.extend_from_slice(cached);
            return;
        }
        let start = out.len();
        encode_piece(bytes, &self.vocab, &mut state.scratch, out);
        state.cache.insert(key, &out[start..]);
    }

    /// Encode `texts` in parallel on the current rayon pool, each worker with
    /// one state for all the texts it takes; `convert` runs on the worker too.
    pub fn encode_batch<T, R>(
        &self,
        texts: &[T],
        convert: impl Fn(Vec<u32>) -> R + Sync + Send,
    ) -> Result<Vec<R>, Error>
    where
        T: AsRef<str> + Sync,
        R: Send,
    {
        texts
            .par_iter()
            .map_init(EncodeState::default, |state, text| {
                let text = text.as_ref();
                let mut ids = Vec::with_capacity(text.len() / 4);
                self.encode_with(text, state, &mut ids)?;
                Ok(convert(ids))
            })
            .collect()
    }

    /// For streaming: the length in bytes of the longest prefix of `text`
    /// whose ids cannot change whatever follows (0 if none yet). Encoding the
    /// prefix, then the rest with more text appended, gives the ids of the whole.
    pub fn stable_prefix_len(&self, text: &str) -> usize {
        find_cut(text.as_bytes(), &self.specials, self.pattern.cut_before()).unwrap_or(0)
    }

    /// The bytes of `ids`, concatenated; an id outside the vocabulary is an error.
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>, Error> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            out.extend_from_slice(self.vocab.token(id).ok_or(Error::UnknownId(id))?);
        }
        Ok(out)
    }
}

/// What encoding keeps between calls on one thread: buffers and the cache.
/// Ids depend only on the vocabulary, so a state may serve any texts of the
/// same `Encoder` (not of another).
#[derive(Default)]
pub struct EncodeState {
    scratch: Scratch,
    cache: PieceCache,
}

/// Ids of the short pre-tokens already encoded by this state. Text repeats its
/// words, so most pre-tokens are looked up instead of merged: exact, since a
/// pre-token's merges do not depend on its neighbours (unlike tiktoken's
/// shortcut of emitting a whole pre-token found in the vocabulary, which
/// can differ from merge-rank order). Bounded, so memory stays flat.
#[derive(Default)]
struct PieceCache {
    /// Packed pre-token -> (start, length) of its ids in `ids`.
    map: FxHashMap<u128, (u32, u32)>,
    ids: Vec<u32>,
}

const CACHE_ENTRIES_MAX: usize = 1 << 16;

impl PieceCache {
    #[inline]
    fn get(&self, key: u128) -> Option<&[u32]> {
        let &(start, len) = self.map.get(&key)?;
        Some(&self.ids[start as usize..(start + len) as usize])
    }

    fn insert(&mut self, key: u128, ids: &[u32]) {
        if self.map.len() < CACHE_ENTRIES_MAX {
            self.map.insert(key, (self.ids.len() as u32, ids.len() as u32));
            self.ids.extend_from_slice(ids);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoder() -> Encoder {
        let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
        entries.extend([(256, b" t".to_vec()), (257, b"<|e|>".to_vec()), (258, b"<|e|><|e|>".to_vec())]);
        let vocab = Vocabulary::new(entries, &[(b" ".to_vec(), b"t".to_vec())]).unwrap();
        Encoder::new(vocab, &["<|e|>".to_string(), "<|e|><|e|>".to_string()], Pattern::Gpt2).unwrap()
    }

    #[test]
    fn specials_longest_first_and_merges_inside_pieces() {
        let ids = encoder().encode("a t<|e|><|e|>x<|e|>").unwrap();
        // "a", " t" (merged), the double special, "x", the single special.
        assert_eq!(ids, [b'a' as u32, 256, 258, b'x' as u32, 257]);
    }

    #[test]
    fn decode_concatenates_and_rejects_unknown_ids() {
        let enc = encoder();
        assert_eq!(enc.decode_bytes(&[b'a' as u32, 256, 257]).unwrap(), b"a t<|e|>");
        assert_eq!(enc.decode_bytes(&[9999]).unwrap_err().to_string(), "unknown token id 9999");
    }

    #[test]
    fn stable_prefix_can_be_encoded_apart() {
        let enc = encoder();
        let text = "it t  t<|e|><|e|> at\n\n the end  ";
        let cut = enc.stable_prefix_len(text);
        assert!(cut > 0 && cut < text.len());
        let mut apart = enc.encode(&text[..cut]).unwrap();
        apart.extend(enc.encode(&text[cut..]).unwrap());
        assert_eq!(apart, enc.encode(text).unwrap());
        // Nothing is stable in a text shorter than the longest special token.
        assert_eq!(enc.stable_prefix_len("a b"), 0);
    }
}
