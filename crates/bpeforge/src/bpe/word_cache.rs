//! The early merges' ids of short words (`word_phases.rs`), kept by a merge
//! state from piece to piece and call to call: the words of a text repeat
//! (` the`, ` of`), its lines do not. A word that no merge joins to its
//! neighbours (CJK between pairs that no token holds) is kept with its final
//! ids instead, under its key with `FINAL` set.
//!
//! Two ways a 64-byte bucket, keyed by the packed word (`util::packed_key`,
//! up to 15 bytes; never 0, since the length is in the key), each way with up
//! to `WAY_IDS` ids. A word is put in the first way, the old first moving to
//! the second, so a word met again and again stays. A word of more ids, or
//! longer, is merged every time (a few percent of English words).
//!
//! Why its own table and not the encoder's: the early merges' ids of a word
//! are not its ids (a late merge may join its bytes), and a table of 2 MiB
//! at most stays near the second-level cache where the encoder's 16 MiB do not.

use crate::util::packed_key::hash_packed;
use crate::util::prefetch::{prefetch_address, L1};

/// A word of a piece as `phased.rs` looks it up: where it ends in the piece,
/// its key (0 if too long to pack) and the key's hash.
#[derive(Clone, Copy)]
pub struct Word {
    pub end: usize,
    pub key: u128,
    pub hash: u64,
}

/// Set in the key of a run of words kept whole, with its final ids: kept
/// apart from a word of the same bytes and its early ids (`pack` leaves the
/// top bit clear: it holds the length, at most 15).
pub const FINAL: u128 = 1 << 127;

/// Ids a way holds.
pub const WAY_IDS: usize = 3;
/// Buckets at most: 2 MiB, 64 Ki words.
const MAX_BUCKETS: usize = 1 << 15;
/// Buckets to start with: 64 KiB, grown when a sixteenth of the words put
/// since it was made pushed another out.
const FIRST_BUCKETS: usize = 1 << 10;

#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Way {
    key: u128,
    ids: [u32; WAY_IDS],
    len: u32,
}

#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Bucket {
    ways: [Way; 2],
}

#[derive(Default)]
pub struct WordCache {
    /// The `WordPhases::id` of the vocabulary whose words it holds: a
    /// `Scratch` may serve another one next.
    vocabulary: u64,
    buckets: Vec<Bucket>,
    /// Words put since the table was made, and how many of them pushed
    /// another out.
    puts: usize,
    spills: usize,
}

impl WordCache {
    /// Hold the words of the vocabulary `id` (`WordPhases::id`): emptied if
    /// it held another's.
    #[inline]
    pub fn serve(&mut self, vocabulary: u64) {
        if self.vocabulary != vocabulary {
            *self = Self { vocabulary, ..Self::default() };
        }
    }

    /// Append the ids of the word `key` (a `pack`ed key, `hash` its
    /// `hash_packed`) to `out`, if held.
    #[inline]
    pub fn get(&self, key: u128, hash: u64, out: &mut Vec<u32>) -> bool {
        let Some(bucket) = self.bucket(hash) else { return false };
        let bucket = &self.buckets[bucket];
        for way in &bucket.ways {
            if way.key == key {
                // All the way's ids, then the length: a copy of a fixed size, not a call to `memcpy`.
                out.extend_from_slice(&way.ids);
                out.truncate(out.len() - WAY_IDS + way.len as usize);
                return true;
            }
        }
        false
    }

    /// Grow to hold `words` words, up to its bound, before they are put.
    pub fn reserve_for(&mut self, words: usize) {
        while self.buckets.len() < MAX_BUCKETS && self.buckets.len() < words {
            self.grow();
        }
    }

    /// Ask for the bucket of `hash`, into the first-level cache.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        if let Some(bucket) = self.bucket(hash) {
            prefetch_address::<L1, _>(self.buckets.as_ptr().wrapping_add(bucket));
        }
    }

    /// Hold `ids` (at most `WAY_IDS`) for the word `key`.
    #[inline]
    pub fn put(&mut self, key: u128, hash: u64, ids: &[u32]) {
        if ids.len() > WAY_IDS {
            return;
        }
        if self.buckets.is_empty() || (self.spills > self.puts / 16 && self.buckets.len() < MAX_BUCKETS) {
            self.grow();
        }
        let mut way = Way { key, ids: [0; WAY_IDS], len: ids.len() as u32 };
        // A loop of at most `WAY_IDS`, not a call to `memcpy`.
        way.ids.iter_mut().zip(ids).for_each(|(slot, &id)| *slot = id);
        self.puts += 1;
        self.spills += self.place(way, hash) as usize;
    }

    /// Put `way` first in the bucket of `hash`; whether a word was pushed out.
    #[inline]
    fn place(&mut self, way: Way, hash: u64) -> bool {
        let at = self.bucket(hash).expect("the table has buckets");
        let bucket = &mut self.buckets[at];
        let spilled = bucket.ways[1].key != 0;
        bucket.ways[1] = bucket.ways[0];
        bucket.ways[0] = way;
        spilled
    }

    /// Four times the buckets (at most `MAX_BUCKETS`), keeping the words held.
    #[cold]
    fn grow(&mut self) {
        let buckets = (self.buckets.len() * 4).clamp(FIRST_BUCKETS, MAX_BUCKETS);
        let old = std::mem::replace(&mut self.buckets, vec![Bucket::default(); buckets]);
        // The second ways first, so that a bucket's first way stays ahead of its second.
        for way in old.iter().map(|bucket| bucket.ways[1]).chain(old.iter().map(|bucket| bucket.ways[0])) {
            if way.key != 0 {
                self.place(way, hash_packed(way.key));
            }
        }
        (self.puts, self.spills) = (0, 0);
    }

    /// The bucket of a hash, if the table has any.
    #[inline]
    fn bucket(&self, hash: u64) -> Option<usize> {
        // Fibonacci hashing: the high bits are the well-mixed ones.
        (!self.buckets.is_empty()).then(|| (hash >> 40) as usize & (self.buckets.len() - 1))
    }

    /// Bytes its buffer holds.
    pub fn bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<Bucket>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::packed_key::pack;

    #[test]
    fn holds_what_was_put_and_grows_when_words_spill() {
        let mut cache = WordCache::default();
        cache.serve(1);
        let words: Vec<Vec<u8>> = (0..100_000u32).map(|i| format!(" w{i}").into_bytes()).collect();
        let mut out = Vec::new();
        for (i, word) in words.iter().enumerate() {
            let key = pack(word).unwrap();
            assert!(!cache.get(key, hash_packed(key), &mut out));
            cache.put(key, hash_packed(key), &[i as u32, 7][..1 + i % 2]);
            assert!(cache.get(key, hash_packed(key), &mut out));
            assert_eq!(out, [i as u32, 7][..1 + i % 2]);
            out.clear();
        }
        assert_eq!(cache.buckets.len(), MAX_BUCKETS);
        // More ids than a way holds are not kept.
        let key = pack(b" long").unwrap();
        cache.put(key, hash_packed(key), &[1, 2, 3, 4]);
        assert!(!cache.get(key, hash_packed(key), &mut out));
        // Another vocabulary's words are not this one's.
        let key = pack(b" w99999").unwrap();
        assert!(cache.get(key, hash_packed(key), &mut out));
        cache.serve(2);
        assert!(!cache.get(key, hash_packed(key), &mut out));
    }
}
