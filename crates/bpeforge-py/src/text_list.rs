//! A batch's texts as `worker_utf8` gives them (`text.rs`), read from the
//! caller's list in one pass: each item's type, length and UTF-8 at once,
//! without a `Bound` a text, a list of lengths or a plan a text.
//!
//! Why: a batch of 12,940 lines spent 26 ns a line turning the list into a
//! `Vec<Bound<PyString>>` (the sequence protocol, a downcast and a reference
//! a text), then their lengths, then a plan, then their UTF-8: as long as
//! the rest of the pipeline takes for a one-word line.
//!
//! The texts are borrowed from a private copy of the list (`kept_list`),
//! which holds a reference to each of them: the caller's list may change
//! while the GIL is released, this copy does not.

use pyo3::exceptions::{PySystemError, PyTypeError};
use pyo3::ffi::{self, Py_ssize_t};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::text::{LastTranscoded, Way, WorkerErrors, WorkerUtf8, TRANSCODE_MIN_CHARS};

/// A list of `texts` (any iterable) that only this call holds: a shallow
/// copy of a list (a reference a text, taken in C), else `list(texts)`.
pub fn kept_list<'py>(texts: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    let py = texts.py();
    // SAFETY: `texts` is a live object (the GIL is held); both calls return a new reference or NULL with an error set.
    let copy = unsafe {
        if ffi::PyList_CheckExact(texts.as_ptr()) != 0 {
            ffi::PyList_GetSlice(texts.as_ptr(), 0, Py_ssize_t::MAX)
        } else {
            ffi::PySequence_List(texts.as_ptr())
        }
    };
    // SAFETY: a new reference to a list, or NULL.
    let copy = unsafe { Bound::from_owned_ptr_or_err(py, copy)? };
    Ok(copy.cast_into::<PyList>()?)
}

/// The texts of `kept` for the workers (see `text.rs`'s `worker_utf8`): short
/// ones and long ASCII ones borrowed, long ones beyond ASCII left to the
/// worker that takes them; a worker's Python error goes to `errors`.
pub fn list_worker_utf8<'a>(
    kept: &'a Bound<'_, PyList>,
    last: &LastTranscoded,
    errors: &'a WorkerErrors,
) -> PyResult<Vec<WorkerUtf8<'a>>> {
    let py = kept.py();
    let count = kept.len();
    let mut texts = Vec::with_capacity(count);
    // Texts of `TRANSCODE_MIN_CHARS` or more: (index, the text, its chars), planned together after.
    let mut long = Vec::new();
    for index in 0..count {
        // SAFETY: `index` is below the length of the list, which only this call holds; the item is a borrowed
        // reference that lives as long as `kept`.
        let item = unsafe { ffi::PyList_GetItem(kept.as_ptr(), index as Py_ssize_t) };
        // SAFETY: `item` is a live object.
        if unsafe { ffi::PyUnicode_Check(item) } == 0 {
            return Err(PyTypeError::new_err(format!("text {index} is not a str")));
        }
        // SAFETY: `item` is a str.
        let chars = unsafe { ffi::PyUnicode_GetLength(item) };
        if chars < 0 {
            return Err(PyErr::fetch(py));
        }
        let chars = chars as usize;
        if chars >= TRANSCODE_MIN_CHARS {
            // SAFETY: `item` is a live str; the `Bound` takes a reference of its own.
            let text = unsafe { Bound::from_borrowed_ptr(py, item).cast_into_unchecked::<PyString>() };
            long.push((index, text, chars));
            texts.push(WorkerUtf8::Ready(""));
            continue;
        }
        // SAFETY: `item` is a str held by `kept`.
        texts.push(WorkerUtf8::Ready(unsafe { borrowed_utf8(item, kept)? }));
    }
    let (long_texts, lengths): (Vec<_>, Vec<_>) = long.iter().map(|(_, text, chars)| (text.clone(), *chars)).unzip();
    // Planned even when there are none: the plan remembers this call's long texts for the next.
    let ways = last.plan(&long_texts, &lengths)?;
    for ((index, text, chars), way) in long.into_iter().zip(ways) {
        texts[index] = match way {
            // SAFETY: the text is a str held by `kept`.
            Way::Borrow => WorkerUtf8::Ready(unsafe { borrowed_utf8(text.as_ptr(), kept)? }),
            way => WorkerUtf8::Deferred { text: text.unbind(), chars, way, index, errors },
        };
    }
    Ok(texts)
}

/// The UTF-8 of the str `item`, which `kept` holds (borrowed for as long as
/// `kept` is); a lone surrogate's UnicodeEncodeError as PyO3 raises it.
///
/// # Safety
/// `item` is a str that `kept` holds a reference to.
unsafe fn borrowed_utf8<'a>(item: *mut ffi::PyObject, kept: &'a Bound<'_, PyList>) -> PyResult<&'a str> {
    let mut size: Py_ssize_t = 0;
    // SAFETY: `item` is a live str (the caller vouches); the buffer belongs to it and lives as long as it does,
    // which `kept` keeps alive for 'a.
    let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(item, &mut size) };
    if data.is_null() {
        return Err(PyErr::take(kept.py()).unwrap_or_else(|| PySystemError::new_err("str has no UTF-8 form")));
    }
    // SAFETY: CPython guarantees `size` bytes of valid UTF-8 at `data`.
    Ok(unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(data.cast::<u8>(), size as usize)) })
}
