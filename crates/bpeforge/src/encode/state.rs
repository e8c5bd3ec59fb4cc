//! What encoding keeps on a thread between calls (`EncodeState`), and the
//! pool that lends states to calls and batch workers (`StatePool`).

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::parts::PartWindows;
use super::piece_batch::PieceBatch;
use crate::bpe::vocab::Vocabulary;
use crate::bpe::Scratch;
use crate::encode::cache::huge_pieces::HugePieces;
use crate::encode::cache::long_pieces::LongPieceTable;
use crate::encode::cache::piece_table::PieceTable;
use crate::encode::cache::shared::{NewEntry, SharedCache};
use crate::util::packed_key::{hash_packed, pack, unpack};

/// What encoding keeps between calls on one thread: buffers, the thread's own
/// cache and a handle on the encoder's shared one. Ids depend only on the
/// vocabulary, so a state may serve any texts of the same `Encoder` (not of
/// another).
#[derive(Default)]
pub struct EncodeState {
    pub(super) scratch: Scratch,
    pub(super) table: PieceTable,
    pub(super) long: LongPieceTable,
    /// The last pieces too long for `long`, kept whole (`huge_pieces.rs`).
    pub(super) huge: HugePieces,
    /// The shared cache and the generation it was taken at.
    pub(super) shared: Option<(u64, Arc<SharedCache>)>,
    /// Cache hits (own table or shared) and misses not yet added to the
    /// shared cache's counters.
    pub(super) hits: u64,
    pub(super) misses: u64,
    /// Read the shared cache but add nothing to it.
    pub(super) lookup_only: bool,
    /// Lent by the encoder's pool (`StatePool::take`).
    pub(super) pooled: bool,
    /// This call adds its merges to the shared cache (see `StatePool::crowded`).
    pub(super) publish: bool,
    /// Its table holds merges it has not added to the shared cache.
    pub(super) unpublished: bool,
    /// This call does not read the shared cache (see `Encoder::with_state`).
    pub(super) skip_shared_lookups: bool,
    /// Entries this state added to its shared cache.
    pub(super) added_here: u64,
    /// Pieces merged in this call, not yet in the shared cache.
    pub(super) new_entries: Vec<NewEntry>,
    /// The keys of the batch being encoded (kept: see `encode_document`).
    pub(super) batch: Option<Box<PieceBatch>>,
    /// The windows of parts of the long piece being cut (`parts.rs`), kept
    /// as `batch` is.
    pub(super) parts: Option<Box<PartWindows>>,
    /// Pieces too long to pack in the last batch: when there were a few,
    /// the next batch hashes and prefetches its own ahead (`PieceBatch::pack`).
    pub(super) long_pieces_last_batch: usize,
    /// Never use the shared cache: the thread's own table only.
    pub(super) private: bool,
    /// The ids this state writes as one of several workers of a flat batch
    /// (`flat_batch.rs`), kept (empty, its pages mapped) between groups and calls.
    pub(super) batch_ids: Vec<u32>,
    /// Made by the pool while the cache was on: planted with the vocabulary's
    /// seeds before it first encodes (`Encoder::plant_if_wanted`).
    pub(super) wants_seeds: bool,
}

/// `EncodeState::expect_text` sizes the table for texts of at least this many bytes...
const EXPECT_MIN_BYTES: usize = 1 << 18;
/// ... as if each this many bytes brought a new piece: 10 MB of Gutenberg has
/// 74 K distinct pre-tokens (one per 135 bytes), 1 MB about 20 K (one per
/// 50); an estimate on the high side costs table memory the text's own ids
/// outweigh, one on the low side a doubling or two.
const BYTES_PER_NEW_PIECE: usize = 32;

impl EncodeState {
    /// Size the thread's table for a text of `text_bytes` before encoding it
    /// (the binding's `encode` calls this once, then encodes the text in
    /// stretches): grown by doubling from 256 buckets, a first call of 10 MB
    /// placed its pieces again at each of nine doublings; starting at its
    /// final size made that call 4-6% faster (`examples/encode_file`, four
    /// alternations). Small texts keep the small start.
    pub fn expect_text(&mut self, text_bytes: usize) {
        if text_bytes >= EXPECT_MIN_BYTES {
            self.table.reserve(text_bytes / BYTES_PER_NEW_PIECE);
        }
    }

    /// Plant `seeds` (`seeds.rs`) in its table, grown first to at least the
    /// size seeds are planted in during a call (`PieceTable::reserve_for_seeds`,
    /// 8 MiB; `Encoder::seed_tables`, off the clock, grows it to its bound
    /// before). Grown only to hold them (4 MiB for GPT-2's), a first call of
    /// 10 MB grew it and placed them again on its own clock, 287 against 308
    /// MB/s (`examples/encode_file`, GPT-2, Gutenberg, medians of six). At 8
    /// MiB when built, a first call on 10 MB grew it to the bound and took
    /// 53-59 ms instead of 46-53 (GPT-2, Gutenberg and 20news, medians of
    /// six); at the bound in a call, each worker of a first 2-thread batch
    /// zeroed 16 MiB (`piece_table::SEEDED_BUCKETS`).
    pub(super) fn plant(&mut self, vocab: &Vocabulary, seeds: &[u32]) {
        self.table.reserve_for_seeds();
        for &id in seeds {
            let token = vocab.token(id).expect("a seed is a token");
            let key = pack(token).expect("a seed packs");
            self.table.plant(key, hash_packed(key), id);
        }
        self.scratch.plant_words(vocab, seeds);
    }

    /// Start with a copy of `warm`'s table of short pieces instead of
    /// planting the seeds: for a state the pool made for a batch worker (see
    /// `worker_states`). The pieces `warm` has not added to the shared cache
    /// are left for it to add. Not its long pieces' table: up to
    /// `LONG_TABLE_BYTES` (32 MiB) a worker, on a machine of many cores, for
    /// pieces the shared cache also holds.
    pub(super) fn start_from(&mut self, warm: &EncodeState) {
        self.table = warm.table.copy();
        self.wants_seeds = false;
    }

    /// A state that uses what the shared cache holds but never adds to it,
    /// so that encoding allocates nothing that outlives the call: for
    /// streaming in flat memory (CS336 allows `encode_iterable` a 1 MB rise,
    /// less than the distinct pieces of a few MB of text take).
    /// Its own table is capped at `STREAMING_TABLE_BUCKETS` for the same reason.
    pub fn lookup_only() -> Self {
        let table = PieceTable::with_max_buckets(STREAMING_TABLE_BUCKETS);
        let long = LongPieceTable::with_max_bytes(STREAMING_LONG_TABLE_BYTES);
        Self { lookup_only: true, table, long, huge: HugePieces::with_max_bytes(0), ..Self::default() }
    }

    /// A state that never touches the shared cache. File encoding uses it:
    /// measured on 200 MB of Gutenberg, the shared cache made `bpeforge
    /// encode` 3% slower on 1 thread and 22% on 2 (every miss takes a shard
    /// lock and every hit reads a line another core may be writing), and
    /// added its 50 MB to the peak RSS. Each worker's own table, warm over its
    /// share of a batch (megabytes of text), answers most pieces anyway.
    /// Its long-piece table is capped at `PRIVATE_LONG_TABLE_BYTES`: a run
    /// keeps one state per worker, and file encoding promises flat memory.
    pub fn private() -> Self {
        let table = PieceTable::with_max_buckets(PRIVATE_TABLE_BUCKETS);
        let long = LongPieceTable::with_max_bytes(PRIVATE_LONG_TABLE_BYTES);
        Self { private: true, table, long, huge: HugePieces::with_max_bytes(0), ..Self::default() }
    }

    /// Add every piece of its own table to the shared cache, once: what it
    /// merged while it was the only state (see `StatePool::crowded`).
    pub(super) fn publish_table(&mut self) {
        let Some((_, shared)) = &self.shared else { return };
        if !self.unpublished || self.lookup_only {
            return;
        }
        self.new_entries
            .extend(self.table.inline_entries().filter_map(|(key, ids)| NewEntry::new(key, hash_packed(key), ids)));
        self.added_here += shared.insert_all(&mut self.new_entries);
        // And to the second level, what a slot cannot hold (`shared_long.rs`).
        for (key, ids) in self.table.overflow_entries() {
            let (bytes, len) = unpack(&key);
            self.added_here += shared.insert_long(&bytes[..len], hash_packed(key), ids);
        }
        for (piece, hash, ids) in self.long.entries() {
            self.added_here += shared.insert_long(piece, hash, ids);
        }
        self.unpublished = false;
    }

    pub(super) fn flush_new_entries(&mut self) {
        if let Some((_, shared)) = &self.shared {
            self.added_here += shared.insert_all(&mut self.new_entries);
        }
    }

    pub(super) fn flush_counts(&mut self) {
        if let Some((_, shared)) = &self.shared {
            shared.record(self.hits, self.misses);
        }
        (self.hits, self.misses) = (0, 0);
    }
}

/// 128 KiB: a lookup-only state's own table (a state per streamed chunk).
const STREAMING_TABLE_BUCKETS: usize = 1 << 10;
pub(super) const STREAMING_LONG_TABLE_BYTES: usize = 128 << 10;
const PRIVATE_LONG_TABLE_BYTES: usize = 4 << 20;
const PRIVATE_TABLE_BUCKETS: usize = 1 << 18;
/// Merged pieces a state holds for the shared cache before adding them
/// (40 bytes each: 640 KiB).
pub(super) const NEW_ENTRIES_MAX: usize = 16 << 10;

/// The states of finished calls, lent again to later ones so that their own
/// tables stay warm: the encoder keeps one (`pooled_state`), and file
/// encoding one of private states for the length of a run. Bounded: a state
/// holds at most a `piece_table::MAX_BUCKETS` table (16 MiB), and no more are
/// kept than `KEPT_STATES_MAX` (in practice, as many as threads encoded at
/// once).
///
/// While only one state is ever lent at a time (one thread encoding, call
/// after call), that state's own table holds everything the shared cache
/// would, and adding each merge there cost a quarter of a first call
/// (`encode_file` example, 10 MB of Gutenberg: 47 against 62 ms with the
/// shared cache off) and its memory. So the shared level fills only once the
/// pool is `crowded`: two states lent at once (threads encoding together),
/// a batch started on several threads, or a streaming state made
/// (`Encoder::lookup_only_state`). Then each state adds its table once
/// (`EncodeState::publish_table`) and its merges from then on.
///
/// States are boxed: an `EncodeState` is 2.5 KB (the merge scratch's inline
/// buffers), and taking one out of the pool and back copied it four times, a
/// tenth of a call on one sentence.
#[derive(Default)]
pub struct StatePool {
    #[allow(clippy::vec_box)] // Boxed so that lending one moves a pointer (see above).
    kept: Mutex<Vec<Box<EncodeState>>>,
    /// States lent now.
    lent: AtomicUsize,
    crowded: AtomicBool,
}

const KEPT_STATES_MAX: usize = 64;
/// The merge buffers a kept state may hold (`Scratch::bytes`). 16 MiB holds
/// those of a 1 MB pre-token (9-13 MB on the rank sweep, `bpe/sweep.rs`), so
/// that calls on long pieces reuse them; at 1 MiB each such call allocated
/// them again and faulted in ~2,400 fresh pages (1 MB of one letter then cost
/// 5x the time of 0.25 MB, not 4x). The same order as the tables
/// a state already keeps (`MAX_BUCKETS`, `LONG_TABLE_BYTES`).
const KEPT_SCRATCH_MAX: usize = 16 << 20;

impl StatePool {
    #[allow(clippy::vec_box)]
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Box<EncodeState>>> {
        self.kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A kept state, or `new()` if none is; `keep` says whether it comes back
    /// when dropped.
    pub fn take(&self, new: impl FnOnce() -> EncodeState, keep: bool) -> PooledState<'_> {
        if self.lent.fetch_add(1, Ordering::AcqRel) > 0 {
            self.crowd();
        }
        let mut state = self.lock().pop().unwrap_or_else(|| Box::new(new()));
        state.pooled = true;
        PooledState { state: Some(state), pool: self, keep }
    }

    /// Whether two states were ever lent at once (or a streaming state was
    /// made): from then on the states fill the shared cache (see the top).
    pub fn crowded(&self) -> bool {
        self.crowded.load(Ordering::Relaxed)
    }

    pub(super) fn crowd(&self) {
        self.crowded.store(true, Ordering::Relaxed);
    }
}

/// A clone is another tokenizer: it starts with no states.
impl Clone for StatePool {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for StatePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StatePool({} kept)", self.lock().len())
    }
}

/// An `EncodeState` lent by a `StatePool`, returned on drop (if kept).
pub struct PooledState<'p> {
    state: Option<Box<EncodeState>>,
    pool: &'p StatePool,
    keep: bool,
}

impl Deref for PooledState<'_> {
    type Target = EncodeState;
    fn deref(&self) -> &EncodeState {
        self.state.as_ref().expect("present until dropped")
    }
}

impl DerefMut for PooledState<'_> {
    fn deref_mut(&mut self) -> &mut EncodeState {
        self.state.as_mut().expect("present until dropped")
    }
}

impl Drop for PooledState<'_> {
    fn drop(&mut self) {
        self.pool.lent.fetch_sub(1, Ordering::AcqRel);
        let Some(mut state) = self.state.take() else { return };
        state.flush_counts();
        if !self.keep {
            return;
        }
        if self.pool.crowded() {
            state.publish_table();
        }
        if state.scratch.bytes() > KEPT_SCRATCH_MAX {
            // A long piece (a 10 MB word) grew the merge buffers: free them
            // rather than hold them between calls.
            state.scratch = Scratch::default();
        }
        if state.batch_ids.capacity() * size_of::<u32>() > KEPT_SCRATCH_MAX {
            // A batch of text that is mostly one-byte tokens: as above.
            state.batch_ids = Vec::new();
        }
        let mut kept = self.pool.lock();
        if kept.len() < KEPT_STATES_MAX {
            kept.push(state);
        }
    }
}
