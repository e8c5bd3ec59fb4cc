//! The max-heap of merge candidates and the CS336 tie-break.
//!
//! The heap admits only pairs whose count reaches a floor. Each merge makes a
//! few dozen new pairs, almost all rare, and never merged: pushing every one
//! grew the heap to 190 K entries at 100 MB / 10k (12 MiB, deeper than the
//! cache), of which a merge pops a handful. With the floor, the heap holds a
//! band of the most frequent pairs; when it runs dry, the merge loop lowers
//! the floor and admits the next band from its live counts (`refill`).

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use super::word::Pair;

/// How many pairs a refill admits at most (more when counts tie at the
/// floor). A refill walks every live pair, so a band too small refills too
/// often; one too large keeps a deep heap. 1 K-16 K measured within noise
/// of each other at 100 MB / 10k and 500 MB / 32k.
const BAND: usize = 4096;

/// The floor is also at least the top count over this. Without it, a table
/// of fewer than `BAND` pairs (3,358 at the start of 100 MB of English)
/// would be admitted whole with the floor at its smallest count, and the
/// floor, which only falls, would admit every pair for the rest of the run.
/// 4-16 measured alike; 1 (one pair a band) was 8 times slower.
const TOP_SHARE: u64 = 8;

/// A pair with the count it had when pushed. Entries go stale as counts fall;
/// the merge loop re-checks an entry against the live count when it pops it
/// (lazy invalidation) instead of searching the heap on every change.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub count: u64,
    pub pair: Pair,
    left: Arc<[u8]>,
    right: Arc<[u8]>,
    /// The first 8 bytes of `left` and `right`, big-endian and zero-padded:
    /// comparing them decides most ties without touching the heap-allocated
    /// bytes (a tie on the prefixes falls back to the full comparison).
    left_prefix: u64,
    right_prefix: u64,
}

impl Candidate {
    pub fn new(count: u64, pair: Pair, left: Arc<[u8]>, right: Arc<[u8]>) -> Self {
        Self { count, pair, left_prefix: prefix(&left), right_prefix: prefix(&right), left, right }
    }

    pub fn left(&self) -> &Arc<[u8]> {
        &self.left
    }

    pub fn right(&self) -> &Arc<[u8]> {
        &self.right
    }
}

fn prefix(bytes: &[u8]) -> u64 {
    let mut padded = [0u8; 8];
    let len = bytes.len().min(8);
    padded[..len].copy_from_slice(&bytes[..len]);
    u64::from_be_bytes(padded)
}

impl Ord for Candidate {
    /// Determinism is decided here: the highest count first, then the
    /// lexicographically greater pair, comparing the left token's bytes and
    /// then the right token's bytes (never the concatenation), as Python
    /// compares `(left, right)` tuples of `bytes` in the CS336 reference.
    fn cmp(&self, other: &Self) -> Ordering {
        self.count
            .cmp(&other.count)
            .then_with(|| self.left_prefix.cmp(&other.left_prefix))
            .then_with(|| self.left.cmp(&other.left))
            .then_with(|| self.right_prefix.cmp(&other.right_prefix))
            .then_with(|| self.right.cmp(&other.right))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate {}

/// The heap with its floor. Invariant, on which the merge loop's correctness
/// rests: every pair that may still merge and whose live count is at least
/// `floor` has an entry whose count is at least its live count, and no entry
/// counts less than `floor`. Then a popped entry whose count is live beats
/// every pair, admitted or not (those below the floor count less).
#[derive(Debug)]
pub struct MergeQueue {
    heap: BinaryHeap<Candidate>,
    floor: u64,
}

impl Default for MergeQueue {
    /// Empty, with nothing admitted yet: the first pop finds it dry and fills it.
    fn default() -> Self {
        Self { heap: BinaryHeap::new(), floor: u64::MAX }
    }
}

impl MergeQueue {
    /// Whether a pair with this live count must have an entry.
    pub fn admits(&self, count: u64) -> bool {
        count >= self.floor
    }

    pub fn push(&mut self, candidate: Candidate) {
        debug_assert!(
            self.admits(candidate.count),
            "an entry below the floor could pass a pair that was never admitted"
        );
        self.heap.push(candidate);
    }

    pub fn pop(&mut self) -> Option<Candidate> {
        self.heap.pop()
    }

    /// The heap ran dry, so every pair counts less than the floor: lower the
    /// floor to the count of the `BAND`-th most frequent of `pairs` (all live
    /// pairs that may still merge), or to the top count over `TOP_SHARE` if
    /// that is higher, and push those that reach it. Returns false when
    /// there is no pair left.
    pub fn refill(&mut self, mut pairs: Vec<(u64, Pair)>, candidate: impl Fn(Pair, u64) -> Candidate) -> bool {
        debug_assert!(self.heap.is_empty());
        if pairs.is_empty() {
            return false;
        }
        let nth = BAND.min(pairs.len()) - 1;
        let (above, &mut (nth_count, _), _) = pairs.select_nth_unstable_by(nth, |a, b| b.0.cmp(&a.0));
        let top = above.iter().map(|&(count, _)| count).max().unwrap_or(nth_count);
        let floor = nth_count.max(top / TOP_SHARE);
        self.floor = floor;
        let admitted = pairs.into_iter().filter(|&(count, _)| count >= floor);
        self.heap = admitted.map(|(count, pair)| candidate(pair, count)).collect();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(count: u64, left: &[u8], right: &[u8]) -> Candidate {
        Candidate::new(count, (0, 0), left.into(), right.into())
    }

    #[test]
    fn ties_go_to_the_greater_pair_of_byte_strings() {
        // DESIGN §1.1.4: (BA, A) > (B, ZZ) > (A, C) > (A, B), all at one count.
        let mut queue: BinaryHeap<Candidate> =
            [candidate(5, b"A", b"B"), candidate(5, b"B", b"ZZ"), candidate(5, b"BA", b"A"), candidate(5, b"A", b"C")]
                .into_iter()
                .collect();
        let order: Vec<(Vec<u8>, Vec<u8>)> =
            std::iter::from_fn(|| queue.pop()).map(|c| (c.left().to_vec(), c.right().to_vec())).collect();
        let expected: [(&[u8], &[u8]); 4] = [(b"BA", b"A"), (b"B", b"ZZ"), (b"A", b"C"), (b"A", b"B")];
        let expected: Vec<(Vec<u8>, Vec<u8>)> = expected.iter().map(|(l, r)| (l.to_vec(), r.to_vec())).collect();
        assert_eq!(order, expected);
    }

    #[test]
    fn equal_prefixes_fall_back_to_the_full_bytes() {
        // Zero padding makes b"a" and b"a\0" share a prefix; the full bytes decide.
        let mut queue: BinaryHeap<Candidate> =
            [candidate(1, b"a", b"x"), candidate(1, b"a\0", b"x")].into_iter().collect();
        assert_eq!(queue.pop().map(|c| c.left().to_vec()), Some(b"a\0".to_vec()));
        let mut queue: BinaryHeap<Candidate> =
            [candidate(1, b"abcdefghZ", b"x"), candidate(1, b"abcdefghA", b"y")].into_iter().collect();
        assert_eq!(queue.pop().map(|c| c.left().to_vec()), Some(b"abcdefghZ".to_vec()));
    }

    #[test]
    fn a_refill_admits_a_band_from_the_top() {
        let mut queue = MergeQueue::default();
        assert!(!queue.admits(u64::MAX - 1), "nothing is admitted before the first refill");
        // 10,000 pairs counting 1..=10,000: the floor is the 4,096th count
        // (5,905), above the top count over 8 (1,250).
        let pairs: Vec<(u64, Pair)> = (1..=10_000u32).map(|n| (u64::from(n), (n, n))).collect();
        assert!(queue.refill(pairs, |pair, count| Candidate::new(count, pair, [0].into(), [0].into())));
        assert_eq!((queue.floor, queue.heap.len()), (5_905, BAND));
        assert!(queue.admits(5_905) && !queue.admits(5_904));
        assert_eq!(queue.pop().map(|top| top.count), Some(10_000));
        // A few pairs far apart: the top count over 8 decides (100 / 8 = 12).
        let mut queue = MergeQueue::default();
        let pairs = vec![(100, (1, 1)), (50, (2, 2)), (12, (3, 3)), (11, (4, 4))];
        assert!(queue.refill(pairs, |pair, count| Candidate::new(count, pair, [0].into(), [0].into())));
        assert_eq!((queue.floor, queue.heap.len()), (12, 3));
        // No pair left: no refill.
        queue.heap.clear();
        assert!(!queue.refill(Vec::new(), |_, _| unreachable!()));
    }

    #[test]
    fn count_comes_before_bytes() {
        let mut queue: BinaryHeap<Candidate> =
            [candidate(2, b"z", b"z"), candidate(3, b"a", b"a")].into_iter().collect();
        assert_eq!(queue.pop().map(|c| c.count), Some(3));
    }
}
