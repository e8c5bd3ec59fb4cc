//! A tournament tree: the minimum of a fixed row of keys, kept up to date as
//! single keys change. The merge loop of pieces of 33-1024 bytes (`tree.rs`)
//! keeps the merge of each part with its next one here, keyed `(rank,
//! position)`.
//!
//! Why not a binary heap: a merge changes three keys (the merged part's, its
//! left neighbour's, and the removed part's), which a heap can only append to,
//! leaving stale entries to pop and skip, each pop and push a branch per level
//! that the CPU cannot predict. Here a change rewrites its leaf and the
//! minimum of each ancestor, `log2(leaves)` branch-free steps, and the tree
//! never holds a stale key.

/// The minimum of `leaves` keys; `u64::MAX` is "no key".
#[derive(Default)]
pub struct MinTree {
    /// `keys[leaves + i]` is leaf `i`; `keys[k]` for `1 <= k < leaves` is the
    /// minimum of `keys[2k]` and `keys[2k + 1]`; `keys[0]` is unused.
    keys: Vec<u64>,
    leaves: usize,
}

impl MinTree {
    /// Hold `keys` as the leaves, `u64::MAX` past them.
    pub fn refill(&mut self, keys: impl ExactSizeIterator<Item = u64>) {
        self.leaves = keys.len().next_power_of_two().max(2);
        self.keys.clear();
        self.keys.resize(self.leaves, u64::MAX);
        self.keys.extend(keys);
        self.keys.resize(2 * self.leaves, u64::MAX);
        for k in (1..self.leaves).rev() {
            self.keys[k] = self.keys[2 * k].min(self.keys[2 * k + 1]);
        }
    }

    /// The smallest key, `u64::MAX` if none.
    #[inline]
    pub fn min(&self) -> u64 {
        self.keys[1]
    }

    /// Set leaf `at` to `key` (`u64::MAX` to remove it).
    #[inline]
    pub fn set(&mut self, at: usize, key: u64) {
        let mut k = self.leaves + at;
        self.keys[k] = key;
        while k > 1 {
            let sibling = self.keys[k ^ 1];
            let lower = self.keys[k].min(sibling);
            k >>= 1;
            self.keys[k] = lower;
        }
    }

    /// Bytes its buffer holds.
    pub fn bytes(&self) -> usize {
        self.keys.capacity() * std::mem::size_of::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minimum_follows_every_change() {
        let mut rng = crate::util::test_rng::XorShift(0x9e37_79b9_7f4a_7c15);
        let mut tree = MinTree::default();
        for len in [1usize, 2, 3, 5, 64, 100, 1000] {
            let mut keys: Vec<u64> = (0..len).map(|_| rng.next() % 50).collect();
            tree.refill(keys.iter().copied());
            for _ in 0..500 {
                assert_eq!(tree.min(), keys.iter().copied().min().unwrap_or(u64::MAX));
                let at = (rng.next() % len as u64) as usize;
                keys[at] = if rng.next().is_multiple_of(4) { u64::MAX } else { rng.next() % 50 };
                tree.set(at, keys[at]);
            }
        }
        tree.refill(std::iter::empty());
        assert_eq!(tree.min(), u64::MAX);
    }
}
