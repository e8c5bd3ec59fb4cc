//! `bpeforge._core.JsonlBlocks`: the records of a JSON Lines file encoded by
//! the core a block at a time (`bpeforge::JsonlRecords`), for
//! `bpeforge.jsonl_records`.
//!
//! Each item is `(ids, offsets, text_bytes, for_python)`: the block's ids (an
//! `IdArray`), the int64 offsets of each document's ids in them (a raw
//! little-endian bytearray, as `encode_batch_to_arrays` gives), the bytes of
//! the documents' texts, and the lines Python is to read, as
//! `(before, line_number, line)`: `line` comes before document `before` of the block.

use std::path::Path;
use std::sync::{Arc, Mutex};

use bpeforge::{Encoder, JsonlRecords, RECORDS_BLOCK_BYTES};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

use crate::errors::to_py_err;
use crate::id_array::IdArray;
use crate::pools::{detached_on, pool_for};

type Block<'py> = (IdArray, Bound<'py, PyByteArray>, u64, Vec<(usize, u64, Bound<'py, PyBytes>)>);

#[pyclass(module = "bpeforge._core", name = "JsonlBlocks")]
pub struct PyJsonlBlocks {
    encoder: Arc<Encoder>,
    /// Locked for a call (a class shared between Python threads must be `Sync`).
    records: Mutex<JsonlRecords>,
    pool: Arc<rayon::ThreadPool>,
}

impl PyJsonlBlocks {
    pub(crate) fn open(
        encoder: Arc<Encoder>,
        path: &Path,
        field: &str,
        block_bytes: Option<usize>,
        num_threads: Option<usize>,
    ) -> PyResult<Self> {
        let pool = pool_for(num_threads)?;
        let block_bytes = block_bytes.unwrap_or(RECORDS_BLOCK_BYTES);
        let records = JsonlRecords::open(path, field, block_bytes).map_err(to_py_err)?;
        Ok(Self { encoder, records: Mutex::new(records), pool })
    }
}

#[pymethods]
impl PyJsonlBlocks {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Block<'py>>> {
        let next = || self.records.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).next_block(&self.encoder);
        let encoded = detached_on(py, &self.pool, next).map_err(to_py_err)?;
        let Some(block) = encoded else { return Ok(None) };
        let offsets = offsets_bytearray(py, &block.ends)?;
        let for_python =
            block.for_python.iter().map(|line| (line.before, line.number, PyBytes::new(py, &line.line))).collect();
        Ok(Some((IdArray::new(block.ids), offsets, block.text_bytes, for_python)))
    }
}

/// `[0, *ends]` as int64, a raw little-endian bytearray (for `numpy.frombuffer`).
pub(crate) fn offsets_bytearray<'py>(py: Python<'py>, ends: &[usize]) -> PyResult<Bound<'py, PyByteArray>> {
    let offsets = std::iter::once(0).chain(ends.iter().map(|&end| end as i64));
    PyByteArray::new_with(py, (ends.len() + 1) * 8, |buffer| {
        for (chunk, offset) in buffer.chunks_exact_mut(8).zip(offsets) {
            chunk.copy_from_slice(&offset.to_le_bytes());
        }
        Ok(())
    })
}
