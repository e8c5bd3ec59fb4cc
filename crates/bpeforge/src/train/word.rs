//! The distinct pre-tokens as symbol sequences, merged in place.
//!
//! All words live in one contiguous arena (`WordStore`), each its length and
//! then its symbols, and only shrinks as merges apply. One allocation per word
//! made every visit of the merge loop a cache miss; with the arena, the loop's
//! visits in word order walk memory forward.
//!
//! The length sits in the arena, next to the symbols it is read with, so that
//! the per-word index is only the start (8 bytes a word instead of 16 for a
//! start and a length): the merge loop's visits are cache misses on that
//! index and on the symbols, and the smaller index took 3-5% off the merge
//! phase at 500 MB / 32k.
//!
//! Merges shorten words in place and leave their tails as garbage; when the
//! garbage outweighs the words, the arena is rewritten without it
//! (`compact_if_sparse`). Most corpora never get there, but one long
//! pre-token (a file of one letter) halves at each early merge, and its
//! arena, 4 bytes a byte, would otherwise stay at its first size while the
//! merged tokens grow to several times the pre-token.

use std::marker::PhantomData;

use crate::util::prefetch::{prefetch, prefetch_address, L1};

/// Below this many entries, the arena is never compacted.
const MIN_COMPACT: usize = 1 << 20;

/// A pair of adjacent symbols.
pub type Pair = (u32, u32);

/// The words of the merge loop: symbols of every word in one arena.
#[derive(Debug, Clone, Default)]
pub struct WordStore {
    /// Per word, its current length, then its symbols (the tail left by a
    /// merge that shortened it is garbage).
    arena: Vec<u32>,
    /// Per word: where its length lies in `arena`.
    starts: Vec<usize>,
    /// Entries of the arena that are lengths and symbols of words (the rest is garbage).
    live: usize,
}

impl WordStore {
    /// Room for `words` words of `symbols` symbols in all, on huge pages
    /// where Linux allows (`util/huge_pages.rs`): the merge loop visits the
    /// words in no order, and on SuperBPE's lines (600 MB of words at 1 GB of
    /// text) each visit on 4 KiB pages was a TLB miss too.
    pub fn with_capacity(words: usize, symbols: usize) -> Self {
        Self {
            arena: crate::util::huge_pages::vec_with_capacity(words + symbols),
            starts: crate::util::huge_pages::vec_with_capacity(words),
            live: 0,
        }
    }

    /// Add a word of single bytes (symbol id = byte value); returns its index.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> u32 {
        self.push(bytes.len(), bytes.iter().map(|&b| b as u32))
    }

    /// Add a word of symbols; returns its index.
    pub fn push_symbols(&mut self, symbols: &[u32]) -> u32 {
        self.push(symbols.len(), symbols.iter().copied())
    }

    fn push(&mut self, len: usize, symbols: impl Iterator<Item = u32>) -> u32 {
        let index = self.starts.len() as u32;
        self.starts.push(self.arena.len());
        self.arena.push(len as u32);
        self.arena.extend(symbols);
        self.live += 1 + len;
        index
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn symbols(&self, word: u32) -> &[u32] {
        let start = self.starts[word as usize];
        let len = self.arena[start] as usize;
        &self.arena[start + 1..start + 1 + len]
    }

    pub fn pairs(&self, word: u32) -> impl Iterator<Item = Pair> + '_ {
        self.symbols(word).windows(2).map(|w| (w[0], w[1]))
    }

    /// The words, to merge from several threads at once (`SharedWords`).
    pub fn shared(&mut self) -> SharedWords<'_> {
        SharedWords { arena: self.arena.as_mut_ptr(), starts: &self.starts, words: PhantomData }
    }

    /// Count `removed` symbols that merges through `shared` took out.
    pub fn forget_removed(&mut self, removed: usize) {
        self.live -= removed;
    }

    /// Merge `pair` into `new` inside one word (see `merge_symbols`).
    #[cfg(test)]
    pub fn merge(&mut self, word: u32, pair: Pair, new: u32, changed: impl FnMut(Pair, i64)) {
        // SAFETY: `&mut self`: no other thread merges any word.
        let removed = unsafe { self.shared().merge(word, pair, new, changed) };
        self.forget_removed(removed);
    }

    /// Rewrite the arena without the merges' garbage when that is most of
    /// it (the words keep their indices). Between merges: a rewrite costs the
    /// live words once, and the next needs them halved again.
    pub fn compact_if_sparse(&mut self) {
        if self.arena.len() <= MIN_COMPACT || self.arena.len() <= 2 * self.live {
            return;
        }
        let mut arena = Vec::with_capacity(self.live);
        for start in &mut self.starts {
            let len = self.arena[*start] as usize;
            let word = &self.arena[*start..*start + 1 + len];
            *start = arena.len();
            arena.extend_from_slice(word);
        }
        self.arena = arena;
    }
}

/// The words of a `WordStore`, for threads that merge pairs each in its own
/// words (a merge of a pair held by many words, `holder_walk.rs`): a word
/// is its own span of the arena, so merges in distinct words never touch
/// the same memory.
pub struct SharedWords<'a> {
    arena: *mut u32,
    starts: &'a [usize],
    words: PhantomData<&'a mut [u32]>,
}

// SAFETY: the pointer is to the arena the `&mut WordStore` behind `shared`
// lends; `merge`'s contract keeps two threads off one word.
unsafe impl Sync for SharedWords<'_> {}

impl SharedWords<'_> {
    /// `WordStore::merge`; returns how many symbols the word lost (to pass
    /// to `forget_removed`).
    ///
    /// # Safety
    /// No other thread may merge `word` at the same time.
    pub unsafe fn merge(&self, word: u32, pair: Pair, new: u32, changed: impl FnMut(Pair, i64)) -> usize {
        let start = self.starts[word as usize];
        // SAFETY: `start` is where the word lies in the arena, its length then
        // its symbols, all within the arena; no other thread touches them.
        let (length, symbols) = unsafe {
            let length = &mut *self.arena.add(start);
            let len = *length as usize;
            (length, std::slice::from_raw_parts_mut(self.arena.add(start + 1), len))
        };
        let len = symbols.len();
        let new_len = merge_symbols(symbols, pair, new, changed);
        *length = new_len as u32;
        len - new_len
    }

    #[inline]
    pub fn prefetch_start(&self, word: u32) {
        if let Some(start) = self.starts.get(word as usize) {
            prefetch(start);
        }
    }

    /// Hint that `word`'s length and symbols will be read soon (its start
    /// should be in cache by then: see `prefetch_start`).
    #[inline]
    pub fn prefetch_symbols(&self, word: u32) {
        if let Some(&start) = self.starts.get(word as usize) {
            // A hint only: the address is computed, never read.
            prefetch_address::<L1, u32>(self.arena.wrapping_add(start));
        }
    }
}

/// Replace each occurrence of `pair` in `symbols`, left to right and
/// non-overlapping, by `new`, reporting every pair count change as
/// `(pair, ±1)`; returns the new length (the tail is left as garbage).
///
/// Only the neighbours of each occurrence change: `(prev, left)` and
/// `(right, next)` go, `(prev, new)` and `(new, next)` come. When two
/// occurrences are back to back, `prev` is the `new` just written, so the
/// `(new, left)` added by the first is taken back by the second.
pub fn merge_symbols(symbols: &mut [u32], pair: Pair, new: u32, mut changed: impl FnMut(Pair, i64)) -> usize {
    let (left, right) = pair;
    let len = symbols.len();
    let (mut read, mut write) = (0, 0);
    while read < len {
        if read + 1 < len && symbols[read] == left && symbols[read + 1] == right {
            if write > 0 {
                let prev = symbols[write - 1];
                changed((prev, left), -1);
                changed((prev, new), 1);
            }
            changed(pair, -1);
            if read + 2 < len {
                let next = symbols[read + 2];
                changed((right, next), -1);
                changed((new, next), 1);
            }
            symbols[write] = new;
            read += 2;
        } else {
            symbols[write] = symbols[read];
            read += 1;
        }
        write += 1;
    }
    write
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn merged(bytes: &[u8], pair: Pair, new: u32) -> (Vec<u32>, BTreeMap<Pair, i64>) {
        let mut store = WordStore::default();
        store.push_bytes(b"zz"); // a neighbour in the arena that must not change
        let word = store.push_bytes(bytes);
        let mut changes = BTreeMap::new();
        store.merge(word, pair, new, |p, d| *changes.entry(p).or_insert(0) += d);
        changes.retain(|_, d| *d != 0);
        assert_eq!(store.symbols(0), [b'z' as u32, b'z' as u32]);
        (store.symbols(word).to_vec(), changes)
    }

    #[test]
    fn compaction_drops_the_garbage_and_keeps_every_word() {
        let mut store = WordStore::default();
        let long = vec![b'a'; 3 * MIN_COMPACT];
        for word in [&b"ab"[..], &long, b"ba"] {
            store.push_bytes(word);
        }
        store.compact_if_sparse(); // no garbage yet
        assert_eq!(store.arena.len(), 3 * MIN_COMPACT + 7);
        store.merge(1, (A, A), X, |_, _| {});
        store.compact_if_sparse(); // half the long word is garbage: not yet most of the arena
        assert_eq!(store.arena.len(), 3 * MIN_COMPACT + 7);
        store.merge(1, (X, X), X + 1, |_, _| {});
        store.compact_if_sparse();
        assert_eq!(store.arena.len(), 3 * MIN_COMPACT / 4 + 7);
        assert_eq!(store.live, store.arena.len());
        assert_eq!(store.symbols(0), [A, B]);
        assert_eq!(store.symbols(1), vec![X + 1; 3 * MIN_COMPACT / 4]);
        assert_eq!(store.symbols(2), [B, A]);
    }

    const A: u32 = b'a' as u32;
    const B: u32 = b'b' as u32;
    const X: u32 = 256; // the new symbol

    #[test]
    fn non_overlapping_left_to_right() {
        // "aaa" with (a, a): "aa a", not "a aa". Pairs before: aa, aa. After: Xa.
        let (symbols, changes) = merged(b"aaa", (A, A), X);
        assert_eq!(symbols, [X, A]);
        assert_eq!(changes, BTreeMap::from([((A, A), -2), ((X, A), 1)]));
    }

    #[test]
    fn back_to_back_occurrences() {
        // "abab" with (a, b): "X X". Pairs before: ab, ba, ab. After: XX.
        let (symbols, changes) = merged(b"abab", (A, B), X);
        assert_eq!(symbols, [X, X]);
        assert_eq!(changes, BTreeMap::from([((A, B), -2), ((B, A), -1), ((X, X), 1)]));
    }

    #[test]
    fn untouched_word_reports_nothing() {
        let (symbols, changes) = merged(b"ba", (A, B), X);
        assert_eq!(symbols, [B, A]);
        assert!(changes.is_empty());
    }
}
