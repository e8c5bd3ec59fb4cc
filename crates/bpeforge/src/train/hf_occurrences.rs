//! HF's merge loop (`hf_merge.rs`, the same merges in the same order) over
//! occurrences rather than words, for SuperBPE's stage 2, whose words are
//! whole lines: a merge there visited every line its queue entry listed and
//! read it whole, though the pair is a few bytes of it.
//!
//! A queue entry carries the positions (`occurrences.rs`) where its pair
//! appeared in the step that pushed it, instead of the words. HF merges the
//! pair in every word the entry lists, wherever it is in the word; the
//! positions find exactly those occurrences when the pair has been pushed
//! only once (at its first appearance: nearly always, as a pair appears only
//! where one of its tokens is made, once, unless a merge spells an existing
//! token). A pair pushed more than once is merged as HF does: in the whole
//! words holding the entry's positions.

use rustc_hash::FxHashMap;

use super::hf_ids::HfIds;
use super::hf_loop::{self, HfLoop};
use super::hf_merge::{saved_order, HfLearned, Pair};
use super::occurrences::Occurrences;
use super::positions::{packed_len, Packer, Positions};
use super::step_changes::StepChanges;
use super::table::PretokenCounts;
use super::tiered_queue::{Counted, TieredQueue};
use crate::error::Error;

/// How many positions ahead a merge prefetches.
const PREFETCH_AHEAD: usize = 32;

/// A queue entry (`hf_loop.rs`): its `at` is where the pair appeared in the
/// step that pushed it (its left token's positions).
pub(super) type Entry = hf_loop::Entry<Positions>;

impl Counted for Entry {
    fn count(&self) -> u64 {
        self.count
    }
}

/// A pair's live count (a merged pair's never zeroed, as HF's) and in how
/// many steps it appeared (0, 1 or more), the first (initial) counting
/// included, in one word: the map of pairs holds every pair ever seen
/// (millions), and a count and a step counter apart took twice the room.
#[derive(Default, Clone, Copy)]
struct PairStat(i64);

impl PairStat {
    /// The two low bits are the steps (saturating at 2), the rest the count.
    const STEP_BITS: u32 = 2;

    fn count(self) -> i64 {
        self.0 >> Self::STEP_BITS
    }

    fn add(&mut self, delta: i64) {
        self.0 += delta << Self::STEP_BITS;
    }

    /// Whether the pair appeared in more than one step.
    fn repeated(self) -> bool {
        self.0 & 3 >= 2
    }

    fn appeared(&mut self) {
        if self.0 & 3 < 2 {
            self.0 += 1;
        }
    }
}

/// HF's trainer between steps, over occurrences.
pub(super) struct OccurrenceState {
    pub ids: HfIds,
    arena: Occurrences,
    pairs: FxHashMap<Pair, PairStat>,
    /// HF's heap (`tiered_queue.rs`: the same pops); empty until `start_queue`.
    queue: TieredQueue<Entry>,
    /// Sum over the pieces of count x tokens, kept up to date.
    tokens: u64,
    /// The current step's changes (kept to reuse its arrays).
    changes: StepChanges,
    /// The positions of the entry being merged, unpacked.
    unpacked: Vec<u32>,
}

impl OccurrenceState {
    /// The pieces of `counts` as ids with every pair counted; returns an
    /// entry for each pair, for the caller's queue.
    pub fn new(counts: &PretokenCounts, specials: &[String]) -> Result<(Self, Vec<Entry>), Error> {
        let mut seen = [false; 256];
        counts.for_each(|bytes, _| bytes.iter().for_each(|&b| seen[usize::from(b)] = true));
        let ids = HfIds::new(specials, &seen);
        let arena = Occurrences::new(counts, |b| ids.of_byte(b))?;
        let tokens = arena.total_tokens(|_| 1);
        let mut state = Self {
            ids,
            arena,
            pairs: FxHashMap::default(),
            queue: TieredQueue::new(Vec::new()),
            tokens,
            changes: StepChanges::default(),
            unpacked: Vec::new(),
        };
        // The bytes' ids come after the specials', one after another.
        let first_byte = (0..=255u8).filter(|&b| seen[usize::from(b)]).map(|b| state.ids.of_byte(b)).min();
        let entries = state.initial_pairs(first_byte.unwrap_or(0));
        Ok((state, entries))
    }

    /// Sum over the pieces of count x tokens: the corpus's length in tokens.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// The pair's count changes by `delta`, and it appeared at `positions`
    /// (in one more step, if any): its entry, if its count is positive.
    fn change(&mut self, pair: Pair, delta: i64, positions: Vec<u32>) -> Option<Entry> {
        if positions.is_empty() {
            self.pairs.entry(pair).or_default().add(delta);
            return None;
        }
        // Packed only for an entry.
        self.appeared(pair, delta, || Positions::new(positions))
    }

    /// `change` for a pair that appeared, at the positions `pack` gives.
    fn appeared(&mut self, pair: Pair, delta: i64, pack: impl FnOnce() -> Positions) -> Option<Entry> {
        let stat = self.pairs.entry(pair).or_default();
        stat.add(delta);
        stat.appeared();
        let count = stat.count();
        (count > 0).then(|| Entry { pair, count: count as u64, at: pack() })
    }

    /// Every pair of the pieces (all of single bytes) with the positions it
    /// is at, in one dense table by byte ids: the packed size of each pair's
    /// positions in a first pass, then the positions packed, with no hashing.
    fn initial_pairs(&mut self, first_byte: u32) -> Vec<Entry> {
        let alphabet = self.ids.len() - first_byte as usize;
        let index = |(left, right): Pair| (left - first_byte) as usize * alphabet + (right - first_byte) as usize;
        let (mut sizes, mut last) = (vec![0usize; alphabet * alphabet], vec![0u32; alphabet * alphabet]);
        for (p, pair) in self.arena.pairs(|_| 1) {
            let i = index(pair);
            sizes[i] += packed_len(p - std::mem::replace(&mut last[i], p));
        }
        drop(last);
        let mut packers: Vec<Packer> = sizes.into_iter().map(Packer::with_capacity).collect();
        let mut counts = vec![0i64; alphabet * alphabet];
        for (p, pair) in self.arena.pairs(|_| 1) {
            counts[index(pair)] += self.arena.count_at(p);
            packers[index(pair)].push(p);
        }
        let ids = first_byte..self.ids.len() as u32;
        let pairs = ids.clone().flat_map(|left| ids.clone().map(move |right| (left, right)));
        let found = pairs.zip(counts.into_iter().zip(packers)).filter(|(_, (_, at))| !at.is_empty());
        found.filter_map(|(pair, (count, at))| self.appeared(pair, count, || at.finish())).collect()
    }

    /// Make `entries` the queue of `learn`.
    pub fn start_queue(&mut self, entries: Vec<Entry>) {
        self.queue = TieredQueue::new(entries);
    }

    /// The live count of `pair`.
    fn count(&self, pair: Pair) -> u64 {
        self.pairs[&pair].count() as u64
    }

    /// Merge `entry`'s pair into `new` in the words HF would (see the module
    /// comment); returns an entry for each pair that appeared, as HF pushes.
    pub fn merge_occurrences(&mut self, entry: Entry, new: u32, max_length: usize) -> Vec<Entry> {
        self.changes.start(self.ids.len());
        // Ascending: left to right in a word, as HF merges.
        let mut positions = std::mem::take(&mut self.unpacked);
        positions.clear();
        entry.at.unpack_into(&mut positions);
        drop(entry.at);
        let join = Join::new(&self.ids, entry.pair, new, max_length);
        if !self.pairs[&entry.pair].repeated() {
            for (i, &p) in positions.iter().enumerate() {
                if let Some(&ahead) = positions.get(i + PREFETCH_AHEAD) {
                    self.arena.prefetch(ahead);
                }
                if self.arena.token_at(p) == Some(join.left) && self.arena.slot(p + join.left_len) == join.right {
                    self.join_at(p, &join);
                }
            }
        } else {
            let mut previous = None;
            for &p in positions.iter() {
                let start = self.arena.piece_start(p);
                if previous != Some(start) {
                    previous = Some(start);
                    self.merge_piece(start, &join);
                }
            }
        }
        self.unpacked = positions;
        self.entries(&join)
    }

    /// The step's changes applied to the pair counts, the losses first (a
    /// pair that gains may have lost too, as `(new, left)` of back-to-back
    /// occurrences); an entry for each pair that appeared, if its count is positive.
    fn entries(&mut self, join: &Join) -> Vec<Entry> {
        let mut changes = std::mem::take(&mut self.changes);
        for &n in &changes.before.touched {
            self.pairs.entry((n, join.left)).or_default().add(changes.before.lost[n as usize]);
        }
        for &n in &changes.after.touched {
            self.pairs.entry((join.right, n)).or_default().add(changes.after.lost[n as usize]);
        }
        let mut entries = Vec::new();
        for &n in &changes.before.touched {
            let i = n as usize;
            let at = std::mem::take(&mut changes.before.at[i]);
            entries.extend(self.change((n, join.new), changes.before.gained[i], at));
        }
        for &n in &changes.after.touched {
            let i = n as usize;
            let at = std::mem::take(&mut changes.after.at[i]);
            entries.extend(self.change((join.new, n), changes.after.gained[i], at));
        }
        self.changes = changes;
        entries
    }

    /// HF's `Word::merge` on the whole piece starting at `start`.
    fn merge_piece(&mut self, start: u32, join: &Join) {
        let mut p = start;
        while let Some(token) = self.arena.token_at(p) {
            if token == join.left && self.arena.slot(p + join.left_len) == join.right {
                self.join_at(p, join);
            }
            p += self.ids.byte_len(self.arena.slot(p));
        }
    }

    /// Join the occurrence at `p`, counting the pairs it removes and makes.
    #[inline]
    fn join_at(&mut self, p: u32, join: &Join) {
        let count = self.arena.count_at(p);
        let step = self.changes.step;
        let changes = &mut self.changes;
        if let Some((at, before)) = self.arena.before(p) {
            changes.before.lose(before, count, step);
            if (self.ids.byte_len(before) as usize) + join.new_len < join.max_length {
                changes.before.gain(before, count, at, step);
            }
        }
        if let Some(after) = self.arena.token_at(p + join.left_len + join.right_len) {
            changes.after.lose(after, count, step);
            if (self.ids.byte_len(after) as usize) + join.new_len < join.max_length {
                changes.after.gain(after, count, p, step);
            }
        }
        self.arena.join(p, join.left_len, join.right_len, join.new);
        self.tokens -= count as u64;
    }

    /// `made` as HF saves it, in bytes.
    pub fn learned(&self, made: &[(Pair, u32)]) -> HfLearned {
        let saved = saved_order(made).into_iter().map(|(pair, new)| self.ids.merge_and_token(pair, new));
        let (merges, tokens) = saved.unzip();
        HfLearned { merges, tokens }
    }
}

impl HfLoop for OccurrenceState {
    type At = Positions;

    fn ids(&mut self) -> &mut HfIds {
        &mut self.ids
    }

    fn pop(&mut self) -> Option<Entry> {
        self.queue.pop()
    }

    fn push(&mut self, entry: Entry) {
        self.queue.push(entry);
    }

    fn live_count(&self, pair: Pair) -> u64 {
        self.count(pair)
    }

    fn merge(&mut self, entry: Entry, new: u32, max_length: usize) {
        let entries = self.merge_occurrences(entry, new, max_length);
        self.queue.extend(entries);
    }
}

/// One merge's tokens and lengths, read once.
struct Join {
    left: u32,
    right: u32,
    new: u32,
    left_len: u32,
    right_len: u32,
    new_len: usize,
    max_length: usize,
}

impl Join {
    fn new(ids: &HfIds, (left, right): Pair, new: u32, max_length: usize) -> Self {
        let (left_len, right_len) = (ids.byte_len(left), ids.byte_len(right));
        Self { left, right, new, left_len, right_len, new_len: (left_len + right_len) as usize, max_length }
    }
}

#[cfg(test)]
mod tests {
    use super::super::hf_merge::{learn_merges_hf, HfLimits};
    use super::*;
    use crate::progress::Silent;

    /// HF's loop from the initial queue, over occurrences.
    fn learned_over_occurrences(table: &PretokenCounts, limits: HfLimits) -> HfLearned {
        let (mut state, entries) = OccurrenceState::new(table, &[]).unwrap();
        state.start_queue(entries);
        let mut made = Vec::new();
        hf_loop::learn(&mut state, limits, |_| true, &mut made, &Silent).unwrap();
        state.learned(&made)
    }

    #[test]
    fn same_merges_as_hf_loop_over_words_on_generated_corpora() {
        // Few letters and long words: merges often spell a token that
        // exists ("ab"+"a" after "a"+"ba"), pairs come back in later steps,
        // and those steps take the whole-word path.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        for round in 0..60 {
            let mut table = PretokenCounts::default();
            let letters = [&b"ab"[..], b"ab c"][round % 2];
            for _ in 0..1 + next(40) {
                let len = 1 + next(if round % 3 == 0 { 12 } else { 80 }) as usize;
                let word: Vec<u8> = (0..len).map(|_| letters[next(letters.len() as u64) as usize]).collect();
                table.insert(&word, 1 + next(3));
            }
            let limits = HfLimits { vocab_size: 4 + next(200) as usize, min_frequency: 0, max_token_length: None };
            let expected = learn_merges_hf(&table, &[], limits, &Silent).unwrap();
            let got = learned_over_occurrences(&table, limits);
            assert_eq!(got.merges, expected.merges, "round {round}");
            assert_eq!(got.tokens, expected.tokens, "round {round}");
        }
    }

    #[test]
    fn a_pair_pushed_twice_merges_in_the_whole_words_of_its_entry_only() {
        let mut table = PretokenCounts::default();
        table.insert(b"abxab", 1);
        table.insert(b"ab", 2);
        let (mut state, entries) = OccurrenceState::new(&table, &[]).unwrap();
        let (a, b) = (state.ids.of_byte(b'a'), state.ids.of_byte(b'b'));
        let all = entries.into_iter().find(|e| e.pair == (a, b)).unwrap();
        assert_eq!(all.at.to_vec().len(), 3);
        // As if (a, b) had appeared in a second step, at the first "ab" of
        // "abxab" alone: HF merges every "ab" of that word, none of "ab".
        state.pairs.get_mut(&(a, b)).unwrap().appeared();
        let first = *all.at.to_vec().iter().find(|&&p| state.arena.count_at(p) == 1).unwrap();
        let entry = Entry { pair: (a, b), count: 4, at: Positions::One(first) };
        let new = state.ids.id_of_or_add(state.ids.concat((a, b)));
        state.merge_occurrences(entry, new, usize::MAX);
        let len = |id: u32| state.ids.byte_len(id);
        let tokens: Vec<(i64, u32)> = state.arena.tokens(len).map(|(p, t)| (state.arena.count_at(p), t)).collect();
        let x = state.ids.of_byte(b'x');
        assert_eq!(tokens, [(1, new), (1, x), (1, new), (2, a), (2, b)]);
        assert_eq!(state.tokens(), 3 + 2 * 2);
        // (x, a) and (b, x) are gone; (a, b) keeps its count, as HF's does.
        assert_eq!((state.count((x, a)), state.count((b, x)), state.count((a, b))), (0, 0, 4));
        assert_eq!((state.count((new, x)), state.count((x, new))), (1, 1));
    }
}
