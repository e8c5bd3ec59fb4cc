//! A thread's own table of encoded pre-tokens: packed pre-token
//! (`util/packed_key.rs`) -> ids, the first place the encoder looks.
//!
//! Why not a `HashMap`: warm encoding is one lookup per pre-token, and half of
//! it stalled on the load of the key (hashbrown reads a control byte line, then
//! a slot line). Here a lookup reads one bucket: `WAYS` keys and their entries
//! in one 64-byte cache line, whose address the hash gives ahead, so the
//! encoder prefetches a batch of them (`probe.rs`) and the misses overlap. Two
//! ways in one line rather than four in two: one prefetch and one line a
//! piece, and the warm path compares two keys without a loop.
//!
//! Bounded: the table grows from `FIRST_BUCKETS` to `MAX_BUCKETS` (16 MiB; less
//! if asked), then keeps a few pieces aside (`stash`) and then evicts. A lookup
//! writes nothing: a new piece takes an empty way or else the second, so the
//! first way keeps the piece that came first (in text, the frequent ones come
//! first); moving a hit ahead in its bucket cost 8-10% of warm encoding. So
//! that a text that moves on is not held to the first ways of the old one, the
//! table starts over after `EVICTIONS_PER_SLOT` evictions per slot. Ids of
//! pieces with more than `INLINE_IDS` ids live in `overflow`; past
//! `OVERFLOW_IDS_PER_SLOT` per slot the table starts over.
//!
//! Seeds (`plant`): a token's bytes -> the token, put in before any text
//! (`seeds.rs`). A seed only takes an empty way of its own bucket, and a piece
//! of the text takes a seed's way before it spills, is stashed or evicts, so
//! seeds never crowd out what a text brought. The first lookup that finds a
//! seed makes it an entry like any other (`get`). Seeds are not handed to the
//! shared cache (`inline_entries`), which holds what was merged.
//!
//! Exact by construction: a pre-token's ids depend only on its bytes and the
//! vocabulary, and one table serves one `Encoder`.

mod probe;

pub use probe::Probe;

use rustc_hash::FxHashMap;

use crate::util::packed_key::hash_packed;

pub const INLINE_IDS: usize = 3;
const WAYS: usize = 2;
const FIRST_BUCKETS: usize = 256;
/// 256 Ki buckets of 2 slots of 32 bytes: 16 MiB, 512 Ki pieces. Warm encoding
/// of 10 MB of English (74 K distinct short pieces) ran at 180-198 MB/s with
/// a 2 MiB bound, whose evictions sent a fifth of the lookups to the shared
/// cache's locks, and at 224-238 MB/s with 8 MiB (`examples/encode_file`).
/// 16 MiB rather than 8: at 8, 10 MB of 20news (118 K distinct short pieces,
/// with GPT-2's 50 K seeds) had 1% of its pieces beside their bucket or
/// stashed, each a cache miss on the slow path (warm: 8% faster at 16).
pub const MAX_BUCKETS: usize = 1 << 18;
/// The size a table is grown to before seeds are planted in a call
/// (`reserve_for_seeds`): 8 MiB. Planted in a table at the bound, each worker
/// of a first 2-thread batch faulted in and zeroed 16 MiB (a sixth of the
/// call). A text that needs more grows the table.
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
/// one entry by its address (with each key beside its ids, picking the ids
/// took a vector blend of both ways).
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
        // On huge pages where allowed: a first call's doublings fault in up to 16 MiB (`util/huge_pages.rs`).
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

#[cfg(test)]
mod tests;
