//! Phase 1 of training: read the corpus, pre-tokenize, count distinct pre-tokens.
//!
//! The corpus is read as one stream of safely cut chunks (`io/chunking.rs`) over
//! all files in order; a batch of chunks is counted in parallel on the pool.
//! Short pre-tokens (the packed ones, nearly all) go into a table per worker
//! that lasts the whole corpus (`ShortTables`), and the workers' tables are
//! added together once, at the end; long ones go into a map per batch keyed
//! by slices of its chunks (no allocation per pre-token), folded into the
//! owned corpus-wide table after each batch (fresh tables per batch, grown
//! and folded on one thread, were a tenth of the counting CPU at 500 MB).
//! Memory: one batch of text plus, per worker, a table of the distinct
//! pre-tokens it has seen.

use std::sync::Mutex;
use std::time::Duration;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::error::Error;
use crate::io::chunking::{progress_total, total_size, CorpusChunks, Source};
use crate::pretokenize::pattern::Pattern;
use crate::pretokenize::specials::{Piece, SpecialSplitter};
use crate::progress::{Observer, Phase};

use super::profile::{timed, CountProfile};
use super::short_counts::ShortCounts;
use super::table::{CountTable, Pending, PretokenCounts};

/// The workers' tables of short pre-tokens, lent to each batch's jobs and
/// kept between batches, so that each grows once and stays warm.
#[derive(Default)]
pub struct ShortTables(Mutex<Vec<ShortCounts>>);

impl ShortTables {
    fn take(&self) -> ShortCounts {
        self.lock().pop().unwrap_or_default()
    }

    fn give_back(&self, table: ShortCounts) {
        self.lock().push(table);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<ShortCounts>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Add every table into `counts`.
    fn add_into(self, counts: &mut PretokenCounts) {
        let tables = self.0.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
        tables.into_iter().for_each(|table| counts.absorb_short(table));
    }
}

/// The long pre-tokens a batch counted, keyed by slices of its chunks.
type LongCounts<'a> = FxHashMap<&'a [u8], u64>;

/// How one corpus is counted: its pre-tokenizer and special tokens, the read
/// chunk size, and whether to split the batches' time (`profile.rs`).
pub struct Counting<'a> {
    pub specials: &'a SpecialSplitter,
    pub pattern: &'a Pattern,
    pub chunk_size: usize,
    pub profile: bool,
    /// Each line is a document too (`Documents::Lines`).
    pub lines: bool,
}

/// Count the pre-tokens of `sources`, one corpus whose files each end a document.
/// Returns the table, the number of bytes read and where the time went.
pub fn count_files(
    sources: &[Source],
    how: &Counting<'_>,
    pool: &rayon::ThreadPool,
    observer: &dyn Observer,
) -> Result<(PretokenCounts, u64, CountProfile), Error> {
    let total_bytes = total_size(sources)?;
    let mut chunks = CorpusChunks::new(sources, how.specials, how.pattern.cut_before(), how.chunk_size)
        .cutting_after_newlines(how.lines);
    let batch_bytes = how.chunk_size.saturating_mul(2 * pool.current_num_threads());
    let (mut counts, mut profile) = (PretokenCounts::default(), CountProfile::default());
    let tables = ShortTables::default();
    let mut done = 0u64;
    observer.progress(Phase::Pretokenize, 0, total_bytes)?;
    let mut batch = timed(&mut profile.read, || chunks.next_batch(batch_bytes))?;
    while !batch.is_empty() {
        // Read the next batch on one worker while the others count this one.
        let (mut batch_time, mut read_time) = (Default::default(), Default::default());
        let count = || timed(&mut batch_time, || count_chunks(&batch, how, &tables, &mut profile));
        let read = || timed(&mut read_time, || chunks.next_batch(batch_bytes));
        let (long_counts, next_batch) = pool.install(|| rayon::join(count, read));
        let long_counts = long_counts?;
        timed(&mut profile.fold, || counts.absorb_long(long_counts));
        (profile.batches, profile.read) = (profile.batches + batch_time, profile.read + read_time);
        done += batch.iter().map(|c| c.text.len() as u64).sum::<u64>();
        observer.progress(Phase::Pretokenize, done, progress_total(total_bytes, done))?;
        batch = next_batch?;
    }
    timed(&mut profile.fold, || tables.add_into(&mut counts));
    Ok((counts, done, profile))
}

fn count_chunks<'a>(
    batch: &'a [crate::io::chunking::Chunk],
    how: &Counting<'_>,
    tables: &ShortTables,
    profile: &mut CountProfile,
) -> Result<LongCounts<'a>, Error> {
    if !how.profile {
        return count_batch(batch, how.specials, how.pattern, how.lines, tables);
    }
    let (long, pretokenize_cpu, count_cpu) = count_batch_profiled(batch, how.specials, how.pattern, how.lines, tables)?;
    profile.pretokenize_cpu += pretokenize_cpu;
    profile.count_cpu += count_cpu;
    Ok(long)
}

/// Call `visit` with each pre-token of one text that may hold several
/// documents; with `lines`, each line (its `\n` kept) is one too. A chunk
/// ends where pre-tokens may be cut, so a line cut by it counts the same.
// Closures rather than `&mut visit`, whose call shim was not inlined.
#[allow(clippy::redundant_closure)]
fn for_each_pretoken<'a>(
    text: &'a str,
    specials: &SpecialSplitter,
    pattern: &Pattern,
    lines: bool,
    mut visit: impl FnMut(&'a str),
) -> Result<(), Error> {
    for piece in specials.split(text) {
        if let Piece::Text(document) = piece {
            if lines {
                for line in document.split_inclusive('\n') {
                    pattern.for_each_piece(line, |pretoken| visit(pretoken))?;
                }
                continue;
            }
            pattern.for_each_piece(
                document,
                #[inline(always)]
                |pretoken| visit(pretoken),
            )?;
        }
    }
    Ok(())
}

/// Count one text that may hold several documents.
pub fn count_text<'a>(
    text: &'a str,
    specials: &SpecialSplitter,
    pattern: &Pattern,
    lines: bool,
    counts: &mut CountTable<&'a [u8]>,
) -> Result<(), Error> {
    let mut pending = Pending::default();
    for_each_pretoken(
        text,
        specials,
        pattern,
        lines,
        // Inlined into the scanning loop (as a call it saved registers a piece).
        #[inline(always)]
        |pretoken| counts.add_soon(text.as_bytes(), pretoken.as_bytes(), &mut pending),
    )?;
    counts.add_pending(&mut pending);
    Ok(())
}

/// Add the pre-tokens of `texts`, each a whole document (as if separated by a
/// special token), counted in parallel on `pool`.
pub fn add_texts<T: AsRef<str> + Sync>(
    counts: &mut PretokenCounts,
    texts: &[T],
    specials: &SpecialSplitter,
    pattern: &Pattern,
    pool: &rayon::ThreadPool,
) -> Result<(), Error> {
    let tables = ShortTables::default();
    let long_counts = pool.install(|| count_batch(texts, specials, pattern, false, &tables))?;
    counts.absorb_long(long_counts);
    tables.add_into(counts);
    Ok(())
}

/// Count `texts` in parallel, the short pre-tokens into `tables`; returns the long ones.
fn count_batch<'a, T: AsRef<str> + Sync>(
    texts: &'a [T],
    specials: &SpecialSplitter,
    pattern: &Pattern,
    lines: bool,
    tables: &ShortTables,
) -> Result<LongCounts<'a>, Error> {
    texts
        .par_iter()
        .try_fold(
            || CountTable::with_short(tables.take()),
            |mut counts, text| {
                count_text(text.as_ref(), specials, pattern, lines, &mut counts)?;
                Ok(counts)
            },
        )
        .map(|counts| counts.map(|counts| give_back_short(counts, tables)))
        .try_reduce(LongCounts::default, |a, b| Ok(add_long(a, b)))
}

/// A job's table of short pre-tokens back to `tables` (for the next job, or
/// the next batch); its long pre-tokens.
fn give_back_short<'a>(counts: CountTable<&'a [u8]>, tables: &ShortTables) -> LongCounts<'a> {
    let (short, long) = counts.into_parts();
    tables.give_back(short);
    long
}

/// Both maps of long pre-tokens in one (the larger one kept).
fn add_long<'a>(a: LongCounts<'a>, b: LongCounts<'a>) -> LongCounts<'a> {
    let (mut big, small) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    for (bytes, n) in small {
        *big.entry(bytes).or_insert(0) += n;
    }
    big
}

/// `count_batch`, pre-tokenizing each text whole before counting it, to time the two apart.
fn count_batch_profiled<'a, T: AsRef<str> + Sync>(
    texts: &'a [T],
    specials: &SpecialSplitter,
    pattern: &Pattern,
    lines: bool,
    tables: &ShortTables,
) -> Result<(LongCounts<'a>, Duration, Duration), Error> {
    let start = || (CountTable::with_short(tables.take()), Duration::ZERO, Duration::ZERO);
    texts
        .par_iter()
        .try_fold(start, |(mut counts, mut pretokenize, mut count), text| {
            let mut pieces = Vec::new();
            timed(&mut pretokenize, || for_each_pretoken(text.as_ref(), specials, pattern, lines, |p| pieces.push(p)))?;
            let text = text.as_ref().as_bytes();
            timed(&mut count, || pieces.iter().for_each(|piece| counts.add(text, piece.as_bytes(), 1)));
            Ok((counts, pretokenize, count))
        })
        .map(|job| job.map(|(counts, pretokenize, count)| (give_back_short(counts, tables), pretokenize, count)))
        .try_reduce(
            || (LongCounts::default(), Duration::ZERO, Duration::ZERO),
            |a, b| Ok((add_long(a.0, b.0), a.1 + b.1, a.2 + b.2)),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_pretokens_and_skips_specials() {
        let specials = SpecialSplitter::new(&["<|e|>".to_string()]).unwrap();
        let mut counts = CountTable::default();
        count_text("the cat<|e|>the cat the", &specials, &Pattern::Gpt2, false, &mut counts).unwrap();
        let mut seen: Vec<(String, u64)> = Vec::new();
        counts.for_each(|k, v| seen.push((String::from_utf8(k.to_vec()).unwrap(), v)));
        seen.sort();
        // "the" starts both documents; " the" ends the second; " cat" twice.
        assert_eq!(seen, [(" cat".to_string(), 2), (" the".to_string(), 1), ("the".to_string(), 2)]);
    }

    #[test]
    fn lines_end_documents_with_their_newline() {
        let specials = SpecialSplitter::new(&[]).unwrap();
        let mut counts = CountTable::default();
        // As one document, "\n\n" is one pre-token and " b" follows it; as
        // lines, each "\n" ends its line and "b" starts one.
        count_text("a\n\n b\nb", &specials, &Pattern::Gpt2, true, &mut counts).unwrap();
        let mut seen: Vec<(String, u64)> = Vec::new();
        counts.for_each(|k, v| seen.push((String::from_utf8(k.to_vec()).unwrap(), v)));
        seen.sort();
        let expected = [("\n", 3), (" b", 1), ("a", 1), ("b", 1)];
        assert_eq!(seen, expected.map(|(s, n)| (s.to_string(), n)));
    }
}
