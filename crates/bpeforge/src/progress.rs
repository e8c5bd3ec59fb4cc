//! How long-running work reports progress and is cancelled.
//!
//! The core calls the observer from the thread that called it (never from a
//! rayon worker), between units of work, so the Python binding can update a
//! progress bar and check for Ctrl-C there. Returning `Err(Error::Interrupted)`
//! stops the work at once.

use crate::error::Error;

/// The phases of long-running work: training's two, in order, and encoding files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Reading, pre-tokenizing and counting: `done`/`total` are bytes.
    Pretokenize,
    /// The merge loop: `done`/`total` are merges.
    Merge,
    /// Encoding files: `done`/`total` are bytes.
    Encode,
}

pub trait Observer {
    fn progress(&self, phase: Phase, done: u64, total: u64) -> Result<(), Error>;
}

/// An observer that never reports and never cancels.
pub struct Silent;

impl Observer for Silent {
    fn progress(&self, _: Phase, _: u64, _: u64) -> Result<(), Error> {
        Ok(())
    }
}
