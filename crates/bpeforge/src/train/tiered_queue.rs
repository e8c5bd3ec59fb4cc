//! A max-queue that pops as a binary heap does, for HF's merge loop on
//! SuperBPE's pieces, where nearly every pair of the corpus (millions, most
//! of them seen once or twice) has a queue entry that will never be popped:
//! in one heap, each pop walked ~22 levels of it, a cache miss each.
//!
//! Only the entries whose count reaches `floor` are in the heap; the others
//! wait in a plain list. When the heap runs dry, `floor` drops to the count
//! of the `HEAP_SIZE`-th best waiting entry and those at or above it move in.
//! Every entry in the heap outcounts every waiting one, so the pops come in
//! the heap's order.
//!
//! The waiting list is the largest thing stage 2 holds after its arena. It
//! grows in chunks of fixed size, not as one `Vec`: doubling one meant the
//! old and the new buffer at once, and up to half of the new one unused.

use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

/// How many entries a refill moves into the heap (ties with the last one too).
const HEAP_SIZE: usize = 1 << 15;

/// Entries a chunk of the waiting list holds.
const CHUNK: usize = 1 << 16;

/// An entry with a count, the first key of its order.
pub(super) trait Counted: Ord {
    fn count(&self) -> u64;
}

pub(super) struct TieredQueue<T> {
    heap: BinaryHeap<T>,
    /// The waiting entries, in chunks of at most `CHUNK` (the last one filling).
    waiting: Vec<Vec<T>>,
    /// Entries counted at least this are in the heap.
    floor: u64,
}

impl<T: Counted> TieredQueue<T> {
    /// A queue of `entries`, the best `HEAP_SIZE` of them in the heap.
    pub fn new(entries: Vec<T>) -> Self {
        let mut queue = Self { heap: BinaryHeap::new(), waiting: vec![entries], floor: u64::MAX };
        queue.refill();
        queue
    }

    pub fn push(&mut self, entry: T) {
        if entry.count() >= self.floor {
            self.heap.push(entry);
            return;
        }
        match self.waiting.last_mut() {
            Some(chunk) if chunk.len() < CHUNK => chunk.push(entry),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(entry);
                self.waiting.push(chunk);
            }
        }
    }

    pub fn pop(&mut self) -> Option<T> {
        if self.heap.is_empty() {
            self.refill();
        }
        self.heap.pop()
    }

    /// Lower `floor` so that the best `HEAP_SIZE` waiting entries (and those
    /// that tie with the last) move into the heap.
    fn refill(&mut self) {
        self.floor = self.nth_best_count(HEAP_SIZE);
        let floor = self.floor;
        // In place: the waiting list is most of stage 2's memory.
        for chunk in &mut self.waiting {
            self.heap.extend(chunk.extract_if(.., |e| e.count() >= floor));
        }
        self.waiting.retain(|chunk| !chunk.is_empty());
    }

    /// The count of the `n`-th best waiting entry (0 when fewer wait), from
    /// a histogram of the counts: few distinct values, where a list of every
    /// entry's count was as long as the waiting list.
    fn nth_best_count(&self, n: usize) -> u64 {
        let mut histogram: FxHashMap<u64, usize> = FxHashMap::default();
        self.waiting.iter().flatten().for_each(|entry| *histogram.entry(entry.count()).or_default() += 1);
        let mut counts: Vec<(u64, usize)> = histogram.into_iter().collect();
        counts.sort_unstable_by_key(|&(count, _)| std::cmp::Reverse(count));
        let mut seen = 0;
        for (count, entries) in counts {
            seen += entries;
            if seen >= n {
                return count;
            }
        }
        0
    }
}

impl<T: Counted> Extend<T> for TieredQueue<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, entries: I) {
        entries.into_iter().for_each(|entry| self.push(entry));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Counted for (u64, u32) {
        fn count(&self) -> u64 {
            self.0
        }
    }

    #[test]
    fn pops_in_heap_order_across_refills() {
        // A pseudo-random mix, far more entries than one refill moves.
        let entries: Vec<(u64, u32)> = (0..5 * HEAP_SIZE as u64).map(|i| ((i * 7919) % 1013, i as u32)).collect();
        let mut queue = TieredQueue::new(entries.clone());
        let mut heap: BinaryHeap<(u64, u32)> = entries.into_iter().collect();
        for step in 0..6 * HEAP_SIZE as u64 {
            // Interleave pushes below and above the floor.
            if step % 3 == 0 {
                let entry = ((step * 31) % 2000, u32::MAX - step as u32);
                queue.push(entry);
                heap.push(entry);
            }
            assert_eq!(queue.pop(), heap.pop());
        }
    }
}
