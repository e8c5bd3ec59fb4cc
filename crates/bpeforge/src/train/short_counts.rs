//! Counts of short pre-tokens keyed by their packed form (`packed.rs`): an
//! open-addressing table whose slot for a key is known from its hash before
//! it is touched, so counting prefetches a batch of slots ahead
//! (`prefetch`) and their cache misses overlap.
//!
//! Why not `FxHashMap<u128, u64>`, as before: a batch's distinct pre-tokens
//! take a few MiB of table, past the L2 cache, and counting spent 31% of a
//! 100 MB training run in the map's insert (six times the pre-tokenizer's
//! share), stalled on a control-byte line and then a slot line per piece.
//! Here a slot is 32 bytes, two to a cache line, and a probe that finds its
//! key in its first line (the common case at three-quarters load at most)
//! reads that one line.

use crate::util::packed_key::hash_packed;
use crate::util::prefetch::prefetch;

#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Slot {
    /// 0 marks an empty slot; the packed empty pre-token, whose key is 0
    /// too, is counted in `ShortCounts::empty` instead.
    key: u128,
    count: u64,
}

const FIRST_SLOTS: usize = 1 << 10;
/// Keys ahead whose slot `absorb` prefetches.
const ABSORB_AHEAD: usize = 16;

#[derive(Clone)]
pub struct ShortCounts {
    slots: Vec<Slot>,
    /// `64 - log2(slots.len())`: a key's first slot is its hash's top bits.
    shift: u32,
    len: usize,
    empty: Option<u64>,
}

impl Default for ShortCounts {
    fn default() -> Self {
        Self { slots: vec![Slot::default(); FIRST_SLOTS], shift: 64 - FIRST_SLOTS.ilog2(), len: 0, empty: None }
    }
}

impl std::fmt::Debug for ShortCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ShortCounts({} pre-tokens)", self.len())
    }
}

impl ShortCounts {
    pub fn len(&self) -> usize {
        self.len + self.empty.is_some() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline(always)]
    fn first_slot(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize
    }

    /// Start loading the slot of `hash` (`hash_packed` of the key), for an
    /// `add_hashed` a few pieces later. A hint only.
    #[inline(always)]
    pub fn prefetch(&self, hash: u64) {
        prefetch(&self.slots[self.first_slot(hash)]);
    }

    /// Add `n` to the count of `key`.
    #[inline]
    pub fn add(&mut self, key: u128, n: u64) {
        self.add_hashed(key, hash_packed(key), n);
    }

    /// `add`, with the key's `hash_packed` already computed.
    #[inline(always)]
    pub fn add_hashed(&mut self, key: u128, hash: u64, n: u64) {
        *self.count_mut(key, hash) += n;
    }

    /// The count of `key` (whose `hash_packed` is `hash`), 0 if it was not
    /// in the table (it is now).
    #[inline(always)]
    pub fn count_mut(&mut self, key: u128, hash: u64) -> &mut u64 {
        if key == 0 {
            return self.empty.get_or_insert(0);
        }
        // Grown before the probe, so the slot found stays where it is.
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.first_slot(hash);
        while self.slots[i].key != key && self.slots[i].key != 0 {
            i = (i + 1) & mask;
        }
        let slot = &mut self.slots[i];
        if slot.key == 0 {
            *slot = Slot { key, count: 0 };
            self.len += 1;
        }
        &mut slot.count
    }

    #[cold]
    fn grow(&mut self) {
        let doubled = vec![Slot::default(); self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        self.shift -= 1;
        let mask = self.slots.len() - 1;
        for slot in old.into_iter().filter(|slot| slot.key != 0) {
            let mut i = self.first_slot(hash_packed(slot.key));
            while self.slots[i].key != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = slot;
        }
    }

    /// Add every count of `other`.
    ///
    /// `other` is read in slot order, which is hash order, and keys that
    /// arrive sorted by hash pile up at the end of one run of slots in a
    /// smaller table (each insert probed past all the keys before it: adding
    /// 100 MB of batch tables into the corpus table took 0.6 s). With at
    /// least as many slots as `other`, they land at most as densely as they
    /// sat there, and the writes sweep the table in order.
    ///
    /// The slot of the key `ABSORB_AHEAD` entries on is prefetched: a batch's
    /// table of 100 K+ pre-tokens goes into a corpus table of tens of MiB,
    /// one cache miss per key, serial between batches.
    pub fn absorb(&mut self, other: &ShortCounts) {
        while self.slots.len() < other.slots.len() {
            self.grow();
        }
        // (A growth in between only makes a few prefetches useless.)
        let keys: Vec<(u128, u64, u64)> = other
            .slots
            .iter()
            .filter(|slot| slot.key != 0)
            .map(|slot| (slot.key, hash_packed(slot.key), slot.count))
            .collect();
        for (i, &(key, hash, n)) in keys.iter().enumerate() {
            if let Some(&(_, ahead, _)) = keys.get(i + ABSORB_AHEAD) {
                self.prefetch(ahead);
            }
            self.add_hashed(key, hash, n);
        }
        if let Some(n) = other.empty {
            *self.empty.get_or_insert(0) += n;
        }
    }

    /// Every key with its count, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u128, u64)> + '_ {
        let empty = self.empty.map(|n| (0, n));
        self.slots.iter().filter(|slot| slot.key != 0).map(|slot| (slot.key, slot.count)).chain(empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn absorb_adds_every_count() {
        let (mut small, mut big) = (ShortCounts::default(), ShortCounts::default());
        for key in 1..20_000u128 {
            big.add(key << 64, 1);
        }
        for key in 10_000..10_100u128 {
            small.add(key << 64, 2);
        }
        small.absorb(&big);
        let got: HashMap<u128, u64> = small.iter().collect();
        assert_eq!(got.len(), 19_999);
        assert_eq!(got[&(10_050 << 64)], 3);
        assert_eq!(got[&(5 << 64)], 1);
    }

    #[test]
    fn counts_equal_a_hash_map_through_growth() {
        let mut table = ShortCounts::default();
        let mut expected: HashMap<u128, u64> = HashMap::new();
        let mut seed = 1u64;
        for step in 0..50_000u64 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Keys 0..5000 (0 is the empty pre-token), some many times.
            let key = (seed >> 33) as u128 % 5_000 + if step % 7 == 0 { 1 << 120 } else { 0 };
            table.add(key, step % 3 + 1);
            *expected.entry(key).or_insert(0) += step % 3 + 1;
        }
        let got: HashMap<u128, u64> = table.iter().collect();
        assert_eq!(got, expected);
        assert_eq!(table.len(), expected.len());
    }
}
