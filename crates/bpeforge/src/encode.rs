//! Encoding text to ids and ids back to bytes.
//!
//! `encode`: split on special tokens (longest first), pre-tokenize each piece
//! of text with the GPT-2 scanner, then apply merges inside each pre-token
//! (`bpe.rs`). Tables are built once in `Encoder::new`; an `Encoder` is
//! immutable afterwards but for its piece cache (`cache.rs`), which is shared
//! by every thread and call, so one instance serves any number of threads.
//!
//! Two levels of cache: each call (or worker) keeps its own small table, which
//! answers repeats within the call without any synchronisation; on a miss
//! there, the encoder's shared cache is asked, and only then are the merges
//! applied (and both tables filled).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::bpe::{encode_piece, Scratch};
use crate::cache::{CacheInfo, SharedCache, DEFAULT_CACHE_BYTES};
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
    cache: CacheHandle,
}

/// The current shared cache; `set_cache_bytes` swaps in a new one and bumps
/// the generation, which each `EncodeState` checks once per call.
struct CacheHandle {
    current: RwLock<Arc<SharedCache>>,
    generation: AtomicU64,
}

impl CacheHandle {
    fn new(bytes: usize) -> Self {
        Self { current: RwLock::new(Arc::new(SharedCache::new(bytes))), generation: AtomicU64::new(0) }
    }

    fn get(&self) -> Arc<SharedCache> {
        self.current.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }
}

impl std::fmt::Debug for CacheHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// A clone is another tokenizer: it gets an empty cache of the same budget.
impl Clone for CacheHandle {
    fn clone(&self) -> Self {
        Self::new(self.get().info().capacity)
    }
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
        let cache = CacheHandle::new(DEFAULT_CACHE_BYTES);
        Ok(Self { vocab, specials, special_ids, pattern, cache })
    }

    /// Replace the shared cache by an empty one of at most `bytes` (0: none;
    /// see `cache::SharedCache::new`). Calls already running finish with the
    /// old one; the counters start again from zero.
    pub fn set_cache_bytes(&self, bytes: usize) {
        let mut current = self.cache.current.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        *current = Arc::new(SharedCache::new(bytes));
        self.cache.generation.fetch_add(1, Ordering::Release);
    }

    /// Entries, bytes, budget, hits and misses of the shared cache.
    pub fn cache_info(&self) -> CacheInfo {
        self.cache.get().info()
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
        self.attach(state);
        let result = self.encode_pieces(text, state, out);
        state.flush_counts();
        result
    }

    /// Point `state` at the current shared cache, unless it already is (or is private).
    fn attach(&self, state: &mut EncodeState) {
        if state.private {
            return;
        }
        let generation = self.cache.generation.load(Ordering::Acquire);
        if state.shared.as_ref().is_some_and(|(seen, _)| *seen == generation) {
            return;
        }
        state.flush_counts();
        let shared = self.cache.get();
        state.shared = Some((generation, shared));
    }

    fn encode_pieces(&self, text: &str, state: &mut EncodeState, out: &mut Vec<u32>) -> Result<(), Error> {
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
        let shared = state.shared.as_ref().map(|(_, shared)| &**shared).filter(|shared| shared.is_enabled());
        if let Some(shared) = shared {
            if shared.get(key, out) {
                state.hits += 1;
                state.cache.insert(key, &out[start..]);
                return;
            }
            state.misses += 1;
        }
        encode_piece(bytes, &self.vocab, &mut state.scratch, out);
        if let Some(shared) = shared.filter(|_| !state.lookup_only) {
            shared.insert(key, &out[start..]);
        }
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
        self.encode_batch_from(texts, EncodeState::default, convert)
    }

    /// `encode_batch` with each worker's state made by `new_state` (a private
    /// one for file encoding, see `EncodeState::private`).
    pub fn encode_batch_from<T, R>(
        &self,
        texts: &[T],
        new_state: impl Fn() -> EncodeState + Sync + Send,
        convert: impl Fn(Vec<u32>) -> R + Sync + Send,
    ) -> Result<Vec<R>, Error>
    where
        T: AsRef<str> + Sync,
        R: Send,
    {
        texts
            .par_iter()
            .map_init(new_state, |state, text| {
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

/// What encoding keeps between calls on one thread: buffers, the thread's own
/// cache and a handle on the encoder's shared one. Ids depend only on the
/// vocabulary, so a state may serve any texts of the same `Encoder` (not of
/// another).
#[derive(Default)]
pub struct EncodeState {
    scratch: Scratch,
    cache: PieceCache,
    /// The shared cache and the generation it was taken at.
    shared: Option<(u64, Arc<SharedCache>)>,
    /// Shared-cache hits and misses not yet added to its counters.
    hits: u64,
    misses: u64,
    /// Read the shared cache but add nothing to it.
    lookup_only: bool,
    /// Never use the shared cache: the thread's own table only.
    private: bool,
}

impl EncodeState {
    /// A state that uses what the shared cache holds but never adds to it,
    /// so that encoding allocates nothing that outlives the call: for
    /// streaming in flat memory (CS336 allows `encode_iterable` a 1 MB rise,
    /// less than the distinct pieces of a few MB of text take).
    pub fn lookup_only() -> Self {
        Self { lookup_only: true, ..Self::default() }
    }

    /// A state that never touches the shared cache. File encoding uses it:
    /// measured on 200 MB of Gutenberg, the shared cache made `bpeforge
    /// encode` 3% slower on 1 thread and 22% on 2 (every miss takes a shard
    /// lock and every hit reads a line another core may be writing), and
    /// added its 50 MB to the peak RSS. Each worker's own table, warm over its
    /// share of a batch (megabytes of text), answers most pieces anyway.
    pub fn private() -> Self {
        Self { private: true, ..Self::default() }
    }

    fn flush_counts(&mut self) {
        if let Some((_, shared)) = &self.shared {
            shared.record(self.hits, self.misses);
        }
        (self.hits, self.misses) = (0, 0);
    }
}

/// Ids of the short pre-tokens already encoded by this state. Text repeats its
/// words, so most pre-tokens are looked up instead of merged: exact, since a
/// pre-token's merges do not depend on its neighbours (unlike tiktoken's
/// shortcut of emitting a whole pre-token found in the vocabulary, which
/// can differ from merge-rank order). Bounded, so memory stays flat.
#[derive(Default)]
struct PieceCache {
    /// Packed pre-token -> its ids, inline when there are at most
    /// `INLINE_IDS` (almost always), else where they start in `ids`. Inline,
    /// a hit costs one memory access instead of two dependent ones (the
    /// entry is 32 bytes either way: the key's alignment pads it).
    map: FxHashMap<u128, CachedIds>,
    ids: Vec<u32>,
}

const INLINE_IDS: usize = 3;

#[derive(Clone, Copy)]
struct CachedIds {
    len: u32,
    /// The ids, or `[start in PieceCache::ids, 0, 0]` when `len > INLINE_IDS`.
    ids: [u32; INLINE_IDS],
}

const CACHE_ENTRIES_MAX: usize = 1 << 16;

impl PieceCache {
    #[inline]
    fn get(&self, key: u128) -> Option<&[u32]> {
        let cached = self.map.get(&key)?;
        let len = cached.len as usize;
        Some(if len <= INLINE_IDS {
            &cached.ids[..len]
        } else {
            let start = cached.ids[0] as usize;
            &self.ids[start..start + len]
        })
    }

    fn insert(&mut self, key: u128, ids: &[u32]) {
        if self.map.len() < CACHE_ENTRIES_MAX {
            let mut cached = CachedIds { len: ids.len() as u32, ids: [0; INLINE_IDS] };
            if ids.len() <= INLINE_IDS {
                cached.ids[..ids.len()].copy_from_slice(ids);
            } else {
                cached.ids[0] = self.ids.len() as u32;
                self.ids.extend_from_slice(ids);
            }
            self.map.insert(key, cached);
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
    fn same_ids_for_any_cache_size_and_the_cache_is_shared() {
        let enc = encoder();
        let text: String = (0..3000).map(|i| format!(" t{} tt{}<|e|>a t\u{e9}{} ", i % 700, i % 13, i % 997)).collect();
        enc.set_cache_bytes(0);
        let expected = enc.encode(&text).unwrap();
        assert_eq!(enc.cache_info(), CacheInfo::default());
        for bytes in [256, 1024, 64 << 10, DEFAULT_CACHE_BYTES] {
            enc.set_cache_bytes(bytes);
            assert_eq!(enc.encode(&text).unwrap(), expected, "cold, {bytes} bytes");
            assert_eq!(enc.encode(&text).unwrap(), expected, "warm, {bytes} bytes");
            let texts: Vec<&str> = text.split_inclusive('\u{e9}').collect();
            let batch: Vec<u32> = enc.encode_batch(&texts, |ids| ids).unwrap().concat();
            assert_eq!(batch, expected, "batch, {bytes} bytes");
            let info = enc.cache_info();
            assert!(info.bytes <= bytes && info.capacity == bytes, "{info:?}");
        }
        // Another thread finds what this one cached.
        enc.set_cache_bytes(1 << 20);
        enc.encode(&text).unwrap();
        let warmed = enc.cache_info();
        assert!(warmed.misses > 0 && warmed.entries > 0, "{warmed:?}");
        std::thread::scope(|scope| scope.spawn(|| assert_eq!(enc.encode(&text).unwrap(), expected)).join().unwrap());
        let after = enc.cache_info();
        assert_eq!(after.misses, warmed.misses, "{after:?}");
        assert!(after.hits > warmed.hits, "{after:?}");
        // A lookup-only state reads the cache and adds nothing.
        enc.set_cache_bytes(1 << 20);
        let mut ids = Vec::new();
        enc.encode_with(&text, &mut EncodeState::lookup_only(), &mut ids).unwrap();
        assert_eq!(ids, expected);
        assert_eq!(enc.cache_info().entries, 0);
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
