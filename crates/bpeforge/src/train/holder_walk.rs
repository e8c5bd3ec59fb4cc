//! Merging a pair in the words that hold it: alone, or on every thread of
//! the pool when the words are many.
//!
//! In SuperBPE's second stage the words are whole lines, and the first
//! superword merges (`, and`, ` of the`) are held by hundreds of thousands
//! of them: at 100 MB of Gutenberg, 8.8 million visits over 7,744 merges,
//! 58% of them in merges of 2,000 words or more, each visit a few cache
//! misses (the word's start, its symbols, then a look-up per pair it
//! changes in the pair table). Such a merge gives each thread the words
//! whose index leaves its remainder (a word listed twice goes to one thread,
//! which merges it once and then finds the pair gone), each thread sums its
//! words' changes apart, and the sums are added up before the pair table
//! sees them, so that the table gets one change a pair as when one thread
//! walks (a table that is sparse, or a pair that falls to 0, needs the
//! whole change at once).

use rayon::prelude::*;

use super::deltas::MergeDeltas;
use super::word::{Pair, SharedWords};
use crate::util::prefetch::prefetch;

/// How many holders ahead the walk prefetches.
const PREFETCH_AHEAD: usize = 8;

/// Below this many holders a merge is walked by one thread: a walk shared
/// out costs the threads' start and the sums' adding up, some tens of
/// microseconds, where a holder costs a few hundred nanoseconds.
pub(super) const SHARED_WALK: usize = 1024;

/// Each thread's holders and changes, kept from merge to merge for their memory.
#[derive(Debug, Default)]
pub(super) struct Walkers {
    holders: Vec<Vec<u32>>,
    deltas: Vec<MergeDeltas>,
}

impl Walkers {
    /// `walk` on the threads of `pool`, each with the holders whose index
    /// leaves its remainder; the changes of them all in `deltas`. Returns how
    /// many symbols the words lost.
    #[allow(clippy::too_many_arguments)]
    pub fn walk_shared(
        &mut self,
        pool: &rayon::ThreadPool,
        words: &SharedWords,
        word_counts: &[u64],
        holders: &[u32],
        pair: Pair,
        new: u32,
        deltas: &mut MergeDeltas,
    ) -> usize {
        let threads = pool.current_num_threads();
        self.holders.resize_with(threads, Vec::new);
        self.deltas.resize_with(threads, MergeDeltas::default);
        for part in &mut self.holders {
            part.clear();
        }
        for &word in holders {
            self.holders[word as usize % threads].push(word);
        }
        let parts = self.holders.par_iter().zip(self.deltas.par_iter_mut());
        // SAFETY (of `walk`'s merges): a word is in one part only.
        let removed: usize = pool.install(|| {
            parts.map(|(holders, deltas)| unsafe { walk(words, word_counts, holders, pair, new, deltas) }).sum()
        });
        for part in &mut self.deltas {
            deltas.absorb(part);
        }
        removed
    }
}

/// Merge `pair` into `new` in each word of `holders`, adding the changes of
/// every other pair to `deltas`; returns how many symbols the words lost.
///
/// # Safety
/// No other thread may merge any of `holders` meanwhile.
pub(super) unsafe fn walk(
    words: &SharedWords,
    word_counts: &[u64],
    holders: &[u32],
    pair: Pair,
    new: u32,
    deltas: &mut MergeDeltas,
) -> usize {
    let mut removed = 0;
    for (i, &index) in holders.iter().enumerate() {
        // The holders are scattered over the arena and each visit was a
        // chain of cache misses (start, then symbols), most of the loop's
        // time: ask for the start and count of a word two steps ahead, and
        // for the symbols of the word one step ahead, whose start has
        // arrived by then.
        if let Some(&ahead) = holders.get(i + 2 * PREFETCH_AHEAD) {
            words.prefetch_start(ahead);
            prefetch(&word_counts[ahead as usize]);
        }
        if let Some(&ahead) = holders.get(i + PREFETCH_AHEAD) {
            words.prefetch_symbols(ahead);
        }
        let count = word_counts[index as usize] as i64;
        // SAFETY: the caller keeps other threads off these words.
        removed += unsafe {
            words.merge(index, pair, new, |changed, delta| {
                // The merged pair's own count goes as a whole, in the caller.
                if changed != pair {
                    deltas.add(changed, delta * count, index);
                }
            })
        };
    }
    removed
}
