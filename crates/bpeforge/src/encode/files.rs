//! Encoding whole files in parallel, in bounded memory, with ids in order.
//!
//! The files are read as one stream of safely cut chunks (`io/chunking.rs`, the
//! same cuts training uses: a chunk's ids never depend on what follows) by the
//! calling thread, which hands each chunk to whichever worker is free and puts
//! the workers' results back in input order for `sink`, so the output is the
//! same for any number of threads. Each file ends a chunk, so the ids are those
//! of encoding each file on its own, concatenated.
//!
//! Nothing waits for a whole batch: a worker takes the next chunk as soon as it
//! has sent back its last, and the reader keeps a bounded number of chunks in
//! flight (`CHUNKS_PER_WORKER`), which bounds the memory (batches ended at a
//! barrier kept 1.5 of 2 cores busy). The sink runs on a thread of its own, so
//! writing the ids (`io/append_file.rs`) overlaps the encoding.

use std::collections::VecDeque;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;

use crate::encode::{ids_buffer, EncodeState, Encoder, StatePool};
use crate::error::Error;
use crate::io::chunking::{progress_total, total_size, Chunk, CorpusChunks, Source};
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
/// Chunks in flight for each worker: read and not yet written. A chunk in
/// flight is held about four times over (its text, its ids at one per two
/// bytes reserved, packed, the copy being written), so this, not the chunk,
/// sets the memory: 2 MiB a worker (at 4 MiB, `bpeforge encode` peaked at
/// 187-201 MiB on 2 threads, at 2 MiB at 135-142 MiB, as fast or faster).
const CHUNKS_PER_WORKER: usize = 8;
/// Chunks in flight on top of `CHUNKS_PER_WORKER`'s, whatever the threads:
/// enough to keep the workers busy while the writer is stuck in one of its
/// direct writes (4 MiB of ids, `io/append_file.rs`, 1-3 ms each on this VM),
/// during which nothing in flight is written. With 8 a worker only (16 on
/// 2 threads), each worker of `bpeforge encode` on 500 MB of Gutenberg sat
/// idle 0.05-0.09 s of its 0.6, the reader waiting on the writer 40-55
/// times; with 16 more, 0.000-0.009 s, and the encoding took 0.54-0.57 s
/// (3 runs each; peak RSS 135 -> 144-160 MiB).
const CHUNKS_FOR_THE_WRITER: usize = 16;

/// Receives runs of results, one converted item per chunk, in input order, on
/// the writer thread.
pub type Sink<'a, T> = dyn FnMut(Vec<T>) -> Result<(), Error> + Send + 'a;

/// Encode `sources`; each chunk's ids go through `convert` on the worker that
/// encoded them (packing them for a file, say, in parallel too), and the
/// results go to `sink` in order. Progress is reported in bytes encoded and
/// handed to the writer. Returns the bytes read.
pub fn encode_files<T: Send>(
    encoder: &Encoder,
    sources: &[Source],
    chunk_size: usize,
    pool: &rayon::ThreadPool,
    observer: &dyn Observer,
    convert: impl Fn(Vec<u32>) -> T + Sync,
    sink: &mut Sink<'_, T>,
) -> Result<u64, Error> {
    let (to_reader, events) = channel::<Event<T>>();
    let (to_writer, runs) = channel::<Vec<T>>();
    std::thread::scope(|scope| {
        let writer_events = to_reader.clone();
        let writer = scope.spawn(move || write_all(runs, sink, &writer_events));
        let in_flight = CHUNKS_PER_WORKER * pool.current_num_threads() + CHUNKS_FOR_THE_WRITER;
        let mut reader = InOrder::new(to_writer, events, in_flight);
        let encoded = reader.run(encoder, sources, chunk_size, pool, observer, &to_reader, &convert);
        // The writer ends once the reader's sender is gone, having written what it was sent.
        drop(reader);
        let written = writer.join().unwrap_or_else(|panic| resume_unwind(panic));
        // The writer's error comes first: the reader only stopped because of it.
        written.and(encoded)
    })
}

/// What the workers and the writer tell the reader.
enum Event<T> {
    /// A worker's answer for the chunk at `index`: its bytes of text, and its
    /// converted ids, the error that stopped its encoding, or the panic.
    Encoded { index: usize, bytes: u64, result: std::thread::Result<Result<T, Error>> },
    /// The writer has written this many more chunks' results.
    Written(usize),
    /// The writer has stopped (its sink failed or panicked, reported by
    /// `encode_files`): the reader may be waiting for chunks to be written.
    WriterStopped,
}

/// A chunk to encode, and its place in the input.
type Job = (usize, Chunk);

/// The writer thread: every run to `sink`, in the order sent, until the
/// channel closes or the sink fails, each one counted back to the reader.
fn write_all<T>(runs: Receiver<Vec<T>>, sink: &mut Sink<'_, T>, to_reader: &Sender<Event<T>>) -> Result<(), Error> {
    /// Sends `WriterStopped` however the writer ends, a panic included.
    struct Stopped<'a, T>(&'a Sender<Event<T>>);
    impl<T> Drop for Stopped<'_, T> {
        fn drop(&mut self) {
            // The reader may be gone already: then no one waits for this.
            let _ = self.0.send(Event::WriterStopped);
        }
    }
    let _stopped = Stopped(to_reader);
    for run in runs {
        let chunks = run.len();
        sink(run)?;
        let _ = to_reader.send(Event::Written(chunks));
    }
    Ok(())
}

/// The reader: chunks out to the workers, at most `in_flight` of them read
/// and not yet written, and their results back, in input order, to the writer.
struct InOrder<T> {
    to_writer: Sender<Vec<T>>,
    events: Receiver<Event<T>>,
    in_flight: usize,
    /// Chunks read so far: the index of the next one.
    read: usize,
    /// The results of the chunks from `handed` on, by index: `None` until
    /// its worker sends it.
    waiting: VecDeque<Option<(u64, Result<T, Error>)>>,
    /// Chunks whose results went to the writer: the index of the next one.
    handed: usize,
    handed_bytes: u64,
    /// Chunks the writer has written.
    written: usize,
}

impl<T: Send> InOrder<T> {
    fn new(to_writer: Sender<Vec<T>>, events: Receiver<Event<T>>, in_flight: usize) -> Self {
        let in_flight = in_flight.max(1);
        let waiting = VecDeque::new();
        Self { to_writer, events, in_flight, read: 0, waiting, handed: 0, handed_bytes: 0, written: 0 }
    }

    /// Read `sources` and have the pool's workers encode them, until every
    /// chunk's result has gone to the writer. The first error in input order
    /// (reading, encoding) or the writer's stop ends it; a worker's panic is
    /// raised here. Returns the bytes read.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        encoder: &Encoder,
        sources: &[Source],
        chunk_size: usize,
        pool: &rayon::ThreadPool,
        observer: &dyn Observer,
        to_reader: &Sender<Event<T>>,
        convert: &(impl Fn(Vec<u32>) -> T + Sync),
    ) -> Result<u64, Error> {
        let total_bytes = total_size(sources)?;
        let mut chunks = CorpusChunks::new(sources, encoder.specials(), encoder.pattern().cut_before(), chunk_size);
        let (to_workers, jobs) = channel::<Job>();
        let (jobs, stop) = (Mutex::new(jobs), AtomicBool::new(false));
        let states = StatePool::default();
        std::thread::scope(|scope| {
            // `broadcast` runs one loop on each of the pool's threads, and
            // returns once all have ended: after `to_workers` closes below.
            let workers = scope.spawn(|| {
                pool.broadcast(|_| encode_jobs(encoder, &states, &jobs, to_reader, &stop, convert));
            });
            observer.progress(Phase::Encode, 0, total_bytes)?;
            let outcome = self.feed_and_collect(&mut chunks, &to_workers, |bytes| {
                observer.progress(Phase::Encode, bytes, progress_total(total_bytes, bytes))
            });
            stop.store(true, Ordering::Relaxed);
            drop(to_workers);
            workers.join().unwrap_or_else(|panic| resume_unwind(panic));
            outcome
        })
    }

    /// The reader's loop: read while fewer than `in_flight` chunks are in
    /// flight, then wait for news; each run of consecutive results goes to
    /// the writer, and `progress` gets the bytes handed on so far.
    fn feed_and_collect(
        &mut self,
        chunks: &mut CorpusChunks,
        to_workers: &Sender<Job>,
        progress: impl Fn(u64) -> Result<(), Error>,
    ) -> Result<u64, Error> {
        let mut input_left = true;
        loop {
            while input_left && self.read - self.written < self.in_flight {
                match chunks.next_chunk()? {
                    Some(chunk) => self.send(chunk, to_workers)?,
                    None => input_left = false,
                }
            }
            if !input_left && self.handed == self.read {
                return Ok(self.handed_bytes);
            }
            // This thread holds a sender too, so this waits rather than fails.
            match self.events.recv().expect("the reader holds a sender") {
                Event::Encoded { index, bytes, result } => {
                    let result = result.unwrap_or_else(|panic| resume_unwind(panic));
                    self.waiting[index - self.handed] = Some((bytes, result));
                    if self.hand_on_run()? {
                        progress(self.handed_bytes)?;
                    }
                }
                Event::Written(chunks) => self.written += chunks,
                Event::WriterStopped => return Err(writer_stopped()),
            }
        }
    }

    fn send(&mut self, chunk: Chunk, to_workers: &Sender<Job>) -> Result<(), Error> {
        // The workers' receiver lives until the reader is done.
        to_workers.send((self.read, chunk)).map_err(|_| Error::InvalidArgument("the workers stopped".into()))?;
        self.read += 1;
        self.waiting.push_back(None);
        Ok(())
    }

    /// Send the writer the results that have arrived from `handed` on, up to
    /// the first still missing, if any; the first error among them is
    /// returned instead. Whether a run went.
    fn hand_on_run(&mut self) -> Result<bool, Error> {
        let mut run = Vec::new();
        while let Some(Some(_)) = self.waiting.front() {
            let Some(Some((bytes, result))) = self.waiting.pop_front() else { unreachable!() };
            run.push(result?);
            self.handed += 1;
            self.handed_bytes += bytes;
        }
        if run.is_empty() {
            return Ok(false);
        }
        self.to_writer.send(run).map_err(|_| writer_stopped())?;
        Ok(true)
    }
}

/// What the reader returns when the writer stopped; `encode_files` reports
/// the writer's own error instead.
fn writer_stopped() -> Error {
    Error::InvalidArgument("the writer stopped".into())
}

/// One worker: take chunks until there are no more (or the reader stopped),
/// encode each with one state kept warm across them, and send back its
/// result. A panic is sent back too, for the reader to raise: the reader
/// waits for every chunk in order, so a worker that died silently would
/// leave it waiting.
fn encode_jobs<T>(
    encoder: &Encoder,
    states: &StatePool,
    jobs: &Mutex<Receiver<Job>>,
    to_reader: &Sender<Event<T>>,
    stop: &AtomicBool,
    convert: &impl Fn(Vec<u32>) -> T,
) {
    // Each worker's table stays warm from one chunk to the next instead of
    // merging every chunk's distinct pieces again (measured on 100 MB of
    // Gutenberg, 1 thread: 1.27-1.37 s against 1.42-1.51 s for the process).
    let mut state = states.take(EncodeState::private, true);
    loop {
        let job = jobs.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).recv();
        let Ok((index, chunk)) = job else { return };
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut ids = ids_buffer(chunk.text.len());
            encoder.encode_with(&chunk.text, &mut state, &mut ids).map(|()| convert(ids))
        }));
        let panicked = result.is_err();
        let event = Event::Encoded { index, bytes: chunk.text.len() as u64, result };
        if to_reader.send(event).is_err() || panicked {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpe::vocab::Vocabulary;
    use crate::progress::Silent;

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
    fn many_more_chunks_than_in_flight_come_out_in_order_with_a_slow_writer() {
        let encoder = byte_encoder();
        let text: String = (0..5000).map(|i| format!("w{i} ")).collect();
        let file = ScratchFile::new("order", &text);
        let expected = encoder.encode(&text).unwrap();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let (mut got, mut runs) = (Vec::new(), 0);
        let mut sink = |run: Vec<Vec<u32>>| {
            // Slow enough that the chunks in flight (a few dozen of ~900) fill up behind it.
            std::thread::sleep(std::time::Duration::from_micros(200));
            runs += 1;
            run.iter().for_each(|ids| got.extend_from_slice(ids));
            Ok(())
        };
        let read =
            encode_files(&encoder, &[Source::whole(file.path())], 32, &pool, &Silent, |ids| ids, &mut sink).unwrap();
        assert_eq!(read, text.len() as u64);
        assert_eq!(got, expected);
        assert!(runs > 1, "the ids went to the writer in {runs} run(s)");
    }

    #[test]
    fn a_workers_panic_is_raised_not_waited_for() {
        let encoder = byte_encoder();
        let file = ScratchFile::new("panic", "one two three four five six seven eight nine ten ".repeat(100));
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let convert = |ids: Vec<u32>| {
            if calls.fetch_add(1, Ordering::Relaxed) == 3 {
                panic!("convert failed");
            }
            ids
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            encode_files(&encoder, &[Source::whole(file.path())], 64, &pool, &Silent, convert, &mut |_| Ok(()))
        }));
        let panic = outcome.expect_err("the panic reaches the caller");
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"convert failed"));
    }

    #[test]
    fn the_writers_panic_is_raised_not_waited_for() {
        let encoder = byte_encoder();
        let file = ScratchFile::new("writer-panic", "one two three four five six seven eight nine ten ".repeat(100));
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut sink = |_: Vec<Vec<u32>>| -> Result<(), Error> { panic!("sink failed") };
            encode_files(&encoder, &[Source::whole(file.path())], 64, &pool, &Silent, |ids| ids, &mut sink)
        }));
        let panic = outcome.expect_err("the panic reaches the caller");
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"sink failed"));
    }

    /// A file of `contents` in a directory of its own, removed when dropped.
    struct ScratchFile(std::path::PathBuf);

    impl ScratchFile {
        fn new(name: &str, contents: impl AsRef<[u8]>) -> Self {
            let dir = std::env::temp_dir().join(format!("bpeforge-encode-files-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("text.txt"), contents).unwrap();
            Self(dir)
        }

        fn path(&self) -> std::path::PathBuf {
            self.0.join("text.txt")
        }
    }

    impl Drop for ScratchFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn byte_encoder() -> Encoder {
        let vocab = Vocabulary::new::<Vec<u8>>((0..=255u8).map(|b| (b as u32, vec![b])).collect(), &[]).unwrap();
        Encoder::new(vocab, &[], crate::Pattern::Gpt2).unwrap()
    }

    #[test]
    fn the_sinks_error_is_the_one_returned_and_the_reading_stops() {
        let encoder = byte_encoder();
        let file = ScratchFile::new("sink", "one two three four five six seven eight nine ten ".repeat(1000));
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let mut batches = 0;
        let mut sink = |_: Vec<Vec<u32>>| {
            batches += 1;
            Err(Error::InvalidArgument("disk full".into()))
        };
        let err = encode_files(&encoder, &[Source::whole(file.path())], 64, &pool, &Silent, |ids| ids, &mut sink)
            .unwrap_err();
        assert_eq!(err.to_string(), Error::InvalidArgument("disk full".into()).to_string());
        assert_eq!(batches, 1, "nothing is written after the sink fails");
    }
}
