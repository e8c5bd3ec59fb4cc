//! `bpeforge._core.InputReader`: the core's decompressing file reader for
//! Python, so that record formats (JSON Lines) read `.gz`/`.xz`/`.zst` the same
//! way text inputs do, zstd included (not in Python 3.11's standard library).

use std::io::Read;
use std::path::PathBuf;
use std::sync::Mutex;

use bpeforge::open_input;
use bpeforge::Error;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::to_py_err;

#[pyclass(module = "bpeforge._core", name = "InputReader")]
pub struct PyInputReader {
    path: PathBuf,
    reader: Mutex<Box<dyn Read + Send>>,
}

#[pymethods]
impl PyInputReader {
    #[new]
    fn new(path: PathBuf) -> PyResult<Self> {
        let reader = open_input(&path).map_err(to_py_err)?;
        Ok(Self { path, reader: Mutex::new(reader) })
    }

    /// Up to `size` bytes of decompressed text; empty at the end. A truncated
    /// or corrupt stream raises OSError naming the file.
    fn read<'py>(&self, py: Python<'py>, size: usize) -> PyResult<Bound<'py, PyBytes>> {
        let mut buf = vec![0u8; size];
        let n = py
            .detach(|| {
                let mut reader = self.reader.lock().unwrap_or_else(|e| e.into_inner());
                read_fully(&mut **reader, &mut buf)
            })
            .map_err(|e| to_py_err(Error::Io { path: self.path.clone(), source: e }))?;
        Ok(PyBytes::new(py, &buf[..n]))
    }
}

/// Fill `buf` unless the input ends first (decoders return short reads).
fn read_fully(reader: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}
