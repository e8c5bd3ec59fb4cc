//! BATCH DOC

use std::ops::DerefMut;

use rayon::prelude::*;

use super::affinity::run_with_affinity;
use super::flat_batch::{append_in_text_order, WorkerIds};
use super::{ids_buffer, BatchText, EncodeState, Encoder, PooledState};
use crate::error::Error;

impl Encoder {
    /// Encode `texts` in parallel on the current rayon pool, each worker with
    /// one state for all the texts it takes; `convert` runs on the worker too.
    pub fn encode_batch<T, R>(
        &self,
        texts: &[T],
        convert: impl Fn(Vec<u32>) -> R + Sync + Send,
    ) -> Result<Vec<R>, Error>
    where
        T: AsRef<str> + Sync,
        R: Send,
    {
        self.encode_batch_allowing(texts, None, convert)
    }

    /// `encode_batch`, recognising only the special tokens `allowed` marks
    /// (see `encode_allowing`).
    pub fn encode_batch_allowing<T, R>(
        &self,
        texts: &[T],
        allowed: Option<&[bool]>,
        convert: impl Fn(Vec<u32>) -> R + Sync + Send,
    ) -> Result<Vec<R>, Error>
    where
        T: AsRef<str> + Sync,
        R: Send,
    {
        self.share_if_parallel(texts.len());
        self.encode_batch_from(texts, || self.pooled_state(), allowed, convert)
    }

    /// `encode_batch_allowing` with each worker's state made by `new_state`
    /// (a private one for file encoding, see `EncodeState::private`).
    pub fn encode_batch_from<T, R, S>(
        &self,
        texts: &[T],
        new_state: impl Fn() -> S + Sync + Send,
        allowed: Option<&[bool]>,
        convert: impl Fn(Vec<u32>) -> R + Sync + Send,
    ) -> Result<Vec<R>, Error>
    where
        T: AsRef<str> + Sync,
        R: Send,
        S: DerefMut<Target = EncodeState> + Send,
    {
        let mut states = worker_states(texts.len(), new_state);
        let results = run_with_affinity(&mut states, &text_weights(texts), |state, i| {
            let text = texts[i].as_ref();
            let mut ids = ids_buffer(text.len());
            self.encode_allowing(text, allowed, state, &mut ids)?;
            Ok(convert(ids))
        });
        give_back(states);
        results
    }

    /// `encode_batch_allowing` with every text's ids appended to `out`, in
    /// text order, and the end of each text's ids in `out` pushed to `ends`:
    /// no `Vec` a text (`flat_batch.rs`). On an error `out` is as it was.
    pub fn encode_batch_into<T: BatchText>(
        &self,
        texts: &[T],
        allowed: Option<&[bool]>,
        out: &mut Vec<u32>,
        ends: &mut Vec<usize>,
    ) -> Result<(), Error> {
        self.encode_batch_into_by(texts, out, ends, |text, state, _: &mut (), out| {
            self.encode_allowing(text, allowed, state, out)
        })
    }

    /// `encode_batch_into` with each text's ids appended by `encode_text`
    /// (given the worker's state and buffers `W` it keeps from text to text):
    /// for a `tokenizer.json` pipeline, whose own steps run around the
    /// encoder's (`piece_ends.rs`).
    pub fn encode_batch_into_by<T: BatchText, W: Default + Send>(
        &self,
        texts: &[T],
        out: &mut Vec<u32>,
        ends: &mut Vec<usize>,
        encode_text: impl Fn(&str, &mut EncodeState, &mut W, &mut Vec<u32>) -> Result<(), Error> + Sync,
    ) -> Result<(), Error> {
        let base = out.len();
        let (mut workers, weights) = self.flat_batch_workers(texts, out, || (String::new(), W::default()));
        let result = run_with_affinity(&mut workers, &weights, |(state, ids, (utf8, buffers)), i| {
            let text = texts[i].utf8(utf8)?;
            ids.record(i, |out| {
                out.reserve(text.len() / 2 + 16);
                encode_text(text, state, buffers, out)
            })
        });
        finish_flat_batch(workers, result.map(drop), (out, base), ends, texts.len())
    }

    /// The workers of a flat batch (`encode_batch_into_by`) of `texts`, each
    /// with its state, its ids (the first's written in place to `out`) and
    /// what `extra` makes it, and the texts' weights.
    pub(super) fn flat_batch_workers<T: BatchText, X>(
        &self,
        texts: &[T],
        out: &mut Vec<u32>,
        extra: impl Fn() -> X,
    ) -> (Vec<FlatWorker<'_, X>>, Vec<usize>) {
        self.share_if_parallel(texts.len());
        let weights = text_weights(texts);
        let states = worker_states(texts.len(), || self.pooled_state());
        let share = weights.iter().sum::<usize>() / states.len();
        let workers = states
            .into_iter()
            .enumerate()
            .map(|(worker, mut state)| {
                // As `encode` does for one text: a worker's table made in
                // this call starts at the size its share of the texts will
                // grow it to, not at the seeds' size and then again there.
                state.expect_text(share);
                let mut ids = WorkerIds::new(std::mem::take(&mut state.batch_ids));
                if worker == 0 {
                    ids.write_in_order_to(std::mem::take(out));
                }
                let extra = extra();
                (state, ids, extra)
            })
            .collect();
        (workers, weights)
    }

    /// Workers that may run at once share from their first text: a worker
    /// starting while another holds the warm state would otherwise merge
    /// again what that state has not shared yet.
    pub(super) fn share_if_parallel(&self, texts: usize) {
        if texts > 1 && rayon::current_num_threads() > 1 {
            self.share_from_now_on();
        }
    }
}

/// One state a worker for a batch of `texts`, as many workers as the pool
/// has threads (fewer for fewer texts). Taken in order, and given back in
/// reverse (`give_back`), so that the pool (a stack) lends them in the same
/// order to the next call: each worker starts on the same texts call after
/// call (`affinity.rs`), and its state has seen them.
///
/// A state the pool made for this call starts with a copy of the first
/// worker's table of short pieces (`start_new_from_first`).
pub(super) fn worker_states<S>(texts: usize, new_state: impl Fn() -> S) -> Vec<S>
where
    S: DerefMut<Target = EncodeState> + Send,
{
    let workers = rayon::current_num_threads().min(texts).max(1);
    let mut states: Vec<S> = (0..workers).map(|_| new_state()).collect();
    start_new_from_first(&mut states);
    states
}

/// The states in `states` that the pool has just made (they still want the
/// seeds) start with a copy of the first one's short pieces, when it has them
/// (kept from an earlier call or seeded when the encoder was built), copied
/// in parallel on the pool's threads before any worker encodes.
///
/// Why: a new state planted the seeds in its first text, on the clock (o200k:
/// 263 K seeds, and a doubling of its table). Meanwhile the first worker took
/// most of its range of the batch (1,518 of 2,489 texts of 20news), so in the
/// next calls the new state met texts it had never seen and asked the shared
/// cache for their pieces (14.8 K, then 6.9 K, 2.0 K, 1.3 K a call): a 2-thread
/// batch took five calls to reach its best. A copy of 16 MiB takes a few ms.
fn start_new_from_first<S>(states: &mut [S])
where
    S: DerefMut<Target = EncodeState> + Send,
{
    let Some((first, rest)) = states.split_first_mut() else { return };
    if first.wants_seeds || !rest.iter().any(|state| state.wants_seeds) {
        return;
    }
    let first: &EncodeState = first;
    rest.par_iter_mut().filter(|state| state.wants_seeds).for_each(|state| state.start_from(first));
}

/// A worker of a flat batch: its state, the ids it wrote, and buffers of its own.
pub(super) type FlatWorker<'e, X> = (PooledState<'e>, WorkerIds, X);

/// After the workers of a flat batch (`flat_batch_workers`) are done: their
/// ids appended to `out` in text order and each text's end to `ends` (or,
/// on an error, `out` as it was: `base` long), their buffers kept by their
/// states, the states given back.
pub(super) fn finish_flat_batch<X>(
    workers: Vec<FlatWorker<'_, X>>,
    result: Result<(), Error>,
    (out, base): (&mut Vec<u32>, usize),
    ends: &mut Vec<usize>,
    texts: usize,
) -> Result<(), Error> {
    let (mut states, mut written): (Vec<_>, Vec<WorkerIds>) =
        workers.into_iter().map(|(state, ids, _)| (state, ids)).unzip();
    match result {
        Ok(()) => append_in_text_order(out, &mut written, texts, ends),
        Err(_) => {
            *out = written[0].take_out().expect("the first worker holds `out`");
            out.truncate(base);
        }
    }
    for (state, mut worker) in states.iter_mut().zip(written) {
        worker.ids.clear();
        state.batch_ids = worker.ids;
    }
    give_back(states);
    result
}

/// Drop `states` last first: see `worker_states`.
pub(super) fn give_back<S>(states: Vec<S>) {
    states.into_iter().rev().for_each(drop);
}

/// The texts' lengths in bytes (about, for one a worker converts): what
/// `run_with_affinity` splits evenly.
fn text_weights<T: BatchText>(texts: &[T]) -> Vec<usize> {
    texts.iter().map(BatchText::weight).collect()
}
