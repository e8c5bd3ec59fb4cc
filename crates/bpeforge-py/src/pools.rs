//! The threads an encoding call runs on: `bpeforge::threads`'s bound, on one
//! of the two pools a process keeps (all cores, and the last smaller size).

use std::sync::{Arc, Mutex};

use bpeforge::{max_threads, thread_count};
use pyo3::prelude::*;

use crate::errors::to_py_err;

/// The pool a call asking for `num_threads` runs on, kept for the next call:
/// a pool built per call cost each call its threads' start (a 2 MB batch of
/// 20news on 2 threads ran at 470-873 MB/s warm against 941-987 on a kept
/// pool, and one sentence on `num_threads=1` took 53-101 us against 18). An
/// ask of all cores (or more: it is bounded, `threads.rs`) runs on the pool of
/// all cores; a smaller ask on the one pool kept for the last smaller ask,
/// replaced when another size is asked. So a process holds at most twice its
/// cores in threads, however many sizes it asks for.
pub fn pool_for(num_threads: Option<usize>) -> PyResult<Arc<rayon::ThreadPool>> {
    static ALL_CORES: Mutex<Option<KeptPool>> = Mutex::new(None);
    static SMALLER: Mutex<Option<KeptPool>> = Mutex::new(None);
    let threads = thread_count(num_threads).map_err(to_py_err)?;
    let slot = if threads == max_threads() { &ALL_CORES } else { &SMALLER };
    kept_pool(slot, threads)
}

/// A pool and the process and size it was built for.
struct KeptPool {
    pid: u32,
    threads: usize,
    pool: Arc<rayon::ThreadPool>,
}

/// The pool of `threads` threads kept in `slot`, built when there is none of
/// that size for this process. Not rayon's global pool: after `fork`
/// (multiprocessing, PyTorch DataLoader workers) the child inherits pools
/// whose threads do not exist there, and the first parallel call waits forever
/// (HF tokenizers' known failure). A child builds its own.
fn kept_pool(slot: &Mutex<Option<KeptPool>>, threads: usize) -> PyResult<Arc<rayon::ThreadPool>> {
    let pid = std::process::id();
    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    match slot.as_ref() {
        Some(kept) if kept.pid == pid && kept.threads == threads => return Ok(kept.pool.clone()),
        // The parent's pool: its threads are not in this process, so dropping
        // it could wait on them. Leak it instead.
        Some(kept) if kept.pid != pid => std::mem::forget(slot.take()),
        // Another size: its threads exit once idle after the last call on it.
        _ => drop(slot.take()),
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("bpeforge-{i}"))
        .build()
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("cannot start worker threads: {e}")))?;
    let pool = Arc::new(pool);
    *slot = Some(KeptPool { pid, threads, pool: pool.clone() });
    Ok(pool)
}

/// Run `work` without the GIL on `pool`.
pub fn detached_on<T: Send>(py: Python<'_>, pool: &rayon::ThreadPool, work: impl FnOnce() -> T + Send) -> T {
    py.detach(|| pool.install(work))
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
