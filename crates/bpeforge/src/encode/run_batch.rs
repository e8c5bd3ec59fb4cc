//! A flat batch whose texts' pieces the caller cuts (a `tokenizer.json`
//! pipeline's normalizer, added tokens and pre-tokenizer), looked up a run
//! of consecutive short texts at a time (`piece_run.rs`) instead of a text
//! at a time, so that a batch of pieces crosses the texts' ends.
//!
//! A worker cuts each text it takes into its run, and looks the run up
//! when it holds a batch of pieces, when the next text it takes does not
//! follow the run's last (the run's texts go to one place in the output:
//! `WorkerIds::destination`), and when its texts are done. A text longer
//! than `RUN_TEXT_MAX` is encoded on its own by the caller's whole-text
//! path, which scans and looks up its batches with no copy of its bytes.

use super::affinity::run_with_affinity;
use super::batch::finish_flat_batch;
use super::flat_batch::WorkerIds;
use super::piece_run::PieceRun;
use super::{BatchText, EncodeState, Encoder};
use crate::error::Error;

/// Texts of more bytes than this are encoded on their own: their pieces
/// fill batches by themselves.
pub(crate) const RUN_TEXT_MAX: usize = 4 << 10;

/// What a worker keeps for a batch of runs: the UTF-8 of a text it converts,
/// the caller's buffers, the run, and where its texts end in the output.
#[derive(Default)]
struct RunWorker<W> {
    utf8: String,
    buffers: W,
    run: PieceRun,
    text_ends: Vec<usize>,
}

impl Encoder {
    /// `encode_batch_into_by` with each text of at most `RUN_TEXT_MAX` bytes
    /// cut into a run by `cut_text` (given the worker's buffers `W`), its
    /// pieces looked up with other texts' (see the module's note); a longer
    /// text is given to `encode_text`, as `encode_batch_into_by` gives it.
    pub fn encode_batch_into_runs<T: BatchText, W: Default + Send>(
        &self,
        texts: &[T],
        out: &mut Vec<u32>,
        ends: &mut Vec<usize>,
        cut_text: impl Fn(&str, &mut W, &mut PieceRun) -> Result<(), Error> + Sync,
        encode_text: impl Fn(&str, &mut EncodeState, &mut W, &mut Vec<u32>) -> Result<(), Error> + Sync,
    ) -> Result<(), Error> {
        let base = out.len();
        let (mut workers, weights) = self.flat_batch_workers(texts, out, RunWorker::<W>::default);
        let result = run_with_affinity(&mut workers, &weights, |(state, ids, worker), i| {
            let RunWorker { utf8, buffers, run, text_ends } = worker;
            let text = texts[i].utf8(utf8)?;
            let alone = text.len() > RUN_TEXT_MAX;
            if alone || !run.continues_at(i) {
                self.look_up_run(run, state, ids, text_ends)?;
            }
            if alone {
                return ids.record(i, |out| {
                    out.reserve(text.len() / 2 + 16);
                    encode_text(text, state, buffers, out)
                });
            }
            run.begin_text(i);
            if let Err(error) = cut_text(text, buffers, run) {
                run.abandon_text();
                return Err(error);
            }
            run.end_text();
            if run.is_full() {
                self.look_up_run(run, state, ids, text_ends)?;
            }
            Ok(())
        });
        // The runs the workers left: each worker's last texts, looked up here, one worker after the other
        // (at most a batch of pieces each).
        let result = result.and_then(|_| {
            workers.iter_mut().try_for_each(|(state, ids, worker)| {
                self.look_up_run(&mut worker.run, state, ids, &mut worker.text_ends)
            })
        });
        finish_flat_batch(workers, result, (out, base), ends, texts.len())
    }

    /// Look up the pieces of `run`, its texts' ids written to where `ids`
    /// puts them; the run is emptied.
    fn look_up_run(
        &self,
        run: &mut PieceRun,
        state: &mut EncodeState,
        ids: &mut WorkerIds,
        text_ends: &mut Vec<usize>,
    ) -> Result<(), Error> {
        if run.is_empty() {
            return Ok(());
        }
        let (first, _) = run.texts();
        text_ends.clear();
        let out = ids.destination(first);
        let start = out.len();
        self.with_state(state, |state| {
            self.encode_run(run, state, out, text_ends);
            Ok(())
        })?;
        ids.record_texts(first, start, text_ends);
        Ok(())
    }
}
