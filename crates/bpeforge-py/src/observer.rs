//! Progress reports to a Python callback, and Ctrl-C, from inside the core.
//!
//! The core calls `progress` from the thread that called it, which is the
//! Python thread that released the GIL, so `check_signals` sees Ctrl-C there.
//! Calls are rate-limited to ten a second: each one takes the GIL.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use bpeforge::{Error, Observer, Phase};
use pyo3::prelude::*;

const INTERVAL: Duration = Duration::from_millis(100);

pub struct PyObserver {
    callback: Option<Py<PyAny>>,
    last_call: Mutex<Option<(Phase, Instant)>>,
    /// The Python error (KeyboardInterrupt, or one a callback raised) that
    /// stopped the work, re-raised once the GIL is back.
    error: Mutex<Option<PyErr>>,
}

impl PyObserver {
    pub fn new(callback: Option<Py<PyAny>>) -> Self {
        Self { callback, last_call: Mutex::new(None), error: Mutex::new(None) }
    }

    /// Keep `err` to re-raise, and tell the core to stop.
    pub fn stop_with(&self, err: PyErr) -> Error {
        *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(err);
        Error::Interrupted
    }

    pub fn take_error(&self) -> Option<PyErr> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// The first report of a phase and its last one always go through.
    fn due(&self, phase: Phase, done: u64, total: u64) -> bool {
        let mut last = self.last_call.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let due = done >= total
            || last.is_none_or(|(last_phase, at)| last_phase != phase || now.duration_since(at) >= INTERVAL);
        if due {
            *last = Some((phase, now));
        }
        due
    }
}

impl Observer for PyObserver {
    fn progress(&self, phase: Phase, done: u64, total: u64) -> Result<(), Error> {
        if !self.due(phase, done, total) {
            return Ok(());
        }
        let outcome = Python::attach(|py| {
            py.check_signals()?;
            if let Some(callback) = &self.callback {
                callback.call1(py, (phase_name(phase), done, total))?;
            }
            Ok::<(), PyErr>(())
        });
        outcome.map_err(|err| self.stop_with(err))
    }
}

fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Pretokenize => "pretokenize",
        Phase::Merge => "merge",
        Phase::Encode => "encode",
    }
}
