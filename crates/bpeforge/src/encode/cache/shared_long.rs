//! The shared cache's second level (`shared.rs`): the pieces its slots cannot
//! hold, keyed by their bytes: pre-tokens of more than 15 bytes (a CJK clause,
//! a URL, a line of dashes) and short ones with more than `shared::MAX_IDS`
//! ids.
//!
//! Why: a thread's own tables keep such pieces (`long_pieces.rs`, a piece
//! table's overflow ids), but no other thread could find them, so each worker
//! of a batch merged again the ones another had merged.
//!
//! A plain map behind a few locks: it is asked only when a thread's own table
//! misses, and filled only by threads that share (`StatePool`). Bounded by a
//! byte budget; when full it stops adding, as a thread's long table does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const SHARDS: usize = 16;
/// What an entry costs besides its bytes and ids: the map's slot and the
/// two allocations' headers.
const ENTRY_OVERHEAD: usize = 64;

#[derive(Default)]
struct Shard {
    pieces: HashMap<Box<[u8]>, Box<[u32]>>,
    bytes: usize,
}

pub struct SharedLongPieces {
    shards: Box<[Mutex<Shard>]>,
    /// Budget of each shard, in bytes.
    shard_bytes: usize,
    /// Entries held, so that an empty level is skipped without a lock (one
    /// thread alone never fills it).
    entries: AtomicUsize,
}

impl SharedLongPieces {
    /// At most `bytes` of pieces and ids (0: none are kept).
    pub fn new(bytes: usize) -> Self {
        let shards = (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect();
        Self { shards, shard_bytes: bytes / SHARDS, entries: AtomicUsize::new(0) }
    }

    fn shard(&self, hash: u64) -> std::sync::MutexGuard<'_, Shard> {
        let index = (hash >> 60) as usize % SHARDS;
        self.shards[index].lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Append the ids of `piece` (`hash` any well-mixed hash of it, the same
    /// for every call) to `out` if held.
    pub fn get(&self, piece: &[u8], hash: u64, out: &mut Vec<u32>) -> bool {
        if self.entries.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let shard = self.shard(hash);
        let Some(ids) = shard.pieces.get(piece) else { return false };
        out.extend_from_slice(ids);
        true
    }

    /// Remember the ids of `piece` if the budget allows; whether it was added.
    pub fn insert(&self, piece: &[u8], hash: u64, ids: &[u32]) -> bool {
        let cost = piece.len() + 4 * ids.len() + ENTRY_OVERHEAD;
        let mut shard = self.shard(hash);
        if shard.bytes + cost > self.shard_bytes || shard.pieces.contains_key(piece) {
            return false;
        }
        shard.pieces.insert(piece.into(), ids.into());
        shard.bytes += cost;
        self.entries.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Entries held and their bytes.
    pub fn usage(&self) -> (usize, usize) {
        let bytes = self.shards.iter().map(|shard| shard.lock().unwrap_or_else(|p| p.into_inner()).bytes).sum();
        (self.entries.load(Ordering::Relaxed), bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_pieces_within_its_budget() {
        let level = SharedLongPieces::new(SHARDS * 1000);
        let mut out = Vec::new();
        assert!(!level.get(b"a long piece of text", 7, &mut out));
        let piece = |i: u64| format!("piece number {i:08} of many").into_bytes();
        let kept: Vec<u64> = (0..1000u64).filter(|&i| level.insert(&piece(i), i << 58 | i, &[i as u32; 5])).collect();
        let (entries, bytes) = level.usage();
        assert!(entries == kept.len() && entries > 0 && entries < 1000, "{entries}");
        assert!(bytes <= SHARDS * 1000, "{bytes}");
        for i in 0..1000u64 {
            out.clear();
            let found = level.get(&piece(i), i << 58 | i, &mut out);
            assert_eq!(found, kept.contains(&i), "piece {i}");
            assert!(!found || out == [i as u32; 5]);
        }
        assert!(!level.insert(&piece(kept[0]), kept[0] << 58 | kept[0], &[1]), "never replaced");
        assert!(!SharedLongPieces::new(0).insert(b"anything at all here", 1, &[1]), "no budget, nothing kept");
    }
}
