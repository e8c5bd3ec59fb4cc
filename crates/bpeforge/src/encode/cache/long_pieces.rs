//! A thread's table of the pre-tokens too long to pack (over 15 bytes), keyed
//! by their bytes: in CJK, Thai or Devanagari text a GPT-2 pre-token is often a
//! whole clause of 20-130 bytes, and merging those again on every call made
//! warm encoding of multilingual text 5-7x slower than the field's.
//!
//! Why not a `HashMap<Box<[u8]>, _>`: the load of each long piece's slot was a
//! fifth of warm multilingual encoding, and the map's API cannot give that
//! address ahead. Here a slot is found from the piece's hash alone
//! (`slot_index`), so the encoder hashes a batch's long pieces and prefetches
//! their slots before it looks any up, as it does for short pieces. A slot
//! holds the full 64-bit hash, so a lookup reads a key's bytes only when the
//! hash and length match.
//!
//! Bounded by `max_bytes` (keys, ids and slots). When full it stops adding, so
//! a text whose long pieces do not all fit still finds the share that does on
//! its next call. It starts over only once the pieces it turned away outnumber
//! its hits since it filled by as many as it holds: then the text has moved on.
//!
//! While a text's long pieces do not repeat (SuperBPE's pieces are whole
//! lines: keeping each one cost a tenth of a first call and never paid), a
//! piece is kept only the second time it comes (`Doorkeeper`): the first
//! time only a bit is set. A text encoded again is kept on its second call
//! and found on its third.

use std::hash::BuildHasher;

use crate::util::prefetch::{prefetch, prefetch_address, L1};

/// Pieces longer than this are merged every time: hashing and keeping them
/// costs about what merging them does, and they are rare.
pub const LONG_PIECE_MAX: usize = 1024;
/// 32 MiB: the long pieces of 10 MB of multilingual text under GPT-2 (132 K
/// distinct CJK, Thai, ... clauses, 5.9 MB of bytes and their ids) take about
/// 24 MiB; with 16 MiB a third of them were merged again on every warm call
/// (warm encode 147 against 219 MB/s, `examples/encode_file`).
pub const LONG_TABLE_BYTES: usize = 32 << 20;
/// Slots the table starts with (24 KiB).
const FIRST_SLOTS: usize = 1024;
/// What an entry costs besides its key and ids: its slot, twice over (the
/// table is at most half full).
const ENTRY_OVERHEAD: usize = 2 * std::mem::size_of::<Slot>();

/// An entry: where its key and ids are. `key_len` 0 is an empty slot (a
/// long piece has more than 15 bytes).
#[derive(Clone, Copy, Default)]
struct Slot {
    hash: u64,
    key_at: u32,
    key_len: u32,
    ids_at: u32,
    ids_len: u32,
}

pub struct LongPieceTable {
    /// Open addressing with linear probing; empty or a power of two long,
    /// at most half full.
    slots: Vec<Slot>,
    /// The keys' bytes and the ids, one entry after another.
    keys: Vec<u8>,
    ids: Vec<u32>,
    entries: usize,
    bytes: usize,
    max_bytes: usize,
    /// Pieces that found the table full, less the hits since (at least 0).
    turned_away: usize,
    doorkeeper: Doorkeeper,
}

/// Pieces a round of `Doorkeeper` counts.
const ROUND: u32 = 4096;
/// Bits of `Doorkeeper::seen` (16 KiB).
const SEEN_BITS: usize = 1 << 17;

/// Whether the table keeps every new piece, or only those it has seen
/// before: each round of `ROUND` pieces it did not hold, it keeps every one
/// in the next round if at least one in 64 lookups of the round found its
/// piece, else only the ones already seen (a bit by hash in `seen`, emptied
/// once a quarter of its bits are set, so that it keeps telling pieces apart).
struct Doorkeeper {
    keep_all: bool,
    misses: u32,
    hits: u32,
    seen: Box<[u64]>,
    marked: usize,
}

impl Default for Doorkeeper {
    fn default() -> Self {
        Self { keep_all: true, misses: 0, hits: 0, seen: Box::default(), marked: 0 }
    }
}

impl Doorkeeper {
    /// Whether to keep a new piece of hash `hash`.
    #[inline]
    fn admits(&mut self, hash: u64) -> bool {
        self.misses += 1;
        if self.misses == ROUND {
            self.keep_all = self.hits >= ROUND / 64;
            (self.misses, self.hits) = (0, 0);
        }
        if self.keep_all {
            return true;
        }
        if self.seen.is_empty() || self.marked >= SEEN_BITS / 4 {
            self.seen = vec![0; SEEN_BITS / 64].into();
            self.marked = 0;
        }
        // The top bits: the low ones pick the table's slot.
        let bit = (hash >> (64 - SEEN_BITS.trailing_zeros())) as usize;
        let (word, mask) = (bit / 64, 1 << (bit % 64));
        let seen = self.seen[word] & mask != 0;
        self.seen[word] |= mask;
        self.marked += !seen as usize;
        seen
    }
}

impl Default for LongPieceTable {
    fn default() -> Self {
        Self::with_max_bytes(LONG_TABLE_BYTES)
    }
}

/// The hash a long piece is looked up by (`rustc_hash`'s, over its bytes).
#[inline]
pub fn hash_long(piece: &[u8]) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(piece)
}

impl LongPieceTable {
    pub fn with_max_bytes(max_bytes: usize) -> Self {
        let (slots, keys, ids) = (Vec::new(), Vec::new(), Vec::new());
        Self { slots, keys, ids, entries: 0, bytes: 0, max_bytes, turned_away: 0, doorkeeper: Doorkeeper::default() }
    }

    /// Bytes held (keys, ids and two slots an entry).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    #[inline]
    fn slot_index(&self, hash: u64) -> usize {
        hash as usize & (self.slots.len() - 1)
    }

    /// Ask for the slot where a lookup of `hash` starts (a hint only).
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        if !self.slots.is_empty() {
            prefetch(&self.slots[self.slot_index(hash)]);
        }
    }

    /// Ask for the key and ids of the entry in the slot where a lookup of
    /// `hash` starts, if it holds that hash (a hint only; the slot itself
    /// should have been asked for earlier, `prefetch`, or this waits on it).
    #[inline]
    pub fn prefetch_entry(&self, hash: u64) {
        if self.slots.is_empty() {
            return;
        }
        let slot = self.slots[self.slot_index(hash)];
        if slot.key_len != 0 && slot.hash == hash {
            let (key_end, ids_end) = (slot.key_at + slot.key_len - 1, slot.ids_at + slot.ids_len.max(1) - 1);
            for at in [slot.key_at, key_end] {
                prefetch_address::<L1, u8>(self.keys.as_ptr().wrapping_add(at as usize));
            }
            for at in [slot.ids_at, ids_end] {
                prefetch_address::<L1, u32>(self.ids.as_ptr().wrapping_add(at as usize));
            }
        }
    }

    /// Append the ids of `piece` (whose `hash_long` is `hash`) to `out` if
    /// the table has them.
    #[inline]
    pub fn get(&mut self, piece: &[u8], hash: u64, out: &mut Vec<u32>) -> bool {
        let Some(slot) = self.find(piece, hash) else { return false };
        out.extend_from_slice(&self.ids[slot.ids_at as usize..][..slot.ids_len as usize]);
        self.turned_away = self.turned_away.saturating_sub(1);
        self.doorkeeper.hits += 1;
        true
    }

    fn find(&self, piece: &[u8], hash: u64) -> Option<Slot> {
        if self.slots.is_empty() || piece.len() > LONG_PIECE_MAX {
            return None; // a piece that long is never kept: no need to compare it
        }
        let mut index = self.slot_index(hash);
        loop {
            let slot = self.slots[index];
            if slot.key_len == 0 {
                return None;
            }
            if slot.hash == hash && slot.key_len as usize == piece.len() && self.key(slot) == piece {
                return Some(slot);
            }
            index = (index + 1) & (self.slots.len() - 1);
        }
    }

    /// Every piece held, with its hash and ids.
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], u64, &[u32])> {
        let held = self.slots.iter().filter(|slot| slot.key_len != 0);
        held.map(|&slot| (self.key(slot), slot.hash, &self.ids[slot.ids_at as usize..][..slot.ids_len as usize]))
    }

    fn key(&self, slot: Slot) -> &[u8] {
        &self.keys[slot.key_at as usize..][..slot.key_len as usize]
    }

    /// Remember the ids of `piece` (whose `hash_long` is `hash`), unless it
    /// is too long or the table is full (see the top).
    pub fn insert(&mut self, piece: &[u8], hash: u64, ids: &[u32]) {
        if piece.len() > LONG_PIECE_MAX || self.find(piece, hash).is_some() || !self.doorkeeper.admits(hash) {
            return;
        }
        let cost = piece.len() + 4 * ids.len() + ENTRY_OVERHEAD;
        if self.bytes + cost > self.max_bytes {
            self.turned_away += 1;
            if self.turned_away <= self.entries || cost > self.max_bytes {
                return;
            }
            self.clear();
        }
        if self.slots.is_empty() || self.entries * 2 >= self.slots.len() {
            self.resize((self.slots.len() * 2).max(FIRST_SLOTS));
        }
        let slot = Slot {
            hash,
            key_at: self.keys.len() as u32,
            key_len: piece.len() as u32,
            ids_at: self.ids.len() as u32,
            ids_len: ids.len() as u32,
        };
        self.keys.extend_from_slice(piece);
        self.ids.extend_from_slice(ids);
        self.place(slot);
        self.entries += 1;
        self.bytes += cost;
    }

    fn place(&mut self, slot: Slot) {
        let mut index = self.slot_index(slot.hash);
        while self.slots[index].key_len != 0 {
            index = (index + 1) & (self.slots.len() - 1);
        }
        self.slots[index] = slot;
    }

    fn resize(&mut self, len: usize) {
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); len]);
        old.into_iter().filter(|slot| slot.key_len != 0).for_each(|slot| self.place(slot));
    }

    fn clear(&mut self) {
        self.slots = Vec::new();
        self.keys.clear();
        self.ids.clear();
        (self.entries, self.bytes, self.turned_away) = (0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(table: &mut LongPieceTable, piece: &[u8]) -> Option<Vec<u32>> {
        let mut out = Vec::new();
        table.get(piece, hash_long(piece), &mut out).then_some(out)
    }

    fn insert(table: &mut LongPieceTable, piece: &[u8], ids: &[u32]) {
        table.insert(piece, hash_long(piece), ids);
    }

    #[test]
    fn long_pieces_are_kept_within_the_bound() {
        let mut table = LongPieceTable::with_max_bytes(10_000);
        let piece = |i: u32| format!("a long piece of text number {i}").into_bytes();
        for i in 0..1000 {
            insert(&mut table, &piece(i), &[i, i + 1]);
            assert!(table.bytes() <= 10_000);
        }
        let kept =
            (0..1000).filter(|&i| get(&mut table, &piece(i)).inspect(|ids| assert_eq!(*ids, [i, i + 1])).is_some());
        assert!(kept.count() > 20);
        // Full, it keeps what it has for a while: a text that repeats finds
        // that share again ...
        assert!(get(&mut table, &piece(0)).is_some() || get(&mut table, &piece(999)).is_some());
        // ... and after as many misses as it holds it starts over.
        for i in 1000..3000 {
            insert(&mut table, &piece(i), &[i]);
        }
        let new_kept = (1000..3000).filter(|&i| get(&mut table, &piece(i)) == Some(vec![i])).count();
        assert!(new_kept > 20, "{new_kept} of the new pieces kept");
        insert(&mut table, &[b'x'; LONG_PIECE_MAX + 1], &[1]);
        assert_eq!(get(&mut table, &[b'x'; LONG_PIECE_MAX + 1]), None);
    }

    #[test]
    fn pieces_that_never_repeat_are_kept_from_their_second_time_on() {
        let mut table = LongPieceTable::default();
        let piece = |i: usize| format!("a line of text that comes once, number {i}").into_bytes();
        // A round of new pieces, none found again: from then on a new piece is not kept ...
        for i in 0..ROUND as usize {
            insert(&mut table, &piece(i), &[i as u32]);
        }
        let new = piece(1 << 20);
        insert(&mut table, &new, &[7]);
        assert_eq!(get(&mut table, &new), None);
        // ... until it comes again.
        insert(&mut table, &new, &[7]);
        assert_eq!(get(&mut table, &new), Some(vec![7]));
        // A round in which one lookup in 64 finds its piece: every new piece is kept again.
        for i in 0..ROUND as usize {
            if i % 32 == 0 {
                assert_eq!(get(&mut table, &new), Some(vec![7]));
            }
            insert(&mut table, &piece((2 << 20) + i), &[i as u32]);
        }
        let next = piece(3 << 20);
        insert(&mut table, &next, &[8]);
        assert_eq!(get(&mut table, &next), Some(vec![8]));
    }

    #[test]
    fn same_hash_different_bytes_are_different_pieces() {
        // Pieces given one hash (as if they collided) are told apart by their bytes and length.
        let mut table = LongPieceTable::default();
        let pieces: Vec<Vec<u8>> = (0..3000).map(|i| format!("{i:0>20}").into_bytes()).collect();
        for (i, piece) in pieces.iter().enumerate() {
            table.insert(piece, 7, &[i as u32]);
        }
        table.insert(b"00000000000000000000\0", 7, &[9999]);
        for (i, piece) in pieces.iter().enumerate() {
            let mut out = Vec::new();
            assert!(table.get(piece, 7, &mut out) && out == [i as u32], "piece {i}");
        }
        let mut out = Vec::new();
        assert!(table.get(b"00000000000000000000\0", 7, &mut out) && out == [9999]);
        assert!(!table.get(b"not in the table at all", 7, &mut Vec::new()));
        // Inserting again changes nothing.
        table.insert(&pieces[0], 7, &[1, 2, 3]);
        assert!(table.get(&pieces[0], 7, &mut out) && out.ends_with(&[0]));
    }
}
