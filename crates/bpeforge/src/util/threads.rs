//! How many worker threads a call runs on: one rule for every entry point
//! (training, counting, encoding; the Python binding asks here too).
//!
//! A call runs on at most the cores this process may use: more threads than
//! cores only wait on each other, and an unbounded ask is a denial of service
//! (10,000 threads starting took the machine's load to ~700; 2^40 never
//! returned). A pool a call builds is gone, its threads exited, when the
//! call returns ([`CallPool`]).

use std::ops::Deref;
use std::sync::OnceLock;
use std::thread::JoinHandle;

use crate::error::Error;

/// The most threads any call runs on: the cores this process may use (its
/// CPU affinity and cgroup quota, `available_parallelism`), read once a
/// process (it opens files under /proc and /sys each time it is asked).
pub fn max_threads() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The threads a call asking for `asked` runs on: all cores for `None`, else
/// `asked` bounded by [`max_threads`]. 0 is an error.
pub fn thread_count(asked: Option<usize>) -> Result<usize, Error> {
    match asked {
        Some(0) => Err(Error::InvalidArgument("num_threads must be at least 1 (or None for all cores)".into())),
        Some(threads) => Ok(threads.min(max_threads())),
        None => Ok(max_threads()),
    }
}

/// A rayon pool for one call. Dropping a `rayon::ThreadPool` only asks its
/// threads to exit; dropping this one also joins them, so a call that returns
/// has left no thread of its own behind.
pub struct CallPool {
    pool: Option<rayon::ThreadPool>,
    threads: Vec<JoinHandle<()>>,
}

impl CallPool {
    /// A pool of `thread_count(asked)` threads named `name-i`.
    pub fn new(asked: Option<usize>, name: &str) -> Result<CallPool, Error> {
        let count = thread_count(asked)?;
        let mut threads = Vec::with_capacity(count);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(count)
            .spawn_handler(|thread| {
                let mut builder = std::thread::Builder::new().name(format!("{name}-{}", thread.index()));
                if let Some(size) = thread.stack_size() {
                    builder = builder.stack_size(size);
                }
                threads.push(builder.spawn(|| thread.run())?);
                Ok(())
            })
            .build()
            .map_err(|e| Error::InvalidArgument(format!("cannot start {count} worker threads: {e}")))?;
        Ok(CallPool { pool: Some(pool), threads })
    }
}

impl Deref for CallPool {
    type Target = rayon::ThreadPool;

    fn deref(&self) -> &rayon::ThreadPool {
        self.pool.as_ref().expect("the pool lives until the CallPool is dropped")
    }
}

impl Drop for CallPool {
    fn drop(&mut self) {
        // Rayon's threads exit once idle after their pool is dropped, which
        // they are: the call's work is done when its pool is.
        drop(self.pool.take());
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_ask_is_bounded_by_the_cores() {
        assert_eq!(thread_count(None).unwrap(), max_threads());
        assert_eq!(thread_count(Some(1)).unwrap(), 1);
        assert_eq!(thread_count(Some(usize::MAX)).unwrap(), max_threads());
        assert_eq!(thread_count(Some(1 << 40)).unwrap(), max_threads());
        assert!(thread_count(Some(0)).is_err());
    }

    #[test]
    fn a_call_pool_has_no_thread_left_when_dropped() {
        thread_local! {
            static HELD: std::cell::RefCell<Option<std::sync::Arc<()>>> = const { std::cell::RefCell::new(None) };
        }
        let token = std::sync::Arc::new(());
        let pool = CallPool::new(Some(1 << 40), "test").unwrap();
        assert_eq!(pool.current_num_threads(), max_threads());
        // Each worker holds the token until its thread ends (thread-local destructors).
        pool.broadcast(|_| HELD.with(|held| *held.borrow_mut() = Some(token.clone())));
        assert_eq!(std::sync::Arc::strong_count(&token), 1 + max_threads());
        drop(pool);
        assert_eq!(std::sync::Arc::strong_count(&token), 1, "a worker thread outlived its pool");
    }
}
