//! The threads an encoding call runs on: `bpeforge::threads`'s bound, on the
//! one pool a process keeps (all cores) or on a pool of the call's own.

use std::ops::Deref;
use std::sync::{Arc, Mutex};

use bpeforge::{max_threads, thread_count, CallPool};
use pyo3::prelude::*;

use crate::errors::to_py_err;

/// The pool of one call: the shared one, or one that ends with the call.
pub enum CallThreads {
    Shared(Arc<rayon::ThreadPool>),
    Own(CallPool),
}

impl Deref for CallThreads {
    type Target = rayon::ThreadPool;

    fn deref(&self) -> &rayon::ThreadPool {
        match self {
            CallThreads::Shared(pool) => pool,
            CallThreads::Own(pool) => pool,
        }
    }
}

/// The pool a call asking for `num_threads` runs on. An ask of all cores (or
/// more: it is bounded, `threads.rs`) runs on the shared pool, kept for the
/// next call: a pool built per call cost each call its threads' start, and a
/// 2 MB batch of 20news on 2 threads ran at 470-873 MB/s warm against 941-987
/// on a kept pool. A smaller ask gets a pool of its own, gone when the call
/// returns, so no ask leaves threads behind but the shared pool's.
pub fn pool_for(num_threads: Option<usize>) -> PyResult<CallThreads> {
    let threads = thread_count(num_threads).map_err(to_py_err)?;
    if threads == max_threads() {
        return shared_pool().map(CallThreads::Shared);
    }
    CallPool::new(Some(threads), "bpeforge").map(CallThreads::Own).map_err(to_py_err)
}

/// Run `work` without the GIL on `pool`.
pub fn detached_on<T: Send>(py: Python<'_>, pool: &rayon::ThreadPool, work: impl FnOnce() -> T + Send) -> T {
    py.detach(|| pool.install(work))
}

/// The pool of all cores this process keeps. Not rayon's global pool: after
/// `fork` (multiprocessing, PyTorch DataLoader workers) the child inherits
/// pools whose threads do not exist there, and the first parallel call waits
/// forever (HF tokenizers' known failure). A child builds its own.
fn shared_pool() -> PyResult<Arc<rayon::ThreadPool>> {
    static SHARED: Mutex<Option<(u32, Arc<rayon::ThreadPool>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut slot = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if slot.as_ref().is_some_and(|(owner, _)| *owner != pid) {
        // The parent's pool: its threads are not in this process, so dropping
        // it could wait on them. Leak it instead.
        std::mem::forget(slot.take());
    }
    if let Some((_, pool)) = slot.as_ref() {
        return Ok(pool.clone());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(max_threads())
        .thread_name(|i| format!("bpeforge-shared-{i}"))
        .build()
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("cannot start worker threads: {e}")))?;
    let pool = Arc::new(pool);
    *slot = Some((pid, pool.clone()));
    Ok(pool)
}

/// `num_threads` bounded as the core bounds it, with the `TrainingNote` that
/// the Python layer's callers get (`bpeforge.arguments.thread_count`), for the
/// core's classes called directly (`bpeforge.Counts`).
pub fn noted_threads(py: Python<'_>, num_threads: Option<usize>) -> PyResult<Option<usize>> {
    match num_threads {
        Some(threads) if threads > max_threads() => {
            py.import("bpeforge.arguments")?.getattr("thread_count")?.call1((threads,))?.extract()
        }
        asked => Ok(asked),
    }
}

/// The most threads any call runs on: the cores this process may use. The
/// Python layer asks it to say when it bounded a `num_threads`.
#[pyfunction(name = "max_threads")]
pub fn py_max_threads() -> usize {
    max_threads()
}
