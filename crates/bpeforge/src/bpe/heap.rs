//! The linked list of parts on a min-queue of `(rank, position)` keys: a
//! binary heap with lazy invalidation for any vocabulary, a radix heap for
//! those whose ranks grow (its pushes are appends, its pops scan small
//! buckets in order: on a megabyte-sized piece a binary heap's random
//! accesses miss the caches).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::bpe::list::{byte_nodes, heap_key, merge_after, merge_with_next, Node};
use crate::bpe::merges::{MergeTable, NONE};

/// A min-queue of `(rank, position)` keys (see `heap_key`).
pub(super) trait MinQueue {
    /// Empty the queue, then hold `keys`.
    fn refill(&mut self, keys: impl Iterator<Item = u64>);
    fn push(&mut self, key: u64);
    fn pop(&mut self) -> Option<u64>;
}

impl MinQueue for BinaryHeap<Reverse<u64>> {
    fn refill(&mut self, keys: impl Iterator<Item = u64>) {
        // One O(n) heapify rather than n pushes.
        let mut entries = std::mem::take(self).into_vec();
        entries.clear();
        entries.extend(keys.map(Reverse));
        *self = BinaryHeap::from(entries);
    }

    fn push(&mut self, key: u64) {
        BinaryHeap::push(self, Reverse(key));
    }

    fn pop(&mut self) -> Option<u64> {
        BinaryHeap::pop(self).map(|Reverse(key)| key)
    }
}

/// A radix heap: a min-queue for keys that never go below the last one
/// popped (a monotone queue). Bucket `b > 0` holds keys whose highest bit
/// differing from `last` is bit `b - 1`; bucket 0 holds `last` itself. A pop
/// from an empty bucket 0 takes the first non-empty bucket, makes its minimum
/// the new `last` and spreads it into lower buckets: each key moves down at
/// most 64 times, all of it sequential reads and appends. Hand-written: no
/// crate offers one for this small need without a dependency; it is checked
/// against the binary heap in the tests below and in every long piece the
/// tiktoken-equality tests encode.
pub(super) struct RadixHeap {
    last: u64,
    pub(super) buckets: [Vec<u64>; 65],
}

impl Default for RadixHeap {
    fn default() -> Self {
        Self { last: 0, buckets: std::array::from_fn(|_| Vec::new()) }
    }
}

impl RadixHeap {
    #[inline]
    fn bucket(&self, key: u64) -> usize {
        64 - (key ^ self.last).leading_zeros() as usize
    }
}

impl MinQueue for RadixHeap {
    fn refill(&mut self, keys: impl Iterator<Item = u64>) {
        self.buckets.iter_mut().for_each(Vec::clear);
        self.last = 0;
        keys.for_each(|key| self.push(key));
    }

    #[inline]
    fn push(&mut self, key: u64) {
        debug_assert!(key >= self.last, "radix heap: key {key} pushed below the last popped {}", self.last);
        let bucket = self.bucket(key);
        self.buckets[bucket].push(key);
    }

    fn pop(&mut self) -> Option<u64> {
        if self.buckets[0].is_empty() {
            let from = (1..self.buckets.len()).find(|&b| !self.buckets[b].is_empty())?;
            let spread = std::mem::take(&mut self.buckets[from]);
            self.last = *spread.iter().min().expect("a non-empty bucket");
            for &key in &spread {
                let bucket = self.bucket(key);
                self.buckets[bucket].push(key);
            }
            // Keep the emptied bucket's allocation for the next time it fills.
            let mut spread = spread;
            spread.clear();
            self.buckets[from] = spread;
        }
        self.buckets[0].pop()
    }
}

pub(super) fn merge_long<Q: MinQueue>(
    piece: &[u8],
    table: &MergeTable,
    nodes: &mut Vec<Node>,
    heap: &mut Q,
    out: &mut Vec<u32>,
) {
    nodes.clear();
    byte_nodes(piece, table, nodes);
    nodes[piece.len() - 1].next = NONE;
    heap.refill(
        nodes.iter().enumerate().filter(|(_, node)| node.rank != NONE).map(|(at, node)| heap_key(node.rank, at as u32)),
    );
    // Look up the merge of part `at` with its next one, and queue it.
    let update = |heap: &mut Q, nodes: &mut [Node], at: u32| {
        let (rank, merged) = merge_after(nodes, at, table);
        (nodes[at as usize].rank, nodes[at as usize].merged) = (rank, merged);
        if rank != NONE {
            heap.push(heap_key(rank, at));
        }
    };
    while let Some(key) = heap.pop() {
        let (rank, at) = ((key >> 32) as u32, key as u32);
        let node = nodes[at as usize];
        if node.id == NONE || node.rank != rank {
            continue; // stale: the pair at `at` changed since this entry was pushed
        }
        merge_with_next(nodes, at);
        if node.prev != NONE {
            update(heap, nodes, node.prev);
        }
        update(heap, nodes, at);
    }
    out.extend(nodes.iter().filter(|node| node.id != NONE).map(|node| node.id));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radix_heap_pops_in_order_while_keys_grow() {
        let mut queue = RadixHeap::default();
        queue.refill([9u64, 3, 7, 3, 1 << 40].into_iter());
        let mut popped = vec![queue.pop().unwrap(), queue.pop().unwrap()];
        queue.push(5); // not below the last popped (3)
        queue.push(u64::MAX);
        while let Some(key) = queue.pop() {
            popped.push(key);
        }
        assert_eq!(popped, [3, 3, 5, 7, 9, 1 << 40, u64::MAX]);
        queue.refill([2u64].into_iter()); // a refill starts over from 0
        assert_eq!((queue.pop(), queue.pop()), (Some(2), None));
    }
}
