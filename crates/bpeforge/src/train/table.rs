//! The table of distinct pre-tokens and their counts.
//!
//! Most pre-tokens are short, so one of up to 15 bytes is keyed by its packed
//! `u128` form (`packed.rs`): hashing and comparing it is two word operations,
//! with no pointer to chase into the text and no `memcmp` call. Counting spent
//! most of its time there with `&[u8]` keys. Those go to `ShortCounts`, whose
//! slots counting prefetches a batch ahead (`Pending`); longer pre-tokens go
//! to a map keyed by their bytes.

use std::hash::Hash;

use rustc_hash::FxHashMap;

use super::short_counts::ShortCounts;
use crate::util::packed_key::{hash_packed, pack, pack_in, unpack};

/// Counts of distinct pre-tokens. `L` is how a long pre-token is held: a
/// borrowed slice of the chunk while counting one batch, an owned box in the
/// corpus-wide table. Counts are u64: a large corpus overflows 32 bits.
#[derive(Debug, Clone)]
pub struct CountTable<L> {
    short: ShortCounts,
    long: FxHashMap<L, u64>,
}

/// The corpus-wide table.
pub type PretokenCounts = CountTable<Box<[u8]>>;

impl<L> Default for CountTable<L> {
    fn default() -> Self {
        Self::with_short(ShortCounts::default())
    }
}

impl<L> CountTable<L> {
    /// A table whose short pre-tokens go into `short` (a worker's, kept from
    /// batch to batch: `count::ShortTables`).
    pub fn with_short(short: ShortCounts) -> Self {
        Self { short, long: FxHashMap::default() }
    }

    /// The short and the long pre-tokens apart.
    pub fn into_parts(self) -> (ShortCounts, FxHashMap<L, u64>) {
        (self.short, self.long)
    }
}

impl<L: Eq + Hash> CountTable<L> {
    pub fn len(&self) -> usize {
        self.short.len() + self.long.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The length in bytes of the longest pre-token (0 for an empty table).
    /// Only the long map is read: a short pre-token has at most 15 bytes.
    pub fn longest(&self) -> usize
    where
        L: AsRef<[u8]>,
    {
        let long = self.long.keys().map(|bytes| bytes.as_ref().len()).max();
        long.unwrap_or_else(|| {
            let mut longest = 0;
            self.short.iter().for_each(|(key, _)| longest = longest.max(unpack(&key).1));
            longest
        })
    }

    /// Every pre-token with its count, in no particular order: the short
    /// ones (`for_each_short`), then the long ones (`long`).
    pub fn for_each(&self, mut visit: impl FnMut(&[u8], u64))
    where
        L: AsRef<[u8]>,
    {
        self.for_each_short(&mut visit);
        for (bytes, n) in self.long() {
            visit(bytes, n);
        }
    }

    /// Every short pre-token with its count (unpacked into a buffer, so
    /// only for the visit).
    pub fn for_each_short(&self, mut visit: impl FnMut(&[u8], u64)) {
        for (key, n) in self.short.iter() {
            let (buf, len) = unpack(&key);
            visit(&buf[..len], n);
        }
    }

    /// Every long pre-token with its count, borrowed from the table.
    pub fn long(&self) -> impl Iterator<Item = (&[u8], u64)> + '_
    where
        L: AsRef<[u8]>,
    {
        self.long.iter().map(|(bytes, &n)| (bytes.as_ref(), n))
    }
}

impl<'a> CountTable<&'a [u8]> {
    /// Count `pretoken` `n` times; `text` is the text it was cut from, which
    /// lets it be packed with one load (`packed::pack_in`: counting packs
    /// every pre-token of the corpus).
    #[inline]
    pub fn add(&mut self, text: &[u8], pretoken: &'a [u8], n: u64) {
        match pack_in(text, pretoken) {
            Some(key) => self.short.add(key, n),
            None => *self.long.entry(pretoken).or_insert(0) += n,
        }
    }

    /// Count `pretoken` once, soon: a short one waits in `pending` with its
    /// slot prefetched, and is counted when `pending` fills (`add_pending`;
    /// call it once more at the end).
    #[inline(always)]
    pub fn add_soon(&mut self, text: &[u8], pretoken: &'a [u8], pending: &mut Pending) {
        let Some(key) = pack_in(text, pretoken) else {
            *self.long.entry(pretoken).or_insert(0) += 1;
            return;
        };
        let hash = hash_packed(key);
        self.short.prefetch(hash);
        pending.keys[pending.len] = (key, hash);
        pending.len += 1;
        if pending.len == PENDING {
            self.add_pending(pending);
        }
    }

    /// Count the pre-tokens waiting in `pending` and empty it.
    pub fn add_pending(&mut self, pending: &mut Pending) {
        for &(key, hash) in &pending.keys[..pending.len] {
            self.short.add_hashed(key, hash, 1);
        }
        pending.len = 0;
    }
}

/// Short pre-tokens waiting to be counted (`CountTable::add_soon`): enough
/// that a slot prefetched as a piece joins is in cache when it is counted.
pub struct Pending {
    keys: [(u128, u64); PENDING],
    len: usize,
}

const PENDING: usize = 32;

impl Default for Pending {
    fn default() -> Self {
        Self { keys: [(0, 0); PENDING], len: 0 }
    }
}

impl PretokenCounts {
    /// Add a batch's borrowed counts, copying only pre-tokens not seen before.
    pub fn absorb(&mut self, batch: CountTable<&[u8]>) {
        let (short, long) = batch.into_parts();
        self.absorb_short(short);
        self.absorb_long(long);
    }

    /// Add the counts of short pre-tokens of `short` (the larger table of the
    /// two is kept, the smaller added into it).
    pub fn absorb_short(&mut self, mut short: ShortCounts) {
        if short.len() > self.short.len() {
            std::mem::swap(&mut self.short, &mut short);
        }
        self.short.absorb(&short);
    }

    /// Add a batch's borrowed long pre-tokens, copying only those not seen before.
    pub fn absorb_long(&mut self, long: FxHashMap<&[u8], u64>) {
        for (bytes, n) in long {
            match self.long.get_mut(bytes) {
                Some(total) => *total += n,
                None => {
                    self.long.insert(bytes.into(), n);
                }
            }
        }
    }

    /// Add one owned pre-token (tests and callers outside counting).
    pub fn insert(&mut self, pretoken: &[u8], n: u64) {
        // Counting text cannot reach 2^64 occurrences; `add_checked` is for
        // counts that come from files.
        match pack(pretoken) {
            Some(key) => self.short.add(key, n),
            None => *self.long.entry(pretoken.into()).or_insert(0) += n,
        }
    }

    /// Add a count read from a file or another table; `None` if the sum
    /// would overflow u64 (the table is then left unchanged for that entry).
    pub fn add_checked(&mut self, pretoken: &[u8], n: u64) -> Option<()> {
        let total = match pack(pretoken) {
            Some(key) => self.short.count_mut(key, hash_packed(key)),
            None => self.long.entry(pretoken.into()).or_insert(0),
        };
        *total = total.checked_add(n)?;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(table: &PretokenCounts) -> Vec<(Vec<u8>, u64)> {
        let mut out = Vec::new();
        table.for_each(|bytes, n| out.push((bytes.to_vec(), n)));
        out.sort();
        out
    }

    #[test]
    fn short_and_long_pretokens_round_trip() {
        let long = b"sixteen bytes!!!".as_slice(); // 16 bytes: the long map
        let mut batch = CountTable::<&[u8]>::default();
        for token in [b"a".as_slice(), b"a\0", b"", long, b"a", long] {
            batch.add(token, token, 1);
        }
        let mut table = PretokenCounts::default();
        table.absorb(batch);
        table.insert(b"a", 5);
        let expected = vec![(b"".to_vec(), 1), (b"a".to_vec(), 7), (b"a\0".to_vec(), 1), (long.to_vec(), 2)];
        assert_eq!(sorted(&table), expected);
        assert_eq!(table.len(), 4);
        assert_eq!(table.longest(), 16);
        let mut short = PretokenCounts::default();
        assert_eq!(short.longest(), 0);
        short.insert(b"abc", 1);
        short.insert(b"a", 1);
        assert_eq!(short.longest(), 3);
    }

    #[test]
    fn absorbing_tables_adds_counts() {
        let long = b"a pre-token of more than fifteen bytes".as_slice();
        let mut a = CountTable::<&[u8]>::default();
        let mut b = CountTable::<&[u8]>::default();
        a.add(b"x", b"x", 2);
        a.add(long, long, 1);
        b.add(b"x", b"x", 3);
        b.add(b"y", b"y", 1);
        b.add(long, long, 4);
        let mut table = PretokenCounts::default();
        table.absorb(a);
        table.absorb(b);
        assert_eq!(sorted(&table), vec![(long.to_vec(), 5), (b"x".to_vec(), 5), (b"y".to_vec(), 1)]);
    }
}
