//! A thread's own table of encoded pre-tokens: packed pre-token
//! (`packed.rs`) -> ids, the first place the encoder looks.
//!
//! Why not a `HashMap`: warm encoding is one lookup per pre-token, and
//! profiling showed half its time stalled on the load of the key (the
//! distinct pieces of a few MB of text are a few MiB of table, past the L2
//! cache, and hashbrown reads a control byte line and then a slot line).
//! Here a lookup reads one bucket: `WAYS` keys and their entries in one
//! 64-byte cache line, whose address the hash gives before the lookup happens, so the
//! encoder prefetches a batch of them ahead (`prefetch`) and the misses
//! overlap instead of queueing. Two ways in one line rather than four in two
//! (until the eighth session): one prefetch and one line a piece, and the
//! warm path compares two keys without a loop (`get_inline`).
//!
//! Bounded: the table grows from `FIRST_BUCKETS` to `MAX_BUCKETS` (16 MiB;
//! less if asked), then keeps a few pieces aside (`stash`) and then evicts.
//! A lookup writes nothing: a new piece takes
//! an empty way or else the second, so the first way keeps the piece that
//! came first, and in text the frequent pieces are the first to come; the
//! second way turns over with the rare ones. Moving a hit ahead in its bucket
//! (transposition, until the eighth session) cost 8-10% of warm encoding,
//! even done on one hit in eight (`examples/encode_file`, 10 MB of
//! Gutenberg: 434-452 against 480-497 MB/s without). So that a text that
//! moves on (English, then Chinese) is not held to the first ways of the
//! old one, the table starts over after `EVICTIONS_PER_SLOT` evictions per
//! slot: the merges of a few thousand frequent pieces again, once per
//! million misses at most. Ids of
//! pieces with more than `INLINE_IDS` ids live in `overflow`; when that
//! passes `OVERFLOW_IDS_PER_SLOT` per slot the table starts over (rare: 1% of English pieces
//! have more than 3 ids).
//!
//! Seeds (`plant`): entries put in before any text, a token's bytes -> the
//! token (`seeds.rs`), so that a first call finds the pieces that are whole
//! tokens without merging them. A seed only ever takes an empty way of its
//! own bucket, and a piece of the text takes a seed's way before it spills,
//! is stashed or evicts: seeds never crowd out what a text brought, and the
//! table's bound stays the text's. The warm path passes a seed on
//! (`SEED_LEN`) and the first lookup that finds one makes it an entry like
//! any other (`get`), so that a seed the text uses never gives way again.
//! They are not handed to the shared cache (`inline_entries`), which holds
//! what was merged.
//!
//! Exact by construction: a pre-token's ids depend only on its bytes and the
//! vocabulary, and one table serves one `Encoder`.

use rustc_hash::FxHashMap;

use crate::util::packed_key::hash_packed;
use crate::util::prefetch::prefetch_address;

pub const INLINE_IDS: usize = 3;
const WAYS: usize = 2;
const FIRST_BUCKETS: usize = 256;
/// 256 Ki buckets of 2 slots of 32 bytes: 16 MiB, 512 Ki pieces. Warm encoding
/// of 10 MB of English (74 K distinct short pieces) ran at 180-198 MB/s with
/// a 2 MiB bound, whose evictions sent a fifth of the lookups to the shared
/// cache's locks, and at 224-238 MB/s with 8 MiB (`examples/encode_file`).
/// From 8 to 16 MiB (seventeenth session): 10 MB of 20news (118 K distinct
/// short pieces, with GPT-2's 50 K seeds) had 1% of its pieces beside their
/// bucket or stashed, each a cache miss on the slow path; warm GPT-2 went
/// from 467-473 to 509-516 MB/s, on Gutenberg from 628-638 to 652-653, and
/// first calls did not change (medians of 6-8 processes).
pub const MAX_BUCKETS: usize = 1 << 18;
/// The size a table is grown to before seeds are planted in a call
/// (`reserve_for_seeds`): 8 MiB, the bound until the seventeenth session.
/// Planted in a table at the bound, each worker of a first 2-thread batch on
/// 10 MB of Gutenberg faulted in and zeroed 16 MiB: 51.7 -> 60.8 ms, 55.0
/// with this (medians of 10). A text that needs more grows the table.
pub const SEEDED_BUCKETS: usize = 1 << 17;
/// Overflow ids kept per slot of the largest table (2 MiB at `MAX_BUCKETS`;
/// 1% of English pieces have more than `INLINE_IDS` ids).
const OVERFLOW_IDS_PER_SLOT: usize = 1;
/// The stash holds at most one piece per this many slots (see `stash`).
const SLOTS_PER_STASHED: usize = 16;
/// Evictions per slot after which the table starts over (see the top).
const EVICTIONS_PER_SLOT: usize = 4;

/// What a slot holds for its key: 16 bytes, which the warm path copies
/// whole into the output and then keeps `len` ids of.
#[derive(Clone, Copy, Default)]
#[repr(C)]
pub struct Entry {
    /// The ids, or `[start in overflow, ..]` when there are more than `INLINE_IDS`.
    ids: [u32; INLINE_IDS],
    len: u32,
}

/// A seed's length (see `plant`): more than `INLINE_IDS`, so that the warm
/// path (`Probe::get_inline`) passes seeds to `PieceTable::get` with no test
/// of its own, and no piece's (it would need 4 G ids).
const SEED_LEN: u32 = u32::MAX;

impl Entry {
    fn new(ids: [u32; INLINE_IDS], len: usize) -> Self {
        Self { ids, len: len as u32 }
    }

    fn seed(id: u32) -> Self {
        let mut ids = [0; INLINE_IDS];
        ids[0] = id;
        Self { ids, len: SEED_LEN }
    }

    fn is_seed(&self) -> bool {
        self.len == SEED_LEN
    }

    /// How many ids the piece has.
    #[inline(always)]
    pub fn id_count(&self) -> usize {
        self.len as usize
    }

    /// Its ids, for an entry that holds them inline (`Probe::get_inline_at`
    /// gives only those).
    #[inline(always)]
    pub fn inline_ids(&self) -> &[u32] {
        &self.ids[..self.id_count().min(INLINE_IDS)]
    }

    /// The entry as four words: the inline ids, then the length.
    #[inline(always)]
    pub fn words(&self) -> *const u32 {
        (self as *const Self).cast()
    }
}

/// One cache line: a lookup touches nothing else. The keys first, then
/// their entries, so that the warm path compares two keys and then takes
/// one entry by its address (until the tenth session each key sat beside its
/// ids, and picking the ids took a vector blend of both ways).
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Bucket {
    /// Packed pre-tokens; 0 is an empty slot (packed keys of 2 bytes or more
    /// are never 0: the length is in the top byte).
    keys: [u128; WAYS],
    entries: [Entry; WAYS],
}

/// A key and its entry, as they go into a bucket.
#[derive(Clone, Copy)]
struct Slot {
    key: u128,
    entry: Entry,
}

impl Bucket {
    fn slots(&self) -> impl Iterator<Item = Slot> + '_ {
        self.keys.iter().zip(&self.entries).map(|(&key, &entry)| Slot { key, entry })
    }
}

pub const BUCKET_BYTES: usize = std::mem::size_of::<Bucket>();

pub struct PieceTable {
    buckets: Vec<Bucket>,
    /// The most buckets it grows to (a power of two).
    max_buckets: usize,
    /// `64 - log2(buckets.len())`: the bucket is the hash's top bits.
    shift: u32,
    entries: usize,
    /// Pieces evicted since the table last started over.
    evictions: usize,
    /// Pieces it let go, evicted or at a start over (see `dropped_few`).
    dropped: usize,
    /// One bit a bucket: whether a key of this bucket went to the bucket
    /// beside it (`place`). A miss looks beside only then: on a first call
    /// every distinct piece misses, and reading the line beside each (never
    /// prefetched) was 6% of the call.
    spilled: Vec<u64>,
    /// Pieces whose bucket and the one beside were full when they came, once
    /// the table is as large as it may grow, up to one per
    /// `SLOTS_PER_STASHED` slots; then the table evicts. 20news has 118 K
    /// distinct short pieces in 10 MB: in 128 Ki buckets 3% found both full,
    /// and evicted, they were merged again on every warm call (6% of it).
    /// A stashed piece costs its lookup in this map on each call instead.
    stash: FxHashMap<u128, Entry>,
    /// One bit a bucket: whether a key of this bucket is in the stash.
    stashed: Vec<u64>,
    overflow: Vec<u32>,
}

impl Default for PieceTable {
    fn default() -> Self {
        Self::with_max_buckets(MAX_BUCKETS)
    }
}

impl PieceTable {
    /// A table that grows to at most `max_buckets` (rounded down to a power
    /// of two, at least two: the bucket index is the hash shifted right by
    /// `64 - log2(buckets)`, and a shift by 64 would overflow).
    pub fn with_max_buckets(max_buckets: usize) -> Self {
        let max_buckets = 1 << max_buckets.max(2).ilog2();
        Self {
            buckets: Vec::new(),
            max_buckets,
            shift: 0,
            entries: 0,
            evictions: 0,
            dropped: 0,
            spilled: Vec::new(),
            stash: FxHashMap::default(),
            stashed: Vec::new(),
            overflow: Vec::new(),
        }
    }

    /// An equal table in memory of its own, its buckets on huge pages where
    /// allowed (as `resize` puts them): a batch worker's new state starts
    /// from a kept one this way (`EncodeState::start_from`).
    pub fn copy(&self) -> Self {
        let mut buckets = crate::util::huge_pages::vec_with_capacity(self.buckets.len());
        buckets.extend_from_slice(&self.buckets);
        Self {
            buckets,
            spilled: self.spilled.clone(),
            stash: self.stash.clone(),
            stashed: self.stashed.clone(),
            overflow: self.overflow.clone(),
            ..*self
        }
    }

    /// Pieces it holds (seeds included).
    #[cfg(test)]
    pub fn pieces_held(&self) -> usize {
        self.entries
    }

    /// Bytes allocated (the buckets and the overflow ids).
    pub fn bytes(&self) -> usize {
        let bitmaps = (self.spilled.capacity() + self.stashed.capacity()) * 8;
        // A map entry: its key and entry, and a control byte and slack.
        let stash = self.stash.capacity() * (std::mem::size_of::<(u128, Entry)>() + 8);
        self.buckets.capacity() * BUCKET_BYTES + bitmaps + stash + self.overflow.capacity() * 4
    }

    #[inline]
    fn bucket_index(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize
    }

    /// The table as the warm path reads it (`Probe`), for a run of lookups
    /// with no insert between them.
    #[inline(always)]
    pub fn probe(&self) -> Probe<'_> {
        if self.buckets.is_empty() {
            // Two empty buckets, so that any hash's top bit is an index: a
            // `Probe` then never checks its index (see `Probe::bucket_at`).
            const EMPTY: Bucket = Bucket { keys: [0; WAYS], entries: [Entry { ids: [0; INLINE_IDS], len: 0 }; WAYS] };
            static NO_BUCKETS: [Bucket; 2] = [EMPTY; 2];
            return Probe { buckets: &NO_BUCKETS, shift: 63, overflow: &[] };
        }
        Probe { buckets: &self.buckets, shift: self.shift, overflow: &self.overflow }
    }

    /// Append the ids of `key` to `out` if the table has them. A seed found
    /// becomes a piece of the text (see the top).
    #[inline]
    pub fn get(&mut self, key: u128, hash: u64, out: &mut Vec<u32>) -> bool {
        if self.buckets.is_empty() {
            return false;
        }
        let Some(entry) = self.find(key, hash) else {
            return false;
        };
        if entry.is_seed() {
            out.push(entry.ids[0]);
            self.promote(key, hash);
            return true;
        }
        if entry.id_count() == 1 {
            // Most pieces are one token: a push, not a variable-length copy.
            out.push(entry.ids[0]);
        } else {
            out.extend_from_slice(self.ids_of(&entry));
        }
        true
    }

    /// Grow now to hold about `pieces` distinct pieces at most half full,
    /// within the bound; never shrinks (see `EncodeState::expect_text`).
    pub fn reserve(&mut self, pieces: usize) {
        let buckets = pieces.next_power_of_two().max(FIRST_BUCKETS).min(self.max_buckets);
        if buckets > self.buckets.len() {
            self.resize(buckets);
        }
    }

    /// Put in `key` -> `id` as a seed (see the top), if its bucket has an
    /// empty way: never grows the table (`reserve` first), never displaces.
    pub fn plant(&mut self, key: u128, hash: u64, id: u32) {
        debug_assert!(key != 0);
        if !self.buckets.is_empty() {
            self.place(Slot { key, entry: Entry::seed(id) }, hash);
        }
    }

    /// Seeds it holds now (cleared or displaced ones gone).
    pub fn seeds(&self) -> usize {
        self.buckets.iter().flat_map(|bucket| &bucket.entries).filter(|entry| entry.is_seed()).count()
    }

    /// Grow now to `SEEDED_BUCKETS` (within the bound), the size seeds are
    /// planted in during a call (see `EncodeState::plant`).
    pub fn reserve_for_seeds(&mut self) {
        self.reserve(SEEDED_BUCKETS);
    }

    /// Grow now to the bound (`Encoder::seed_tables`, before it plants seeds).
    pub fn reserve_all(&mut self) {
        self.reserve(self.max_buckets);
    }

    /// Remember the ids of `key`, evicting the last way of its bucket if full.
    pub fn insert(&mut self, key: u128, hash: u64, ids: &[u32]) {
        debug_assert!(key != 0 && !ids.is_empty());
        let slots = self.max_buckets * WAYS;
        let overflow_full = ids.len() > INLINE_IDS && self.overflow.len() + ids.len() > slots * OVERFLOW_IDS_PER_SLOT;
        if overflow_full || self.evictions > slots * EVICTIONS_PER_SLOT {
            self.clear();
        }
        if self.buckets.is_empty() {
            self.resize(FIRST_BUCKETS.min(self.max_buckets));
        } else if self.buckets.len() < self.max_buckets
            && (self.entries * 2 >= self.buckets.len() * WAYS || self.no_room(key, hash))
        {
            // Half full, or `key` would evict: grow rather than evict while
            // the bound allows.
            self.resize(self.buckets.len() * 2);
        }
        let mut inline = [0; INLINE_IDS];
        if ids.len() <= INLINE_IDS {
            inline[..ids.len()].copy_from_slice(ids);
        } else {
            inline[0] = self.overflow.len() as u32;
            self.overflow.extend_from_slice(ids);
        }
        self.place(Slot { key, entry: Entry::new(inline, ids.len()) }, hash);
    }

    /// Where a key may be: its bucket, then the bucket beside it (the other
    /// half of its 128-byte pair), which takes the keys of a full bucket
    /// before anything is evicted, if it has taken any of this bucket's
    /// (`spilled`). With two ways, 74 K pieces in 128 Ki buckets leave 2% of
    /// the buckets with three or more; evicting there sent a few thousand
    /// pieces to the shared cache on every warm call (11% of `perf`
    /// samples). The warm path (`get_inline`) looks in the first bucket
    /// only; a key beside it is found here, on the slower path.
    fn slots_of(&self, hash: u64) -> impl Iterator<Item = Slot> + '_ {
        let index = self.bucket_index(hash);
        let beside = self.has_spilled(index).then(|| self.buckets[index ^ 1].slots());
        self.buckets[index].slots().chain(beside.into_iter().flatten())
    }

    /// The entry of `key`: in its buckets (`slots_of`), else in the stash
    /// if a key of its bucket went there.
    fn find(&self, key: u128, hash: u64) -> Option<Entry> {
        if let Some(slot) = self.slots_of(hash).find(|slot| slot.key == key) {
            return Some(slot.entry);
        }
        bit(&self.stashed, self.bucket_index(hash)).then(|| self.stash.get(&key).copied()).flatten()
    }

    /// Make the seed `key` an entry like those the text brought: one id.
    fn promote(&mut self, key: u128, hash: u64) {
        let index = self.bucket_index(hash);
        for index in [index, index ^ 1] {
            let bucket = &mut self.buckets[index];
            if let Some(way) = bucket.keys.iter().position(|&resident| resident == key) {
                bucket.entries[way].len = 1;
                return;
            }
        }
    }

    fn has_spilled(&self, index: usize) -> bool {
        bit(&self.spilled, index)
    }

    /// Whether `key`'s bucket and the one beside it are full of other keys
    /// (the one beside is read only when its own is full).
    fn no_room(&self, key: u128, hash: u64) -> bool {
        let index = self.bucket_index(hash);
        let [home, beside] = [index, index ^ 1].map(|index| self.buckets[index].slots());
        home.chain(beside).all(|resident| resident.key != 0 && resident.key != key && !resident.entry.is_seed())
    }

    /// Put `slot` in an empty way of its bucket, else in place of a seed
    /// there, else in an empty way or a seed's of the bucket beside it (see
    /// `slots_of`), else in the stash, else in place of its bucket's last way. A seed
    /// takes an empty way of its bucket or nothing (see the top).
    fn place(&mut self, slot: Slot, hash: u64) {
        let home = self.bucket_index(hash);
        let free = |bucket: &Bucket| bucket.keys.iter().position(|&resident| resident == 0 || resident == slot.key);
        let free_or_seed = |bucket: &Bucket| free(bucket).or_else(|| bucket.entries.iter().position(Entry::is_seed));
        let (index, way) = if let Some(way) = free(&self.buckets[home]) {
            (home, way)
        } else if slot.entry.is_seed() {
            return;
        } else if let Some(way) = free_or_seed(&self.buckets[home]) {
            (home, way)
        } else if let Some(way) = free_or_seed(&self.buckets[home ^ 1]) {
            set_bit(&mut self.spilled, home);
            (home ^ 1, way)
        } else if self.buckets.len() == self.max_buckets
            && (self.stash.len() < self.max_buckets * WAYS / SLOTS_PER_STASHED || self.stash.contains_key(&slot.key))
        {
            set_bit(&mut self.stashed, home);
            if self.stash.insert(slot.key, slot.entry).is_none() {
                self.entries += 1;
            }
            return;
        } else {
            self.evictions += 1;
            self.dropped += 1;
            (home, WAYS - 1)
        };
        let bucket = &mut self.buckets[index];
        if bucket.keys[way] == 0 {
            self.entries += 1;
        }
        (bucket.keys[way], bucket.entries[way]) = (slot.key, slot.entry);
    }

    fn resize(&mut self, buckets: usize) {
        // On huge pages where allowed: a first call's doublings fault in up to 16 MiB (`huge_pages.rs`).
        let mut fresh = crate::util::huge_pages::vec_with_capacity(buckets);
        fresh.resize(buckets, Bucket::default());
        let old = std::mem::replace(&mut self.buckets, fresh);
        self.spilled = vec![0; buckets.div_ceil(64)];
        self.stashed = vec![0; buckets.div_ceil(64)];
        let stashed = std::mem::take(&mut self.stash);
        self.shift = 64 - buckets.ilog2();
        self.entries = 0;
        // Ways in order, so each bucket's frequent pieces stay ahead.
        for slot in old.iter().flat_map(Bucket::slots).filter(|slot| slot.key != 0) {
            self.place(slot, hash_packed(slot.key));
        }
        for (key, entry) in stashed {
            self.place(Slot { key, entry }, hash_packed(key));
        }
    }

    /// Every key whose ids overflow (more than `INLINE_IDS`), with its ids.
    pub fn overflow_entries(&self) -> impl Iterator<Item = (u128, &[u32])> {
        self.pieces().filter(|(_, ids)| ids.len() > INLINE_IDS)
    }

    /// Every key whose ids are inline, with its ids.
    pub fn inline_entries(&self) -> impl Iterator<Item = (u128, &[u32])> {
        self.pieces().filter(|(_, ids)| ids.len() <= INLINE_IDS)
    }

    /// Every piece held (in the buckets or the stash) with its ids; no seed.
    fn pieces(&self) -> impl Iterator<Item = (u128, &[u32])> {
        let slots = self.buckets.iter().flat_map(|bucket| bucket.keys.iter().zip(&bucket.entries));
        let held = slots.chain(&self.stash).filter(|(&key, entry)| key != 0 && !entry.is_seed());
        held.map(|(&key, entry)| (key, self.ids_of(entry)))
    }

    /// The ids of a piece's entry: inline, or in `overflow`.
    fn ids_of<'a>(&'a self, entry: &'a Entry) -> &'a [u32] {
        let len = entry.id_count();
        if len <= INLINE_IDS {
            &entry.ids[..len]
        } else {
            let start = entry.ids[0] as usize;
            &self.overflow[start..start + len]
        }
    }

    /// Whether it let go of few of the pieces it was given (evicted, or at
    /// a start over): under one in 16 of those it holds. With two ways a
    /// table of 74 K pieces evicts a few hundred in 128 Ki buckets.
    pub fn dropped_few(&self) -> bool {
        self.dropped * 16 < self.entries
    }

    fn clear(&mut self) {
        self.dropped += self.entries;
        self.buckets.clear();
        self.spilled.clear();
        self.stash.clear();
        self.stashed.clear();
        (self.entries, self.evictions) = (0, 0);
        self.overflow.clear();
    }
}

fn bit(bits: &[u64], index: usize) -> bool {
    bits[index / 64] >> (index % 64) & 1 != 0
}

fn set_bit(bits: &mut [u64], index: usize) {
    bits[index / 64] |= 1 << (index % 64);
}

/// A `PieceTable`'s buckets and shift, copied out of it so that a loop of
/// lookups keeps them in registers: through `&PieceTable` they were loaded
/// again for every piece (the compiler cannot tell that the ids written in
/// between do not change them).
#[derive(Clone, Copy)]
pub struct Probe<'t> {
    buckets: &'t [Bucket],
    shift: u32,
    overflow: &'t [u32],
}

impl<'t> Probe<'t> {
    /// The bucket of `hash`, as an index for `get_inline_at` and
    /// `prefetch_at`: a batch works it out once as it packs its pieces
    /// (shifting by a register was two instructions more on each of the warm
    /// path's two uses of it). Below `1 << (64 - shift)`, the number of
    /// buckets (`resize`, and the two empty buckets of an empty table with
    /// shift 63).
    #[inline(always)]
    pub fn bucket_index(self, hash: u64) -> u32 {
        (hash >> self.shift) as u32
    }

    /// The shift its bucket indexes were worked out with: the same shift
    /// means the same buckets (a table only ever has `1 << (64 - shift)`).
    #[inline(always)]
    pub fn shift(self) -> u32 {
        self.shift
    }

    /// Start loading bucket `index` into cache level `LEVEL` (`prefetch::L1`
    /// or `L2`), so that a lookup some pieces later finds it there. A hint
    /// only: no effect on results, and an index past the buckets is only a
    /// wasted hint.
    #[inline(always)]
    pub fn prefetch_at<const LEVEL: i32>(self, index: u32) {
        prefetch_address::<LEVEL, _>(self.buckets.as_ptr().wrapping_add(index as usize));
    }

    /// Bucket `index`, read without a bounds check (two a piece on the warm
    /// path, each a compare and a branch).
    ///
    /// # Safety
    /// `index` came from `bucket_index` of a probe with this probe's `shift`.
    #[inline(always)]
    unsafe fn bucket_at(self, index: u32) -> &'t Bucket {
        debug_assert!((index as usize) < self.buckets.len());
        // SAFETY: `bucket_index` with this shift is below `buckets.len()`.
        unsafe { self.buckets.get_unchecked(index as usize) }
    }

    /// The entry of `key` in bucket `index`, when the table has its ids
    /// inline (at most `INLINE_IDS`): the warm path, which copies the whole
    /// entry and keeps `len` ids of it (see `encode/mod.rs`). `None` for
    /// anything else: a miss, or a piece whose ids overflow
    /// (`get_overflowed_at`) or a seed, which `PieceTable::get` then answers.
    /// `key` must not be 0 (an empty slot's). A lookup writes nothing (see
    /// the eviction policy at the top).
    ///
    /// # Safety
    /// As for `bucket_at`.
    #[inline(always)]
    pub unsafe fn get_inline_at(self, key: u128, index: u32) -> Option<&'t Entry> {
        // SAFETY: the caller vouches for `index`.
        Self::entry_in(unsafe { self.bucket_at(index) }, key)
    }

    /// The ids of `key` when its entry in bucket `index` keeps them in the
    /// overflow (more than `INLINE_IDS`): what the warm path asks after
    /// `get_inline_at` missed, 0.8% of English pieces. `None` for a miss or
    /// a seed.
    ///
    /// # Safety
    /// As for `bucket_at`.
    #[inline(always)]
    pub unsafe fn get_overflowed_at(self, key: u128, index: u32) -> Option<&'t [u32]> {
        // SAFETY: the caller vouches for `index`.
        let bucket = unsafe { self.bucket_at(index) };
        let way = bucket.keys.iter().position(|&resident| resident == key)?;
        let entry = &bucket.entries[way];
        let (len, start) = (entry.id_count(), entry.ids[0] as usize);
        (len > INLINE_IDS && !entry.is_seed()).then(|| &self.overflow[start..start + len])
    }

    #[inline(always)]
    fn entry_in(bucket: &'t Bucket, key: u128) -> Option<&'t Entry> {
        debug_assert!(key != 0);
        let (first, second) = (bucket.keys[0] == key, bucket.keys[1] == key);
        // The way is an index, not a branch: which way holds a piece is as
        // good as random, and a branch mispredicted.
        let entry = &bucket.entries[second as usize];
        ((first | second) & (entry.id_count() <= INLINE_IDS)).then_some(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::packed_key::pack;

    fn key(i: u32) -> u128 {
        pack(format!("p{i}").as_bytes()).unwrap()
    }

    fn lookup(table: &mut PieceTable, i: u32) -> Option<Vec<u32>> {
        let mut out = Vec::new();
        let key = key(i);
        table.get(key, hash_packed(key), &mut out).then_some(out)
    }

    /// What the warm path finds for `key` (`Probe::get_inline_at`).
    fn inline_entry(table: &PieceTable, key: u128) -> Option<Entry> {
        let probe = table.probe();
        // SAFETY: the bucket index is this probe's.
        unsafe { probe.get_inline_at(key, probe.bucket_index(hash_packed(key))) }.copied()
    }

    fn ids(i: u32) -> Vec<u32> {
        (0..i % 6 + 1).map(|j| i * 10 + j).collect()
    }

    #[test]
    fn bucket_is_one_cache_line() {
        assert_eq!(BUCKET_BYTES, 64);
        assert_eq!(std::mem::align_of::<Bucket>(), 64);
    }

    #[test]
    fn returns_what_was_inserted_and_stays_bounded() {
        let mut table = PieceTable::default();
        for i in 0..1000 {
            let k = key(i);
            table.insert(k, hash_packed(k), &ids(i));
        }
        for i in 0..1000 {
            assert_eq!(lookup(&mut table, i), Some(ids(i)), "piece {i}");
        }
        // Far more pieces than fit: memory stops growing, what is kept is right.
        // (Ids that fit inline: overflowed ones would make it start over.)
        let far_more = MAX_BUCKETS as u32 * 4;
        let inline_ids = |i: u32| ids(i)[..INLINE_IDS.min(ids(i).len())].to_vec();
        for i in 0..far_more {
            let k = key(i);
            table.insert(k, hash_packed(k), &inline_ids(i));
        }
        let slots = MAX_BUCKETS * WAYS;
        assert!(table.buckets.len() == MAX_BUCKETS && table.entries <= slots + slots / SLOTS_PER_STASHED);
        assert!(
            table.bytes() <= MAX_BUCKETS * BUCKET_BYTES + MAX_BUCKETS * WAYS * OVERFLOW_IDS_PER_SLOT * 8,
            "{}",
            table.bytes()
        );
        let kept =
            (0..far_more).filter(|&i| lookup(&mut table, i).inspect(|got| assert_eq!(*got, inline_ids(i))).is_some());
        assert!(kept.count() > MAX_BUCKETS * WAYS / 4, "the table keeps a useful share");
    }

    #[test]
    fn reserving_keeps_what_it_holds_within_the_bound_and_never_shrinks() {
        let mut table = PieceTable::with_max_buckets(1 << 12);
        for i in 0..300 {
            table.insert(key(i), hash_packed(key(i)), &ids(i));
        }
        let before = table.buckets.len();
        table.reserve(3000);
        assert_eq!(table.buckets.len(), 4096);
        table.reserve(1 << 20);
        assert_eq!(table.buckets.len(), 4096, "bounded");
        table.reserve(10);
        assert_eq!(table.buckets.len(), 4096, "never shrinks");
        assert!(before < 4096);
        for i in 0..300 {
            assert_eq!(lookup(&mut table, i), Some(ids(i)), "piece {i}");
        }
        let mut empty = PieceTable::default();
        empty.reserve(0);
        assert_eq!(empty.buckets.len(), FIRST_BUCKETS);
    }

    /// The warm path's two lookups by bucket index: inline ids from one,
    /// overflowed ids from the other, a seed or a miss from neither.
    #[test]
    fn the_warm_path_finds_inline_and_overflowed_ids_and_passes_seeds_on() {
        let mut table = PieceTable::with_max_buckets(1 << 8);
        table.reserve_for_seeds();
        let (seed, short, long, absent) = (key(1), key(2), key(3), key(4));
        table.plant(seed, hash_packed(seed), 11);
        table.insert(short, hash_packed(short), &[5, 6]);
        table.insert(long, hash_packed(long), &[7, 8, 9, 10, 11]);
        let probe = table.probe();
        let lookups = |key: u128| {
            let bucket = probe.bucket_index(hash_packed(key));
            // SAFETY: the bucket index is this probe's.
            unsafe {
                let inline = probe.get_inline_at(key, bucket).map(|entry| entry.ids[..entry.id_count()].to_vec());
                (inline, probe.get_overflowed_at(key, bucket).map(<[u32]>::to_vec))
            }
        };
        assert_eq!(lookups(short), (Some(vec![5, 6]), None));
        assert_eq!(lookups(long), (None, Some(vec![7, 8, 9, 10, 11])));
        assert_eq!(lookups(seed), (None, None), "a seed goes to `get`, which makes it a piece");
        assert_eq!(lookups(absent), (None, None));
    }

    #[test]
    fn a_seed_is_found_off_the_warm_path_and_then_is_a_piece_like_any() {
        let mut table = PieceTable::with_max_buckets(1 << 8);
        table.reserve_for_seeds();
        let (seed, hash) = (key(7), hash_packed(key(7)));
        table.plant(seed, hash, 70);
        assert_eq!(table.seeds(), 1);
        assert!(inline_entry(&table, seed).is_none(), "the warm path passes seeds on");
        assert_eq!(lookup(&mut table, 7), Some(vec![70]));
        assert_eq!(table.seeds(), 0, "found once, it is the text's");
        let entry = inline_entry(&table, seed).expect("now on the warm path");
        assert_eq!((entry.id_count(), entry.ids[0]), (1, 70));
        assert_eq!(table.inline_entries().count(), 1, "and handed to the shared cache");
    }

    #[test]
    fn seeds_give_way_to_the_text_and_never_push_it_aside() {
        // Two buckets: keys of bucket 0 only, one id each.
        let mut table = PieceTable::with_max_buckets(2);
        table.reserve_for_seeds();
        let home_zero: Vec<u32> = (0..).filter(|&i| hash_packed(key(i)) >> 63 == 0).take(6).collect();
        let plant = |table: &mut PieceTable, i: u32| table.plant(key(i), hash_packed(key(i)), i);
        let one_id = |table: &mut PieceTable, i: u32| table.insert(key(i), hash_packed(key(i)), &[i]);
        for &i in &home_zero[..3] {
            plant(&mut table, i);
        }
        assert_eq!(table.seeds(), 2, "a seed takes an empty way of its bucket or nothing");
        assert!(table.inline_entries().next().is_none(), "seeds are not handed to the shared cache");
        // The text's pieces take the seeds' ways of their own bucket: none
        // spills beside while a seed is there to give way.
        one_id(&mut table, home_zero[3]);
        one_id(&mut table, home_zero[4]);
        assert_eq!(table.seeds(), 0);
        assert!(!table.has_spilled(0));
        for &i in &home_zero[3..5] {
            assert_eq!(inline_entry(&table, key(i)).map(|e| e.ids[0]), Some(i));
        }
        // The seeds that gave way are gone, not wrong.
        for &i in &home_zero[..3] {
            assert_eq!(lookup(&mut table, i), None);
        }
        // A seed never takes a way that holds a piece.
        plant(&mut table, home_zero[5]);
        assert_eq!(lookup(&mut table, home_zero[5]), None);
    }

    #[test]
    fn a_full_bucket_spills_beside_and_a_miss_looks_there_only_then() {
        // Two buckets: the hash's top bit picks one. Keys of bucket 0 only,
        // one id each (a table this small starts over at its first overflow).
        let mut table = PieceTable::with_max_buckets(2);
        let home_zero: Vec<u32> = (0..).filter(|&i| hash_packed(key(i)) >> 63 == 0).take(5).collect();
        let one_id = |table: &mut PieceTable, i: u32| table.insert(key(i), hash_packed(key(i)), &[i]);
        for &i in &home_zero[..4] {
            one_id(&mut table, i);
        }
        assert_eq!(table.buckets.len(), 2, "bounded at two buckets");
        assert!(table.has_spilled(0) && !table.has_spilled(1));
        for &i in &home_zero[..4] {
            assert_eq!(lookup(&mut table, i), Some(vec![i]), "piece {i}, two of them beside their bucket");
        }
        assert_eq!(lookup(&mut table, home_zero[4]), None);
        assert!(table.dropped_few());
        // A fifth key of bucket 0 evicts; every key still found has its own id.
        one_id(&mut table, home_zero[4]);
        assert_eq!(table.dropped, 1);
        let found =
            home_zero.iter().filter(|&&i| lookup(&mut table, i).inspect(|got| assert_eq!(*got, vec![i])).is_some());
        assert_eq!(found.count(), 4);
    }

    #[test]
    fn at_its_largest_a_full_bucket_stashes_before_it_evicts() {
        // 64 buckets, 128 slots: a stash of 8. Keys of bucket 0 only.
        let mut table = PieceTable::with_max_buckets(64);
        let home_zero: Vec<u32> = (0..).filter(|&i| hash_packed(key(i)) >> 58 == 0).take(13).collect();
        for &i in &home_zero {
            table.insert(key(i), hash_packed(key(i)), &ids(i));
        }
        assert_eq!((table.buckets.len(), table.stash.len(), table.dropped), (64, 8, 1));
        // Four in the two buckets, eight in the stash, one evicted (the
        // second way's): every key still found has its own ids.
        let kept: Vec<u32> = home_zero
            .iter()
            .copied()
            .filter(|&i| lookup(&mut table, i).inspect(|got| assert_eq!(*got, ids(i))).is_some())
            .collect();
        assert_eq!(kept.len(), 12);
        let inline = kept.iter().filter(|&&i| ids(i).len() <= INLINE_IDS).count();
        assert_eq!(table.inline_entries().count(), inline);
        // A key of another bucket is not looked for in the stash.
        assert!(!bit(&table.stashed, 1) && bit(&table.stashed, 0));
    }

    #[test]
    fn a_text_that_moves_on_gets_the_first_ways() {
        // 64 buckets, 128 slots: an old text fills them, then a new one of
        // 100 pieces is encoded again and again (a piece is inserted when
        // missed, as the encoder does; one id each, so that no overflow
        // makes the table start over).
        let mut table = PieceTable::with_max_buckets(64);
        let encode = |table: &mut PieceTable, i: u32| {
            if lookup(table, i).is_none() {
                let k = key(i);
                table.insert(k, hash_packed(k), &[i]);
            }
        };
        for i in 0..1000 {
            encode(&mut table, i);
        }
        for _ in 0..50 {
            for i in 5000..5100 {
                encode(&mut table, i);
            }
        }
        // Held to the second ways, at most 64 of the new pieces would fit.
        let kept = (5000..5100).filter(|&i| lookup(&mut table, i).is_some()).count();
        assert!(kept > 70, "only {kept} of the new text's 100 pieces kept");
    }

    #[test]
    fn frequent_pieces_survive_a_stream_of_new_ones() {
        let mut table = PieceTable::default();
        let frequent: Vec<u32> = (0..2000).collect();
        for round in 0..200_000u32 {
            let i = frequent[round as usize % frequent.len()];
            if lookup(&mut table, i).is_none() {
                let k = key(i);
                table.insert(k, hash_packed(k), &ids(i));
            }
            for new in 0..4 {
                let k = key(1_000_000 + round * 4 + new);
                table.insert(k, hash_packed(k), &[round]);
            }
        }
        let kept = frequent.iter().filter(|&&i| lookup(&mut table, i).is_some()).count();
        assert!(kept * 10 >= frequent.len() * 9, "only {kept} of {} frequent pieces kept", frequent.len());
    }
}
