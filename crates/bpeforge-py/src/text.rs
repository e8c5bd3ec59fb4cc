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

use std::borrow::Cow;
use std::ffi::c_char;
use std::sync::{Mutex, PoisonError};

use bpeforge::{huge_pages, utf32};
use pyo3::exceptions::PySystemError;
use pyo3::ffi::{self, PyObject, Py_ssize_t};
use pyo3::intern;
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

/// Shorter `str`s are always asked of CPython: its conversion is then a few
/// microseconds, and it keeps the result for the next call.
const TRANSCODE_MIN_CHARS: usize = 1 << 12;
/// Code points read from the `str` at a time: 64 KiB of them stay in L2.
const CHUNK_CHARS: usize = 1 << 14;

/// The `str` an encode call last transcoded (`utf8_for_call`): its address and
/// length. Only a hint: a new `str` of the same length at the same address
/// is asked of CPython, which is never wrong, only slower.
#[derive(Default)]
pub struct LastTranscoded(Mutex<(usize, usize)>);

impl LastTranscoded {
    /// Whether `text` (of `length` characters) is the `str` last recorded;
    /// records it either way.
    fn seen_again(&self, text: &Bound<'_, PyString>, length: usize) -> bool {
        let this = (text.as_ptr() as usize, length);
        let mut last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *last, this) == this
    }
}

/// The UTF-8 of `text` for one encode call.
///
/// A `str` of 4 Ki characters or more that is not ASCII, seen for the first
/// time, is transcoded here (`transcode`), and nothing is kept: CPython's own conversion is
/// one character at a time, 12 ms of a 61 ms first call on 10 MB of
/// Gutenberg (curly quotes make it a 2-byte `str`), and it faults in a fresh
/// buffer. The same `str` seen again is asked of CPython, which converts it
/// once and keeps the result inside the `str`, so a text encoded over and
/// over costs nothing after its second call. ASCII `str`s are their own
/// UTF-8 and short ones are cheap: always borrowed.
pub fn utf8_for_call<'a>(text: &'a Bound<'_, PyString>, last: &LastTranscoded) -> PyResult<Cow<'a, str>> {
    let length = text.len()?;
    if length < TRANSCODE_MIN_CHARS || is_ascii(text)? || last.seen_again(text, length) {
        return utf8(text).map(Cow::Borrowed);
    }
    match transcode(text, length)? {
        Some(transcoded) => Ok(Cow::Owned(transcoded)),
        // A lone surrogate: CPython raises its UnicodeEncodeError, as it always has.
        None => utf8(text).map(Cow::Borrowed),
    }
}

fn is_ascii(text: &Bound<'_, PyString>) -> PyResult<bool> {
    text.call_method0(intern!(text.py(), "isascii"))?.is_truthy()
}

/// `text`'s UTF-8, read `CHUNK_CHARS` code points at a time through the
/// stable ABI (`PyUnicode_Substring`, then `PyUnicode_AsUCS4`: both copy
/// with vectorised loops) and encoded by `utf32::push_utf8`. `None` when
/// `text` holds a lone surrogate.
fn transcode(text: &Bound<'_, PyString>, length: usize) -> PyResult<Option<String>> {
    let mut code_points = vec![0u32; CHUNK_CHARS.min(length)];
    // Mostly ASCII text fits at once; anything wider grows the buffer.
    let mut out = huge_pages::vec_with_capacity(length + length / 8 + 4 * CHUNK_CHARS);
    for start in (0..length).step_by(CHUNK_CHARS) {
        let end = (start + CHUNK_CHARS).min(length);
        // SAFETY: `text` is a live `str` and the GIL is held; 0 <= start < end <= its length.
        let chunk = unsafe { ffi::PyUnicode_Substring(text.as_ptr(), start as Py_ssize_t, end as Py_ssize_t) };
        // SAFETY: a new reference, or null with an exception set.
        let chunk = unsafe { Bound::from_owned_ptr_or_err(text.py(), chunk)? };
        // SAFETY: `code_points` has room for `end - start` code points, all `chunk` has.
        let copied = unsafe {
            ffi::PyUnicode_AsUCS4(chunk.as_ptr(), code_points.as_mut_ptr(), code_points.len() as Py_ssize_t, 0)
        };
        if copied.is_null() {
            return Err(PyErr::take(text.py()).unwrap_or_else(|| PySystemError::new_err("PyUnicode_AsUCS4 failed")));
        }
        if utf32::push_utf8(&code_points[..end - start], &mut out).is_err() {
            return Ok(None);
        }
    }
    // SAFETY: `push_utf8` wrote only the UTF-8 of Unicode scalar values.
    Ok(Some(unsafe { String::from_utf8_unchecked(out) }))
}
