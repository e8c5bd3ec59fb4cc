//! A Python `str` argument as `&str`, without copying it.
//!
//! CPython keeps a `str`'s UTF-8 form (ASCII strings are their own UTF-8)
//! and hands it out with `PyUnicode_AsUTF8AndSize`, in the stable ABI since
//! 3.10, which PyO3's `to_str` calls: the text is borrowed, not copied.
//!
//! A long `str` that is not ASCII has no UTF-8 form until CPython makes one,
//! a character at a time; there the binding transcodes it itself
//! (`utf8_for_call`, `Transcoder`), reading its code points through the
//! stable ABI. In a NumPy batch the worker that takes such a text does that,
//! with the GIL for that alone (`WorkerUtf8`).

use std::collections::HashSet;
use std::ops::Range;
use std::sync::{Mutex, PoisonError};

use bpeforge::BatchText;
use bpeforge::{push_utf8, vec_with_capacity};
use pyo3::exceptions::PySystemError;
use pyo3::ffi::{self, Py_ssize_t};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// Shorter `str`s are always asked of CPython: its conversion is then a few
/// microseconds, and it keeps the result for the next call.
pub(crate) const TRANSCODE_MIN_CHARS: usize = 1 << 12;
/// Code points read from the `str` at a time: 64 KiB of them stay in L2.
const CHUNK_CHARS: usize = 1 << 14;

/// The `str`s the last encode call transcoded or saw again
/// (`utf8_for_call`), by address and length. Only a hint: a new `str` of
/// the same length at the same address is asked of CPython, which is never
/// wrong, only slower.
#[derive(Default)]
pub struct LastTranscoded(Mutex<HashSet<(usize, usize)>>);

/// How a text of an encode call gets its UTF-8 (`LastTranscoded::plan`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// Asked of CPython: ASCII (its own UTF-8), or short.
    Borrow,
    /// Long, not ASCII, not seen by the previous call: transcoded here.
    Transcode,
    /// Long, not ASCII, seen by the previous call: asked of CPython, which
    /// converts it once and keeps the result inside the `str`.
    AskCpython,
}

impl LastTranscoded {
    /// For each of `texts` (of `lengths` characters), how to get its UTF-8
    /// (see `Way`). Remembers this call's long texts that are not ASCII.
    pub fn plan(&self, texts: &[Bound<'_, PyString>], lengths: &[usize]) -> PyResult<Vec<Way>> {
        // The Python calls first: nothing that could let another thread run
        // happens while the lock is held.
        let mut wide = Vec::with_capacity(texts.len());
        for (text, &length) in texts.iter().zip(lengths) {
            let long_and_wide = length >= TRANSCODE_MIN_CHARS && !is_ascii(text)?;
            wide.push(long_and_wide.then_some((text.as_ptr() as usize, length)));
        }
        let mut last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let ways = wide
            .iter()
            .map(|identity| match identity {
                None => Way::Borrow,
                Some(identity) if last.contains(identity) => Way::AskCpython,
                Some(_) => Way::Transcode,
            })
            .collect();
        *last = wide.into_iter().flatten().collect();
        Ok(ways)
    }

    /// For each of `texts`, whether to transcode it (`Way::Transcode`).
    pub fn choose(&self, texts: &[Bound<'_, PyString>], lengths: &[usize]) -> PyResult<Vec<bool>> {
        Ok(self.plan(texts, lengths)?.into_iter().map(|way| way == Way::Transcode).collect())
    }
}

/// A text of an encode call as the core's batch takes it (`BatchText`): its
/// UTF-8 borrowed now, or made by the worker that takes it, with the GIL
/// for that alone. The second for a long `str` that is not ASCII, whose
/// conversion (`Way::Transcode` or `Way::AskCpython`) made before the
/// workers started ran on one thread: 3 ms of each 9 ms 2-thread batch of
/// 10 MB of new Gutenberg texts, 7 ms of 24.5 of multilingual ones. Made by
/// the worker that takes it, one worker converts while the other encodes.
pub enum WorkerUtf8<'a> {
    Ready(&'a str),
    Deferred { text: Py<PyString>, chars: usize, way: Way, index: usize, errors: &'a WorkerErrors },
}

/// The Python error of the lowest-indexed text a worker could not make
/// UTF-8 of (a lone surrogate's UnicodeEncodeError), to raise after the call.
#[derive(Default)]
pub struct WorkerErrors(Mutex<Option<(usize, PyErr)>>);

impl WorkerErrors {
    fn keep(&self, index: usize, error: PyErr) {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.as_ref().is_none_or(|(first, _)| index < *first) {
            *kept = Some((index, error));
        }
    }

    pub fn take(&self) -> Option<PyErr> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take().map(|(_, error)| error)
    }
}

/// The texts of one encode call for the core's batch: borrowed, or left for
/// the workers (see `WorkerUtf8`); a worker's Python error goes to `errors`.
pub fn worker_utf8<'a>(
    texts: &'a [Bound<'_, PyString>],
    last: &LastTranscoded,
    errors: &'a WorkerErrors,
) -> PyResult<Vec<WorkerUtf8<'a>>> {
    let lengths = texts.iter().map(|text| text.len()).collect::<PyResult<Vec<usize>>>()?;
    let ways = last.plan(texts, &lengths)?;
    let items = texts.iter().zip(lengths).zip(ways).enumerate();
    items
        .map(|(index, ((text, chars), way))| match way {
            Way::Borrow => text.to_str().map(WorkerUtf8::Ready),
            _ => Ok(WorkerUtf8::Deferred { text: text.clone().unbind(), chars, way, index, errors }),
        })
        .collect()
}

impl WorkerUtf8<'_> {
    /// The bytes to size the call's ids buffer by (`ids_buffer` reserves one
    /// id per two): a deferred text's characters twice, one id a character,
    /// more than any of the corpora needs (multilingual text: 1.02).
    pub fn id_room_bytes(&self) -> usize {
        match self {
            WorkerUtf8::Ready(text) => text.len(),
            WorkerUtf8::Deferred { chars, .. } => chars.saturating_mul(2),
        }
    }
}

impl BatchText for WorkerUtf8<'_> {
    fn weight(&self) -> usize {
        match self {
            WorkerUtf8::Ready(text) => text.len(),
            WorkerUtf8::Deferred { chars, .. } => *chars,
        }
    }

    fn utf8<'b>(&'b self, buffer: &'b mut String) -> Result<&'b str, bpeforge::Error> {
        let (text, chars, way, index, errors) = match self {
            WorkerUtf8::Ready(text) => return Ok(text),
            WorkerUtf8::Deferred { text, chars, way, index, errors } => (text, chars, way, index, errors),
        };
        Python::attach(move |py| {
            let text = text.bind(py);
            if *way == Way::Transcode {
                let mut transcoder = Transcoder::for_chars(*chars);
                transcoder.out = std::mem::take(buffer).into_bytes();
                transcoder.out.clear();
                match transcoder.append(text, 0..*chars) {
                    Ok(Some(_)) => {
                        *buffer = transcoder.into_string();
                        let buffer: &'b String = buffer;
                        return Ok(buffer.as_str());
                    }
                    // A lone surrogate: CPython's conversion below raises its usual error.
                    Ok(None) => {}
                    Err(error) => errors.keep(*index, error),
                }
            }
            let utf8 = text.to_str().map(|utf8| {
                // SAFETY: CPython's UTF-8 of a `str` lives as long as the
                // `str`, which `self` holds for 'b (a `Bound` borrowed here
                // cannot outlive the GIL, the `str` it points to can).
                unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(utf8.as_ptr(), utf8.len())) }
            });
            utf8.map_err(|error| {
                errors.keep(*index, error);
                bpeforge::Error::InvalidArgument(format!("text {index} has no UTF-8 form"))
            })
        })
    }
}

/// The UTF-8 of each text of one encode call (`utf8_for_call`): borrowed
/// from CPython, or transcoded into one buffer for the whole call.
pub struct Utf8Texts<'a> {
    transcoded: String,
    texts: Vec<Utf8Text<'a>>,
}

enum Utf8Text<'a> {
    Borrowed(&'a str),
    Transcoded(Range<usize>),
}

impl Utf8Texts<'_> {
    pub fn to_vec(&self) -> Vec<&str> {
        self.texts
            .iter()
            .map(|text| match text {
                Utf8Text::Borrowed(text) => *text,
                Utf8Text::Transcoded(range) => &self.transcoded[range.clone()],
            })
            .collect()
    }
}

/// The UTF-8 of each of `texts` for one encode call.
///
/// A `str` of 4 Ki characters or more that is not ASCII, not seen by the
/// previous call, is transcoded here (`Transcoder`), and nothing is kept
/// after the call: CPython's own conversion is one character at a time, 12
/// ms of a 61 ms first call on 10 MB of Gutenberg (curly quotes make it a
/// 2-byte `str`), and it faults in a fresh buffer for each text. A `str`
/// the previous call saw is asked of CPython, which converts it once and
/// keeps the result inside the `str`: a text encoded over and over costs
/// nothing from its third call on. ASCII `str`s are their own UTF-8 and
/// short ones are cheap: always borrowed.
pub fn utf8_for_call<'a>(texts: &'a [Bound<'_, PyString>], last: &LastTranscoded) -> PyResult<Utf8Texts<'a>> {
    let lengths = texts.iter().map(|text| text.len()).collect::<PyResult<Vec<usize>>>()?;
    let choices = last.choose(texts, &lengths)?;
    let mut transcoder = Transcoder::for_chars(lengths.iter().sum());
    let mut all = Vec::with_capacity(texts.len());
    for ((text, &length), transcode) in texts.iter().zip(&lengths).zip(choices) {
        let transcoded = if transcode { transcoder.append(text, 0..length)? } else { None };
        // Borrowed, or a lone surrogate (CPython raises its UnicodeEncodeError, as it always has).
        all.push(
            transcoded
                .map_or_else(|| text.to_str().map(Utf8Text::Borrowed), |range| Ok(Utf8Text::Transcoded(range)))?,
        );
    }
    Ok(Utf8Texts { transcoded: transcoder.into_string(), texts: all })
}

fn is_ascii(text: &Bound<'_, PyString>) -> PyResult<bool> {
    text.call_method0(intern!(text.py(), "isascii"))?.is_truthy()
}

/// Buffers for transcoding: one for the UTF-8 (of all the texts of a batch:
/// a buffer a text faulted in 34 fresh pages for each 64 Ki characters), and
/// one for the code points of a chunk.
#[derive(Default)]
pub(crate) struct Transcoder {
    out: Vec<u8>,
    code_points: Vec<u32>,
    /// The characters `out` is sized for when first used.
    expected_chars: usize,
}

impl Transcoder {
    pub(crate) fn for_chars(expected_chars: usize) -> Self {
        Self { expected_chars, ..Self::default() }
    }

    /// Append the UTF-8 of the characters `chars` of `text`, read
    /// `CHUNK_CHARS` code points at a time through the stable ABI
    /// (`PyUnicode_Substring`, then `PyUnicode_AsUCS4`: both copy with
    /// vectorised loops) and encoded by `utf32::push_utf8`; where it is in
    /// `out`. `None` when they hold a lone surrogate (`out` is then as it was).
    pub(crate) fn append(&mut self, text: &Bound<'_, PyString>, chars: Range<usize>) -> PyResult<Option<Range<usize>>> {
        if self.out.capacity() == 0 {
            // Mostly ASCII text fits at once; anything wider grows the buffer.
            let expected = self.expected_chars;
            self.out = vec_with_capacity(expected + expected / 8 + 4 * CHUNK_CHARS);
        }
        self.code_points.resize(CHUNK_CHARS.min(chars.len()).max(self.code_points.len()), 0);
        let begin = self.out.len();
        for start in chars.clone().step_by(CHUNK_CHARS) {
            let end = (start + CHUNK_CHARS).min(chars.end);
            // SAFETY: `text` is a live `str` and the GIL is held; start < end <= its length.
            let chunk = unsafe { ffi::PyUnicode_Substring(text.as_ptr(), start as Py_ssize_t, end as Py_ssize_t) };
            // SAFETY: a new reference, or null with an exception set.
            let chunk = unsafe { Bound::from_owned_ptr_or_err(text.py(), chunk)? };
            let room = self.code_points.len() as Py_ssize_t;
            // SAFETY: `code_points` has room for `end - start` code points, all `chunk` has.
            let copied = unsafe { ffi::PyUnicode_AsUCS4(chunk.as_ptr(), self.code_points.as_mut_ptr(), room, 0) };
            if copied.is_null() {
                let error = PyErr::take(text.py());
                return Err(error.unwrap_or_else(|| PySystemError::new_err("PyUnicode_AsUCS4 failed")));
            }
            if push_utf8(&self.code_points[..end - start], &mut self.out).is_err() {
                self.out.truncate(begin);
                return Ok(None);
            }
        }
        Ok(Some(begin..self.out.len()))
    }

    /// All the UTF-8 appended and not dropped.
    pub(crate) fn as_str(&self) -> &str {
        // SAFETY: `append` writes only the UTF-8 of Unicode scalar values,
        // and `drop_front` cuts only between characters.
        unsafe { std::str::from_utf8_unchecked(&self.out) }
    }

    /// Drop the first `bytes` of `as_str`, which must end on a character.
    pub(crate) fn drop_front(&mut self, bytes: usize) {
        assert!(self.as_str().is_char_boundary(bytes), "dropped inside a character");
        self.out.drain(..bytes);
    }

    pub(crate) fn clear(&mut self) {
        self.out.clear();
    }

    fn into_string(self) -> String {
        // SAFETY: as `as_str`.
        unsafe { String::from_utf8_unchecked(self.out) }
    }
}
