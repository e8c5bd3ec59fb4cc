//! A Bloom filter of the pairs that have a merge: "no merge" answered from one
//! word of a table a sixteenth the size of the merge table's.
//!
//! Why: merging a CJK clause under o200k asks mostly pairs that have no merge
//! (a finished character against the next one's raw byte), and the merge
//! table's 4 MiB spread over random slots made each of those lookups wait on
//! the third-level cache. This table (256 KiB for o200k, 64 KiB for GPT-2)
//! stays in the second-level cache and says "no merge" for 97% of the pairs
//! that have none; the rest, and every pair that has one, go on to the map.
//!
//! Hand-written rather than a Bloom crate's: the probe is one multiply, one
//! load and one mask, inlined at the merge loop, on a key the merge table
//! already builds. It never says "no" to a pair that has a merge: a test checks
//! 50 K random pairs, and debug builds check every merge of every vocabulary.

/// Bits of the table for each merge, at least (the table's length is rounded
/// up to a power of two): with two bits a pair in one word, 3% of the pairs
/// without a merge pass at 10.5 bits a merge.
const BITS_PER_PAIR: usize = 8;

#[derive(Debug, Clone)]
pub struct PairFilter {
    words: Box<[u64]>,
    /// `64 - log2(words.len())`: the hash's top bits pick the word.
    shift: u32,
}

impl PairFilter {
    /// A filter holding each of `keys` (`left << 32 | right`).
    pub fn new(keys: impl ExactSizeIterator<Item = u64>) -> Self {
        let words = (keys.len() * BITS_PER_PAIR / 64).next_power_of_two().max(1);
        let mut filter = Self { words: vec![0; words].into(), shift: 64 - words.trailing_zeros() };
        for key in keys {
            let (word, bits) = filter.place(key);
            filter.words[word] |= bits;
        }
        filter
    }

    /// Whether `key` may have a merge: false means it has none.
    #[inline]
    pub fn may_hold(&self, key: u64) -> bool {
        let (word, bits) = self.place(key);
        self.words[word] & bits == bits
    }

    /// The word a key lives in and its two bits there. The multiplier is
    /// Fibonacci hashing's (2^64 / golden ratio): a product's bit `b` depends
    /// on the key's bits up to `b`, so the top bits (the word) depend on both
    /// ids, and bits 32-43 (the two bits; below the word's for tables of up to
    /// 2^20 words) on all of `right` and the low bits of `left`.
    #[inline]
    fn place(&self, key: u64) -> (usize, u64) {
        let hash = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        // `checked_shr` keeps a one-word table (shift 64) at word 0.
        let word = hash.checked_shr(self.shift).unwrap_or(0) as usize;
        let bits = 1 << (hash >> 32 & 63) | 1 << (hash >> 38 & 63);
        (word, bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_every_key_and_turns_away_most_others() {
        let mut rng = crate::util::test_rng::XorShift(0x2545_f491_4f6c_dd1d);
        let keys: Vec<u64> = (0..50_000).map(|_| ((rng.next() % 200_000) << 32) | (rng.next() % 200_000)).collect();
        let filter = PairFilter::new(keys.iter().copied());
        assert!(keys.iter().all(|&key| filter.may_hold(key)));
        let others = 100_000;
        let maybes = (0..others).filter(|&i| filter.may_hold(((i % 300_000) << 32) | ((i + 7) / 3))).count();
        assert!(maybes < others as usize / 20, "{maybes} of {others} pairs without a merge passed");
        let empty = PairFilter::new(std::iter::empty());
        assert!(!empty.may_hold(1 << 32 | 2));
    }
}
