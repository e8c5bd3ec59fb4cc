//! A batch of pieces as the encoder looks them up: their packed keys and
//! hashes, computed and their buckets prefetched before the first lookup.

use super::EncodeState;
use crate::encode::cache::long_pieces::{hash_long, LongPieceTable};
use crate::encode::cache::piece_table::Probe;
use crate::pretokenize::scan::BATCH_ROOM;
use crate::util::packed_key::{hash_packed, pack_at, INLINE_MAX};
use crate::util::prefetch::L2;

/// The packed keys (`util/packed_key.rs`; `UNPACKED` for a piece too long to pack) and
/// hashes (`hash_packed`, or `hash_long` for a piece too long to pack)
/// of one batch of pieces, computed before any is looked up so that the
/// buckets they will read are prefetched while the others are packed, in
/// two steps as gigatoken does: into L2 as the batch is packed (a batch is
/// hundreds of pieces: enough time for a memory access), then into L1
/// `L1_AHEAD` pieces before a lookup.
pub(super) struct PieceBatch {
    pub(super) keys: [u128; BATCH_SLOTS],
    /// Each key's bucket in the thread's table (`Probe::bucket_index`), as
    /// the table stood when the batch was packed (`buckets_shift`).
    pub(super) buckets: [u32; BATCH_SLOTS],
    /// The table's `Probe::shift` when `buckets` were worked out: a piece
    /// merged between two runs of hits may grow the table (or start it over).
    buckets_shift: u32,
    /// The `hash_long` of each piece too long to pack, when `long_hashed`.
    long_hashes: [u64; BATCH_SLOTS],
    /// Whether the pieces too long to pack have their `hash_long` in
    /// `long_hashes` (`hash_long_pieces`).
    pub(super) long_hashed: bool,
    /// When `long_hashed`: the index of each piece too long to pack, in
    /// order, and how many there are.
    long_at: [u16; BATCH_SLOTS],
    long_count: usize,
}

/// A batch's arrays, a power of two long so that the warm path indexes them
/// with a mask instead of a bounds check (a batch has at most `BATCH_ROOM`).
pub(super) const BATCH_SLOTS: usize = BATCH_ROOM.next_power_of_two();

pub(super) const L1_AHEAD: usize = 16;

/// How many long pieces ahead of a lookup their entries are prefetched
/// (`PieceBatch::prefetch_long_entry`).
pub(super) const LONG_ENTRIES_AHEAD: usize = 4;

/// Pieces too long to pack in a batch from which the next batch hashes its
/// own and prefetches their slots before any lookup. Hashing them in `pack`
/// for every batch (a count or an index kept per piece) made English 5-7%
/// slower; in CJK text a batch has dozens, and the prefetches made warm
/// encoding of 10 MB of multilingual text 13% faster.
const LONG_PREFETCH_MIN: usize = 4;

/// The key of a piece too long to pack. No packed key is this (its length
/// byte would be 255) and no table holds it, so the warm path stops at such
/// a piece without a check of its own (it was one per piece when this was 0,
/// an empty slot's key).
pub(super) const UNPACKED: u128 = u128::MAX;

impl Default for PieceBatch {
    fn default() -> Self {
        Self {
            keys: [0; BATCH_SLOTS],
            buckets: [0; BATCH_SLOTS],
            buckets_shift: 0,
            long_hashes: [0; BATCH_SLOTS],
            long_hashed: false,
            long_at: [0; BATCH_SLOTS],
            long_count: 0,
        }
    }
}

impl PieceBatch {
    /// Pack and hash the pieces ending at `ends` (the first starting at
    /// `from`) of `document`, and prefetch their buckets of `table`. A piece
    /// too long to pack gets key `UNPACKED` (its prefetch is wasted, but a
    /// branch here would mispredict on text).
    #[inline(always)]
    pub(super) fn pack(&mut self, document: &[u8], from: usize, ends: &[usize], state: &EncodeState) {
        // The long pieces' slots first, so that they have arrived when the
        // lookups prefetch their entries (`prefetch_long_entry`).
        self.long_hashed = state.long_pieces_last_batch >= LONG_PREFETCH_MIN;
        if self.long_hashed {
            self.hash_long_pieces(document, from, ends, &state.long);
        }
        let table = state.table.probe();
        let mut start = from;
        for (i, &end) in ends.iter().enumerate() {
            let key = pack_at(document, start, end).unwrap_or(UNPACKED);
            let bucket = table.bucket_index(hash_packed(key));
            table.prefetch_at::<L2>(bucket);
            (self.keys[i], self.buckets[i]) = (key, bucket);
            start = end;
        }
        self.buckets_shift = table.shift();
    }

    /// Give each piece too long to pack its `hash_long` and prefetch its
    /// slot of `long`, as `pack` does for the short ones: in CJK text a
    /// batch has dozens of them, each a cache miss otherwise.
    #[inline(never)]
    fn hash_long_pieces(&mut self, document: &[u8], mut start: usize, ends: &[usize], long: &LongPieceTable) {
        self.long_count = 0;
        for (i, &end) in ends.iter().enumerate() {
            if end - start > INLINE_MAX {
                self.long_hashes[i] = hash_long(&document[start..end]);
                long.prefetch(self.long_hashes[i]);
                self.long_at[self.long_count] = i as u16;
                self.long_count += 1;
            }
            start = end;
        }
    }

    /// Prefetch the key and ids of the `nth` piece too long to pack, if
    /// there is one and it was hashed (`LongPieceTable::prefetch_entry`).
    /// The encoder asks `LONG_ENTRIES_AHEAD` long pieces before it looks one
    /// up: the key is compared and the ids copied right after the slot is
    /// read, and in CJK text those two cache misses were 15% of a warm
    /// call; asked for all at once after packing, the slots had not arrived.
    #[inline]
    pub(super) fn prefetch_long_entry(&self, nth: usize, long: &LongPieceTable) {
        if self.long_hashed && nth < self.long_count {
            long.prefetch_entry(self.long_hashes[self.long_at[nth] as usize]);
        }
    }

    /// Make `buckets` those of `table` for pieces `from..pieces`: worked out
    /// again if the table has changed its size since they were packed
    /// (`buckets_shift`), so that `Probe::get_inline_at` may trust them.
    #[inline(always)]
    pub(super) fn refresh_buckets(&mut self, table: Probe<'_>, from: usize, pieces: usize) {
        if table.shift() != self.buckets_shift {
            self.rework_buckets(table, from, pieces);
        }
    }

    #[inline(never)]
    fn rework_buckets(&mut self, table: Probe<'_>, from: usize, pieces: usize) {
        for i in from..pieces {
            self.buckets[i] = table.bucket_index(hash_packed(self.keys[i]));
        }
        self.buckets_shift = table.shift();
    }

    /// The `hash_long` of piece `i` (`piece` its bytes), too long to pack.
    #[inline]
    pub(super) fn long_hash(&self, i: usize, piece: &[u8]) -> u64 {
        if self.long_hashed {
            self.long_hashes[i]
        } else {
            hash_long(piece)
        }
    }
}
