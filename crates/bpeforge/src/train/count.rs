//! Phase 1 of training: read the corpus, pre-tokenize, count distinct pre-tokens.
//!
//! The corpus is read as one stream of safely cut chunks (`chunking.rs`) over
//! all files in order; a batch of chunks is counted in parallel on the pool,
//! each worker into a map keyed by slices of its chunk (no allocation per
//! pre-token), and the batch's map is folded into the owned corpus-wide table.
//! Memory: one batch of text plus the table of distinct pre-tokens.

use std::fs::File;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::chunking::{Chunk, ChunkReader};
use crate::error::Error;
use crate::pretokenize::Gpt2Splitter;
use crate::progress::{Observer, Phase};
use crate::specials::{Piece, SpecialSplitter};

use super::table::{CountTable, PretokenCounts};

/// Count the pre-tokens of `paths`, one corpus whose files each end a document.
/// Returns the table and the number of bytes read.
pub fn count_files(
    paths: &[PathBuf],
    specials: &SpecialSplitter,
    chunk_size: usize,
    pool: &rayon::ThreadPool,
    observer: &dyn Observer,
) -> Result<(PretokenCounts, u64), Error> {
    let total_bytes = total_size(paths)?;
    let mut chunks = CorpusChunks { paths, next_path: 0, reader: None, specials, chunk_size };
    let batch_bytes = chunk_size.saturating_mul(2 * pool.current_num_threads());
    let mut counts = PretokenCounts::default();
    let mut done = 0u64;
    observer.progress(Phase::Pretokenize, 0, total_bytes)?;
    let mut batch = chunks.next_batch(batch_bytes)?;
    while !batch.is_empty() {
        // Read the next batch on one worker while the others count this one.
        let (batch_counts, next_batch) =
            pool.install(|| rayon::join(|| count_batch(&batch, specials), || chunks.next_batch(batch_bytes)));
        counts.absorb(batch_counts);
        done += batch.iter().map(|c| c.text.len() as u64).sum::<u64>();
        observer.progress(Phase::Pretokenize, done, total_bytes.max(done))?;
        batch = next_batch?;
    }
    Ok((counts, done))
}

/// Add up the sizes up front: this also names a missing file or a directory
/// before any work is done.
fn total_size(paths: &[PathBuf]) -> Result<u64, Error> {
    let mut total = 0;
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        if meta.is_dir() {
            let err = std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory, not a text file");
            return Err(Error::io(path, err));
        }
        total += meta.len();
    }
    Ok(total)
}

/// Count one text that may hold several documents.
pub fn count_text<'a>(text: &'a str, specials: &SpecialSplitter, counts: &mut CountTable<&'a [u8]>) {
    for piece in specials.split(text) {
        if let Piece::Text(document) = piece {
            for pretoken in Gpt2Splitter::new(document) {
                counts.add(pretoken.as_bytes(), 1);
            }
        }
    }
}

fn count_batch<'a>(batch: &'a [Chunk], specials: &SpecialSplitter) -> CountTable<&'a [u8]> {
    batch
        .par_iter()
        .fold(CountTable::default, |mut counts, chunk| {
            count_text(&chunk.text, specials, &mut counts);
            counts
        })
        .reduce(CountTable::default, CountTable::merge)
}

/// The chunks of all files in order; a file's end is a chunk's end.
struct CorpusChunks<'p, 's> {
    paths: &'p [PathBuf],
    next_path: usize,
    reader: Option<ChunkReader<'s, File>>,
    specials: &'s SpecialSplitter,
    chunk_size: usize,
}

impl CorpusChunks<'_, '_> {
    /// Chunks adding up to about `max_bytes` (at least one), across files.
    fn next_batch(&mut self, max_bytes: usize) -> Result<Vec<Chunk>, Error> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        while bytes < max_bytes {
            match self.next_chunk()? {
                Some(chunk) => {
                    bytes += chunk.text.len();
                    batch.push(chunk);
                }
                None => break,
            }
        }
        Ok(batch)
    }

    fn next_chunk(&mut self) -> Result<Option<Chunk>, Error> {
        loop {
            if let Some(reader) = self.reader.as_mut() {
                if let Some(chunk) = reader.next_chunk()? {
                    return Ok(Some(chunk));
                }
                self.reader = None;
            }
            let Some(path) = self.paths.get(self.next_path) else {
                return Ok(None);
            };
            self.next_path += 1;
            self.reader = Some(open_reader(path, self.specials, self.chunk_size)?);
        }
    }
}

fn open_reader<'s>(
    path: &Path,
    specials: &'s SpecialSplitter,
    chunk_size: usize,
) -> Result<ChunkReader<'s, File>, Error> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    Ok(ChunkReader::new(file, path, specials, chunk_size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_pretokens_and_skips_specials() {
        let specials = SpecialSplitter::new(&["<|e|>".to_string()]).unwrap();
        let mut counts = CountTable::default();
        count_text("the cat<|e|>the cat the", &specials, &mut counts);
        let mut seen: Vec<(String, u64)> = Vec::new();
        counts.for_each(|k, v| seen.push((String::from_utf8(k.to_vec()).unwrap(), v)));
        seen.sort();
        // "the" starts both documents; " the" ends the second; " cat" twice.
        assert_eq!(seen, [(" cat".to_string(), 2), (" the".to_string(), 1), ("the".to_string(), 2)]);
    }
}
