//! Where the time of counting goes, for `bpeforge train --profile`.
//!
//! Counting overlaps its parts: one worker reads the next batch while the
//! others pre-tokenize and count this one, and each worker interleaves
//! splitting pre-tokens with adding them to its table. Wall times of read,
//! batch work and the serial fold are always measured (a clock read per
//! batch). Splitting a batch's work into pre-tokenize and count needs the
//! pre-tokens of a text collected before they are counted, which costs a
//! little memory and time, so it is done only when asked (`profile`).

use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, Default)]
pub struct CountProfile {
    /// Reading and UTF-8 checking, on the reading worker (overlaps `batches`).
    pub read: Duration,
    /// Pre-tokenizing and counting each batch in parallel, wall clock.
    pub batches: Duration,
    /// Folding each batch's table into the corpus table, serial.
    pub fold: Duration,
    /// With `profile`: the batches' CPU time in splitting pre-tokens, all workers.
    pub pretokenize_cpu: Duration,
    /// With `profile`: the batches' CPU time in adding pre-tokens to tables, all workers.
    pub count_cpu: Duration,
}

/// Run `work`, adding its wall time to `total`.
pub fn timed<T>(total: &mut Duration, work: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = work();
    *total += started.elapsed();
    out
}
