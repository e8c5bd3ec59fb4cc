//! Ids handed to NumPy without a copy.
//!
//! Why: copying the encoder's `Vec<u32>` into a new `bytearray` for
//! `numpy.frombuffer` wrote 10.6 MB again and faulted in its fresh pages,
//! 3-4 ms of a 22 ms warm call on 10 MB of text. The stable ABI (abi3,
//! Python 3.9) has no buffer protocol for classes defined here, but NumPy
//! reads any object's `__array_interface__` (a
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
/// When NumPy frees the array, a large allocation goes back to the encoder
/// for its next call (`bpeforge::recycled`): its pages are already mapped.
#[pyclass(module = "bpeforge._core", frozen)]
pub struct IdArray {
    ptr: NonNull<u32>,
    len: usize,
    capacity: usize,
}

// SAFETY: `IdArray` owns its allocation alone (as a `Vec` would); the
// memory is only touched through the pointer NumPy is given.
unsafe impl Send for IdArray {}
unsafe impl Sync for IdArray {}

impl IdArray {
    pub fn new(ids: Vec<u32>) -> Self {
        // A small buffer gives back its unused capacity (heap memory the
        // allocator may have touched), so the array holds no more than its ids;
        // one the recycled store takes keeps it (unwritten, it holds no memory).
        let ids = if ids.capacity() * size_of::<u32>() < bpeforge::RECYCLED_MIN_BYTES {
            ids.into_boxed_slice().into_vec()
        } else {
            ids
        };
        let mut ids = std::mem::ManuallyDrop::new(ids);
        // SAFETY: a `Vec`'s pointer is never null.
        let ptr = unsafe { NonNull::new_unchecked(ids.as_mut_ptr()) };
        Self { ptr, len: ids.len(), capacity: ids.capacity() }
    }
}

impl Drop for IdArray {
    fn drop(&mut self) {
        // SAFETY: `ptr`, `len` and `capacity` are those of the `Vec` taken
        // apart in `new`, put back together once, here (NumPy no longer
        // holds the array: it was this object's last reference).
        let ids = unsafe { Vec::from_raw_parts(self.ptr.as_ptr(), self.len, self.capacity) };
        bpeforge::give_back(ids);
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
