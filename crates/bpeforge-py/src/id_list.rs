//! Lists of ids as Python ints, from a table of the ints made once per
//! tokenizer: ids past 256 are no cached small ints, and making one per id
//! (and freeing it with the list) was a tenth of encoding one sentence.

use pyo3::prelude::*;
use pyo3::types::{PyInt, PyList};

/// How many ids of a list are made between two checks for Ctrl-C (tens of
/// milliseconds of work).
const LIST_CHECK_IDS: usize = 4 << 20;

/// The Python int of every id below a tokenizer's number of ids.
pub struct IdInts(Vec<Py<PyInt>>);

impl IdInts {
    pub fn new(py: Python<'_>, ids: usize) -> PyResult<Self> {
        let ints = (0..ids as u32).map(|id| id.into_pyobject(py).map(Bound::unbind)).collect::<Result<_, _>>()?;
        Ok(Self(ints))
    }

    /// The ids as a list of Python ints. Made with the GIL held, so it is
    /// filled a part at a time with Ctrl-C checked between parts: the list of
    /// 108 MB of text took 0.7 s, and a Ctrl-C during it waited for all of it.
    /// An id past the table (none a tokenizer makes) gets an int of its own.
    pub fn list<'py>(&self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        // SAFETY: PyList_New returns a new list of `ids.len()` empty (NULL)
        // slots, or NULL with an exception set (`from_owned_ptr_or_err`).
        let list = unsafe { Bound::from_owned_ptr_or_err(py, pyo3::ffi::PyList_New(ids.len() as isize))? };
        for (part, chunk) in ids.chunks(LIST_CHECK_IDS).enumerate() {
            for (offset, &id) in chunk.iter().enumerate() {
                let item = match self.0.get(id as usize) {
                    Some(int) => int.clone_ref(py).into_ptr(),
                    None => id.into_pyobject(py)?.into_ptr(),
                };
                // SAFETY: the index is in range and its slot still empty; the
                // call steals the new reference `item`. A list left part-filled
                // by a Ctrl-C below is freed whole (empty slots are skipped).
                unsafe { pyo3::ffi::PyList_SetItem(list.as_ptr(), (part * LIST_CHECK_IDS + offset) as isize, item) };
            }
            py.check_signals()?;
        }
        // SAFETY: made by PyList_New above.
        Ok(unsafe { list.cast_into_unchecked::<PyList>() })
    }
}
