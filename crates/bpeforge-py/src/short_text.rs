//! One short text a call (a sentence, a chat turn): the path where what is
//! around the encoding, not the encoding, is most of the time.
//!
//! A text under `HOLD_GIL_BELOW_BYTES` is encoded with the GIL held, its
//! UTF-8 borrowed from CPython, and its ids written into a buffer the thread
//! keeps from call to call: a new buffer a call (2 KiB, sized for the hit
//! loop's first batch of pieces) went past glibc's per-thread cache of small
//! chunks, 40 ns of a 430 ns call on one sentence.

use std::cell::Cell;

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::detached::HOLD_GIL_BELOW_BYTES;

/// The UTF-8 of `text` when it is short enough for this path.
pub fn short_utf8<'a>(text: &'a Bound<'_, PyString>) -> PyResult<Option<&'a str>> {
    // Its length in characters first: a long text that is not ASCII has no UTF-8 form until one is made.
    if text.len()? >= HOLD_GIL_BELOW_BYTES {
        return Ok(None);
    }
    let utf8 = text.to_str()?;
    Ok((utf8.len() < HOLD_GIL_BELOW_BYTES).then_some(utf8))
}

/// `work` on this thread's ids buffer, emptied first.
pub fn with_thread_ids<R>(work: impl FnOnce(&mut Vec<u32>) -> R) -> R {
    thread_local! {
        static IDS: Cell<Vec<u32>> = const { Cell::new(Vec::new()) };
    }
    // Taken, not borrowed: a signal handler that `work` runs (while it makes a list) may encode again.
    let mut ids = IDS.take();
    ids.clear();
    let result = work(&mut ids);
    IDS.set(ids);
    result
}
