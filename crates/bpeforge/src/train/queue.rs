//! The max-heap of merge candidates and the CS336 tie-break.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use super::word::Pair;

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

pub type MergeQueue = BinaryHeap<Candidate>;

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(count: u64, left: &[u8], right: &[u8]) -> Candidate {
        Candidate::new(count, (0, 0), left.into(), right.into())
    }

    #[test]
    fn ties_go_to_the_greater_pair_of_byte_strings() {
        // DESIGN §1.1.4: (BA, A) > (B, ZZ) > (A, C) > (A, B), all at one count.
        let mut queue: MergeQueue =
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
        let mut queue: MergeQueue = [candidate(1, b"a", b"x"), candidate(1, b"a\0", b"x")].into_iter().collect();
        assert_eq!(queue.pop().map(|c| c.left().to_vec()), Some(b"a\0".to_vec()));
        let mut queue: MergeQueue =
            [candidate(1, b"abcdefghZ", b"x"), candidate(1, b"abcdefghA", b"y")].into_iter().collect();
        assert_eq!(queue.pop().map(|c| c.left().to_vec()), Some(b"abcdefghZ".to_vec()));
    }

    #[test]
    fn count_comes_before_bytes() {
        let mut queue: MergeQueue = [candidate(2, b"z", b"z"), candidate(3, b"a", b"a")].into_iter().collect();
        assert_eq!(queue.pop().map(|c| c.count), Some(3));
    }
}
