//! What one merge step of HF's loop does to the pair counts, gathered by
//! neighbour token in dense arrays rather than in a map keyed by pair.
//!
//! Merging `left right` into `new` at an occurrence changes four pairs, all
//! with a neighbour `n` of the occurrence: `(n, left)` and `(right, n)` lose
//! its count, `(n, new)` and `(new, n)` gain it (and appear there). Indexed
//! by `n`, a step's changes need no hashing; they reach the map of every pair
//! once per neighbour, when the step ends (`hf_occurrences.rs`).

/// The changes on one side of the occurrences, by neighbour token.
#[derive(Default)]
pub(super) struct Side {
    /// Change of `(n, left)` (before) or `(right, n)` (after).
    pub lost: Vec<i64>,
    /// Change of `(n, new)` or `(new, n)`.
    pub gained: Vec<i64>,
    /// Where `(n, new)` or `(new, n)` appeared (its left token), ascending.
    pub at: Vec<Vec<u32>>,
    /// The neighbours this step touched, each once.
    pub touched: Vec<u32>,
    /// The step that last touched each neighbour.
    stamp: Vec<u32>,
}

impl Side {
    /// Room for neighbours below `tokens`; a new step `step` (never 0).
    fn start(&mut self, tokens: usize) {
        if self.stamp.len() < tokens {
            self.lost.resize(tokens, 0);
            self.gained.resize(tokens, 0);
            self.at.resize_with(tokens, Vec::new);
            self.stamp.resize(tokens, 0);
        }
        self.touched.clear();
    }

    #[inline]
    fn touch(&mut self, n: u32, step: u32) -> usize {
        let i = n as usize;
        if self.stamp[i] != step {
            self.stamp[i] = step;
            self.touched.push(n);
            (self.lost[i], self.gained[i]) = (0, 0);
        }
        i
    }

    /// The pair with `n` lost `count` occurrences.
    #[inline]
    pub fn lose(&mut self, n: u32, count: i64, step: u32) {
        let i = self.touch(n, step);
        self.lost[i] -= count;
    }

    /// The pair with `n` gained an occurrence of count `count` at `at`.
    #[inline]
    pub fn gain(&mut self, n: u32, count: i64, at: u32, step: u32) {
        let i = self.touch(n, step);
        self.gained[i] += count;
        self.at[i].push(at);
    }
}

/// One step's changes: before and after the occurrences.
#[derive(Default)]
pub(super) struct StepChanges {
    pub before: Side,
    pub after: Side,
    /// Which step this is (stamps in `Side`).
    pub step: u32,
}

impl StepChanges {
    /// Empty, for a step with tokens below `tokens`.
    pub fn start(&mut self, tokens: usize) {
        self.step += 1;
        self.before.start(tokens);
        self.after.start(tokens);
    }
}
