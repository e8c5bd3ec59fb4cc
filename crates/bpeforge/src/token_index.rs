//! Token bytes -> id, for building a vocabulary's merge table and for
//! `Vocabulary::id`.
//!
//! Tokens of up to 15 bytes (all but a few hundred of o200k's 200 K) are
//! keyed by their packed bytes (`packed.rs`): no allocation per token, and a
//! lookup hashes and compares two words. Keyed by boxed slices, every token
//! was cloned into the map and every lookup compared bytes behind a pointer;
//! allocating, freeing and probing were most of building o200k's encoder.

use rustc_hash::FxHashMap;

use crate::packed::pack;

#[derive(Debug, Clone, Default)]
pub struct TokenIndex {
    short: FxHashMap<u128, u32>,
    long: FxHashMap<Box<[u8]>, u32>,
}

impl TokenIndex {
    /// Index `tokens` (bytes by id, `None` for ids a vocabulary skips);
    /// where two ids share bytes, the lower id is kept.
    pub fn new(tokens: &[Option<Box<[u8]>>]) -> Self {
        let mut index = Self::default();
        index.short.reserve(tokens.len());
        for (id, token) in tokens.iter().enumerate() {
            let Some(bytes) = token else { continue };
            match pack(bytes) {
                Some(key) => index.short.entry(key).or_insert(id as u32),
                None => index.long.entry(bytes.clone()).or_insert(id as u32),
            };
        }
        index
    }

    pub fn get(&self, bytes: &[u8]) -> Option<u32> {
        match pack(bytes) {
            Some(key) => self.short.get(&key).copied(),
            None => self.long.get(bytes).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_short_and_long_tokens_and_keeps_the_lower_id() {
        let long = vec![b'x'; 40];
        let tokens: Vec<Option<Box<[u8]>>> = vec![
            Some(b"a".to_vec().into()),
            None,
            Some(b"a\0".to_vec().into()),
            Some(long.clone().into()),
            Some(b"a".to_vec().into()),
            Some(vec![b'y'; 15].into()),
            Some(vec![b'y'; 16].into()),
        ];
        let index = TokenIndex::new(&tokens);
        assert_eq!(index.get(b"a"), Some(0), "the lower of two ids with the same bytes");
        assert_eq!(index.get(b"a\0"), Some(2), "a trailing NUL is a different token");
        assert_eq!(index.get(&long), Some(3));
        assert_eq!(index.get(&[b'y'; 15]), Some(5));
        assert_eq!(index.get(&[b'y'; 16]), Some(6));
        assert_eq!((index.get(b""), index.get(b"b"), index.get(&[b'x'; 39])), (None, None, None));
    }
}
