//! The pair count changes of the merge being applied, with the words that
//! gained each pair.
//!
//! A merge reports a change per neighbour of each occurrence; most fall on a
//! few pairs, so they are summed in a small map that stays in cache (sending
//! each to the large count table was slower),
//! and the corpus-wide tables see one change per pair when the merge ends.
//! The words that gained a pair are gathered here too, in the order the merge
//! visits them, and become that pair's holder list in one piece.

use rustc_hash::FxHashMap;

use super::word::Pair;

/// `Change::gained` of a pair that no word gained.
const NO_WORDS: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Change {
    delta: i64,
    /// Index of the pair's list in `MergeDeltas::gained`, or `NO_WORDS`.
    gained: u32,
}

#[derive(Debug, Default)]
pub struct MergeDeltas {
    changes: FxHashMap<Pair, Change>,
    /// Lists of the words that gained a pair; the first `lists_used` are
    /// this merge's, the rest are kept for their memory.
    gained: Vec<Vec<u32>>,
    lists_used: usize,
}

impl MergeDeltas {
    /// `pair`'s count changes by `delta` in `word`; a positive change means
    /// the word now holds the pair (a word's changes come together, so a
    /// word that gains a pair twice is listed once).
    #[inline]
    pub fn add(&mut self, pair: Pair, delta: i64, word: u32) {
        let change = self.changes.entry(pair).or_insert(Change { delta: 0, gained: NO_WORDS });
        change.delta += delta;
        if delta > 0 {
            if change.gained == NO_WORDS {
                change.gained = self.lists_used as u32;
                if self.lists_used == self.gained.len() {
                    self.gained.push(Vec::new());
                }
                self.lists_used += 1;
            }
            let words = &mut self.gained[change.gained as usize];
            if words.last() != Some(&word) {
                words.push(word);
            }
        }
    }

    /// Add `other`'s changes to these, leaving `other` empty: the changes of
    /// one merge whose words several threads walked, each its own words.
    pub fn absorb(&mut self, other: &mut MergeDeltas) {
        for (pair, change) in other.changes.drain() {
            let mine = self.changes.entry(pair).or_insert(Change { delta: 0, gained: NO_WORDS });
            mine.delta += change.delta;
            if change.gained != NO_WORDS {
                if mine.gained == NO_WORDS {
                    mine.gained = self.lists_used as u32;
                    if self.lists_used == self.gained.len() {
                        self.gained.push(Vec::new());
                    }
                    self.lists_used += 1;
                }
                self.gained[mine.gained as usize].extend_from_slice(&other.gained[change.gained as usize]);
            }
        }
        other.clear_lists();
    }

    /// Every changed pair with its total change and the words that gained
    /// it, as one list for `visit`, then start afresh (`drain`, all at once,
    /// for threads to share).
    pub fn drain_all(&mut self, visit: impl FnOnce(&[(Pair, i64, &[u32])])) {
        let changes: Vec<(Pair, i64, &[u32])> = self
            .changes
            .iter()
            .map(|(&pair, change)| (pair, change.delta, words_of(&self.gained, change.gained)))
            .collect();
        visit(&changes);
        self.changes.clear();
        self.clear_lists();
    }

    fn clear_lists(&mut self) {
        for words in &mut self.gained[..self.lists_used] {
            words.clear();
        }
        self.lists_used = 0;
    }

    /// Hand over every changed pair with its total change and the words that
    /// gained it (empty if none), and start afresh.
    pub fn drain(&mut self, mut visit: impl FnMut(Pair, i64, &[u32])) {
        for (pair, change) in self.changes.drain() {
            visit(pair, change.delta, words_of(&self.gained, change.gained));
        }
        self.clear_lists();
    }
}

/// The words of a change's `gained` list among `lists` (none for `NO_WORDS`).
fn words_of(lists: &[Vec<u32>], gained: u32) -> &[u32] {
    match gained {
        NO_WORDS => &[],
        list => &lists[list as usize],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_changes_and_lists_each_gaining_word_once() {
        let mut deltas = MergeDeltas::default();
        deltas.add((1, 2), -5, 7);
        deltas.add((9, 1), 5, 7);
        deltas.add((9, 1), 5, 7); // word 7 gains (9, 1) twice: listed once
        deltas.add((9, 1), 3, 8);
        deltas.add((1, 2), -3, 8);
        let mut seen = Vec::new();
        deltas.drain(|pair, delta, words| seen.push((pair, delta, words.to_vec())));
        seen.sort();
        assert_eq!(seen, [((1, 2), -8, vec![]), ((9, 1), 13, vec![7, 8])]);
        // Drained: the next merge starts from nothing.
        deltas.drain(|_, _, _| panic!("nothing left"));
    }
}
