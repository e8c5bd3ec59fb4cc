//! Ids handed to NumPy without a copy.
//!
//! Until the eighth session `encode_to_numpy` copied the encoder's `Vec<u32>`
//! into a new `bytearray` for `numpy.frombuffer`: 10.6 MB written again and
//! its fresh pages faulted in, 3-4 ms of a 22 ms warm call on 10 MB of text.
//! The stable ABI (abi3, Python 3.9) has no buffer protocol for classes
//! defined here, but NumPy reads any object's `__array_interface__` (a
//! pointer, a shape and a type), and the array it makes keeps that object as
//! its `base`: the ids stay where the encoder wrote them, alive as long as
//! the array.

use std::ptr::NonNull;

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// NumPy's name for a native-order uint32.
const TYPESTR: &str = if cfg!(target_endian = "little") { "<u4" } else { ">u4" };

/// Owns the ids; `numpy.asarray(ids)` is the array, writable, over the same
/// memory. Rust never reads the ids after handing them over (NumPy may write
/// them), so they are held as a raw allocation, not a `Vec` Rust could read.
#[pyclass(module = "bpeforge._core", frozen)]
pub struct IdArray {
    ptr: NonNull<u32>,
    len: usize,
}

// SAFETY: `IdArray` owns its allocation alone (as a `Box<[u32]>` would); the
// memory is only touched through the pointer NumPy is given.
unsafe impl Send for IdArray {}
unsafe impl Sync for IdArray {}

impl IdArray {
    pub fn new(ids: Vec<u32>) -> Self {
        // `into_boxed_slice` gives back unused capacity (for a large, mmapped
        // buffer an `mremap`, no copy), so that the array holds no more
        // memory than its ids.
        let ids = Box::into_raw(ids.into_boxed_slice());
        // SAFETY: `Box::into_raw` never returns null.
        Self { ptr: unsafe { NonNull::new_unchecked(ids as *mut u32) }, len: ids.len() }
    }
}

impl Drop for IdArray {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` came from `Box::into_raw` in `new`, and are
        // freed once, here.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.len)) });
    }
}

#[pymethods]
impl IdArray {
    /// NumPy's array interface, version 3: `numpy.asarray(self)` reads it.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let interface = PyDict::new(py);
        interface.set_item("version", 3)?;
        interface.set_item("shape", (self.len,))?;
        interface.set_item("typestr", TYPESTR)?;
        interface.set_item("data", (self.ptr.as_ptr() as usize, false))?;
        Ok(interface)
    }

    fn __len__(&self) -> usize {
        self.len
    }
}
