//! Token ids as HF `tokenizers`' `BpeTrainer` gives them: the special tokens
//! first, then the bytes seen, ordered by the code point of the char GPT-2's
//! byte-level table writes them with, then new tokens in creation order. A
//! token is known by its text: a merge that spells an existing token (a
//! special token's included) gets its id.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::bpe::merges::Merge;
use crate::formats::byte_level::{byte_chars, ByteTable};

type Pair = (u32, u32);

pub struct HfIds {
    /// Id -> token bytes. A special token whose text is not byte-level chars
    /// can never be spelled by a merge: its bytes here are its UTF-8.
    tokens: Vec<Arc<[u8]>>,
    /// Id -> its length in bytes, read at every step of the merge loops.
    lens: Vec<u32>,
    /// Bytes -> id, for the tokens a merge can spell.
    ids: FxHashMap<Arc<[u8]>, u32>,
    /// Byte -> id, for the bytes seen.
    byte_ids: [u32; 256],
}

impl HfIds {
    /// The specials, then the bytes marked in `seen`.
    pub fn new(specials: &[String], seen: &[bool; 256]) -> Self {
        let mut ids =
            Self { tokens: Vec::new(), lens: Vec::new(), ids: FxHashMap::default(), byte_ids: [u32::MAX; 256] };
        let chars = byte_chars();
        let table = ByteTable::new();
        for special in specials {
            match table.decode(special) {
                Some(bytes) => {
                    ids.id_of_or_add(bytes.into());
                }
                // Not byte-level text: it takes an id, and no token can equal it.
                None if !ids.tokens.iter().any(|t| **t == *special.as_bytes()) => {
                    ids.tokens.push(special.as_bytes().into());
                    ids.lens.push(special.len() as u32);
                }
                None => {}
            }
        }
        let mut alphabet: Vec<u8> = (0..=255u8).filter(|&b| seen[usize::from(b)]).collect();
        alphabet.sort_by_key(|&b| chars[usize::from(b)]);
        for byte in alphabet {
            ids.byte_ids[usize::from(byte)] = ids.id_of_or_add([byte].as_slice().into());
        }
        ids
    }

    /// How many tokens: HF's vocabulary size.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn of_byte(&self, byte: u8) -> u32 {
        self.byte_ids[usize::from(byte)]
    }

    /// The token's length in bytes (HF's symbol length, in byte-level chars).
    pub fn len_of(&self, id: u32) -> usize {
        self.lens[id as usize] as usize
    }

    /// `len_of` as the position arithmetic of `occurrences.rs` wants it.
    #[inline]
    pub fn byte_len(&self, id: u32) -> u32 {
        self.lens[id as usize]
    }

    /// The bytes the merge of `pair` spells.
    pub fn concat(&self, (left, right): Pair) -> Arc<[u8]> {
        let (left, right) = (&self.tokens[left as usize], &self.tokens[right as usize]);
        left.iter().chain(right.iter()).copied().collect()
    }

    /// The id of the token `bytes`, if it is one.
    pub fn id_of(&self, bytes: &[u8]) -> Option<u32> {
        self.ids.get(bytes).copied()
    }

    /// The id of the token `bytes`, added when new.
    pub fn id_of_or_add(&mut self, bytes: Arc<[u8]>) -> u32 {
        if let Some(&id) = self.ids.get(&bytes) {
            return id;
        }
        let id = self.tokens.len() as u32;
        self.lens.push(bytes.len() as u32);
        self.tokens.push(bytes.clone());
        self.ids.insert(bytes, id);
        id
    }

    /// A merge as byte strings, with the token it makes.
    pub fn merge_and_token(&self, (left, right): Pair, new: u32) -> (Merge, Arc<[u8]>) {
        let side = |id: u32| self.tokens[id as usize].clone();
        ((side(left), side(right)), side(new))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specials_then_bytes_by_code_point_then_new_tokens() {
        let mut seen = [false; 256];
        // b' ' is written U+0120 (Ġ): after 'a' (U+0061) and 0xE9 (é, U+00E9).
        for b in [b' ', b'a', 0xE9] {
            seen[usize::from(b)] = true;
        }
        let mut ids = HfIds::new(&["<|e|>".to_string()], &seen);
        assert_eq!((ids.of_byte(b'a'), ids.of_byte(0xE9), ids.of_byte(b' ')), (1, 2, 3));
        assert_eq!(ids.len(), 4);
        let new = ids.id_of_or_add(ids.concat((3, 1)));
        assert_eq!((new, &*ids.tokens[4]), (4, &b" a"[..]));
        // A merge spelling a special token's text gets the special's id.
        let mut ids = HfIds::new(&["ab".to_string()], &seen);
        assert_eq!(ids.id_of_or_add(b"ab".as_slice().into()), 0);
    }
}
