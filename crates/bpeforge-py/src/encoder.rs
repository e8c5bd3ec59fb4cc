//! `bpeforge._core.Encoder`: the Rust encoder behind `bpeforge.Tokenizer`.
//!
//! Immutable once built (`frozen`), so one instance is shared by any number of
//! Python threads; every method that does real work releases the GIL.

use std::sync::Arc;

use bpeforge::{Encoder, Vocabulary};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList};
use rayon::prelude::*;

use crate::errors::to_py_err;

#[pyclass(frozen, module = "bpeforge._core", name = "Encoder")]
pub struct PyEncoder {
    inner: Arc<Encoder>,
    /// One Python int per id, made once: a list of ids is then built by
    /// reference-count increments instead of one int allocation per id,
    /// which cost as much as the encoding itself on large texts.
    ints: Vec<Py<PyInt>>,
}

impl PyEncoder {
    fn id_list<'py>(&self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, ids.iter().map(|&id| self.ints[id as usize].bind(py)))
    }
}

#[pymethods]
impl PyEncoder {
    #[new]
    fn new(
        py: Python<'_>,
        vocab: Vec<(u32, Vec<u8>)>,
        merges: Vec<(Vec<u8>, Vec<u8>)>,
        special_tokens: Vec<String>,
    ) -> PyResult<Self> {
        let built = py.detach(|| Vocabulary::new(vocab, &merges).and_then(|v| Encoder::new(v, &special_tokens)));
        let inner = built.map_err(to_py_err)?;
        let ints = (0..inner.vocab().len() as u32)
            .map(|id| id.into_pyobject(py).map(Bound::unbind))
            .collect::<Result<_, _>>()?;
        Ok(Self { inner: Arc::new(inner), ints })
    }

    fn encode<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyList>> {
        let ids = py.detach(|| self.inner.encode(text));
        self.id_list(py, &ids)
    }

    /// Encode the longest prefix of `text` that more text cannot change;
    /// returns its ids and its length in characters (for slicing the str).
    fn encode_stable_prefix<'py>(&self, py: Python<'py>, text: &str) -> PyResult<(Bound<'py, PyList>, usize)> {
        let (ids, chars) = py.detach(|| {
            let cut = self.inner.stable_prefix_len(text);
            let prefix = &text[..cut];
            (self.inner.encode(prefix), prefix.chars().count())
        });
        Ok((self.id_list(py, &ids)?, chars))
    }

    #[pyo3(signature = (texts, num_threads=None))]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
        num_threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let encoder = &self.inner;
        let run = || texts.par_iter().map(|text| encoder.encode(text)).collect::<Vec<_>>();
        let batches = match num_threads {
            None => py.detach(run),
            Some(0) => return Err(PyValueError::new_err("num_threads must be at least 1 (or None for all cores)")),
            Some(n) => {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .map_err(|e| PyValueError::new_err(format!("cannot start {n} threads: {e}")))?;
                py.detach(|| pool.install(run))
            }
        };
        let lists = batches.iter().map(|ids| self.id_list(py, ids)).collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, lists)
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
}
