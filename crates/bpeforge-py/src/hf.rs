//! `bpeforge._core.HfPipeline`: a `tokenizer.json`'s whole pipeline
//! (`bpeforge::hf`), behind `bpeforge.Tokenizer.from_hf` for files that are
//! more than GPT-2's vocabulary and merges. Frozen and shared by threads;
//! every method that encodes releases the GIL, but on a text under 1 KiB
//! (`detached::HOLD_GIL_BELOW_BYTES`).

use bpeforge::HfTokenizer;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyString};

use crate::detached::detached_unless_short;
use crate::encoder::{groups_by_weight, BATCH_CHECK_BYTES};
use crate::errors::to_py_err;
use crate::id_array::IdArray;
use crate::id_list::IdInts;
use crate::pools::{detached_on, pool_for};
use crate::short_text::{short_utf8, with_thread_ids};
use crate::text::{utf8_for_call, LastTranscoded, WorkerErrors, WorkerUtf8, TRANSCODE_MIN_CHARS};
use crate::text_list::{kept_list, list_worker_utf8};

#[pyclass(frozen, module = "bpeforge._core", name = "HfPipeline")]
pub struct PyHfPipeline {
    inner: HfTokenizer,
    last_transcoded: LastTranscoded,
    ints: IdInts,
}

impl PyHfPipeline {
    /// The ids of `text`. Its UTF-8 is borrowed from CPython (an ASCII
    /// `str` is its own), but a long one's is as `utf8_for_call` gives it.
    fn encode_detached(&self, text: &Bound<'_, PyString>, add_special_tokens: bool) -> PyResult<Vec<u32>> {
        let py = text.py();
        let encode = |utf8: &str| detached_unless_short(py, utf8.len(), || self.inner.encode(utf8, add_special_tokens));
        let ids = if text.len()? < TRANSCODE_MIN_CHARS {
            encode(text.to_str()?)
        } else {
            encode(utf8_for_call(std::slice::from_ref(text), &self.last_transcoded)?.to_vec()[0])
        };
        ids.map_err(to_py_err)
    }

    /// All the texts' ids in one array and where each text's end, as the
    /// pipeline's batches give them (`HfTokenizer::encode_batch_into`):
    /// the `str`s borrowed from a copy of the list (`text_list.rs`), each
    /// worker's state and buffers kept from text to text, no `Vec` a text.
    fn encode_all(
        &self,
        py: Python<'_>,
        texts: &Bound<'_, PyAny>,
        num_threads: Option<usize>,
        add_special_tokens: bool,
    ) -> PyResult<(Vec<u32>, Vec<usize>)> {
        let errors = WorkerErrors::default();
        let kept = kept_list(texts)?;
        let texts = list_worker_utf8(&kept, &self.last_transcoded, &errors)?;
        let inner = &self.inner;
        // Room for the whole batch at once, as the encoder's own batches take it (grown text by text,
        // it was copied and its new pages faulted in on every call).
        let room = texts.iter().map(WorkerUtf8::id_room_bytes).sum::<usize>();
        let mut all = bpeforge::ids_buffer(room + texts.len() * self.inner.special_ids_per_text() * 2);
        let mut ends: Vec<usize> = Vec::with_capacity(texts.len());
        let pool = pool_for(num_threads)?;
        for group in groups_by_weight(&texts, BATCH_CHECK_BYTES) {
            let run = || inner.encode_batch_into(group, add_special_tokens, &mut all, &mut ends);
            // A worker's Python error (a lone surrogate) is the one to raise.
            detached_on(py, &pool, run).map_err(|error| errors.take().unwrap_or_else(|| to_py_err(error)))?;
            py.check_signals()?;
        }
        Ok((all, ends))
    }
}

#[pymethods]
impl PyHfPipeline {
    /// Load the text of a `tokenizer.json`; ValueError names what is refused.
    #[new]
    fn new(py: Python<'_>, json: &str) -> PyResult<Self> {
        let inner = py.detach(|| HfTokenizer::from_json(json)).map_err(to_py_err)?;
        let ints = IdInts::new(py, inner.id_count())?;
        Ok(Self { inner, last_transcoded: LastTranscoded::default(), ints })
    }

    #[pyo3(signature = (text, add_special_tokens=true))]
    fn encode<'py>(&self, text: &Bound<'py, PyAny>, add_special_tokens: bool) -> PyResult<Bound<'py, PyList>> {
        // The Tokenizer's own `encode` (see `hf_pipeline._restore`), so the error says what to pass.
        let text = text.cast::<PyString>().map_err(|_| {
            let got = text.get_type().name().map_or_else(|_| "?".to_string(), |name| name.to_string());
            PyTypeError::new_err(format!("expected str, got {got}; decode bytes to str first"))
        })?;
        if let Some(utf8) = short_utf8(text)? {
            return with_thread_ids(|ids| match self.inner.encode_append(utf8, add_special_tokens, ids) {
                Ok(()) => self.ints.list(text.py(), ids),
                Err(error) => Err(to_py_err(error)),
            });
        }
        self.ints.list(text.py(), &self.encode_detached(text, add_special_tokens)?)
    }

    #[pyo3(signature = (text, add_special_tokens=true))]
    fn encode_to_array(&self, text: Bound<'_, PyString>, add_special_tokens: bool) -> PyResult<IdArray> {
        Ok(IdArray::new(self.encode_detached(&text, add_special_tokens)?))
    }

    #[pyo3(signature = (texts, num_threads=None, add_special_tokens=true))]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'_, PyAny>,
        num_threads: Option<usize>,
        add_special_tokens: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let (all, ends) = self.encode_all(py, texts, num_threads, add_special_tokens)?;
        let starts = std::iter::once(0).chain(ends.iter().copied());
        let lists: Vec<_> = starts
            .zip(ends.iter().copied())
            .map(|(start, end)| self.ints.list(py, &all[start..end]))
            .collect::<PyResult<_>>()?;
        PyList::new(py, lists)
    }

    /// All ids in one array and the int64 offsets of each text's ids (a little-endian bytearray).
    #[pyo3(signature = (texts, num_threads=None, add_special_tokens=true))]
    fn encode_batch_to_arrays<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        num_threads: Option<usize>,
        add_special_tokens: bool,
    ) -> PyResult<(IdArray, Bound<'py, PyByteArray>)> {
        let (all, ends) = self.encode_all(py, texts, num_threads, add_special_tokens)?;
        let offsets = std::iter::once(0).chain(ends.iter().map(|&end| end as i64));
        let offsets = PyByteArray::new_with(py, (ends.len() + 1) * 8, |buffer| {
            for (chunk, offset) in buffer.chunks_exact_mut(8).zip(offsets) {
                chunk.copy_from_slice(&offset.to_le_bytes());
            }
            Ok(())
        })?;
        Ok((IdArray::new(all), offsets))
    }

    fn decode_bytes<'py>(&self, py: Python<'py>, ids: Vec<i64>) -> PyResult<Bound<'py, PyBytes>> {
        let ids = ids
            .into_iter()
            .map(|id| u32::try_from(id).map_err(|_| to_py_err(bpeforge::Error::UnknownId(u32::MAX))))
            .collect::<PyResult<Vec<u32>>>()?;
        let bytes = self.inner.decode_bytes(&ids).map_err(to_py_err)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The bytes of token `id` as decoding gives them, or None.
    fn token<'py>(&self, py: Python<'py>, id: i64) -> Option<Bound<'py, PyBytes>> {
        let bytes = self.inner.token_bytes(u32::try_from(id).ok()?)?;
        Some(PyBytes::new(py, &bytes))
    }

    /// The id of a model token given as bytes, or of an added token's text, or None.
    fn id(&self, token: &[u8]) -> Option<u32> {
        let added = self.inner.added_tokens().iter().find(|added| added.content.as_bytes() == token);
        added.map(|added| added.id).or_else(|| self.inner.vocab().id(token))
    }

    /// `[(id, bytes)]` of every id, added tokens as their text's UTF-8.
    fn vocab<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let entries: Vec<_> = (0..self.inner.id_count() as u32)
            .filter_map(|id| self.inner.token_bytes(id).map(|bytes| (id, PyBytes::new(py, &bytes))))
            .collect();
        PyList::new(py, entries)
    }

    /// `[(content, id, special)]` of the added tokens.
    fn added_tokens(&self) -> Vec<(String, u32, bool)> {
        self.inner.added_tokens().iter().map(|token| (token.content.clone(), token.id, token.special)).collect()
    }

    /// `bpeforge encode` and `bpeforge.ray.encode` cut files where a preset allows, which a pipeline does not say.
    #[pyo3(signature = (*_args, **_kwargs))]
    fn encode_files_to_fd(
        &self,
        _args: &Bound<'_, pyo3::types::PyTuple>,
        _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<()> {
        Err(not_for_files())
    }

    #[pyo3(signature = (*_args, **_kwargs))]
    fn encode_files(
        &self,
        _args: &Bound<'_, pyo3::types::PyTuple>,
        _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<()> {
        Err(not_for_files())
    }

    #[pyo3(signature = (*_args, **_kwargs))]
    fn encode_batch_packed(
        &self,
        _args: &Bound<'_, pyo3::types::PyTuple>,
        _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<()> {
        Err(not_for_files())
    }

    /// Whether pre-tokenization and merges run on the encoder's scanner and cache.
    #[getter]
    fn is_fast(&self) -> bool {
        self.inner.is_fast()
    }
}

fn not_for_files() -> PyErr {
    pyo3::exceptions::PyValueError::new_err(
        "encoding files (bpeforge encode, bpeforge.ray.encode) does not run a tokenizer.json pipeline yet: files are \
         cut in parallel where a preset pattern allows, which a pipeline's normalizer and pre-tokenizer do not say; \
         encode the documents with Tokenizer.encode_batch or encode_batch_to_numpy",
    )
}
