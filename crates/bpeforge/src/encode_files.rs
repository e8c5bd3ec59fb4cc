//! Encoding whole files in parallel, in bounded memory, with ids in order.
//!
//! The files are read as one stream of safely cut chunks (`chunking.rs`, the
//! same cuts training uses: a chunk's ids never depend on what follows), a
//! batch of chunks is encoded in parallel while the next batch is read, and
//! the batch's ids go to `sink` in input order, so the output is the same for
//! any number of threads. Each file ends a chunk, so the ids are those of
//! encoding each file on its own, concatenated.
//!
//! The sink runs on a thread of its own, one batch behind the encoding: writing
//! the ids (hundreds of MB for a large corpus, copied into the page cache and
//! often throttled by writeback) then overlaps the encoding of the next batch
//! instead of stopping every worker while it runs.

use std::panic::resume_unwind;
use std::sync::mpsc::{sync_channel, Receiver};

use crate::chunking::{progress_total, total_size, CorpusChunks, Source};
use crate::encode::{EncodeState, Encoder, StatePool};
use crate::error::Error;
use crate::progress::{Observer, Phase};

/// Bytes of text per chunk when encoding files. A chunk is the unit a worker
/// takes: at 2 MiB, one chunk per worker a batch, a worker that also read the
/// next batch finished last while the other waited (`bpeforge encode` on 2
/// threads used 1.5 of 2 cores); at 256 KiB, eight to a worker, the work
/// evens out: 500 MB of Gutenberg 0.95-1.00 -> 0.85-0.93 s on 2 threads,
/// 1.41-1.43 -> 1.35-1.41 on 1, 20news 0.31-0.42 -> 0.29 s, multilingual
/// 0.48 -> 0.42-0.44 s on 2 (3 alternated runs each), and peak RSS 111-115 ->
/// 92-100 MiB (a chunk's ids and packed copy are smaller).
pub const ENCODE_CHUNK_SIZE: usize = 256 << 10;
/// Chunks each worker gets in a batch: a batch in flight is held about seven
/// times over (its text, the next batch's, the ids at one per two bytes
/// reserved, packed, the copy being written), so the batch, not the chunk,
/// sets the memory: 2 MiB a worker (at 4 MiB, `bpeforge encode` peaked at
/// 187-201 MiB on 2 threads, at 2 MiB at 135-142 MiB, as fast or faster).
const CHUNKS_PER_WORKER: usize = 8;

/// Receives each batch, one converted item per chunk, in input order, on the
/// writer thread.
pub type Sink<'a, T> = dyn FnMut(Vec<T>) -> Result<(), Error> + Send + 'a;

/// Encode `sources`; each chunk's ids go through `convert` on the worker that
/// encoded them (packing them for a file, say, in parallel too), and each
/// batch's results go to `sink` in order. Progress is reported in bytes read.
/// Returns the bytes read.
pub fn encode_files<T: Send>(
    encoder: &Encoder,
    sources: &[Source],
    chunk_size: usize,
    pool: &rayon::ThreadPool,
    observer: &dyn Observer,
    convert: impl Fn(Vec<u32>) -> T + Sync,
    sink: &mut Sink<'_, T>,
) -> Result<u64, Error> {
    std::thread::scope(|scope| {
        // A rendezvous channel: the writer holds at most one batch while the
        // next is encoded, so memory stays that of one batch more than before.
        let (to_writer, batches) = sync_channel::<Vec<T>>(0);
        let writer = scope.spawn(move || write_all(batches, sink));
        let encoded = encode_batches(encoder, sources, chunk_size, pool, observer, &convert, &mut |converted| {
            // A send fails only once the writer has stopped on an error of its own, reported below.
            to_writer.send(converted).map_err(|_| Error::InvalidArgument("the writer stopped".into()))
        });
        drop(to_writer);
        let written = writer.join().unwrap_or_else(|panic| resume_unwind(panic));
        // The writer's error comes first: the encoding loop only stopped because of it.
        written.and(encoded)
    })
}

/// The writer thread: every batch to `sink`, in the order sent, until the
/// channel closes or the sink fails.
fn write_all<T>(batches: Receiver<Vec<T>>, sink: &mut Sink<'_, T>) -> Result<(), Error> {
    batches.into_iter().try_for_each(sink)
}

/// The encoding loop: a batch of chunks encoded in parallel while the next is
/// read, each batch's results handed to `hand_off` in order.
fn encode_batches<T: Send>(
    encoder: &Encoder,
    sources: &[Source],
    chunk_size: usize,
    pool: &rayon::ThreadPool,
    observer: &dyn Observer,
    convert: &(impl Fn(Vec<u32>) -> T + Sync),
    hand_off: &mut dyn FnMut(Vec<T>) -> Result<(), Error>,
) -> Result<u64, Error> {
    let total_bytes = total_size(sources)?;
    let mut chunks = CorpusChunks::new(sources, encoder.specials(), encoder.pattern().cut_before(), chunk_size);
    // The next batch is read while this one is encoded (see
    // `CHUNKS_PER_WORKER` for its size and `ENCODE_CHUNK_SIZE` for why it is
    // cut finer than one chunk a worker).
    let batch_bytes = chunk_size.saturating_mul(CHUNKS_PER_WORKER * pool.current_num_threads());
    let mut done = 0u64;
    // Each worker's table stays warm from one batch to the next instead of
    // merging every chunk's distinct pieces again (measured on 100 MB of
    // Gutenberg, 1 thread: 1.27-1.37 s against 1.42-1.51 s for the process).
    let states = StatePool::default();
    observer.progress(Phase::Encode, 0, total_bytes)?;
    let mut batch = chunks.next_batch(batch_bytes)?;
    while !batch.is_empty() {
        let texts: Vec<&str> = batch.iter().map(|chunk| chunk.text.as_str()).collect();
        let encode_batch =
            || encoder.encode_batch_from(&texts, || states.take(EncodeState::private, true), None, convert);
        let (converted, next_batch) = pool.install(|| rayon::join(encode_batch, || chunks.next_batch(batch_bytes)));
        hand_off(converted?)?;
        done += batch.iter().map(|chunk| chunk.text.len() as u64).sum::<u64>();
        observer.progress(Phase::Encode, done, progress_total(total_bytes, done))?;
        batch = next_batch?;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Silent;
    use crate::vocab::Vocabulary;

    #[test]
    fn same_ids_as_encoding_each_file_for_any_chunk_size_and_threads() {
        let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
        entries.extend([(256, b" t".to_vec()), (257, b"<|e|>".to_vec())]);
        let vocab = Vocabulary::new(entries, &[(b" ".to_vec(), b"t".to_vec())]).unwrap();
        let encoder = Encoder::new(vocab, &["<|e|>".to_string()], crate::Pattern::Gpt2).unwrap();
        let dir = std::env::temp_dir().join(format!("bpeforge-encode-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let texts = ["a t  t\n\nt<|e|>tt ", "<|e|> x  \u{3000}y t"];
        let paths: Vec<Source> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let path = dir.join(format!("{i}.txt"));
                std::fs::write(&path, text).unwrap();
                Source::whole(path)
            })
            .collect();
        let expected: Vec<u32> = texts.iter().flat_map(|text| encoder.encode(text).unwrap()).collect();
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            for chunk_size in [1, 3, 8, 1 << 20] {
                let mut got = Vec::new();
                let mut sink = |batch: Vec<Vec<u32>>| {
                    batch.iter().for_each(|ids| got.extend_from_slice(ids));
                    Ok(())
                };
                encode_files(&encoder, &paths, chunk_size, &pool, &Silent, |ids| ids, &mut sink).unwrap();
                assert_eq!(got, expected, "threads {threads}, chunk size {chunk_size}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_sinks_error_is_the_one_returned_and_the_reading_stops() {
        let vocab = Vocabulary::new::<Vec<u8>>((0..=255u8).map(|b| (b as u32, vec![b])).collect(), &[]).unwrap();
        let encoder = Encoder::new(vocab, &[], crate::Pattern::Gpt2).unwrap();
        let dir = std::env::temp_dir().join(format!("bpeforge-encode-files-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("text.txt");
        std::fs::write(&path, "one two three four five six seven eight nine ten ".repeat(1000)).unwrap();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let mut batches = 0;
        let mut sink = |_: Vec<Vec<u32>>| {
            batches += 1;
            Err(Error::InvalidArgument("disk full".into()))
        };
        let err = encode_files(&encoder, &[Source::whole(path)], 64, &pool, &Silent, |ids| ids, &mut sink).unwrap_err();
        assert_eq!(err.to_string(), Error::InvalidArgument("disk full".into()).to_string());
        assert_eq!(batches, 1, "nothing is written after the sink fails");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
