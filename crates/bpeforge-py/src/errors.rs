//! Core errors and panics as the Python exceptions users expect.

use std::io::ErrorKind;

use bpeforge::Error;
use pyo3::exceptions::{
    PyFileNotFoundError, PyIsADirectoryError, PyKeyboardInterrupt, PyOSError, PyPermissionError, PyRuntimeError,
    PyValueError,
};
use pyo3::PyErr;

/// `FileNotFoundError` etc. carry `(errno, strerror, filename)` as Python's own
/// do, so `err.filename` names the file.
pub fn to_py_err(error: Error) -> PyErr {
    match error {
        Error::Io { path, source } => {
            let filename = path.display().to_string();
            let errno = source.raw_os_error().unwrap_or(match source.kind() {
                ErrorKind::IsADirectory => 21, // EISDIR, for our own metadata check
                _ => 5,                        // EIO
            });
            let args = (errno, source.to_string(), filename);
            match source.kind() {
                ErrorKind::NotFound => PyFileNotFoundError::new_err(args),
                ErrorKind::PermissionDenied => PyPermissionError::new_err(args),
                ErrorKind::IsADirectory => PyIsADirectoryError::new_err(args),
                _ => PyOSError::new_err(args),
            }
        }
        Error::InvalidUtf8 { .. } | Error::InvalidArgument(_) | Error::UnknownId(_) => {
            PyValueError::new_err(error.to_string())
        }
        Error::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
    }
}

/// A panic is a bug in bpeforge; it becomes a RuntimeError, never a crash.
pub fn panic_to_py_err(payload: Box<dyn std::any::Any + Send>) -> PyErr {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    PyRuntimeError::new_err(format!("internal error in bpeforge (please report it): {message}"))
}
