//! Running core work with the GIL released, and turning what stopped it into
//! the right Python exception.

use std::panic::{catch_unwind, AssertUnwindSafe};

use bpeforge::Error;
use pyo3::prelude::*;

use crate::errors::{panic_to_py_err, to_py_err};
use crate::observer::PyObserver;

/// Run `work` without the GIL. A Python error that a callback stored in
/// `observer` (KeyboardInterrupt, a failing write) wins over the core error it
/// caused; a panic becomes RuntimeError.
pub fn run_detached<T: Send>(
    py: Python<'_>,
    observer: &PyObserver,
    work: impl FnOnce() -> Result<T, Error> + Send,
) -> PyResult<T> {
    match py.detach(|| catch_unwind(AssertUnwindSafe(work))) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(observer.take_error().unwrap_or_else(|| to_py_err(error))),
        Err(panic) => Err(panic_to_py_err(panic)),
    }
}

/// Texts shorter than this are encoded with the GIL held: a few
/// microseconds at most, where releasing and taking back the GIL (a mutex and
/// a condition variable each way) cost a sixth of encoding one sentence.
/// Longer ones release it, so that other Python threads run meanwhile.
pub const HOLD_GIL_BELOW_BYTES: usize = 1024;

/// `work` on a text of `bytes` bytes: with the GIL released unless the text
/// is short (`HOLD_GIL_BELOW_BYTES`).
pub fn detached_unless_short<T: Send>(py: Python<'_>, bytes: usize, work: impl FnOnce() -> T + Send) -> T {
    if bytes < HOLD_GIL_BELOW_BYTES {
        work()
    } else {
        py.detach(work)
    }
}
