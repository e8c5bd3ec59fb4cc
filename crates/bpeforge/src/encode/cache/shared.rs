//! The encoder's shared piece cache: packed pre-token (`util/packed_key.rs`) -> ids,
//! kept across calls and shared by every thread that encodes with one
//! `Encoder`, in memory bounded by a byte budget.
//!
//! Layout: a fixed number of shards, each behind its own mutex (no global
//! lock; two threads meet only when they touch the same shard). A shard is a
//! set-associative table: buckets of `WAYS` slots of 32 bytes, a slot holding
//! the 16-byte key, up to `MAX_IDS` ids, their count and a frequency counter.
//! A shard starts small and doubles (rehashing) up to its share of the
//! budget, so memory follows use; the bytes of the tables never exceed the
//! budget.
//!
//! Eviction is LFU with aging inside a bucket: a hit raises the slot's
//! counter (to `FREQ_MAX`), a new entry starts at 1, and a full bucket
//! evicts its lowest counter after lowering every counter of the bucket by
//! that much. A piece seen once leaves before the frequent ones, and a
//! frequent piece that stops being used ages out.
//!
//! Pieces a slot cannot hold (more than 15 bytes, or more than `MAX_IDS`
//! ids) go to a second level keyed by their bytes (`shared_long.rs`), an
//! eighth of the budget.
//!
//! Exact by construction: a pre-token's ids depend only on its bytes and the
//! vocabulary, and one cache belongs to one `Encoder`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::encode::cache::shared_long::SharedLongPieces;
use crate::util::packed_key::hash_packed;
use crate::util::prefetch::prefetch;

/// Default budget: 64 MiB holds 2 Mi pre-tokens of up to 15 bytes. The
/// distinct short pre-tokens of 10 MB of English are 74 K (2.3 MiB), of
/// 500 MB a few hundred thousand, so this keeps a whole corpus's working set
/// while staying small next to a laptop's memory (and it is only reached
/// when that many distinct pieces were seen: tables grow with use).
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;

/// Ids kept per entry: 99% of GPT-2's short pre-token occurrences in English,
/// 89% in the multilingual corpus, have at most 3. Pieces with more are
/// cached only per call.
pub const MAX_IDS: usize = 3;
const WAYS: usize = 8;
const MAX_SHARDS: usize = 64;
/// Buckets a shard starts with (4 KiB).
const FIRST_BUCKETS: usize = 16;
const FREQ_MAX: u32 = 3;
/// Budgets below this keep no second level (`shared_long.rs`): its entries
/// are tens to hundreds of bytes.
const LONG_LEVEL_MIN: usize = 64 << 10;

#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Slot {
    /// Packed pre-token; 0 is an empty slot (a packed key has its length in
    /// the top byte, and pieces of 0 or 1 bytes are never cached).
    key: u128,
    ids: [u32; MAX_IDS],
    /// Number of ids in the low byte, frequency counter in the next.
    meta: u32,
}

pub const SLOT_BYTES: usize = std::mem::size_of::<Slot>();
const BUCKET_BYTES: usize = WAYS * SLOT_BYTES;

impl Slot {
    #[inline]
    fn len(&self) -> usize {
        (self.meta & 0xFF) as usize
    }
    #[inline]
    fn freq(&self) -> u32 {
        self.meta >> 8
    }
    #[inline]
    fn set_freq(&mut self, freq: u32) {
        self.meta = (self.meta & 0xFF) | freq << 8;
    }
}

#[derive(Default)]
struct Shard {
    table: Vec<Slot>,
    entries: usize,
    max_buckets: usize,
}

/// Cache-line aligned, so that two shards' locks never share a line.
#[repr(align(64))]
struct Padded(Mutex<Shard>);

impl Shard {
    #[inline]
    fn bucket(&self, hash: u64) -> std::ops::Range<usize> {
        let buckets = (self.table.len() / WAYS) as u64;
        // Lemire's multiply-shift range reduction: any bucket count, no division.
        let start = (((hash & 0xFFFF_FFFF) * buckets) >> 32) as usize * WAYS;
        start..start + WAYS
    }

    fn get(&mut self, key: u128, hash: u64, out: &mut Vec<u32>) -> bool {
        if self.table.is_empty() {
            return false;
        }
        let range = self.bucket(hash);
        for slot in &mut self.table[range] {
            if slot.key == key {
                out.extend_from_slice(&slot.ids[..slot.len()]);
                let freq = slot.freq();
                if freq < FREQ_MAX {
                    slot.set_freq(freq + 1);
                }
                return true;
            }
        }
        false
    }

    fn insert(&mut self, key: u128, hash: u64, ids: &[u32]) {
        if self.table.is_empty() {
            self.table = vec![Slot::default(); FIRST_BUCKETS.min(self.max_buckets) * WAYS];
        } else if self.table.len() < self.max_buckets * WAYS
            && (self.entries * 4 >= self.table.len() * 3 || self.bucket_full(key, hash))
        {
            // Three quarters full, or this bucket is: grow rather than evict
            // while the budget allows.
            self.grow();
        }
        let mut slot = Slot { key, ids: [0; MAX_IDS], meta: ids.len() as u32 | 1 << 8 };
        slot.ids[..ids.len()].copy_from_slice(ids);
        self.place(slot, hash);
    }

    /// Ask for the lines of `hash`'s bucket (a hint; see `insert_all`).
    #[inline]
    fn prefetch(&self, hash: u64) {
        if !self.table.is_empty() {
            self.table[self.bucket(hash)].chunks(2).for_each(|line| prefetch(&line[0]));
        }
    }

    fn bucket_full(&self, key: u128, hash: u64) -> bool {
        self.table[self.bucket(hash)].iter().all(|slot| slot.key != 0 && slot.key != key)
    }

    /// Put `slot` in its bucket: an empty way, the same key, or the way with
    /// the lowest counter after aging the bucket.
    fn place(&mut self, slot: Slot, hash: u64) {
        let range = self.bucket(hash);
        let bucket = &mut self.table[range];
        // Ties go to the first way from a position the hash picks, so that no
        // way is always the victim.
        let first = (hash >> 32) as usize % WAYS;
        let mut victim = first;
        for step in 0..WAYS {
            let way = (first + step) % WAYS;
            let resident = &bucket[way];
            if resident.key == 0 || resident.key == slot.key {
                if resident.key == 0 {
                    self.entries += 1;
                }
                bucket[way] = slot;
                return;
            }
            if resident.freq() < bucket[victim].freq() {
                victim = way;
            }
        }
        let age = bucket[victim].freq();
        if age > 0 {
            for resident in bucket.iter_mut() {
                resident.set_freq(resident.freq() - age);
            }
        }
        bucket[victim] = slot;
    }

    fn grow(&mut self) {
        let buckets = (self.table.len() / WAYS * 2).min(self.max_buckets);
        let old = std::mem::replace(&mut self.table, vec![Slot::default(); buckets * WAYS]);
        self.entries = 0;
        for slot in old.into_iter().filter(|slot| slot.key != 0) {
            self.place(slot, mix(hash_packed(slot.key)));
        }
    }
}

/// Entries ahead whose bucket `insert_all` asks for: enough to cover a
/// memory access with the inserts between.
const PREFETCH_AHEAD: usize = 8;

/// A piece a thread merged, kept until `SharedCache::insert_all`.
#[derive(Clone, Copy, Default)]
pub struct NewEntry {
    key: u128,
    /// `mix(hash_packed(key))`.
    hash: u64,
    ids: [u32; MAX_IDS],
    len: u8,
}

impl NewEntry {
    /// `None` when the shared cache would not keep it (more than `MAX_IDS`
    /// ids, or a piece too long to pack).
    #[inline]
    pub fn new(key: u128, hash: u64, ids: &[u32]) -> Option<Self> {
        if key == 0 || ids.len() > MAX_IDS {
            return None;
        }
        let mut entry = Self { key, hash: mix(hash), ids: [0; MAX_IDS], len: ids.len() as u8 };
        entry.ids[..ids.len()].copy_from_slice(ids);
        Some(entry)
    }
}

/// `items` split into `groups` lists by `group_of` (a counting sort: two
/// passes, no comparisons), each list in the items' order.
fn group_by<T: Copy>(items: &[T], groups: usize, group_of: impl Fn(&T) -> usize) -> Vec<Vec<T>> {
    let mut counts = vec![0; groups];
    items.iter().for_each(|item| counts[group_of(item)] += 1);
    let mut grouped: Vec<Vec<T>> = counts.into_iter().map(Vec::with_capacity).collect();
    items.iter().for_each(|item| grouped[group_of(item)].push(*item));
    grouped
}

/// `hash_packed` is one multiply, well mixed only in its high bits; buckets
/// here are chosen by the low bits and shards by the high ones, so every bit
/// gets mixed (a splitmix64 finalizer; this runs only when a thread's own
/// table misses).
#[inline]
fn mix(hash: u64) -> u64 {
    let x = (hash ^ hash >> 30).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let y = (x ^ x >> 27).wrapping_mul(0x94D0_49BB_1331_11EB);
    y ^ y >> 31
}

/// What `Encoder::cache_info` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheInfo {
    /// Pre-tokens held.
    pub entries: usize,
    /// Bytes of the tables allocated so far (never more than `capacity`).
    pub bytes: usize,
    /// The budget in bytes (0: no cache).
    pub capacity: usize,
    /// Pre-tokens of 2 bytes or more answered from a cache: a thread's own
    /// tables (`piece_table/`) or this shared one.
    pub hits: u64,
    /// Pre-tokens no cache could answer: their merges were applied.
    pub misses: u64,
    /// Threads' own tables kept between calls (`Encoder::pooled_state`), and
    /// their bytes (each state at most 16 MiB of short pieces, 2 MiB of their
    /// long id lists and `long_pieces::LONG_TABLE_BYTES` of long pieces).
    pub thread_tables: usize,
    pub thread_table_bytes: usize,
    /// Seeds those tables hold (`seeds.rs`): the vocabulary's tokens planted
    /// when the encoder was built, not yet found in a text nor given way.
    pub seeds: usize,
}

/// The shared cache. All methods take `&self`; see the module comment.
pub struct SharedCache {
    shards: Box<[Padded]>,
    /// Pieces the slots cannot hold (`shared_long.rs`).
    long: SharedLongPieces,
    shard_shift: u32,
    capacity: usize,
    /// Entries ever added (`insert_all` counts them; a hint, see `added`).
    added: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl std::fmt::Debug for SharedCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCache").field("capacity", &self.capacity).finish_non_exhaustive()
    }
}

impl SharedCache {
    /// A cache of at most `bytes` of tables; under one bucket (256 bytes) is
    /// no cache at all (`is_enabled` is false).
    pub fn new(bytes: usize) -> Self {
        // An eighth of a budget of at least `LONG_LEVEL_MIN` for the second level.
        let long_bytes = if bytes >= LONG_LEVEL_MIN { bytes / 8 } else { 0 };
        let long = SharedLongPieces::new(long_bytes);
        let bytes_of_slots = bytes - long_bytes;
        let buckets = bytes_of_slots / BUCKET_BYTES;
        let shards = if buckets == 0 { 0 } else { MAX_SHARDS.min(1 << buckets.ilog2()) };
        let per_shard = buckets.checked_div(shards).unwrap_or(0);
        let shards: Box<[Padded]> =
            (0..shards).map(|_| Padded(Mutex::new(Shard { max_buckets: per_shard, ..Shard::default() }))).collect();
        let shard_shift = 64 - shards.len().max(1).ilog2();
        let (hits, misses, added) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
        Self { shards, long, shard_shift, capacity: bytes, added, hits, misses }
    }

    pub fn is_enabled(&self) -> bool {
        !self.shards.is_empty()
    }

    /// Entries ever added. A state whose own additions are all of them, and
    /// whose table dropped few pieces, skips its lookups here for a call (see
    /// `Encoder::with_state`): in a process's first call the cache holds
    /// only what the call itself adds, which its own table holds too.
    /// (Another thread may add meanwhile; missing that costs merges, never a
    /// different id.)
    pub fn added(&self) -> u64 {
        self.added.load(Ordering::Relaxed)
    }

    #[inline]
    fn shard_index(&self, hash: u64) -> usize {
        // shard_shift is 64 for a single shard: checked_shr gives None, shard 0.
        hash.checked_shr(self.shard_shift).unwrap_or(0) as usize
    }

    #[inline]
    fn shard(&self, hash: u64) -> std::sync::MutexGuard<'_, Shard> {
        self.lock(self.shard_index(hash))
    }

    fn lock(&self, index: usize) -> std::sync::MutexGuard<'_, Shard> {
        self.shards[index].0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Add what a thread merged (`NewEntry`), and empty `entries`: grouped by
    /// shard, one lock a shard, each bucket asked for a few entries before
    /// it is written. One locked insert per miss, each a cache miss in a
    /// table of megabytes, was a fifth of a first call (10 MB of Gutenberg,
    /// `examples/encode_file`: 126-134 MB/s, against 149-157 with no cache).
    /// Returns how many it added.
    pub fn insert_all(&self, entries: &mut Vec<NewEntry>) -> u64 {
        if self.shards.is_empty() || entries.is_empty() {
            entries.clear();
            return 0;
        }
        let by_shard = group_by(entries, self.shards.len(), |entry| self.shard_index(entry.hash));
        for (index, group) in by_shard.iter().enumerate().filter(|(_, group)| !group.is_empty()) {
            let mut shard = self.lock(index);
            for (i, entry) in group.iter().enumerate() {
                if let Some(ahead) = group.get(i + PREFETCH_AHEAD) {
                    shard.prefetch(ahead.hash);
                }
                shard.insert(entry.key, entry.hash, &entry.ids[..entry.len as usize]);
            }
        }
        let added = entries.len() as u64;
        self.added.fetch_add(added, Ordering::Relaxed);
        entries.clear();
        added
    }

    /// Append the ids of `key` (whose `hash_packed` is `hash`) to `out` if cached.
    #[inline]
    pub fn get(&self, key: u128, hash: u64, out: &mut Vec<u32>) -> bool {
        if self.shards.is_empty() {
            return false;
        }
        let hash = mix(hash);
        self.shard(hash).get(key, hash, out)
    }

    /// Remember the ids of `key` (ignored when there are more than `MAX_IDS`):
    /// one entry at a time, as the tests fill it (the encoder uses `insert_all`).
    #[cfg(test)]
    pub fn insert(&self, key: u128, hash: u64, ids: &[u32]) {
        if self.shards.is_empty() || ids.len() > MAX_IDS || key == 0 {
            return;
        }
        let hash = mix(hash);
        self.shard(hash).insert(key, hash, ids);
        self.added.fetch_add(1, Ordering::Relaxed);
    }

    /// Append the ids of `piece` to `out` if the second level holds it (a
    /// piece of more than 15 bytes, or of more than `MAX_IDS` ids); `hash` is
    /// `hash_packed` of its key or `hash_long` of its bytes.
    pub fn get_long(&self, piece: &[u8], hash: u64, out: &mut Vec<u32>) -> bool {
        self.long.get(piece, mix(hash), out)
    }

    /// Remember what `get_long` would return; 1 if added (0: the budget was spent).
    pub fn insert_long(&self, piece: &[u8], hash: u64, ids: &[u32]) -> u64 {
        let added = self.long.insert(piece, mix(hash), ids) as u64;
        self.added.fetch_add(added, Ordering::Relaxed);
        added
    }

    /// Add a thread's counts (kept locally while encoding, so that the hot
    /// path writes no shared counter).
    pub fn record(&self, hits: u64, misses: u64) {
        if hits > 0 {
            self.hits.fetch_add(hits, Ordering::Relaxed);
        }
        if misses > 0 {
            self.misses.fetch_add(misses, Ordering::Relaxed);
        }
    }

    pub fn info(&self) -> CacheInfo {
        let mut info = CacheInfo {
            capacity: self.capacity,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            ..CacheInfo::default()
        };
        for shard in self.shards.iter() {
            let shard = shard.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            info.entries += shard.entries;
            info.bytes += shard.table.len() * SLOT_BYTES;
        }
        let (entries, bytes) = self.long.usage();
        (info.entries, info.bytes) = (info.entries + entries, info.bytes + bytes);
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::packed_key::pack;

    fn key(i: u32) -> u128 {
        pack(format!("p{i}").as_bytes()).unwrap()
    }

    fn lookup(cache: &SharedCache, key: u128) -> Option<Vec<u32>> {
        let mut out = Vec::new();
        cache.get(key, hash_packed(key), &mut out).then_some(out)
    }

    #[test]
    fn insert_all_adds_what_each_insert_would() {
        let (one_by_one, all_at_once) = (SharedCache::new(1 << 20), SharedCache::new(1 << 20));
        assert_eq!(all_at_once.added(), 0);
        let ids = |i: u32| [i, i + 1, i + 2, i + 3][..(i % 4 + 1) as usize].to_vec();
        let mut entries = Vec::new();
        for i in 0..5000 {
            one_by_one.insert(key(i), hash_packed(key(i)), &ids(i));
            entries.extend(NewEntry::new(key(i), hash_packed(key(i)), &ids(i)));
        }
        assert_eq!(entries.len(), 3750, "four ids are more than an entry keeps");
        assert_eq!(all_at_once.insert_all(&mut entries), 3750);
        assert!(entries.is_empty() && all_at_once.added() == 3750);
        for i in 0..5000 {
            assert_eq!(lookup(&all_at_once, key(i)), lookup(&one_by_one, key(i)), "piece {i}");
        }
        assert_eq!(all_at_once.info().entries, one_by_one.info().entries);
    }

    #[test]
    fn slot_is_32_bytes() {
        assert_eq!(SLOT_BYTES, 32);
    }

    #[test]
    fn returns_what_was_inserted_and_skips_long_id_lists() {
        let cache = SharedCache::new(1 << 20);
        for i in 0..1000 {
            cache.insert(key(i), hash_packed(key(i)), &[i, i + 1, i + 2][..(i % 3 + 1) as usize]);
        }
        for i in 0..1000 {
            assert_eq!(lookup(&cache, key(i)).unwrap(), &[i, i + 1, i + 2][..(i % 3 + 1) as usize]);
        }
        cache.insert(key(5000), hash_packed(key(5000)), &[1, 2, 3, 4]);
        assert_eq!(lookup(&cache, key(5000)), None);
        assert_eq!(cache.info().entries, 1000);
    }

    #[test]
    fn never_allocates_past_the_budget() {
        for budget in [256, 1024, 3000, 100_000, 1 << 20] {
            let cache = SharedCache::new(budget);
            for i in 0..50_000 {
                cache.insert(key(i), hash_packed(key(i)), &[i]);
            }
            let info = cache.info();
            assert!(info.bytes <= budget, "{info:?}");
            assert!(info.entries * SLOT_BYTES <= info.bytes, "{info:?}");
            // Whatever is still cached is right.
            for i in 0..50_000 {
                if let Some(ids) = lookup(&cache, key(i)) {
                    assert_eq!(ids, [i]);
                }
            }
        }
        assert!(!SharedCache::new(255).is_enabled());
        assert_eq!(SharedCache::new(0).info(), CacheInfo::default());
    }

    #[test]
    fn frequent_pieces_survive_a_stream_of_new_ones() {
        // 1 KiB: 4 buckets of 8 ways. 8 pieces used often, then many seen once.
        let cache = SharedCache::new(1024);
        for i in 0..8 {
            cache.insert(key(i), hash_packed(key(i)), &[i]);
        }
        for round in 0..10_000u32 {
            for i in 0..8 {
                let mut out = Vec::new();
                if !cache.get(key(i), hash_packed(key(i)), &mut out) {
                    cache.insert(key(i), hash_packed(key(i)), &[i]);
                }
            }
            cache.insert(key(100 + round), hash_packed(key(100 + round)), &[round]);
        }
        let kept = (0..8).filter(|&i| lookup(&cache, key(i)).is_some()).count();
        assert!(kept >= 6, "only {kept} of the 8 frequent pieces kept");
    }

    #[test]
    fn threads_share_it() {
        let cache = SharedCache::new(1 << 20);
        std::thread::scope(|scope| {
            for t in 0..4u32 {
                let cache = &cache;
                scope.spawn(move || {
                    for i in 0..5000 {
                        let k = key(i);
                        let mut out = Vec::new();
                        if cache.get(k, hash_packed(k), &mut out) {
                            assert_eq!(out, [i, i], "thread {t}");
                        } else {
                            cache.insert(k, hash_packed(k), &[i, i]);
                        }
                    }
                });
            }
        });
        assert!((0..5000).all(|i| lookup(&cache, key(i)) == Some(vec![i, i])));
    }
}
