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

use std::collections::BinaryHeap;

/// How many entries a refill moves into the heap (ties with the last one too).
const HEAP_SIZE: usize = 1 << 15;

/// An entry with a count, the first key of its order.
pub(super) trait Counted: Ord {
    fn count(&self) -> u64;
}

pub(super) struct TieredQueue<T> {
    heap: BinaryHeap<T>,
    waiting: Vec<T>,
    /// Entries counted at least this are in the heap.
    floor: u64,
}

impl<T: Counted> TieredQueue<T> {
    /// A queue of `entries`, the best `HEAP_SIZE` of them in the heap.
    pub fn new(entries: Vec<T>) -> Self {
        let mut queue = Self { heap: BinaryHeap::new(), waiting: entries, floor: u64::MAX };
        queue.refill();
        queue
    }

    pub fn push(&mut self, entry: T) {
        if entry.count() >= self.floor {
            self.heap.push(entry);
        } else {
            self.waiting.push(entry);
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
        if self.waiting.len() <= HEAP_SIZE {
            self.floor = 0;
        } else {
            let mut counts: Vec<u64> = self.waiting.iter().map(Counted::count).collect();
            let (_, &mut nth, _) = counts.select_nth_unstable_by(HEAP_SIZE - 1, |a, b| b.cmp(a));
            self.floor = nth;
        }
        let floor = self.floor;
        // In place: the waiting list is most of stage 2's memory.
        self.heap.extend(self.waiting.extract_if(.., |e| e.count() >= floor));
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
