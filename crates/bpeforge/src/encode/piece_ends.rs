//! Pieces cut by the caller, merged through the encoder's caches: for a
//! `tokenizer.json` pipeline (`hf/`), whose normalizer, added tokens and
//! pre-tokenizer run outside the encoder but whose pieces are looked up in
//! the same tables as a preset's (a pipeline without them merged every
//! piece again, 3-13 MB/s against the preset's 250).
//!
//! A caller runs one call's work inside `in_call` (the state attached to
//! the shared cache and its seeds planted once, its counters handed over
//! after, as `encode_with` does), and in it gives its text to the scanner
//! (`encode_scanned`) or its own pieces (`encode_piece_ends`).

use super::{EncodeState, Encoder};
use crate::error::Error;
use crate::pretokenize::scan::BATCH_PIECES;

impl Encoder {
    /// Run `encode` as one call with `state`.
    pub fn in_call(
        &self,
        state: &mut EncodeState,
        encode: impl FnOnce(&mut EncodeState) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.with_state(state, encode)
    }

    /// The ids of `text` by the pattern's scanner and the encoder's special
    /// tokens, inside `in_call`.
    pub fn encode_scanned(&self, text: &str, state: &mut EncodeState, out: &mut Vec<u32>) -> Result<(), Error> {
        self.encode_pieces(text, state, out)
    }

    /// The ids of the pieces of `bytes` that end at `ends` (increasing, none
    /// empty), the first starting at `from`, inside `in_call`.
    pub fn encode_piece_ends(
        &self,
        bytes: &[u8],
        mut from: usize,
        ends: &[usize],
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) {
        if ends.is_empty() {
            return;
        }
        // The state's batch, not a new one (see `encode_document`).
        let mut batch = state.batch.take().unwrap_or_default();
        for group in ends.chunks(BATCH_PIECES) {
            batch.pack(bytes, from, group, state);
            self.encode_batch_of_pieces(bytes, from, group, &mut batch, state, out);
            from = group[group.len() - 1];
        }
        state.batch = Some(batch);
    }
}
