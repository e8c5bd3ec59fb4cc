//! `bpeforge._core.Encoder`: the Rust encoder behind `bpeforge.Tokenizer`.
//!
//! Immutable once built (`frozen`) but for the core's shared piece cache,
//! which is thread-safe, so one instance is shared by any number of Python
//! threads; every method that does real work releases the GIL, but on a
//! text under 1 KiB (`detached::HOLD_GIL_BELOW_BYTES`).

use std::panic::resume_unwind;
use std::path::PathBuf;
use std::sync::Arc;

use bpeforge::Appender;
use bpeforge::PackedIds;
use bpeforge::DEFAULT_CACHE_BYTES;
use bpeforge::{encode_files, Sink, ENCODE_CHUNK_SIZE};
use bpeforge::{encode_piece, Scratch};
use bpeforge::{BatchText, EncodeState};
use bpeforge::{Encoder, Pattern, Vocabulary};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyString};

use crate::detached::{detached_unless_short, run_detached};
use crate::errors::to_py_err;
use crate::id_array::IdArray;
use crate::id_list::IdInts;
use crate::jsonl::{offsets_bytearray, PyJsonlBlocks};
use crate::observer::PyObserver;
use crate::pools::{detached_on, pool_for};
use crate::short_text::{short_utf8, with_thread_ids};
use crate::sources::{to_sources, SourceArg};
use crate::text::{utf8_for_call, worker_utf8, LastTranscoded, WorkerErrors, WorkerUtf8};
use crate::utf8_stream::Utf8Stream;

#[pyclass(frozen, module = "bpeforge._core", name = "Encoder")]
pub struct PyEncoder {
    inner: Arc<Encoder>,
    /// One Python int per id, made once: a list of ids is then built by
    /// reference-count increments instead of one int allocation per id,
    /// which cost as much as the encoding itself on large texts.
    ints: IdInts,
    /// The long non-ASCII `str`s the last encode call saw, to tell new
    /// ones (transcoded) from ones seen again (CPython's UTF-8; `text.rs`).
    last_transcoded: LastTranscoded,
}

impl PyEncoder {
    /// The binding of `inner`, its cache set to `cache_bytes` and its tables
    /// seeded (`Encoder::seed_tables`).
    pub(crate) fn from_encoder(py: Python<'_>, inner: Encoder, cache_bytes: usize) -> PyResult<Self> {
        py.detach(|| {
            if cache_bytes != DEFAULT_CACHE_BYTES {
                inner.set_cache_bytes(cache_bytes);
            }
            // Here, when the tokenizer is built, so that no call waits for it.
            inner.seed_tables();
        });
        let ints = IdInts::new(py, inner.vocab().len())?;
        Ok(Self { inner: Arc::new(inner), ints, last_transcoded: LastTranscoded::default() })
    }

    pub(crate) fn encoder(&self) -> &Arc<Encoder> {
        &self.inner
    }

    fn check_width(&self, width: usize) -> PyResult<()> {
        let size = self.inner.vocab().given_len();
        match width {
            2 if size > 1 << 16 => {
                Err(PyValueError::new_err(format!("a vocabulary of {size} tokens does not fit uint16; use uint32")))
            }
            2 | 4 => Ok(()),
            _ => Err(PyValueError::new_err(format!("width must be 2 or 4 bytes, not {width}"))),
        }
    }

    fn check_mask(&self, mask: &[bool]) -> PyResult<()> {
        let specials = self.inner.special_tokens().len();
        if mask.len() != specials {
            return Err(PyValueError::new_err(format!(
                "a mask over the special tokens needs {specials} entries, got {}",
                mask.len()
            )));
        }
        Ok(())
    }

    /// `texts` encoded in parallel a group at a time (Ctrl-C checked between
    /// groups), each as a list; `allowed` as in `Encoder::encode_allowing`.
    fn batch_lists<'py>(
        &self,
        py: Python<'py>,
        texts: &[Bound<'py, PyString>],
        allowed: Option<&[bool]>,
        num_threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let texts = utf8_for_call(texts, &self.last_transcoded)?;
        let texts = texts.to_vec();
        let pool = pool_for(num_threads)?;
        let encode = |group: &[&str]| pool.install(|| self.inner.encode_batch_allowing(group, allowed, |ids| ids));
        let mut groups = groups_by_weight(&texts, BATCH_CHECK_BYTES);
        let mut lists = Vec::with_capacity(texts.len());
        let mut encoded = match groups.next() {
            Some(first) => Some(py.detach(|| encode(first)).map_err(to_py_err)?),
            None => None,
        };
        // The lists of one group are made (with the GIL) while the workers encode
        // the next, so the GIL-held part no longer stops every worker; the texts
        // are borrowed, not copied (`text.rs`).
        while let Some(batch) = encoded.take() {
            let next = groups.next();
            std::thread::scope(|scope| -> PyResult<()> {
                let worker = next.map(|group| scope.spawn(move || encode(group)));
                for ids in &batch {
                    lists.push(self.ints.list(py, ids)?);
                }
                py.check_signals()?;
                if let Some(worker) = worker {
                    let result = py.detach(move || worker.join()).unwrap_or_else(|panic| resume_unwind(panic));
                    encoded = Some(result.map_err(to_py_err)?);
                }
                Ok(())
            })?;
        }
        PyList::new(py, lists)
    }

    /// Encode `paths` (see `bpeforge::encode_files`) on `num_threads`, each
    /// chunk's ids packed `width` bytes each (checked by the caller) and
    /// handed to `sink` in runs, in order; the bytes read.
    #[allow(clippy::too_many_arguments)]
    fn encode_files_into(
        &self,
        py: Python<'_>,
        paths: Vec<SourceArg>,
        width: usize,
        num_threads: Option<usize>,
        chunk_size: Option<usize>,
        observer: &PyObserver,
        sink: &mut Sink<'_, PackedIds>,
    ) -> PyResult<u64> {
        let pool = pool_for(num_threads)?;
        let chunk_size = chunk_size.unwrap_or(ENCODE_CHUNK_SIZE);
        let pack = |ids: Vec<u32>| PackedIds::new(ids, width);
        let sources = to_sources(paths);
        run_detached(py, observer, || encode_files(&self.inner, &sources, chunk_size, &pool, observer, pack, sink))
    }

    /// The ids of `text`, encoded without the GIL a stretch of about
    /// `INTERRUPT_CHECK_BYTES` at a time, with Ctrl-C checked between
    /// stretches (a single call on 1 GB would otherwise only see it at the
    /// end). Stretches end where more text cannot change the ids before them
    /// (`stable_prefix_len`), so the ids equal one call's; a transcoded text
    /// is read a stretch ahead (`utf8_stream.rs`).
    /// `allowed`: the special tokens recognised (a mask over them; `None`: all).
    fn encode_interruptible(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyString>,
        fill_cache: bool,
        allowed: Option<&[bool]>,
    ) -> PyResult<Vec<u32>> {
        let mut source = Utf8Stream::new(text, &self.last_transcoded)?;
        let mut ids = bpeforge::ids_buffer(source.bytes_hint());
        self.with_state(fill_cache, source.bytes_hint(), |state| loop {
            let (rest, complete) = (source.rest(), source.is_complete());
            if rest.is_empty() && complete {
                return Ok(ids);
            }
            let next = || self.next_stretch(rest, allowed, complete);
            let Some(stretch) = detached_unless_short(py, rest.len(), next) else {
                source.read_more()?;
                continue;
            };
            detached_unless_short(py, stretch.len(), || self.inner.encode_allowing(stretch, allowed, state, &mut ids))
                .map_err(to_py_err)?;
            py.check_signals()?;
            let taken = stretch.len();
            source.take(taken);
        })
    }

    /// The ids of `text` as a list: a short text's through the thread's
    /// buffer (`short_text.rs`), a longer one's as `encode_interruptible`
    /// gives them.
    fn list_of<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyString>,
        fill_cache: bool,
        allowed: Option<&[bool]>,
    ) -> PyResult<Bound<'py, PyList>> {
        let Some(utf8) = short_utf8(text)? else {
            return self.ints.list(py, &self.encode_interruptible(py, text, fill_cache, allowed)?);
        };
        with_thread_ids(|ids| {
            let encode = |state: &mut EncodeState| self.inner.encode_allowing(utf8, allowed, state, ids);
            self.with_state(fill_cache, utf8.len(), encode).map_err(to_py_err)?;
            self.ints.list(py, ids)
        })
    }

    /// `work` with an encoding state for a text of about `bytes` bytes: a
    /// pooled one, or with `fill_cache` false one that adds nothing to the
    /// shared cache.
    fn with_state<R>(&self, fill_cache: bool, bytes: usize, work: impl FnOnce(&mut EncodeState) -> R) -> R {
        let (mut pooled, mut lookup_only);
        let state: &mut EncodeState = if fill_cache {
            pooled = self.inner.pooled_state();
            &mut pooled
        } else {
            lookup_only = self.inner.lookup_only_state();
            &mut lookup_only
        };
        state.expect_text(bytes);
        work(state)
    }

    /// The longest stable prefix of the first `INTERRUPT_CHECK_BYTES` of
    /// `text`, looking twice as far each time none is found (so the scan
    /// stays linear), or all of `text` when it runs to the end
    /// (`complete`). When it does not, the longest stable prefix of all of
    /// it (the text read ahead is a stretch long), or `None`: read more.
    fn next_stretch<'t>(&self, text: &'t str, allowed: Option<&[bool]>, complete: bool) -> Option<&'t str> {
        if !complete {
            let cut = self.inner.stable_prefix_len_allowing(text, allowed);
            return (cut > 0).then(|| &text[..cut]);
        }
        let mut window = INTERRUPT_CHECK_BYTES;
        while window < text.len() {
            let end = (0..=window).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            let cut = self.inner.stable_prefix_len_allowing(&text[..end], allowed);
            if cut > 0 {
                return Some(&text[..cut]);
            }
            window = window.saturating_mul(2);
        }
        Some(text)
    }
}

/// How much text `encode` handles between two checks for Ctrl-C: a few
/// milliseconds of work, so that a check costs nothing measurable.
const INTERRUPT_CHECK_BYTES: usize = 1 << 20;

/// How many bytes of texts `encode_batch` hands to the workers between two
/// checks for Ctrl-C (each group is encoded in parallel). Groups of 1 MiB
/// pipelined no better on 20news (208-231 MB/s on 2 threads either way) and
/// worse on multilingual text (112 against 125-131 MB/s: more tails where one
/// worker waits for the other's long document).
pub(crate) const BATCH_CHECK_BYTES: usize = 4 << 20;

#[pymethods]
impl PyEncoder {
    #[new]
    #[pyo3(signature = (vocab, merges, special_tokens, pattern="gpt2", cache_bytes=DEFAULT_CACHE_BYTES))]
    fn new<'py>(
        py: Python<'py>,
        vocab: Vec<(u32, Vec<u8>)>,
        merges: Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>,
        special_tokens: Vec<String>,
        pattern: &str,
        cache_bytes: usize,
    ) -> PyResult<Self> {
        let pattern = Pattern::new(pattern).map_err(to_py_err)?;
        // Borrowed, not copied: o200k's 400 K merge sides allocated and freed
        // as `Vec`s were a third of building its encoder.
        let merges: Vec<(&[u8], &[u8])> =
            merges.iter().map(|(left, right)| (left.as_bytes(), right.as_bytes())).collect();
        let built =
            py.detach(|| Vocabulary::new(vocab, &merges).and_then(|v| Encoder::new(v, &special_tokens, pattern)));
        Self::from_encoder(py, built.map_err(to_py_err)?, cache_bytes)
    }

    /// `fill_cache=False` reads the shared cache without adding to it (for
    /// streaming in flat memory).
    #[pyo3(signature = (text, fill_cache=true))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: Bound<'py, PyString>,
        fill_cache: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        self.list_of(py, &text, fill_cache, None)
    }

    /// The ids of `text` for `numpy.asarray` (`IdArray`): no Python int per
    /// id, and no copy.
    fn encode_to_array(&self, py: Python<'_>, text: Bound<'_, PyString>) -> PyResult<IdArray> {
        let ids = self.encode_interruptible(py, &text, true, None)?;
        Ok(IdArray::new(ids))
    }

    /// Encode `texts` in parallel; returns all ids concatenated (an
    /// `IdArray`) and the `len(texts) + 1` offsets of each text's ids in them
    /// (int64, a raw little-endian bytearray).
    #[pyo3(signature = (texts, num_threads=None))]
    fn encode_batch_to_arrays<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'py, PyString>>,
        num_threads: Option<usize>,
    ) -> PyResult<(IdArray, Bound<'py, PyByteArray>)> {
        // Borrowed, or made UTF-8 by the worker that takes it (a long `str`
        // that is not ASCII, `text.rs`), never a `String` copied with the GIL
        // held: that was 8% of a 2-thread batch of 10 MB.
        let errors = WorkerErrors::default();
        let texts = worker_utf8(&texts, &self.last_transcoded, &errors)?;
        let encoder = &self.inner;
        // Room for the whole batch at once (reserved group by group, it grew
        // by `mremap` and faulted in every 4 KiB page).
        let room = texts.iter().map(WorkerUtf8::id_room_bytes).sum();
        let mut all = bpeforge::ids_buffer(room);
        let mut ends: Vec<usize> = Vec::with_capacity(texts.len());
        let pool = pool_for(num_threads)?;
        for group in groups_by_weight(&texts, BATCH_CHECK_BYTES) {
            // Appended in place (`encode_batch_into`): no `Vec` a text to copy and free.
            let run = || encoder.encode_batch_into(group, None, &mut all, &mut ends);
            let encoded = detached_on(py, &pool, run);
            // A worker's Python error (a lone surrogate) is the one to raise.
            encoded.map_err(|error| errors.take().unwrap_or_else(|| to_py_err(error)))?;
            py.check_signals()?;
        }
        Ok((IdArray::new(all), offsets_bytearray(py, &ends)?))
    }

    /// The records of the JSON Lines file `path` (the text of each one's
    /// `field`) encoded a block of about `block_bytes` at a time on
    /// `num_threads`: an iterator of blocks (`jsonl.rs`).
    #[pyo3(signature = (path, field, num_threads=None, block_bytes=None))]
    fn encode_jsonl(
        &self,
        path: PathBuf,
        field: &str,
        num_threads: Option<usize>,
        block_bytes: Option<usize>,
    ) -> PyResult<PyJsonlBlocks> {
        PyJsonlBlocks::open(self.inner.clone(), &path, field, block_bytes, num_threads)
    }

    /// Replace the shared piece cache by an empty one of at most `bytes` (0: off).
    fn set_cache_bytes(&self, py: Python<'_>, bytes: usize) {
        py.detach(|| self.inner.set_cache_bytes(bytes));
    }

    /// `entries`, `bytes` (tables allocated), `capacity`, `hits`, `misses` of the shared cache;
    /// `thread_tables` and `thread_table_bytes` of the threads' own tables kept between calls.
    fn cache_info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let info = py.detach(|| self.inner.cache_info());
        let dict = PyDict::new(py);
        dict.set_item("entries", info.entries)?;
        dict.set_item("bytes", info.bytes)?;
        dict.set_item("capacity", info.capacity)?;
        dict.set_item("hits", info.hits)?;
        dict.set_item("misses", info.misses)?;
        dict.set_item("thread_tables", info.thread_tables)?;
        dict.set_item("thread_table_bytes", info.thread_table_bytes)?;
        dict.set_item("seeds", info.seeds)?;
        Ok(dict)
    }

    /// Length in characters of the longest prefix of `text` whose ids more
    /// text cannot change (0 if none yet): a safe place to cut a stream.
    fn stable_prefix_len(&self, py: Python<'_>, text: &str) -> usize {
        py.detach(|| text[..self.inner.stable_prefix_len(text)].chars().count())
    }

    #[pyo3(signature = (texts, num_threads=None))]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'py, PyString>>,
        num_threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.batch_lists(py, &texts, None, num_threads)
    }

    /// Encode `texts` in parallel into raw little-endian arrays of `width`
    /// bytes per id (2 or 4), for writing token files without a Python int
    /// per id.
    #[pyo3(signature = (texts, width, num_threads=None))]
    fn encode_batch_packed<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
        width: usize,
        num_threads: Option<usize>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        self.check_width(width)?;
        let encoder = &self.inner;
        let run = || encoder.encode_batch(&texts, |ids| PackedIds::new(ids, width));
        let pool = pool_for(num_threads)?;
        let packed = detached_on(py, &pool, run).map_err(to_py_err)?;
        Ok(packed.iter().map(|ids| PyBytes::new(py, ids.bytes())).collect())
    }

    /// Encode files or shards of them in parallel (see `bpeforge::encode_files`), calling
    /// `write(bytes)` with each run of chunks' ids packed `width` bytes each,
    /// in order, and `progress("encode", done, total)` with bytes read.
    #[pyo3(signature = (paths, width, write, num_threads=None, chunk_size=None, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn encode_files(
        &self,
        py: Python<'_>,
        paths: Vec<SourceArg>,
        width: usize,
        write: Py<PyAny>,
        num_threads: Option<usize>,
        chunk_size: Option<usize>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<u64> {
        self.check_width(width)?;
        let observer = PyObserver::new(progress);
        // Runs on encode_files' writer thread, while the next chunks are encoded.
        let mut sink = |packed: Vec<PackedIds>| {
            Python::attach(|py| write.call1(py, (concat_bytes(py, &packed)?,)).map(drop))
                .map_err(|err| observer.stop_with(err))
        };
        self.encode_files_into(py, paths, width, num_threads, chunk_size, &observer, &mut sink)
    }

    /// `encode_files`, appending the packed ids to the open file `fd` from
    /// byte `offset` on, past the page cache where the system allows
    /// (`bpeforge::append_file`), instead of calling `write` under the GIL;
    /// `name` names the file in errors. Returns the bytes read and the bytes
    /// appended. The caller keeps `fd` open, and its own buffer flushed,
    /// for the call.
    #[pyo3(signature = (paths, width, fd, offset, name, num_threads=None, chunk_size=None, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn encode_files_to_fd(
        &self,
        py: Python<'_>,
        paths: Vec<SourceArg>,
        width: usize,
        fd: i32,
        offset: u64,
        name: PathBuf,
        num_threads: Option<usize>,
        chunk_size: Option<usize>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<(u64, u64)> {
        self.check_width(width)?;
        let observer = PyObserver::new(progress);
        let output_error = |source| bpeforge::Error::Io { path: name.clone(), source };
        // SAFETY: the caller holds `fd` open, writable, until this returns.
        let mut appender = unsafe { Appender::for_fd(fd, offset) }.map_err(|e| to_py_err(output_error(e)))?;
        let mut sink = |packed: Vec<PackedIds>| {
            packed.iter().try_for_each(|ids| appender.append(ids.bytes())).map_err(output_error)
        };
        let read = self.encode_files_into(py, paths, width, num_threads, chunk_size, &observer, &mut sink)?;
        let appended = py.detach(|| appender.finish()).map_err(|e| to_py_err(output_error(e)))?;
        Ok((read, appended))
    }

    /// tiktoken's policy (`bpeforge.tiktoken`): only the special tokens that
    /// `allowed` marks (a mask over `special_tokens`) are tokens, the others text.
    fn encode_allowing<'py>(
        &self,
        py: Python<'py>,
        text: Bound<'py, PyString>,
        allowed: Vec<bool>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.check_mask(&allowed)?;
        self.list_of(py, &text, true, Some(&allowed))
    }

    /// `encode_allowing` as `encode_to_array` returns ids.
    fn encode_allowing_to_array(
        &self,
        py: Python<'_>,
        text: Bound<'_, PyString>,
        allowed: Vec<bool>,
    ) -> PyResult<IdArray> {
        self.check_mask(&allowed)?;
        let ids = self.encode_interruptible(py, &text, true, Some(&allowed))?;
        Ok(IdArray::new(ids))
    }

    /// `encode_allowing` over `texts` in parallel, as `encode_batch`.
    #[pyo3(signature = (texts, allowed, num_threads=None))]
    fn encode_batch_allowing<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'py, PyString>>,
        allowed: Vec<bool>,
        num_threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.check_mask(&allowed)?;
        self.batch_lists(py, &texts, Some(&allowed), num_threads)
    }

    /// The leftmost special token in `text` among those `which` marks, or None.
    fn find_special(&self, py: Python<'_>, text: &str, which: Vec<bool>) -> PyResult<Option<String>> {
        self.check_mask(&which)?;
        let found = detached_unless_short(py, text.len(), || self.inner.find_special(text, &which));
        Ok(found.map(|index| self.inner.special_tokens()[index].clone()))
    }

    /// The ids of `piece` by merges alone, no pre-tokenizer (tiktoken's
    /// `_encode_bytes` on bytes that are not UTF-8).
    fn encode_piece<'py>(&self, py: Python<'py>, piece: &[u8]) -> PyResult<Bound<'py, PyList>> {
        let mut ids = Vec::new();
        let vocab = self.inner.vocab();
        py.detach(|| encode_piece(piece, vocab, &mut Scratch::default(), &mut ids));
        // Raw bytes (tiktoken's `_encode_bytes`) may hold a byte the vocabulary lacks, which UTF-8 never holds.
        if let Some(at) = ids.iter().position(|&id| id as usize >= vocab.given_len()) {
            let byte = piece.iter().find(|&&byte| vocab.id(&[byte]).is_none()).copied().unwrap_or_default();
            return Err(PyValueError::new_err(format!(
                "the bytes hold 0x{byte:02X}, which has no token in this vocabulary (token {at} of the piece)"
            )));
        }
        self.ints.list(py, &ids)
    }

    /// Ids are taken as Python ints of any size so that a negative or huge id
    /// is reported as unknown, by value, rather than as an overflow.
    fn decode_bytes<'py>(&self, py: Python<'py>, ids: Vec<i64>) -> PyResult<Bound<'py, PyBytes>> {
        let ids: Vec<u32> = ids
            .into_iter()
            .map(|id| u32::try_from(id).map_err(|_| PyValueError::new_err(format!("unknown token id {id}"))))
            .collect::<PyResult<_>>()?;
        let bytes = py.detach(|| self.inner.decode_bytes(&ids)).map_err(to_py_err)?;
        Ok(PyBytes::new(py, &bytes))
    }

    fn token(&self, id: i64) -> Option<&[u8]> {
        u32::try_from(id).ok().and_then(|id| self.inner.vocab().token(id))
    }

    fn id(&self, token: &[u8]) -> Option<u32> {
        self.inner.vocab().id(token)
    }

    #[getter]
    fn pattern(&self) -> &str {
        self.inner.pattern().spec()
    }
}

/// `texts` in consecutive groups of about `bytes` each (at least one text a
/// group; `BatchText::weight` for each text's bytes).
pub(crate) fn groups_by_weight<T: BatchText>(texts: &[T], bytes: usize) -> impl Iterator<Item = &[T]> {
    let mut rest = texts;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (mut end, mut size) = (0, 0);
        while end < rest.len() && (end == 0 || size < bytes) {
            size += rest[end].weight();
            end += 1;
        }
        let (group, tail) = rest.split_at(end);
        rest = tail;
        Some(group)
    })
}

/// The parts one after another in a new `bytes`, written in place (one copy, not a concatenation first).
fn concat_bytes<'py>(py: Python<'py>, parts: &[PackedIds]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, parts.iter().map(|ids| ids.bytes().len()).sum(), |buffer| {
        let mut at = 0;
        for part in parts.iter().map(PackedIds::bytes) {
            buffer[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        Ok(())
    })
}
