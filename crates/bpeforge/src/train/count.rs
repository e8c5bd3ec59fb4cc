//! Phase 1 of training: read the corpus, pre-tokenize, count distinct pre-tokens.
//!
//! The corpus is read as one stream of safely cut chunks (`chunking.rs`) over
//! all files in order; a batch of chunks is counted in parallel on the pool,
//! each worker into a map keyed by slices of its chunk (no allocation per
//! pre-token), and the batch's map is folded into the owned corpus-wide table.
//! Memory: one batch of text plus the table of distinct pre-tokens.

use rayon::prelude::*;

use crate::chunking::{progress_total, total_size, CorpusChunks, Source};
use crate::error::Error;
use crate::pattern::Pattern;
use crate::progress::{Observer, Phase};
use crate::specials::{Piece, SpecialSplitter};

use super::table::{CountTable, PretokenCounts};

/// Count the pre-tokens of `sources`, one corpus whose files each end a document.
/// Returns the table and the number of bytes read.
pub fn count_files(
    sources: &[Source],
    specials: &SpecialSplitter,
    pattern: &Pattern,
    chunk_size: usize,
    pool: &rayon::ThreadPool,
    observer: &dyn Observer,
) -> Result<(PretokenCounts, u64), Error> {
    let total_bytes = total_size(sources)?;
    let mut chunks = CorpusChunks::new(sources, specials, pattern.cuts_before_whitespace(), chunk_size);
    let batch_bytes = chunk_size.saturating_mul(2 * pool.current_num_threads());
    let mut counts = PretokenCounts::default();
    let mut done = 0u64;
    observer.progress(Phase::Pretokenize, 0, total_bytes)?;
    let mut batch = chunks.next_batch(batch_bytes)?;
    while !batch.is_empty() {
        // Read the next batch on one worker while the others count this one.
        let (batch_counts, next_batch) =
            pool.install(|| rayon::join(|| count_batch(&batch, specials, pattern), || chunks.next_batch(batch_bytes)));
        counts.absorb(batch_counts?);
        done += batch.iter().map(|c| c.text.len() as u64).sum::<u64>();
        observer.progress(Phase::Pretokenize, done, progress_total(total_bytes, done))?;
        batch = next_batch?;
    }
    Ok((counts, done))
}

/// Count one text that may hold several documents.
pub fn count_text<'a>(
    text: &'a str,
    specials: &SpecialSplitter,
    pattern: &Pattern,
    counts: &mut CountTable<&'a [u8]>,
) -> Result<(), Error> {
    for piece in specials.split(text) {
        if let Piece::Text(document) = piece {
            pattern.for_each_piece(document, |pretoken| counts.add(pretoken.as_bytes(), 1))?;
        }
    }
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
    let batch_counts = pool.install(|| count_batch(texts, specials, pattern))?;
    counts.absorb(batch_counts);
    Ok(())
}

fn count_batch<'a, T: AsRef<str> + Sync>(
    texts: &'a [T],
    specials: &SpecialSplitter,
    pattern: &Pattern,
) -> Result<CountTable<&'a [u8]>, Error> {
    texts
        .par_iter()
        .try_fold(CountTable::default, |mut counts, text| {
            count_text(text.as_ref(), specials, pattern, &mut counts)?;
            Ok(counts)
        })
        .try_reduce(CountTable::default, |a, b| Ok(a.merge(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_pretokens_and_skips_specials() {
        let specials = SpecialSplitter::new(&["<|e|>".to_string()]).unwrap();
        let mut counts = CountTable::default();
        count_text("the cat<|e|>the cat the", &specials, &Pattern::Gpt2, &mut counts).unwrap();
        let mut seen: Vec<(String, u64)> = Vec::new();
        counts.for_each(|k, v| seen.push((String::from_utf8(k.to_vec()).unwrap(), v)));
        seen.sort();
        // "the" starts both documents; " the" ends the second; " cat" twice.
        assert_eq!(seen, [(" cat".to_string(), 2), (" the".to_string(), 1), ("the".to_string(), 2)]);
    }
}
