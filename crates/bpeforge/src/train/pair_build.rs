//! Building the pair table from the words, a shard at a time, on every
//! thread of the pool the call runs in.
//!
//! SuperBPE's pieces are whole lines: at 100 MB of Gutenberg 22.6 million
//! pair occurrences over a few million distinct pairs. Counting them into
//! one map was a cache miss (and a TLB miss) per occurrence, twice (counts,
//! then holders), on one thread: 2.2-3.5 s at 100 MB. Here the occurrences
//! are first written out, grouped by shard (`pairs::shard_of`), as
//! `(left, right, word)`: sequential writes. Then each shard's map is built
//! from its own occurrences alone: a map small enough to stay in cache, and
//! shards are independent, so the threads share them out with nothing to
//! merge. Each thread writes out the occurrences of its own range of words,
//! so a shard's occurrences come in word order (its holder lists too, and a
//! word's occurrences together, as the first-pass dedup needs).
//!
//! The occurrences written out take 12 bytes each; to bound that memory the
//! shards are built in rounds, each writing out the occurrences of a run of
//! shards of at most `ROUND` occurrences, the words read again each round.
//! A pair that comes several times in a row in a word (a run of one symbol,
//! `aaaa`) is written out once, its other occurrences' counts kept apart
//! (`Written::repeats`): one shard holds all of such a run's occurrences, and
//! a 4 MB run of one letter wrote out 48 MB of them, four times its words.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::pairs::{shard_of, Entry, Shard, Span};
use super::word::{Pair, WordStore};

/// Occurrences written out at most in one round (12 bytes each).
const ROUND: usize = 1 << 24;

/// About this many occurrences a shard, so that a shard's map (a slot for
/// each of its distinct pairs, some hundreds of KiB) fits the cache.
const SHARD_OCCURRENCES: usize = 1 << 17;

/// At most this many shards (a shard's holder lists index it with u32).
const MAX_SHARD_BITS: u32 = 12;

/// An occurrence written out: left, right, word.
type Occurrence = [u32; 3];

/// The shards of the pair table of `words` and the number of bits
/// `shard_of` takes (see `PairTable::from_words`).
pub(super) fn build_shards(words: &WordStore, counts: &[u64], sparse: bool) -> (Vec<Shard>, u32) {
    build_in_rounds(words, counts, sparse, ROUND)
}

/// `build_shards`, writing out at most `round` occurrences at a time.
fn build_in_rounds(words: &WordStore, counts: &[u64], sparse: bool, round: usize) -> (Vec<Shard>, u32) {
    let threads = if rayon::current_thread_index().is_some() { rayon::current_num_threads() } else { 1 };
    let ranges = word_ranges(words, threads);
    let total: usize = ranges.iter().map(|range| range.occurrences).sum();
    let bits = shard_bits(total);
    let shards = 1usize << bits;
    // Each range's occurrences a shard.
    let histograms: Vec<Vec<usize>> = map_parallel(&ranges, threads, |range| {
        let mut histogram = vec![0; shards];
        for word in range.words.clone() {
            for (pair, _) in pairs_in_rows(words, word) {
                histogram[shard_of(pair, bits)] += 1;
            }
        }
        histogram
    });
    let mut built = Vec::with_capacity(shards);
    let mut first = 0;
    while first < shards {
        // The next run of shards that fits a round (at least one).
        let mut end = first;
        let mut size = 0;
        while end < shards {
            let more: usize = histograms.iter().map(|histogram| histogram[end]).sum();
            if end > first && size + more > round {
                break;
            }
            size += more;
            end += 1;
        }
        let written: Vec<Written> = map_parallel(&ranges, threads, |range| {
            let histogram = &histograms[range.index];
            write_out(words, counts, range, &histogram[first..end], first, bits)
        });
        let round: Vec<usize> = (first..end).collect();
        built.extend(map_parallel(&round, threads, |&shard| {
            let parts: Vec<&[Occurrence]> = written.iter().map(|w| w.of(shard - first)).collect();
            let repeats = written.iter().flat_map(|w| &w.repeats[shard - first]);
            build_shard(&parts, repeats, counts, sparse)
        }));
        first = end;
    }
    (built, bits)
}

/// Enough shard bits for `SHARD_OCCURRENCES` a shard.
fn shard_bits(occurrences: usize) -> u32 {
    let shards = (occurrences / SHARD_OCCURRENCES).max(1).next_power_of_two();
    shards.trailing_zeros().min(MAX_SHARD_BITS)
}

/// A run of words one thread writes out.
struct WordRange {
    index: usize,
    words: std::ops::Range<u32>,
    occurrences: usize,
}

/// `threads` runs of consecutive words with about as many occurrences each.
fn word_ranges(words: &WordStore, threads: usize) -> Vec<WordRange> {
    let occurrences = |word| words.symbols(word).len().saturating_sub(1);
    let total: usize = (0..words.len() as u32).map(occurrences).sum();
    let mut ranges = Vec::with_capacity(threads);
    let (mut start, mut seen) = (0, 0);
    for word in 0..words.len() as u32 {
        seen += occurrences(word);
        if seen * threads >= total * (ranges.len() + 1) && ranges.len() + 1 < threads {
            ranges.push(WordRange { index: ranges.len(), words: start..word + 1, occurrences: 0 });
            start = word + 1;
        }
    }
    ranges.push(WordRange { index: ranges.len(), words: start..words.len() as u32, occurrences: 0 });
    for range in &mut ranges {
        range.occurrences = range.words.clone().map(occurrences).sum();
    }
    ranges
}

/// One range's occurrences of a run of shards, grouped by shard.
struct Written {
    occurrences: Vec<Occurrence>,
    /// Where each shard's occurrences start, and the end.
    starts: Vec<usize>,
    /// By shard: the count of the occurrences not written out, each the
    /// same pair as the one before it in its word (`pairs_in_rows`).
    repeats: Vec<Vec<(Pair, i64)>>,
}

impl Written {
    fn of(&self, shard: usize) -> &[Occurrence] {
        &self.occurrences[self.starts[shard]..self.starts[shard + 1]]
    }
}

/// Write out the occurrences in `range` of shards `first..first +
/// sizes.len()`, whose numbers of occurrences in `range` are `sizes`.
fn write_out(
    words: &WordStore,
    counts: &[u64],
    range: &WordRange,
    sizes: &[usize],
    first: usize,
    bits: u32,
) -> Written {
    let mut starts = Vec::with_capacity(sizes.len() + 1);
    let mut at = 0;
    for &size in sizes {
        starts.push(at);
        at += size;
    }
    starts.push(at);
    let mut occurrences = vec![[0u32; 3]; at];
    let mut next = starts.clone();
    let mut repeats: FxHashMap<Pair, i64> = FxHashMap::default();
    for word in range.words.clone() {
        for (pair, times) in pairs_in_rows(words, word) {
            let shard = shard_of(pair, bits).wrapping_sub(first);
            if shard < sizes.len() {
                occurrences[next[shard]] = [pair.0, pair.1, word];
                next[shard] += 1;
                if times > 1 {
                    *repeats.entry(pair).or_default() += (times - 1) as i64 * counts[word as usize] as i64;
                }
            }
        }
    }
    let mut by_shard = vec![Vec::new(); sizes.len()];
    for (pair, count) in repeats {
        by_shard[shard_of(pair, bits) - first].push((pair, count));
    }
    Written { occurrences, starts, repeats: by_shard }
}

/// The pairs of `word`, each with how many times it comes in a row (a run
/// of one symbol: `aaaa` holds `(a, a)` three times in a row), once.
fn pairs_in_rows(words: &WordStore, word: u32) -> impl Iterator<Item = (Pair, usize)> + '_ {
    let mut pairs = words.pairs(word).peekable();
    std::iter::from_fn(move || {
        let pair = pairs.next()?;
        let mut times = 1;
        while pairs.next_if_eq(&pair).is_some() {
            times += 1;
        }
        Some((pair, times))
    })
}

/// One shard from its occurrences, in word order: counts and holders in two
/// passes, holder lists laid out in one arena (see `PairTable::from_words`).
fn build_shard<'a>(
    parts: &[&[Occurrence]],
    repeats: impl Iterator<Item = &'a (Pair, i64)>,
    counts: &[u64],
    sparse: bool,
) -> Shard {
    let mut entries: FxHashMap<Pair, Entry> = FxHashMap::default();
    // First pass: counts, and holders counted in `len`; `start` keeps the
    // last word seen + 1, so that a word holding a pair twice counts once.
    for &[left, right, word] in parts.iter().copied().flatten() {
        let entry = entries.entry((left, right)).or_default();
        entry.count += counts[word as usize] as i64;
        if entry.holders.start != word + 1 {
            entry.holders = Span { start: word + 1, len: entry.holders.len + 1 };
        }
    }
    // A repeat's pair was written out once too, so its entry is there.
    for (pair, count) in repeats {
        entries.get_mut(pair).expect("a repeated pair is written out once").count += count;
    }
    if sparse {
        entries.retain(|_, entry| entry.count > 1);
        entries.shrink_to_fit();
    }
    // Each list's place in the arena; `len` counts the holders written.
    let mut at = 0u32;
    for entry in entries.values_mut() {
        let holders = entry.holders.len;
        entry.holders = Span { start: at, len: 0 };
        at += holders;
    }
    let mut arena = vec![0; at as usize];
    for &[left, right, word] in parts.iter().copied().flatten() {
        let Some(entry) = entries.get_mut(&(left, right)) else { continue };
        let Span { start, len } = entry.holders;
        if len == 0 || arena[(start + len - 1) as usize] != word {
            arena[(start + len) as usize] = word;
            entry.holders.len += 1;
        }
    }
    Shard { entries, live: at as usize, arena }
}

/// `work` on each of `items`, in order, on the pool's threads when there are
/// several.
fn map_parallel<T: Sync, R: Send>(items: &[T], threads: usize, work: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    if threads > 1 {
        items.par_iter().map(work).collect()
    } else {
        items.iter().map(work).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::test_rng::XorShift as Rng;

    fn sorted_shards(shards: &[Shard]) -> Vec<(Pair, i64, Vec<u32>)> {
        let mut all: Vec<(Pair, i64, Vec<u32>)> = shards
            .iter()
            .flat_map(|shard| {
                let list = |span: Span| shard.arena[span.start as usize..(span.start + span.len) as usize].to_vec();
                shard.entries.iter().map(move |(&pair, entry)| (pair, entry.count, list(entry.holders)))
            })
            .collect();
        all.sort();
        all
    }

    #[test]
    fn a_pair_in_a_row_comes_once_with_its_times() {
        let mut words = WordStore::default();
        words.push_symbols(&[3, 7, 7, 7, 7, 3, 7, 7]);
        let rows: Vec<(Pair, usize)> = pairs_in_rows(&words, 0).collect();
        assert_eq!(rows, [((3, 7), 1), ((7, 7), 3), ((7, 3), 1), ((3, 7), 1), ((7, 7), 1)]);
    }

    #[test]
    fn shards_and_threads_count_as_one_map_does() {
        // Enough occurrences for several shards and rounds of one shard.
        let mut rng = Rng(0x0123_4567_89ab_cdef);
        let mut words = WordStore::default();
        let mut counts = Vec::new();
        for _ in 0..20_000 {
            let word: Vec<u32> = (0..2 + rng.below(30)).map(|_| rng.below(40) as u32).collect();
            words.push_symbols(&word);
            counts.push(1 + rng.below(3) as u64);
        }
        // Runs of one symbol, whose pairs come many times in a row.
        for (symbol, length) in [(7, 5_000), (7, 3), (9, 70_000)] {
            words.push_symbols(&[vec![3, symbol], vec![symbol; length], vec![3]].concat());
            counts.push(2);
        }
        let mut expected: FxHashMap<Pair, (i64, Vec<u32>)> = FxHashMap::default();
        for word in 0..words.len() as u32 {
            for pair in words.pairs(word) {
                let (count, holders) = expected.entry(pair).or_default();
                *count += counts[word as usize] as i64;
                if holders.last() != Some(&word) {
                    holders.push(word);
                }
            }
        }
        let mut expected: Vec<(Pair, i64, Vec<u32>)> = expected.into_iter().map(|(p, (c, h))| (p, c, h)).collect();
        expected.sort();
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            // A round of 50,000 occurrences: a shard or two at a time.
            let (shards, bits) = pool.install(|| build_in_rounds(&words, &counts, false, 50_000));
            assert_eq!(shards.len(), 1 << bits);
            assert!(bits >= 1, "{bits}");
            for (index, shard) in shards.iter().enumerate() {
                assert!(shard.entries.keys().all(|&pair| shard_of(pair, bits) == index));
            }
            assert_eq!(sorted_shards(&shards), expected, "{threads} threads");
            let (sparse, _) = pool.install(|| build_in_rounds(&words, &counts, true, ROUND));
            let kept: Vec<_> = expected.iter().filter(|(_, count, _)| *count > 1).cloned().collect();
            assert_eq!(sorted_shards(&sparse), kept, "{threads} threads, sparse");
        }
    }
}
