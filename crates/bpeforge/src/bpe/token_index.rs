//! Token bytes -> a value (an id, or a rank and a position), for building a
//! vocabulary's merge table, for `Vocabulary::id`, and for recovering the
//! merges of a tiktoken rank table (`formats/rank_merges.rs`).
//!
//! Tokens of up to 15 bytes (all but a few hundred of o200k's 200 K) are keyed
//! by their packed bytes (`util/packed_key.rs`): no allocation per token, and a
//! lookup hashes and compares two words. Keyed by boxed slices, allocating,
//! freeing and probing were most of building o200k's encoder.

use std::borrow::Borrow;
use std::hash::Hash;

use rustc_hash::FxHashMap;

use crate::util::packed_key::pack;

/// Longer tokens are keyed by `K`: owned (`Box<[u8]>`) or borrowed (`&[u8]`).
#[derive(Debug, Clone)]
pub struct TokenIndex<K = Box<[u8]>, V = u32> {
    short: FxHashMap<u128, V>,
    long: FxHashMap<K, V>,
}

impl<K, V> Default for TokenIndex<K, V> {
    fn default() -> Self {
        Self { short: FxHashMap::default(), long: FxHashMap::default() }
    }
}

impl<K: Borrow<[u8]> + Hash + Eq, V: Copy> TokenIndex<K, V> {
    /// `bytes` -> `value`, unless `bytes` is there already (the first value
    /// stays); `long_key` makes the key of a token too long to pack.
    pub fn insert_first(&mut self, bytes: &[u8], long_key: impl FnOnce() -> K, value: V) {
        match pack(bytes) {
            Some(key) => self.short.entry(key).or_insert(value),
            None => self.long.entry(long_key()).or_insert(value),
        };
    }

    /// The number of distinct tokens held.
    pub fn len(&self) -> usize {
        self.short.len() + self.long.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, bytes: &[u8]) -> Option<V> {
        match pack(bytes) {
            Some(key) => self.short.get(&key).copied(),
            None => self.long.get(bytes).copied(),
        }
    }
}

impl TokenIndex {
    /// Index `tokens` (bytes by id, `None` for ids a vocabulary skips);
    /// where two ids share bytes, the lower id is kept.
    pub fn new(tokens: &[Option<Box<[u8]>>]) -> Self {
        let mut index = Self::default();
        index.short.reserve(tokens.len());
        for (id, token) in tokens.iter().enumerate() {
            if let Some(bytes) = token {
                index.insert_first(bytes, || bytes.clone(), id as u32);
            }
        }
        index
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
        assert_eq!(index.len(), 5, "six tokens, two of them the same");
    }
}
