//! A Python `str` argument as `&str`, without copying it.
//!
//! The extension is built against the stable ABI of Python 3.9 (one wheel for
//! 3.9+). There PyO3 gets a `str`'s UTF-8 by encoding it to a new `bytes`
//! object and copying that into a `String`: two copies of the text per call,
//! which made `encode_to_numpy` on 10 MB of new ASCII text 40% slower than a
//! version-specific build (47-52 against 33-34 ms). CPython keeps a `str`'s
//! UTF-8 form (ASCII strings are their own UTF-8) and hands it out with
//! `PyUnicode_AsUTF8AndSize`: in the stable ABI from 3.10, and exported by
//! every CPython since 3.3, 3.9 included, so it links and runs on all the
//! versions the wheel serves.

use std::ffi::c_char;

use pyo3::exceptions::PySystemError;
use pyo3::ffi::{PyObject, Py_ssize_t};
use pyo3::prelude::*;
use pyo3::types::PyString;

extern "C" {
    fn PyUnicode_AsUTF8AndSize(unicode: *mut PyObject, size: *mut Py_ssize_t) -> *const c_char;
}

/// The UTF-8 bytes of `text`, borrowed for as long as `text` lives. A `str`
/// with lone surrogates has no UTF-8 form: Python's UnicodeEncodeError, as
/// PyO3's own conversion raises.
pub fn utf8<'a>(text: &'a Bound<'_, PyString>) -> PyResult<&'a str> {
    let mut size: Py_ssize_t = 0;
    // SAFETY: `text` is a live `str` (the GIL is held: we have a `Bound`); the
    // returned buffer belongs to it and lives as long as it does, which the
    // lifetime 'a ties to the borrow of `text`.
    let data = unsafe { PyUnicode_AsUTF8AndSize(text.as_ptr(), &mut size) };
    if data.is_null() {
        return Err(PyErr::take(text.py()).unwrap_or_else(|| PySystemError::new_err("str has no UTF-8 form")));
    }
    // SAFETY: CPython guarantees `size` bytes of valid UTF-8 at `data`.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size as usize) };
    Ok(unsafe { std::str::from_utf8_unchecked(bytes) })
}
