//! The step loop of HF `tokenizers`' `BpeTrainer`, shared by its two ports:
//! over words (`hf_merge.rs`, plain training) and over occurrences
//! (`hf_occurrences.rs`, SuperBPE's stage 2). They differ in what a queue
//! entry holds and how a merge finds its pair, not in which entry pops, when a
//! stale one goes back, or when the loop stops.

use std::cmp::Ordering;

use super::hf_ids::HfIds;
use super::hf_merge::{HfLimits, Pair};
use crate::error::Error;
use crate::progress::{Observer, Phase};

/// A queue entry, ordered as HF orders its `Merge`: the highest count, then
/// the smallest pair of ids. `at` is where the pair appeared when the entry was
/// pushed: words (`hf_merge.rs`) or positions (`hf_occurrences.rs`).
pub(super) struct Entry<At> {
    pub pair: Pair,
    pub count: u64,
    pub at: At,
}

impl<At> Ord for Entry<At> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.count.cmp(&other.count).then_with(|| other.pair.cmp(&self.pair))
    }
}

impl<At> PartialOrd for Entry<At> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<At> PartialEq for Entry<At> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<At> Eq for Entry<At> {}

/// What the loop needs of a port: its ids, its queue, the live pair counts,
/// and a merge.
pub(super) trait HfLoop {
    type At;

    fn ids(&mut self) -> &mut HfIds;
    fn pop(&mut self) -> Option<Entry<Self::At>>;
    fn push(&mut self, entry: Entry<Self::At>);
    /// The pair's live count (a merged pair's is never zeroed, as HF's).
    fn live_count(&self, pair: Pair) -> u64;
    /// Merge the entry's pair into `new` where HF would, and push an entry for
    /// each pair that appeared.
    fn merge(&mut self, entry: Entry<Self::At>, new: u32, max_length: usize);
}

/// HF's merge loop from the current queue: pop the best entry, push a stale
/// one back with its live count, stop at the limits; a merge whose token
/// `accept` refuses is dropped (its entry gone) and not counted. Each merge
/// goes to `made` as its pair and the id of its token.
pub(super) fn learn(
    state: &mut impl HfLoop,
    limits: HfLimits,
    accept: impl Fn(&[u8]) -> bool,
    made: &mut Vec<(Pair, u32)>,
    observer: &dyn Observer,
) -> Result<(), Error> {
    let max_length = limits.max_token_length.unwrap_or(usize::MAX);
    let start_len = state.ids().len();
    let wanted = limits.vocab_size.saturating_sub(start_len) as u64;
    while state.ids().len() < limits.vocab_size {
        let Some(mut top) = state.pop() else { break };
        let live = state.live_count(top.pair);
        if top.count != live {
            top.count = live;
            state.push(top);
            continue;
        }
        if top.count < 1 || limits.min_frequency > top.count {
            break;
        }
        let token = state.ids().concat(top.pair);
        if !accept(&token) {
            continue;
        }
        let new = state.ids().id_of_or_add(token);
        made.push((top.pair, new));
        state.merge(top, new, max_length);
        if made.len().is_multiple_of(64) {
            observer.progress(Phase::Merge, (state.ids().len() - start_len) as u64, wanted)?;
        }
    }
    observer.progress(Phase::Merge, wanted, wanted)
}
