//! `bpeforge._core.Encoder`: the Rust encoder behind `bpeforge.Tokenizer`.
//!
//! Immutable once built (`frozen`), so one instance is shared by any number of
//! Python threads; every method that does real work releases the GIL.

use std::sync::Arc;

use bpeforge::{Encoder, Vocabulary};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;

use crate::errors::to_py_err;

#[pyclass(frozen, module = "bpeforge._core", name = "Encoder")]
pub struct PyEncoder {
    inner: Arc<Encoder>,
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
        Ok(Self { inner: Arc::new(built.map_err(to_py_err)?) })
    }

    fn encode(&self, py: Python<'_>, text: &str) -> Vec<u32> {
        py.detach(|| self.inner.encode(text))
    }

    /// Encode the longest prefix of `text` that more text cannot change;
    /// returns its ids and its length in characters (for slicing the str).
    fn encode_stable_prefix(&self, py: Python<'_>, text: &str) -> (Vec<u32>, usize) {
        py.detach(|| {
            let cut = self.inner.stable_prefix_len(text);
            let prefix = &text[..cut];
            (self.inner.encode(prefix), prefix.chars().count())
        })
    }

    #[pyo3(signature = (texts, num_threads=None))]
    fn encode_batch(&self, py: Python<'_>, texts: Vec<String>, num_threads: Option<usize>) -> PyResult<Vec<Vec<u32>>> {
        let encoder = &self.inner;
        let run = || texts.par_iter().map(|text| encoder.encode(text)).collect::<Vec<_>>();
        match num_threads {
            None => Ok(py.detach(run)),
            Some(0) => Err(PyValueError::new_err("num_threads must be at least 1 (or None for all cores)")),
            Some(n) => {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .map_err(|e| PyValueError::new_err(format!("cannot start {n} threads: {e}")))?;
                Ok(py.detach(|| pool.install(run)))
            }
        }
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
