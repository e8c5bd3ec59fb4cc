//! The warm path's lookups in a thread's piece table: a copy of the table's
//! buckets and shift that a loop of lookups keeps in registers, reading a
//! bucket by an index worked out ahead, without a bounds check.

use super::{Bucket, Entry, INLINE_IDS};
use crate::util::prefetch::prefetch_address;

/// A `PieceTable`'s buckets and shift, copied out of it so that a loop of
/// lookups keeps them in registers: through `&PieceTable` they were loaded
/// again for every piece (the compiler cannot tell that the ids written in
/// between do not change them).
#[derive(Clone, Copy)]
pub struct Probe<'t> {
    pub(super) buckets: &'t [Bucket],
    pub(super) shift: u32,
    pub(super) overflow: &'t [u32],
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
    /// entry and keeps `len` ids of it (see `encode/pieces.rs`). `None` for
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
