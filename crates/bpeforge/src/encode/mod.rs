//! Encoding text to ids and ids back to bytes.
//!
//! `encode`: split on special tokens (longest first; for the presets found
//! just ahead of the scanner, `document_end.rs`), pre-tokenize each document
//! with the pattern's scanner, then merge inside each pre-token
//! (`bpe::encode_piece`). Tables are built once in `Encoder::new`; an `Encoder`
//! is immutable afterwards but for its shared piece cache, so one instance
//! serves any number of threads.
//!
//! Two levels of cache (`cache/`): each call (or worker) has a state with its
//! own tables, which answer repeats without synchronisation and are kept for
//! the next call (`pooled_state`); on a miss there the encoder's shared cache
//! is asked, and only then are the merges applied (and both levels filled; the
//! shared one only once threads meet, see `StatePool`).
//!
//! Here the `Encoder`, its tables and single calls; `pieces.rs` the lookup path
//! of a document's pieces; `piece_batch.rs` a batch of pieces packed, hashed and
//! prefetched ahead of its lookups; `piece_ends.rs` pieces a caller cut
//! (a `tokenizer.json` pipeline's), and `piece_run.rs` and `run_batch.rs`
//! those of many short texts looked up together; `parts.rs` long pieces cut where no merge
//! joins; `batch.rs` the many-text API; `allowed_specials.rs` tiktoken's
//! special-token policy; `state.rs` what a thread keeps between calls;
//! `files.rs` whole files in parallel; `jsonl_records.rs` JSON Lines records
//! a block at a time.

mod affinity;
mod allowed_specials;
mod batch;
mod batch_text;
pub(crate) mod cache;
mod document_end;
pub(crate) mod files;
mod flat_batch;
pub(crate) mod jsonl_records;
mod parts;
mod piece_batch;
mod piece_ends;
mod piece_run;
mod pieces;
mod run_batch;
mod state;
mod unmerged_tokens;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

pub use batch_text::BatchText;
pub use piece_run::PieceRun;
pub use state::{EncodeState, PooledState, StatePool};
use unmerged_tokens::UnmergedTokens;

use crate::bpe::vocab::Vocabulary;
use crate::encode::cache::seeds::{vocabulary_seeds, SEEDS_MAX};
use crate::encode::cache::shared::{CacheInfo, SharedCache, DEFAULT_CACHE_BYTES};
use crate::error::Error;
use crate::pretokenize::cuts::find_cut;
use crate::pretokenize::pattern::Pattern;
use crate::pretokenize::specials::SpecialSplitter;

#[derive(Debug, Clone)]
pub struct Encoder {
    vocab: Vocabulary,
    specials: SpecialSplitter,
    special_ids: Vec<u32>,
    pattern: Pattern,
    cache: CacheHandle,
    states: StatePool,
    /// The vocabulary's seeds (`seeds.rs`), chosen when first planted.
    seeds: OnceLock<Vec<u32>>,
    /// Set once `seed_tables` was called: `set_cache_bytes` plants them again.
    seeding: OnceLock<()>,
    /// With HF's `ignore_merges`, the tokens the merges do not make (`unmerged_tokens.rs`).
    unmerged: Option<Box<UnmergedTokens>>,
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
        Ok(Self {
            vocab,
            specials,
            special_ids,
            pattern,
            cache,
            states: StatePool::default(),
            seeds: OnceLock::new(),
            seeding: OnceLock::new(),
            unmerged: None,
        })
    }

    /// Replace the shared cache by an empty one of at most `bytes` (0: none;
    /// see `cache::SharedCache::new`). Calls already running finish with the
    /// old one; the counters start again from zero.
    pub fn set_cache_bytes(&self, bytes: usize) {
        let mut current = self.cache.current.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        *current = Arc::new(SharedCache::new(bytes));
        self.cache.generation.fetch_add(1, Ordering::Release);
        self.states.lock().clear();
        drop(current);
        if self.seeding.get().is_some() {
            self.seed_tables();
        }
    }

    /// Start the next call's table with the vocabulary's tokens
    /// (`seeds.rs`), and do so again whenever `set_cache_bytes` empties the
    /// states: a first call of English text then merges a third fewer
    /// pieces. The seeds are found once (a BPE of each candidate token: 12
    /// ms for GPT-2, 62 ms for o200k, on one core), so call this when the
    /// encoder is built, off the clock of any call. Nothing is planted while
    /// the cache is off (no state is kept then).
    pub fn seed_tables(&self) {
        let _ = self.seeding.set(());
        // With the cache off (`bpeforge encode` of text files, whose workers
        // keep tables of their own) neither the seeds nor a table: choosing
        // GPT-2's seeds alone took 12 ms of the command's start.
        if self.cache.get().is_enabled() {
            let mut state = self.pooled_state();
            state.wants_seeds = false;
            // Off the clock: the whole bound now, not 8 MiB then a doubling in the first call.
            state.table.reserve_all();
            state.plant(&self.vocab, self.seeds());
        }
    }

    /// The tokens planted in the tables (`seeds.rs`), chosen once.
    fn seeds(&self) -> &[u32] {
        self.seeds.get_or_init(|| vocabulary_seeds(&self.vocab, SEEDS_MAX))
    }

    /// Entries, bytes, budget, hits and misses of the shared cache, and the
    /// tables of the threads' states kept between calls.
    pub fn cache_info(&self) -> CacheInfo {
        let mut info = self.cache.get().info();
        let kept = self.states.lock();
        info.thread_tables = kept.len();
        info.thread_table_bytes = kept.iter().map(|state| state.table.bytes() + state.long.bytes()).sum();
        info.seeds = kept.iter().map(|state| state.table.seeds()).sum();
        info
    }

    /// A state for one call (or one worker of a batch), warm from an earlier
    /// call when one is kept: its own table then answers the text's common
    /// pieces without asking the shared cache. It goes back when dropped,
    /// unless the cache is off (then every call starts cold, as asked).
    pub fn pooled_state(&self) -> PooledState<'_> {
        let cached = self.cache.get().is_enabled();
        self.states.take(|| EncodeState { wants_seeds: cached, ..EncodeState::default() }, cached)
    }

    /// Plant the seeds in a state the pool made while the cache was on, once,
    /// on the thread that first encodes with it: every worker of a batch then
    /// starts with them, not only the first state (`seed_tables`).
    fn plant_if_wanted(&self, state: &mut EncodeState) {
        let seeding = self.seeding.get().is_some();
        if std::mem::take(&mut state.wants_seeds) && seeding && self.cache.get().is_enabled() {
            state.plant(&self.vocab, self.seeds());
        }
    }

    /// A state for streaming (`EncodeState::lookup_only`), which reads the
    /// shared cache and adds nothing: the states kept in the pool add what
    /// they merged first, and every state adds from then on (see
    /// `StatePool::crowded`), so that streaming after a warm call finds the
    /// pieces that call merged.
    pub fn lookup_only_state(&self) -> EncodeState {
        self.share_from_now_on();
        EncodeState::lookup_only()
    }

    /// Have the states fill the shared cache from now on (see
    /// `StatePool::crowded`), the kept ones first with what they hold.
    fn share_from_now_on(&self) {
        self.states.crowd();
        let generation = self.cache.generation.load(Ordering::Acquire);
        for kept in self.states.lock().iter_mut() {
            if kept.shared.as_ref().is_some_and(|(seen, _)| *seen == generation) {
                kept.publish_table();
            }
        }
    }

    pub fn vocab(&self) -> &Vocabulary {
        &self.vocab
    }

    pub fn special_tokens(&self) -> &[String] {
        self.specials.tokens()
    }

    /// The id of each special token, in the order of `special_tokens`.
    pub fn special_ids(&self) -> &[u32] {
        &self.special_ids
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
        let mut out = ids_buffer(text.len());
        let mut state = self.pooled_state();
        state.expect_text(text.len());
        self.encode_with(text, &mut state, &mut out)?;
        Ok(out)
    }

    /// Encode with buffers and a piece cache kept from earlier calls: a worker
    /// that encodes many texts (a batch, the chunks of a file) keeps its cache
    /// warm instead of starting cold on every text.
    pub fn encode_with(&self, text: &str, state: &mut EncodeState, out: &mut Vec<u32>) -> Result<(), Error> {
        self.with_state(state, |state| self.encode_pieces(text, state, out))
    }

    /// Run one call's encoding with `state`: attached to the current shared
    /// cache before, its counters handed over after.
    fn with_state(
        &self,
        state: &mut EncodeState,
        encode: impl FnOnce(&mut EncodeState) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.plant_if_wanted(state);
        self.attach(state);
        state.publish = !state.lookup_only && (self.states.crowded() || !state.pooled);
        if state.publish {
            state.publish_table();
        }
        // Little to find there when everything in it came from this state
        // and this state's table has dropped few pieces: then nearly every
        // miss of the table missed there too, a cache miss of its own (on a
        // first call of 1 MB stretches, from the second on, 4% of the call).
        state.skip_shared_lookups = state
            .shared
            .as_ref()
            .is_some_and(|(_, shared)| shared.added() == state.added_here && state.table.dropped_few());
        let result = encode(state);
        state.flush_new_entries();
        if !state.pooled {
            // A pooled state's counts are added when it is given back, once a
            // call (a worker): added here, once a text, two workers' adds to
            // the same counters moved their cache line between the cores
            // 6,000 times a batch of 20news.
            state.flush_counts();
        }
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
        state.added_here = 0;
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

/// An empty buffer for the ids of `text_bytes` bytes of text: room for one
/// id per two bytes (English needs one per 3.7; a buffer grown mid-call was
/// copied and its new pages faulted in, a fifth of warm encoding in `perf`),
/// and at least the room the first batch of pieces reserves (on a sentence,
/// growing to it was a tenth of the call), one given back by an earlier
/// call's owner if one has the room (`util/recycled.rs`), else new, on huge
/// pages when large (`util/huge_pages.rs`). Capacity never written costs no
/// memory.
///
/// A buffer of `RECYCLED_FROM_IDS` ids or more gets at least the room the
/// recycled store keeps (`recycled::MIN_BYTES`), so that it comes back too:
/// a warm batch of 1 MB of lines (2 MiB of room) was otherwise shrunk to its
/// ids when handed to NumPy and freed, which left glibc's mmap threshold below
/// the next call's request, so every call mapped a fresh buffer and faulted
/// in its 450 pages (a sixth of a warm call of a `tokenizer.json` pipeline).
pub fn ids_buffer(text_bytes: usize) -> Vec<u32> {
    let first_batch = pieces::hits_room(text_bytes.min(crate::pretokenize::scan::BATCH_PIECES));
    let mut capacity = (text_bytes / 2 + 16).max(first_batch);
    if capacity >= RECYCLED_FROM_IDS {
        capacity = capacity.max(crate::util::recycled::MIN_BYTES / size_of::<u32>());
    }
    crate::util::recycled::take(capacity).unwrap_or_else(|| crate::util::huge_pages::vec_with_capacity(capacity))
}

/// Buffers of this many ids (1 MiB: calls on 512 KB of text or more) are
/// given the recycled store's room (`ids_buffer`); a smaller one stays in
/// the allocator's heap, where a freed buffer is reused with its pages.
const RECYCLED_FROM_IDS: usize = 256 << 10;

#[cfg(test)]
mod tests;
