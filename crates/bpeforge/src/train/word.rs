//! One distinct pre-token as a sequence of symbol ids, merged in place.

/// A pair of adjacent symbols.
pub type Pair = (u32, u32);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    symbols: Vec<u32>,
}

impl Word {
    /// A word of single bytes: symbol id = byte value.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        Self { symbols: bytes.iter().map(|&b| b as u32).collect() }
    }

    pub fn symbols(&self) -> &[u32] {
        &self.symbols
    }

    pub fn pairs(&self) -> impl Iterator<Item = Pair> + '_ {
        self.symbols.windows(2).map(|w| (w[0], w[1]))
    }

    /// Replace each occurrence of `pair`, left to right and non-overlapping,
    /// by `new`, reporting every pair count change as `(pair, ±1)`.
    ///
    /// Only the neighbours of each occurrence change: `(prev, left)` and
    /// `(right, next)` go, `(prev, new)` and `(new, next)` come. When two
    /// occurrences are back to back, `prev` is the `new` just written, so the
    /// `(new, left)` added by the first is taken back by the second.
    pub fn merge(&mut self, pair: Pair, new: u32, mut changed: impl FnMut(Pair, i64)) {
        let (left, right) = pair;
        let symbols = &mut self.symbols;
        let len = symbols.len();
        let (mut read, mut write) = (0, 0);
        while read < len {
            if read + 1 < len && symbols[read] == left && symbols[read + 1] == right {
                if write > 0 {
                    let prev = symbols[write - 1];
                    changed((prev, left), -1);
                    changed((prev, new), 1);
                }
                changed(pair, -1);
                if read + 2 < len {
                    let next = symbols[read + 2];
                    changed((right, next), -1);
                    changed((new, next), 1);
                }
                symbols[write] = new;
                read += 2;
            } else {
                symbols[write] = symbols[read];
                read += 1;
            }
            write += 1;
        }
        symbols.truncate(write);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn merged(bytes: &[u8], pair: Pair, new: u32) -> (Vec<u32>, BTreeMap<Pair, i64>) {
        let mut word = Word::from_bytes(bytes);
        let mut changes = BTreeMap::new();
        word.merge(pair, new, |p, d| *changes.entry(p).or_insert(0) += d);
        changes.retain(|_, d| *d != 0);
        (word.symbols, changes)
    }

    const A: u32 = b'a' as u32;
    const B: u32 = b'b' as u32;
    const X: u32 = 256; // the new symbol

    #[test]
    fn non_overlapping_left_to_right() {
        // "aaa" with (a, a): "aa a", not "a aa". Pairs before: aa, aa. After: Xa.
        let (symbols, changes) = merged(b"aaa", (A, A), X);
        assert_eq!(symbols, [X, A]);
        assert_eq!(changes, BTreeMap::from([((A, A), -2), ((X, A), 1)]));
    }

    #[test]
    fn back_to_back_occurrences() {
        // "abab" with (a, b): "X X". Pairs before: ab, ba, ab. After: XX.
        let (symbols, changes) = merged(b"abab", (A, B), X);
        assert_eq!(symbols, [X, X]);
        assert_eq!(changes, BTreeMap::from([((A, B), -2), ((B, A), -1), ((X, X), 1)]));
    }

    #[test]
    fn untouched_word_reports_nothing() {
        let (symbols, changes) = merged(b"ba", (A, B), X);
        assert_eq!(symbols, [B, A]);
        assert!(changes.is_empty());
    }
}
