//! Encoding text to ids and ids back to bytes.
//!
//! `encode`: split on special tokens (longest first; for the presets, found
//! just ahead of the scanner, `document_end.rs`), pre-tokenize each document
//! with the pattern's scanner, then apply merges inside each pre-token
//! (`bpe.rs`). Tables are built once in `Encoder::new`; an `Encoder` is
//! immutable afterwards but for its piece cache (`cache.rs`), which is shared
//! by every thread and call, so one instance serves any number of threads.
//!
//! Two levels of cache: each call (or worker) has a state with its own tables
//! (`piece_table.rs`, `long_pieces.rs`), which answer repeats without any
//! synchronisation and are kept for the next call (`pooled_state`); on a miss
//! there, the encoder's shared cache is asked, and only then are the merges
//! applied (and both levels filled; the shared one only once threads meet,
//! see `StatePool`).
//!
//! Here the `Encoder` and its calls; in `state.rs` what a thread keeps
//! between calls and the pool that lends it; in `batch.rs` a batch of
//! pieces packed, hashed and prefetched ahead of its lookups; in
//! `document_end.rs` the special tokens found just ahead of the scanner.

mod affinity;
mod batch;
mod batch_text;
pub(crate) mod cache;
mod document_end;
pub(crate) mod files;
mod flat_batch;
mod parts;
mod state;

use std::ops::DerefMut;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

pub use batch_text::BatchText;
pub use state::{EncodeState, PooledState, StatePool};

use crate::bpe::encode_piece;
use crate::bpe::vocab::Vocabulary;
use crate::encode::cache::long_pieces::LONG_PIECE_MAX;
use crate::encode::cache::piece_table::INLINE_IDS;
use crate::encode::cache::seeds::{vocabulary_seeds, SEEDS_MAX};
use crate::encode::cache::shared::{CacheInfo, NewEntry, SharedCache, DEFAULT_CACHE_BYTES};
use crate::error::Error;
use crate::pretokenize::cuts::find_cut;
use crate::pretokenize::pattern::Pattern;
use crate::pretokenize::scan::PieceEnds;
use crate::pretokenize::specials::{Piece, SpecialSplitter};
use crate::util::packed_key::{hash_packed, pack};
use crate::util::prefetch::L1;
use affinity::run_with_affinity;
use batch::{PieceBatch, BATCH_SLOTS, L1_AHEAD, LONG_ENTRIES_AHEAD, UNPACKED};
use document_end::{DocumentEnd, AHEAD};
use flat_batch::{append_in_text_order, WorkerIds};
use parts::Part;
use rayon::prelude::*;
use state::NEW_ENTRIES_MAX;

/// Room for ids beyond `INLINE_IDS` a piece that a run of hits may write
/// (`encode_hits`): a piece whose ids overflow its entry (0.8% of English
/// pieces, 21 K a call on 10 MB of Gutenberg) is copied there, not sent to
/// the slow path, until the run has used this much (then it ends the run).
/// In the warm path they made GPT-2 on 20news and multilingual text 4-7%
/// faster, on Gutenberg 2% (`examples/encode_file`).
const OVERFLOW_ROOM: usize = 256;

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
        self.seeds.get_or_init(|| vocabulary_seeds(&self.vocab, &self.pattern, SEEDS_MAX))
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

    /// The documents of `text` and the special tokens between them: each
    /// document's end found as it is scanned (`document_end.rs`) where the
    /// pattern is a preset and the specials begin with few distinct bytes,
    /// else by splitting the text first.
    fn encode_pieces(&self, text: &str, state: &mut EncodeState, out: &mut Vec<u32>) -> Result<(), Error> {
        match self.pattern.batch_scanner().filter(|_| self.specials.has_few_first_bytes()) {
            Some(scan) => {
                self.encode_documents_scanning_ahead(text.as_bytes(), scan, AHEAD, state, out);
                Ok(())
            }
            None => self.encode_split_first(text, state, out),
        }
    }

    /// `encode_pieces` by `SpecialSplitter::split`: the whole text searched
    /// for specials before any of it is scanned.
    fn encode_split_first(&self, text: &str, state: &mut EncodeState, out: &mut Vec<u32>) -> Result<(), Error> {
        for piece in self.specials.split(text) {
            match piece {
                Piece::Special(index) => out.push(self.special_ids[index]),
                Piece::Text(document) => self.encode_document(document, state, out)?,
            }
        }
        Ok(())
    }

    /// Encode the pieces of one batch in order (`ends` as
    /// `Pattern::for_each_batch` gives them, the first piece starting at
    /// `from`; `batch` their keys): runs of pieces the thread's table holds
    /// (`encode_hits`), and each piece between them by `encode_pretoken`
    /// or, too long to pack, `encode_long_pretoken`.
    fn encode_batch_of_pieces(
        &self,
        document: &[u8],
        from: usize,
        ends: &[usize],
        batch: &mut PieceBatch,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) {
        let (mut i, mut long_pieces) = (0, 0);
        if batch.long_hashed {
            (0..LONG_ENTRIES_AHEAD).for_each(|nth| batch.prefetch_long_entry(nth, &state.long));
        }
        while i < ends.len() {
            i = self.encode_hits(batch, ends.len(), i, state, out);
            if i < ends.len() {
                let start = if i == 0 { from } else { ends[i - 1] };
                let piece = &document[start..ends[i]];
                if batch.keys[i] == UNPACKED {
                    batch.prefetch_long_entry(long_pieces + LONG_ENTRIES_AHEAD, &state.long);
                    long_pieces += 1;
                    self.encode_long_pretoken(piece, batch.long_hash(i, piece), state, out);
                } else {
                    let key = batch.keys[i];
                    self.encode_pretoken(piece, key, hash_packed(key), state, out);
                }
                i += 1;
            }
        }
        state.long_pieces_last_batch = long_pieces;
    }

    /// The warm path: from piece `from` on (of `pieces` in `batch`), as long as
    /// the thread's table holds each piece's ids, write them and go on; the
    /// index of the first piece it does not hold (or `pieces`). Each hit
    /// copies its whole table entry (`INLINE_IDS` ids and the length) into
    /// room reserved for the rest of the batch (not zeroed: nothing is read
    /// there before it is written) and keeps the ids it has, so a piece
    /// costs no capacity check and no
    /// branch on its length. Until the ninth session the room was made 32
    /// pieces at a time, and the piece after each 32 took the slow path.
    /// A piece with more ids than its entry holds takes them from the
    /// table's overflow, within `OVERFLOW_ROOM`.
    #[inline(always)]
    fn encode_hits(
        &self,
        batch: &mut PieceBatch,
        pieces: usize,
        from: usize,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) -> usize {
        let table = state.table.probe();
        batch.refresh_buckets(table, from, pieces);
        // Each hit copies a whole entry: `INLINE_IDS` ids and its length.
        out.reserve((pieces - from) * INLINE_IDS + 1 + OVERFLOW_ROOM);
        let room = out.spare_capacity_mut().as_mut_ptr();
        let (mut i, mut written, mut overflow_room) = (from, 0, OVERFLOW_ROOM);
        while i < pieces {
            // Past `pieces` this prefetches a stale hash: harmless, and no branch.
            table.prefetch_at::<L1>(batch.buckets[(i + L1_AHEAD) % BATCH_SLOTS]);
            // A piece too long to pack (`UNPACKED`) is never found: it ends the run too.
            let key = batch.keys[i % BATCH_SLOTS];
            let bucket = batch.buckets[i % BATCH_SLOTS];
            // SAFETY: `refresh_buckets` made the buckets of pieces `from..pieces` this table's.
            if let Some(entry) = unsafe { table.get_inline_at(key, bucket) } {
                // SAFETY: `written <= (i - from) * INLINE_IDS + OVERFLOW_ROOM - overflow_room`, so
                // these `INLINE_IDS + 1` slots are within the room reserved above.
                unsafe {
                    std::ptr::copy_nonoverlapping(entry.words(), room.add(written).cast::<u32>(), INLINE_IDS + 1)
                };
                written += entry.id_count();
            } else {
                // SAFETY: as above.
                let ids = unsafe { table.get_overflowed_at(key, bucket) };
                let Some(ids) = ids.filter(|ids| ids.len() - INLINE_IDS <= overflow_room) else { break };
                overflow_room -= ids.len() - INLINE_IDS;
                // SAFETY: the room of this piece (`INLINE_IDS`) and `ids.len() - INLINE_IDS` of
                // `overflow_room`, within the room reserved above.
                unsafe { std::ptr::copy_nonoverlapping(ids.as_ptr(), room.add(written).cast::<u32>(), ids.len()) };
                written += ids.len();
            }
            i += 1;
        }
        // SAFETY: the first `written` slots of the spare capacity were
        // written just above (each hit wrote `INLINE_IDS + 1` from its start
        // and kept `len <= INLINE_IDS` of them).
        unsafe { out.set_len(out.len() + written) };
        state.hits += (i - from) as u64;
        i
    }

    /// `key` is the packed pre-token and `hash` its `hash_packed`.
    #[inline]
    fn encode_pretoken(&self, bytes: &[u8], key: u128, hash: u64, state: &mut EncodeState, out: &mut Vec<u32>) {
        if bytes.len() == 1 {
            let id = self.vocab.byte_id(bytes[0]);
            out.push(id);
            // Kept in the table too, so that the warm path takes it.
            state.table.insert(key, hash, &[id]);
            return;
        }
        if state.table.get(key, hash, out) {
            state.hits += 1;
            return;
        }
        let start = out.len();
        let shared = state.shared.as_ref().map(|(_, shared)| &**shared).filter(|shared| shared.is_enabled());
        if let Some(shared) = shared.filter(|_| !state.skip_shared_lookups) {
            if shared.get(key, hash, out) || shared.get_long(bytes, hash, out) {
                state.hits += 1;
                state.table.insert(key, hash, &out[start..]);
                return;
            }
        }
        state.misses += 1;
        encode_piece(bytes, &self.vocab, &mut state.scratch, out);
        if let Some(shared) = shared.filter(|_| state.publish) {
            // Added in groups (`SharedCache::insert_all`), at the end of the
            // call or when this many wait; more ids than a slot holds go to
            // the second level at once.
            match NewEntry::new(key, hash, &out[start..]) {
                Some(entry) => state.new_entries.push(entry),
                None => state.added_here += shared.insert_long(bytes, hash, &out[start..]),
            }
            if state.new_entries.len() >= NEW_ENTRIES_MAX {
                state.added_here += shared.insert_all(&mut state.new_entries);
            }
        }
        state.unpublished |= !state.publish;
        state.table.insert(key, hash, &out[start..]);
    }

    /// A pre-token of more than 15 bytes (`hash` its `hash_long`): the
    /// state's long-piece table, or merges.
    fn encode_long_pretoken(&self, bytes: &[u8], hash: u64, state: &mut EncodeState, out: &mut Vec<u32>) {
        if state.long.get(bytes, hash, out) {
            state.hits += 1;
            return;
        }
        let start = out.len();
        // Cloned (the merges below borrow the state) only when it is used:
        // a first call on one thread neither asks nor fills it.
        let sharing = state.publish || !state.skip_shared_lookups;
        let shared = state.shared.as_ref().filter(|_| sharing).map(|(_, shared)| Arc::clone(shared));
        let shared = shared.filter(|shared| shared.is_enabled());
        if let Some(shared) = shared.as_ref().filter(|_| !state.skip_shared_lookups) {
            if shared.get_long(bytes, hash, out) {
                state.hits += 1;
                state.long.insert(bytes, hash, &out[start..]);
                return;
            }
        }
        state.misses += 1;
        self.encode_in_parts(bytes, state, out);
        if let Some(shared) = shared.filter(|_| state.publish) {
            state.added_here += shared.insert_long(bytes, hash, &out[start..]);
        }
        state.long.insert(bytes, hash, &out[start..]);
    }

    /// A pre-token cut where no merge can join its bytes
    /// (`Vocabulary::can_cut_between`), each part encoded as a pre-token of
    /// its own: a part of up to 15 bytes through the tables like any short
    /// piece, a longer one merged. With GPT-2 a CJK clause, a new long piece
    /// nearly every time, cuts into characters and short runs the tables
    /// already hold. A piece too long for the long-piece table is cut a
    /// window at a time instead (`encode_in_windows`).
    fn encode_in_parts(&self, bytes: &[u8], state: &mut EncodeState, out: &mut Vec<u32>) {
        if bytes.len() > LONG_PIECE_MAX {
            return self.encode_in_windows(bytes, state, out);
        }
        let mut start = 0;
        for end in parts::part_ends(bytes, &self.vocab) {
            let part = &bytes[start..end];
            match pack(part) {
                Some(key) => self.encode_part(part, key, hash_packed(key), state, out),
                None => encode_piece(part, &self.vocab, &mut state.scratch, out),
            }
            start = end;
        }
    }

    /// `encode_in_parts` for a piece longer than `LONG_PIECE_MAX` (1 MB of
    /// CJK is one cl100k pre-token): its parts cut a window at a time, each
    /// window's buckets prefetched before its parts are looked up
    /// (`parts.rs`), and its parts too long to pack kept in the long-piece
    /// table, which does not keep the piece. A clause of a few dozen bytes
    /// takes the byte loop: its parts' buckets are in cache and where its
    /// parts end is regular, so the windows made first calls on 10 MB of
    /// multilingual text 7% slower (`examples/encode_file`).
    fn encode_in_windows(&self, bytes: &[u8], state: &mut EncodeState, out: &mut Vec<u32>) {
        let mut windows = state.parts.take().unwrap_or_default();
        windows[0].cut(bytes, 0, 0, &self.vocab, state.table.probe(), &state.long);
        let (mut this, mut at, mut start) = (0, 0, 0);
        while at < bytes.len() {
            let next_at = at + parts::WINDOW;
            if next_at < bytes.len() {
                let next_start = windows[this].end();
                windows[1 - this].cut(bytes, next_start, next_at, &self.vocab, state.table.probe(), &state.long);
            }
            for (end, part) in windows[this].parts() {
                let piece = &bytes[start..end];
                match part {
                    Part::Packed { key, hash } => self.encode_part(piece, key, hash, state, out),
                    Part::Long { hash } => self.encode_long_part(piece, hash, state, out),
                    Part::Unkept => encode_piece(piece, &self.vocab, &mut state.scratch, out),
                }
                start = end;
            }
            (this, at) = (1 - this, next_at);
        }
        state.parts = Some(windows);
    }

    /// A part of a long piece (`encode_in_parts`) that packs: a byte is its
    /// token, not kept in the table as a piece of one byte is
    /// (`encode_pretoken`): with GPT-2, CJK chars cut into bytes and pairs,
    /// and keeping each byte again on every call took a quarter of the call.
    /// A part the table holds inline is taken here, without the call: the
    /// parts of a run of one char are a few pieces found again and again.
    #[inline(always)]
    fn encode_part(&self, part: &[u8], key: u128, hash: u64, state: &mut EncodeState, out: &mut Vec<u32>) {
        if let &[byte] = part {
            return out.push(self.vocab.byte_id(byte));
        }
        let table = state.table.probe();
        // SAFETY: the bucket index is this probe's.
        if let Some(entry) = unsafe { table.get_inline_at(key, table.bucket_index(hash)) } {
            match entry.inline_ids() {
                &[id] => out.push(id),
                ids => out.extend_from_slice(ids),
            }
            state.hits += 1;
            return;
        }
        self.encode_pretoken(part, key, hash, state, out)
    }

    /// A part of a piece too long for the long-piece table (`encode_in_windows`),
    /// itself too long to pack (`hash` its `hash_long`): that table, or merges.
    fn encode_long_part(&self, part: &[u8], hash: u64, state: &mut EncodeState, out: &mut Vec<u32>) {
        if state.long.get(part, hash, out) {
            state.hits += 1;
            return;
        }
        state.misses += 1;
        let start = out.len();
        encode_piece(part, &self.vocab, &mut state.scratch, out);
        state.long.insert(part, hash, &out[start..]);
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
        self.encode_batch_allowing(texts, None, convert)
    }

    /// `encode_batch`, recognising only the special tokens `allowed` marks
    /// (see `encode_allowing`).
    pub fn encode_batch_allowing<T, R>(
        &self,
        texts: &[T],
        allowed: Option<&[bool]>,
        convert: impl Fn(Vec<u32>) -> R + Sync + Send,
    ) -> Result<Vec<R>, Error>
    where
        T: AsRef<str> + Sync,
        R: Send,
    {
        self.share_if_parallel(texts.len());
        self.encode_batch_from(texts, || self.pooled_state(), allowed, convert)
    }

    /// `encode_batch_allowing` with each worker's state made by `new_state`
    /// (a private one for file encoding, see `EncodeState::private`).
    pub fn encode_batch_from<T, R, S>(
        &self,
        texts: &[T],
        new_state: impl Fn() -> S + Sync + Send,
        allowed: Option<&[bool]>,
        convert: impl Fn(Vec<u32>) -> R + Sync + Send,
    ) -> Result<Vec<R>, Error>
    where
        T: AsRef<str> + Sync,
        R: Send,
        S: DerefMut<Target = EncodeState> + Send,
    {
        let mut states = worker_states(texts.len(), new_state);
        let results = run_with_affinity(&mut states, &text_weights(texts), |state, i| {
            let text = texts[i].as_ref();
            let mut ids = ids_buffer(text.len());
            self.encode_allowing(text, allowed, state, &mut ids)?;
            Ok(convert(ids))
        });
        give_back(states);
        results
    }

    /// `encode_batch_allowing` with every text's ids appended to `out`, in
    /// text order, and the end of each text's ids in `out` pushed to `ends`:
    /// no `Vec` a text (`flat_batch.rs`). On an error `out` is as it was.
    pub fn encode_batch_into<T: BatchText>(
        &self,
        texts: &[T],
        allowed: Option<&[bool]>,
        out: &mut Vec<u32>,
        ends: &mut Vec<usize>,
    ) -> Result<(), Error> {
        self.share_if_parallel(texts.len());
        let weights = text_weights(texts);
        let states = worker_states(texts.len(), || self.pooled_state());
        let base = out.len();
        let share = weights.iter().sum::<usize>() / states.len();
        let mut workers: Vec<_> = states
            .into_iter()
            .enumerate()
            .map(|(worker, mut state)| {
                // As `encode` does for one text: a worker's table made in
                // this call starts at the size its share of the texts will
                // grow it to, not at the seeds' size and then again there.
                state.expect_text(share);
                let mut ids = WorkerIds::new(std::mem::take(&mut state.batch_ids));
                if worker == 0 {
                    ids.write_in_order_to(std::mem::take(out));
                }
                (state, ids, String::new())
            })
            .collect();
        let result = run_with_affinity(&mut workers, &weights, |(state, ids, utf8), i| {
            let text = texts[i].utf8(utf8)?;
            ids.record(i, |out| {
                out.reserve(text.len() / 2 + 16);
                self.encode_allowing(text, allowed, state, out)
            })
        });
        let (mut states, mut written): (Vec<_>, Vec<WorkerIds>) =
            workers.into_iter().map(|(state, ids, _)| (state, ids)).unzip();
        match result {
            Ok(_) => append_in_text_order(out, &mut written, texts.len(), ends),
            Err(_) => {
                *out = written[0].take_out().expect("the first worker holds `out`");
                out.truncate(base);
            }
        }
        for (state, mut worker) in states.iter_mut().zip(written) {
            worker.ids.clear();
            state.batch_ids = worker.ids;
        }
        give_back(states);
        result.map(drop)
    }

    /// Workers that may run at once share from their first text: a worker
    /// starting while another holds the warm state would otherwise merge
    /// again what that state has not shared yet.
    fn share_if_parallel(&self, texts: usize) {
        if texts > 1 && rayon::current_num_threads() > 1 {
            self.share_from_now_on();
        }
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

    // tiktoken's special-token policy (`bpeforge.tiktoken`): only the special
    // tokens a call allows are tokens; the others are text. `allowed` and
    // `which` are masks over `special_tokens()`. The search is tiktoken's:
    // the leftmost special of all, and past it by one byte when it is not
    // allowed. With no special a prefix of another (all of OpenAI's sets),
    // that is exactly "the leftmost allowed one".

    /// `encode_with`, recognising only the special tokens that `allowed`
    /// marks (`None`: all of them). All allowed takes `encode_with`'s own
    /// path; none allowed (tiktoken's `encode_ordinary`) never searches for
    /// specials.
    pub fn encode_allowing(
        &self,
        text: &str,
        allowed: Option<&[bool]>,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) -> Result<(), Error> {
        match allowed.filter(|allowed| !allowed.iter().all(|&a| a)) {
            None => self.encode_with(text, state, out),
            Some(allowed) => self.with_state(state, |state| self.encode_pieces_allowing(text, allowed, state, out)),
        }
    }

    /// The index of the leftmost special token in `text` that `which` marks.
    pub fn find_special(&self, text: &str, which: &[bool]) -> Option<usize> {
        self.next_special(text.as_bytes(), 0, which).map(|(_, _, index)| index)
    }

    /// `stable_prefix_len` for `encode_allowing`: where not every special is
    /// allowed, only a cut before whitespace, where the pattern splits
    /// whatever the specials are (a cut after a special that is text could
    /// split its last piece).
    pub fn stable_prefix_len_allowing(&self, text: &str, allowed: Option<&[bool]>) -> usize {
        if allowed.is_none_or(|allowed| allowed.iter().all(|&a| a)) {
            return self.stable_prefix_len(text);
        }
        let (bytes, cut_before) = (text.as_bytes(), self.pattern.cut_before());
        let before_whitespace =
            |cut: usize| cut_before.contains(&bytes[cut]) && crate::pretokenize::cuts::is_split_point(bytes, cut);
        find_cut(bytes, &self.specials, cut_before)
            .filter(|&cut| cut < bytes.len() && before_whitespace(cut))
            .unwrap_or(0)
    }

    fn encode_pieces_allowing(
        &self,
        text: &str,
        allowed: &[bool],
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) -> Result<(), Error> {
        let mut last = 0;
        if allowed.iter().any(|&a| a) {
            while let Some((start, end, index)) = self.next_special(text.as_bytes(), last, allowed) {
                self.encode_document(&text[last..start], state, out)?;
                out.push(self.special_ids[index]);
                last = end;
            }
        }
        self.encode_document(&text[last..], state, out)
    }

    /// The first match at or after `from` of a special token that `which` marks.
    fn next_special(&self, bytes: &[u8], mut from: usize, which: &[bool]) -> Option<(usize, usize, usize)> {
        while from < bytes.len() {
            let (start, end, index) = self.specials.find_all(&bytes[from..]).next()?;
            if which[index] {
                return Some((from + start, from + end, index));
            }
            from += start + 1;
        }
        None
    }

    /// The pre-tokens of one document: text with no special token in it, a
    /// batch at a time: each piece packed, hashed and its bucket prefetched
    /// (`PieceBatch::pack`), then looked up.
    fn encode_document(&self, document: &str, state: &mut EncodeState, out: &mut Vec<u32>) -> Result<(), Error> {
        let bytes = document.as_bytes();
        // The state's, not a new one: zeroing 24 KiB for each document (20news
        // has one every 1.6 KB) cost more than short documents' encoding.
        let mut batch = state.batch.take().unwrap_or_default();
        let mut from = 0;
        let result = self.pattern.for_each_batch(
            document,
            #[inline(always)]
            |ends| {
                batch.pack(bytes, from, ends, state);
                self.encode_batch_of_pieces(bytes, from, ends, &mut batch, state, out);
                from = ends[ends.len() - 1];
            },
        );
        state.batch = Some(batch);
        result
    }

    /// `encode_pieces` with the specials looked for `ahead` bytes ahead of
    /// `scan` (a preset's `Pattern::batch_scanner`; `text` is valid UTF-8).
    fn encode_documents_scanning_ahead(
        &self,
        text: &[u8],
        scan: fn(&mut PieceEnds, &[u8]) -> bool,
        ahead: usize,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) {
        let mut start = 0;
        loop {
            let rest = &text[start..];
            let mut end = DocumentEnd::new(rest, &self.specials, self.pattern.cut_before(), ahead);
            self.encode_document_scanning_ahead(rest, scan, &mut end, state, out);
            let Some((_, special_end, index)) = end.special() else { return };
            out.push(self.special_ids[index]);
            start += special_end;
        }
    }

    /// The pieces of the document at the start of `text`, which ends where
    /// `end` finds (`document_end.rs`), a batch at a time as in
    /// `encode_document`; a batch scanned past a special found only after
    /// it is scanned again.
    fn encode_document_scanning_ahead(
        &self,
        text: &[u8],
        scan: fn(&mut PieceEnds, &[u8]) -> bool,
        end: &mut DocumentEnd,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) {
        let mut batch = state.batch.take().unwrap_or_default();
        let mut pieces = PieceEnds::new();
        let mut from = 0;
        loop {
            end.look_ahead_of(from);
            if !scan(&mut pieces, &text[..end.end()]) {
                break;
            }
            let ends = pieces.as_slice();
            if !end.settles(from, ends[ends.len() - 1]) {
                pieces.rewind(from);
                continue;
            }
            batch.pack(text, from, ends, state);
            self.encode_batch_of_pieces(text, from, ends, &mut batch, state, out);
            from = ends[ends.len() - 1];
        }
        state.batch = Some(batch);
    }
}

/// One state a worker for a batch of `texts`, as many workers as the pool
/// has threads (fewer for fewer texts). Taken in order, and given back in
/// reverse (`give_back`), so that the pool (a stack) lends them in the same
/// order to the next call: each worker starts on the same texts call after
/// call (`affinity.rs`), and its state has seen them.
///
/// A state the pool made for this call starts with a copy of the first
/// worker's table of short pieces (`start_new_from_first`).
fn worker_states<S>(texts: usize, new_state: impl Fn() -> S) -> Vec<S>
where
    S: DerefMut<Target = EncodeState> + Send,
{
    let workers = rayon::current_num_threads().min(texts).max(1);
    let mut states: Vec<S> = (0..workers).map(|_| new_state()).collect();
    start_new_from_first(&mut states);
    states
}

/// The states in `states` that the pool has just made (they still want the
/// seeds) start with a copy of the first one's short pieces, when it has them
/// (kept from an earlier call or seeded when the encoder was built), copied
/// in parallel on the pool's threads before any worker encodes.
///
/// Why: a new state planted the seeds in its first text, on the clock (o200k:
/// 263 K seeds, and a doubling of its table). Meanwhile the first worker took
/// most of its range of the batch (1,518 of 2,489 texts of 20news), so in the
/// next calls the new state met texts it had never seen and asked the shared
/// cache for their pieces (14.8 K, then 6.9 K, 2.0 K, 1.3 K a call): a 2-thread
/// batch took five calls to reach its best. A copy of 16 MiB takes a few ms.
fn start_new_from_first<S>(states: &mut [S])
where
    S: DerefMut<Target = EncodeState> + Send,
{
    let Some((first, rest)) = states.split_first_mut() else { return };
    if first.wants_seeds || !rest.iter().any(|state| state.wants_seeds) {
        return;
    }
    let first: &EncodeState = first;
    rest.par_iter_mut().filter(|state| state.wants_seeds).for_each(|state| state.start_from(first));
}

/// Drop `states` last first: see `worker_states`.
fn give_back<S>(states: Vec<S>) {
    states.into_iter().rev().for_each(drop);
}

/// The texts' lengths in bytes (about, for one a worker converts): what
/// `run_with_affinity` splits evenly.
fn text_weights<T: BatchText>(texts: &[T]) -> Vec<usize> {
    texts.iter().map(BatchText::weight).collect()
}

/// An empty buffer for the ids of `text_bytes` bytes of text: room for one
/// id per two bytes (English needs one per 3.7; a buffer grown mid-call was
/// copied and its new pages faulted in, a fifth of warm encoding in `perf`),
/// one given back by an earlier call's owner if one has the room
/// (`recycled.rs`), else new, on huge pages when large (`huge_pages.rs`).
/// Capacity never written costs no memory.
pub fn ids_buffer(text_bytes: usize) -> Vec<u32> {
    let capacity = text_bytes / 2 + 16;
    crate::util::recycled::take(capacity).unwrap_or_else(|| crate::util::huge_pages::vec_with_capacity(capacity))
}
#[cfg(test)]
mod tests {
    use super::state::STREAMING_LONG_TABLE_BYTES;
    use super::*;

    fn encoder() -> Encoder {
        let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
        entries.extend([(256, b" t".to_vec()), (257, b"<|e|>".to_vec()), (258, b"<|e|><|e|>".to_vec())]);
        let vocab = Vocabulary::new(entries, &[(b" ".to_vec(), b"t".to_vec())]).unwrap();
        Encoder::new(vocab, &["<|e|>".to_string(), "<|e|><|e|>".to_string()], Pattern::Gpt2).unwrap()
    }

    /// Specials found ahead of the scanner (`document_end.rs`) give the ids
    /// of splitting on them first, for every preset: specials next to
    /// whitespace runs, long pieces and non-ASCII, stray first bytes, and
    /// look-aheads short enough that most batches are scanned past a special
    /// not yet found (and scanned again).
    #[test]
    fn specials_found_ahead_give_the_ids_of_splitting_first() {
        let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
        let merges: [(&[u8], &[u8]); 4] = [(b" ", b"t"), (b"h", b"e"), (b"1", b"2"), (b" ", b" ")];
        for (left, right) in merges {
            entries.push((entries.len() as u32, [left, right].concat()));
        }
        // Three first bytes, one of them whitespace (a document may then end
        // at a split point), and a split point inside a special.
        for special in ["<|e|>", "<|e|><|e|>", "[ x]", " [y]"] {
            entries.push((entries.len() as u32, special.as_bytes().to_vec()));
        }
        let merges: Vec<(Vec<u8>, Vec<u8>)> = merges.iter().map(|(l, r)| (l.to_vec(), r.to_vec())).collect();
        let specials: Vec<String> = ["<|e|>", "<|e|><|e|>", "[ x]", " [y]"].iter().map(|s| s.to_string()).collect();
        let parts = [
            "the",
            " he",
            " t",
            "12",
            "345",
            " ",
            "   ",
            "\n",
            "\r\n",
            "\t",
            "'s",
            "'ll",
            "é",
            "中文",
            "🙂",
            "’",
            "!",
            "<",
            "<|",
            "[",
            "<|e|>",
            "<|e|><|e|>",
            "[ x]",
            " [y]",
            "Hello",
            "ÀB",
        ];
        let mut rng = crate::util::test_rng::XorShift(0x51ec_1a15_0f00_d5ed);
        for pattern in ["gpt2", "cl100k", "o200k", "llama3", "qwen2"] {
            let vocab = Vocabulary::new(entries.clone(), &merges).unwrap();
            let enc = Encoder::new(vocab, &specials, Pattern::new(pattern).unwrap()).unwrap();
            let scan = enc.pattern.batch_scanner().expect("a preset");
            for case in 0..150 {
                let mut text = String::new();
                while text.len() < [40, 900, 3000][case % 3] {
                    match rng.below(40) {
                        // Runs longer than a short look-ahead, and than a batch.
                        0 => text.push_str(&" ".repeat(1 + rng.below(700))),
                        1 => text.push_str(&"ab".repeat(1 + rng.below(700))),
                        2 => text.push_str(&"9".repeat(1 + rng.below(300))),
                        _ => text.push_str(parts[rng.below(parts.len())]),
                    }
                }
                let mut state = enc.pooled_state();
                let mut expected = Vec::new();
                enc.with_state(&mut state, |state| enc.encode_split_first(&text, state, &mut expected)).unwrap();
                for ahead in [1, 2, 7, 64, 700, AHEAD] {
                    let mut ids = Vec::new();
                    enc.with_state(&mut state, |state| {
                        enc.encode_documents_scanning_ahead(text.as_bytes(), scan, ahead, state, &mut ids);
                        Ok(())
                    })
                    .unwrap();
                    assert_eq!(ids, expected, "{pattern}, case {case}, ahead {ahead}: {text:?}");
                }
            }
        }
    }

    #[test]
    fn specials_longest_first_and_merges_inside_pieces() {
        let ids = encoder().encode("a t<|e|><|e|>x<|e|>").unwrap();
        // "a", " t" (merged), the double special, "x", the single special.
        assert_eq!(ids, [b'a' as u32, 256, 258, b'x' as u32, 257]);
    }

    /// A streaming state's table (1 Ki buckets) starts over again and again
    /// on 60 K distinct pieces, often in the middle of a batch, where the
    /// batch's buckets, worked out for the larger table, would be past the
    /// new one's end (`PieceBatch::refresh_buckets`; a debug build checks
    /// each index): the ids are those of no cache.
    #[test]
    fn a_table_that_starts_over_mid_batch_gives_the_same_ids() {
        let enc = encoder();
        let mut rng = crate::util::test_rng::XorShift(0x2545_f491_4f6c_dd1d);
        let mut word = || -> String { (0..rng.below(6) + 3).map(|_| (b'a' + rng.below(26) as u8) as char).collect() };
        let words: Vec<String> =
            (0..60_000).map(|i| if i % 3 == 0 { " the".into() } else { format!(" {}", word()) }).collect();
        let distinct: std::collections::HashSet<&String> = words.iter().collect();
        assert!(distinct.len() > 30_000, "{} distinct pieces", distinct.len());
        let text = words.concat();
        enc.set_cache_bytes(0);
        let expected = enc.encode(&text).unwrap();
        enc.set_cache_bytes(DEFAULT_CACHE_BYTES);
        let mut state = enc.lookup_only_state();
        for call in 0..2 {
            let mut out = Vec::new();
            enc.encode_with(&text, &mut state, &mut out).unwrap();
            assert!(out == expected, "call {call}");
        }
    }

    /// Tokens that merge to themselves ("ab", "abc") and one that does not
    /// ("cab" encodes as "c" "ab": no seed), in random words: the seeded
    /// tables give the ids of no cache at all, for any cache size, and the
    /// seeds the text finds stop being seeds.
    #[test]
    fn seeded_tables_give_the_same_ids() {
        let vocab = crate::encode::cache::seeds::vocabulary_with_a_token_bpe_never_makes();
        let enc = Encoder::new(vocab, &[], Pattern::Gpt2).unwrap();
        let mut rng = crate::util::test_rng::XorShift(0x9e37_79b9_7f4a_7c15);
        let words: Vec<String> = (0..5000)
            .map(|_| {
                let word: String = (0..rng.below(6) + 1).map(|_| ["a", "b", "c", "ab", "cab"][rng.below(5)]).collect();
                format!(" {word}")
            })
            .collect();
        let text = words.concat();
        enc.set_cache_bytes(0);
        let expected = enc.encode(&text).unwrap();
        enc.seed_tables();
        assert_eq!(enc.cache_info().seeds, 0, "nothing is planted while the cache is off");
        for bytes in [256, 64 << 10, DEFAULT_CACHE_BYTES] {
            enc.set_cache_bytes(bytes);
            let planted = enc.cache_info().seeds;
            assert!(planted >= 3, "{planted} seeds with the cache on: planted again");
            assert!(enc.encode(&text).unwrap() == expected, "first call, {bytes} bytes");
            assert!(enc.cache_info().seeds < planted, "the text found some");
            assert!(enc.encode(&text).unwrap() == expected, "warm, {bytes} bytes");
            enc.set_cache_bytes(bytes);
            assert!(enc.encode_batch(&words, |ids| ids).unwrap().concat() == expected, "batch, {bytes} bytes");
        }
    }

    /// Pieces longer than the long-piece table keeps, cut in windows
    /// (`encode_in_windows`), give the ids of merging each whole piece, cold
    /// and warm, with the cache off, tiny and at its default, alone and in a
    /// batch on two threads.
    #[test]
    fn pieces_cut_in_windows_give_the_ids_of_merging_them_whole() {
        let enc =
            Encoder::new(crate::encode::cache::seeds::vocabulary_with_a_token_bpe_never_makes(), &[], Pattern::Gpt2)
                .unwrap();
        enc.seed_tables();
        let mut rng = crate::util::test_rng::XorShift(11);
        let mut letters = |n: usize| -> String { (0..n).map(|_| ["a", "b", "c", "ab", "cab"][rng.below(5)]).collect() };
        let pieces = [letters(1500), "cab".repeat(700), letters(5000), letters(1025)];
        let text = pieces.iter().map(|piece| format!(" {piece}")).collect::<String>();
        let mut expected = Vec::new();
        for piece in &pieces {
            let piece = format!(" {piece}");
            assert!(piece.len() > LONG_PIECE_MAX, "each is one piece of over {LONG_PIECE_MAX} bytes");
            encode_piece(piece.as_bytes(), &enc.vocab, &mut crate::bpe::Scratch::default(), &mut expected);
        }
        for bytes in [0, 256, DEFAULT_CACHE_BYTES] {
            enc.set_cache_bytes(bytes);
            assert_eq!(enc.encode(&text).unwrap(), expected, "cold, {bytes} bytes");
            assert_eq!(enc.encode(&text).unwrap(), expected, "warm, {bytes} bytes");
            let texts = [text.as_str(), text.as_str()];
            let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            let batch = pool.install(|| enc.encode_batch(&texts, |ids| ids)).unwrap();
            assert_eq!(batch.concat(), [expected.clone(), expected.clone()].concat(), "batch, {bytes} bytes");
        }
    }

    #[test]
    fn same_ids_for_any_cache_size_and_the_cache_is_shared() {
        let enc = encoder();
        let text: String = (0..3000).map(|i| format!(" t{} tt{}<|e|>a t\u{e9}{} ", i % 700, i % 13, i % 997)).collect();
        enc.set_cache_bytes(0);
        let expected = enc.encode(&text).unwrap();
        let off = enc.cache_info();
        assert_eq!((off.entries, off.bytes, off.capacity, off.thread_tables), (0, 0, 0, 0), "{off:?}");
        assert!(off.misses > 0, "{off:?}");
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
        // Another thread finds what this one cached, once two states were
        // lent at once (a batch on two workers would do it too).
        drop((enc.pooled_state(), enc.pooled_state()));
        enc.set_cache_bytes(1 << 20);
        enc.encode(&text).unwrap();
        let warmed = enc.cache_info();
        assert!(warmed.misses > 0 && warmed.entries > 0, "{warmed:?}");
        // (A fresh state: `encode` would borrow this thread's warm one, whose
        // own table answers without asking the shared cache.)
        let mut ids = Vec::new();
        let fresh = || enc.encode_with(&text, &mut EncodeState::default(), &mut ids).unwrap();
        std::thread::scope(|scope| scope.spawn(fresh).join().unwrap());
        assert_eq!(ids, expected);
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

    /// `encode_batch_into` gives `encode_batch`'s ids, concatenated after
    /// what `out` held, with each text's end, on any number of threads and
    /// for any split of the texts (many small, a few long, empty ones).
    #[test]
    fn a_flat_batch_gives_each_texts_ids_in_order() {
        let enc = encoder();
        let mut rng = crate::util::test_rng::XorShift(0x2545_f491_4f6c_dd1d);
        let texts: Vec<String> = (0..400)
            .map(|i| match i % 50 {
                0 => String::new(),
                7 => (0..2000).map(|j| [" t", "a", "<|e|>", " tt", "\u{e9}"][(i + j) % 5]).collect(),
                _ => (0..rng.below(40)).map(|_| [" t", "a", "<|e|>", " tt", "x ", "\u{e9}"][rng.below(6)]).collect(),
            })
            .collect();
        let each = enc.encode_batch(&texts, |ids| ids).unwrap();
        for threads in [1, 2, 3, 5] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            for call in 0..3 {
                let (mut out, mut ends) = (vec![7u32, 7], vec![2usize]);
                pool.install(|| enc.encode_batch_into(&texts, None, &mut out, &mut ends)).unwrap();
                let mut expected = vec![7u32, 7];
                let mut expected_ends = vec![2usize];
                for ids in &each {
                    expected.extend_from_slice(ids);
                    expected_ends.push(expected.len());
                }
                assert!(out == expected, "{threads} threads, call {call}");
                assert_eq!(ends, expected_ends, "{threads} threads, call {call}");
            }
        }
    }

    /// A batch worker whose state the pool makes in the call starts with a
    /// copy of the kept state's table of short pieces (seeds included), not
    /// with the seeds alone, and with an empty table of long pieces; the ids
    /// are those of one thread, and a worker whose state is new too (nothing
    /// kept) plants the seeds as before.
    #[test]
    fn a_new_batch_worker_starts_with_the_kept_states_tables() {
        let enc = encoder();
        let long_word = " ".to_string() + &"a".repeat(40);
        let texts: Vec<String> = (0..64).map(|i| format!(" tt{i} <|e|>{long_word} x{}", i * 7)).collect();
        // One text at a time: one state, kept.
        let expected: Vec<Vec<u32>> = texts.iter().map(|text| enc.encode(text).unwrap()).collect();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        pool.install(|| {
            let mut states = worker_states(texts.len(), || enc.pooled_state());
            assert_eq!(states.len(), 2);
            assert!(states[0].table.pieces_held() > 64, "the kept state holds the texts' pieces");
            assert!(!states[1].wants_seeds, "copied, so not planted again");
            assert_eq!(states[1].table.pieces_held(), states[0].table.pieces_held());
            assert_eq!(states[1].table.seeds(), states[0].table.seeds());
            assert!(states[0].long.bytes() > 0 && states[1].long.bytes() == 0, "long pieces are not copied");
            let key = pack(b" tt").unwrap();
            let mut out = Vec::new();
            assert!(states[1].table.get(key, hash_packed(key), &mut out), "a piece the kept state merged");
            assert_eq!(out, [256, u32::from(b't')]);
            give_back(states);
            let (mut out, mut ends) = (Vec::new(), Vec::new());
            enc.encode_batch_into(&texts, None, &mut out, &mut ends).unwrap();
            assert!(out == expected.concat(), "same ids from the copied tables");
        });
        let fresh = encoder(); // nothing kept: both states are new
        pool.install(|| {
            let states = worker_states(texts.len(), || fresh.pooled_state());
            assert!(states.iter().all(|state| state.wants_seeds && state.table.pieces_held() == 0));
        });
    }

    /// A text kept as UTF-16, made UTF-8 by the worker that takes it
    /// (`BatchText`, as the binding does for a Python `str`).
    struct Utf16Text(Vec<u16>);

    impl BatchText for Utf16Text {
        fn weight(&self) -> usize {
            self.0.len()
        }

        fn utf8<'a>(&'a self, buffer: &'a mut String) -> Result<&'a str, Error> {
            buffer.clear();
            for c in char::decode_utf16(self.0.iter().copied()) {
                buffer.push(c.map_err(|_| Error::InvalidArgument("a lone surrogate".into()))?);
            }
            Ok(buffer.as_str())
        }
    }

    /// Texts the workers make UTF-8 of, each in its own buffer reused from
    /// text to text, give the ids of the same texts borrowed; one that cannot
    /// be made fails the batch, and `out` is left as it was.
    #[test]
    fn texts_the_workers_make_give_the_ids_of_the_same_texts_borrowed() {
        let enc = encoder();
        let texts: Vec<String> = (0..200).map(|i| format!("t{i} ab tt ñ “{}” t", "x".repeat(i % 37))).collect();
        let made: Vec<Utf16Text> = texts.iter().map(|text| Utf16Text(text.encode_utf16().collect())).collect();
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let (mut expected, mut expected_ends) = (vec![7u32], vec![1usize]);
            pool.install(|| enc.encode_batch_into(&texts, None, &mut expected, &mut expected_ends)).unwrap();
            let (mut out, mut ends) = (vec![7u32], vec![1usize]);
            pool.install(|| enc.encode_batch_into(&made, None, &mut out, &mut ends)).unwrap();
            assert_eq!((&out, &ends), (&expected, &expected_ends), "{threads} threads");
            let mut broken: Vec<Utf16Text> =
                texts.iter().map(|text| Utf16Text(text.encode_utf16().collect())).collect();
            broken[150].0.push(0xD800);
            let (mut out, mut ends) = (vec![7u32], vec![1usize]);
            assert!(pool.install(|| enc.encode_batch_into(&broken, None, &mut out, &mut ends)).is_err());
            assert_eq!(out, [7], "{threads} threads");
        }
    }

    /// A text the pattern fails on fails the flat batch, and `out` is left
    /// as it was (a custom pattern past fancy-regex's backtracking limit).
    #[test]
    fn a_failed_flat_batch_leaves_out_as_it_was() {
        let vocab = Vocabulary::new((0..=255u8).map(|b| (b as u32, vec![b])).collect(), &[] as &[(Vec<u8>, Vec<u8>)]);
        let enc = Encoder::new(vocab.unwrap(), &[], Pattern::new(r"(a|a)*(?=b)|.").unwrap()).unwrap();
        let bad = format!("{}c", "a".repeat(40));
        let texts: Vec<&str> = (0..300).map(|i| if i == 5 || i == 200 { bad.as_str() } else { "xyz" }).collect();
        assert!(enc.encode(&bad).is_err(), "the pattern fails on {bad:?}");
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let (mut out, mut ends) = (vec![1u32, 2, 3], vec![3usize]);
            let result = pool.install(|| enc.encode_batch_into(&texts, None, &mut out, &mut ends));
            assert!(result.is_err(), "{threads} threads");
            assert_eq!(out, [1, 2, 3], "{threads} threads");
        }
    }

    /// Pieces a shared slot cannot hold, long ones (over 15 bytes) and short
    /// ones of more than `MAX_IDS` ids, merged by one worker are found by the
    /// next through the second level (`shared_long.rs`), with the same ids.
    #[test]
    fn long_pieces_and_many_id_pieces_are_shared_between_workers() {
        let enc = encoder();
        // Distinct words: `i` in letters (digits would be pieces of their own).
        let letters = |i: usize| format!("{}{}", (b'a' + (i % 26) as u8) as char, (b'a' + (i / 26 % 26) as u8) as char);
        let text: String =
            (0..600).map(|i| format!(" abcdefghijklmnop{} xyzw{} tt", letters(i), letters(i % 50))).collect();
        enc.set_cache_bytes(0);
        let expected = enc.encode(&text).unwrap();
        enc.set_cache_bytes(DEFAULT_CACHE_BYTES);
        drop((enc.pooled_state(), enc.pooled_state()));
        let fresh = || {
            let mut ids = Vec::new();
            enc.encode_with(&text, &mut EncodeState::default(), &mut ids).unwrap();
            ids
        };
        assert_eq!(fresh(), expected);
        let first = enc.cache_info();
        assert!(first.misses > 600, "{first:?}");
        assert_eq!(fresh(), expected, "a second worker, from the shared cache");
        assert_eq!(enc.cache_info().misses, first.misses, "the second worker merged what the first had shared");
        // A thread alone adds nothing to the shared cache; its kept table
        // adds all of it, these pieces too, once a second state comes.
        let enc = encoder();
        assert_eq!(enc.encode(&text).unwrap(), expected);
        let alone = enc.cache_info();
        assert_eq!(alone.entries, 0, "{alone:?}");
        drop(enc.lookup_only_state());
        let mut ids = Vec::new();
        enc.encode_with(&text, &mut EncodeState::default(), &mut ids).unwrap();
        assert_eq!(ids, expected);
        assert_eq!(enc.cache_info().misses, alone.misses, "merged again what the kept table held");
    }

    #[test]
    fn one_thread_alone_leaves_the_shared_cache_empty_until_another_state_comes() {
        let enc = encoder();
        let text: String = (0..2000).map(|i| format!(" t{} tt{} ", i % 500, i % 7)).collect();
        let expected = enc.encode(&text).unwrap();
        assert_eq!(enc.encode(&text).unwrap(), expected);
        let alone = enc.cache_info();
        assert_eq!((alone.entries, alone.bytes, alone.thread_tables), (0, 0, 1), "{alone:?}");
        assert!(alone.hits > 0 && alone.misses > 0, "{alone:?}");
        // A streaming state: the kept state adds its table, and the stream
        // merges nothing that call merged.
        let mut stream = enc.lookup_only_state();
        assert!(enc.cache_info().entries > 0);
        let mut ids = Vec::new();
        enc.encode_with(&text, &mut stream, &mut ids).unwrap();
        assert_eq!(ids, expected);
        assert_eq!(enc.cache_info().misses, alone.misses, "the stream merged pieces the cache had");
        // From then on every state adds what it merges: a fresh one on
        // another text, then a fresh one after it, which merges nothing.
        let other: String = (0..500).map(|i| format!(" x{i}")).collect();
        let fresh = || {
            let mut ids = Vec::new();
            enc.encode_with(&other, &mut EncodeState::default(), &mut ids).unwrap();
            ids
        };
        let first = fresh();
        let misses = enc.cache_info().misses;
        assert_eq!(fresh(), first);
        assert_eq!(enc.cache_info().misses, misses);
    }

    #[test]
    fn long_pieces_give_the_same_ids_when_their_table_fills() {
        let enc = encoder();
        // 4,000 distinct pre-tokens of 18-21 bytes (a space, 16 t's, a
        // letter code): about 560 KB in a long-piece table, several times
        // what a streaming state's holds, so it fills, turns pieces away and
        // starts over while encoding.
        let code = |i: usize| (0..3).map(|d| (b'a' + (i / 26usize.pow(d) % 26) as u8) as char).collect::<String>();
        let text: String = (0..4000).map(|i| format!(" {}{}", "t".repeat(16), code(i))).collect();
        enc.set_cache_bytes(0);
        let expected = enc.encode(&text).unwrap();
        let mut small = EncodeState::lookup_only();
        for round in 0..3 {
            let mut ids = Vec::new();
            enc.encode_with(&text, &mut small, &mut ids).unwrap();
            assert_eq!(ids, expected, "round {round}");
        }
        assert!(small.long.bytes() <= STREAMING_LONG_TABLE_BYTES);
    }

    #[test]
    fn long_pieces_cut_where_no_token_holds_the_pair_give_the_merges_ids() {
        use crate::bpe::Scratch;
        // Tokens hold the pairs ab, bc, cc, ba and nothing with x: a word of
        // a, b, c and x is cut at every other pair (x on either side, aa, ca, ...).
        let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
        entries.extend([(256, b"ab".to_vec()), (257, b"abc".to_vec()), (258, b"cc".to_vec()), (259, b"ba".to_vec())]);
        entries.extend([(260, b"abcc".to_vec()), (261, b"baba".to_vec())]);
        let merges: Vec<(Vec<u8>, Vec<u8>)> =
            [("a", "b"), ("ab", "c"), ("c", "c"), ("b", "a"), ("abc", "c"), ("ba", "ba")]
                .iter()
                .map(|(l, r)| (l.as_bytes().to_vec(), r.as_bytes().to_vec()))
                .collect();
        let vocab = Vocabulary::new(entries, &merges).unwrap();
        assert!(vocab.can_cut_between(b'a', b'x') && vocab.can_cut_between(b'c', b'a'));
        assert!(!vocab.can_cut_between(b'a', b'b') && !vocab.can_cut_between(b'b', b'a'));
        let enc = Encoder::new(vocab.clone(), &[], Pattern::Gpt2).unwrap();
        let mut rng = crate::util::test_rng::XorShift(0x9E37_79B9_7F4A_7C15);
        let mut next = move || rng.next();
        for round in 0..400 {
            // One word (one pre-token) of 16-2,000 letters, some of them repeats of earlier words' parts.
            let len = 16 + (next() % if round % 10 == 0 { 2000 } else { 200 }) as usize;
            let word: String = (0..len).map(|_| ['a', 'b', 'c', 'x', 'a', 'b'][(next() % 6) as usize]).collect();
            let mut expected = Vec::new();
            encode_piece(word.as_bytes(), &vocab, &mut Scratch::default(), &mut expected);
            assert_eq!(enc.encode(&word).unwrap(), expected, "{word}");
            assert_eq!(enc.encode(&word).unwrap(), expected, "again, from the tables: {word}");
        }
    }

    #[test]
    fn decode_concatenates_and_rejects_unknown_ids() {
        let enc = encoder();
        assert_eq!(enc.decode_bytes(&[b'a' as u32, 256, 257]).unwrap(), b"a t<|e|>");
        assert_eq!(enc.decode_bytes(&[9999]).unwrap_err().to_string(), "unknown token id 9999");
    }

    #[test]
    fn only_allowed_specials_are_tokens() {
        let enc = encoder();
        let text = "a t<|e|>x";
        let allowing = |allowed: &[bool]| {
            let mut out = Vec::new();
            enc.encode_allowing(text, Some(allowed), &mut EncodeState::default(), &mut out).unwrap();
            out
        };
        assert_eq!(allowing(&[true, true]), enc.encode(text).unwrap());
        assert_eq!(allowing(&[true, true]), [97, 256, 257, 120]);
        // None allowed: the special's bytes are text, pre-tokenized as any other.
        assert_eq!(allowing(&[false, false]), [97, 256, b'<' as u32, b'|' as u32, 101, b'|' as u32, b'>' as u32, 120]);
        assert_eq!(enc.find_special(text, &[true, true]), Some(0));
        assert_eq!(enc.find_special(text, &[false, true]), None);
        assert_eq!(enc.find_special("no special here", &[true, true]), None);
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
