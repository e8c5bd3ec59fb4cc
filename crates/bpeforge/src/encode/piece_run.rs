//! The pieces of several short texts, cut by their caller and gathered
//! before any is looked up, then looked up in batches that cross the texts'
//! ends: for a batch of many short texts (a `tokenizer.json` pipeline's
//! documents, `run_batch.rs`).
//!
//! Why: a batch of pieces is packed, and its buckets prefetched, before its
//! first lookup (`piece_batch.rs`); the prefetches have the time of the
//! batch's other pieces to arrive. A document of a line (77 bytes, 20
//! pieces) looked up on its own left them no time: each lookup waited for
//! its bucket of the 18 MiB table, a third of a warm call on the 12,940
//! lines of `bench_hf.py`, which ran at 440 ns a line against 233 for the
//! same bytes as one text.
//!
//! A run holds the pieces' bytes end to end (copied: a stretch may be a
//! normalized `String` that does not outlive its text's cut), where each
//! piece ends, and what comes between pieces: an id of the caller's own (an
//! added token, a post-processor's, a whole token) or the end of a text.

use super::piece_batch::{BATCH_SLOTS, LONG_ENTRIES_AHEAD};
use super::{EncodeState, Encoder};
use crate::pretokenize::scan::BATCH_PIECES;

/// What comes before the run's piece of some index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    /// An id the caller gives, not a piece's.
    Id(u32),
    /// The end of a text: the ids so far are its and its predecessors'.
    TextEnd,
}

/// Pieces of consecutive texts and the ids between them, waiting to be looked up.
#[derive(Default)]
pub struct PieceRun {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    /// `(pieces before it, mark)`, in order.
    marks: Vec<(usize, Mark)>,
    /// The index (in its batch) of the first text of the run, and how many
    /// texts it has ended.
    first_text: usize,
    texts: usize,
    /// Where the text being cut began (`abandon_text`): bytes, pieces, marks.
    text_start: (usize, usize, usize),
}

impl PieceRun {
    /// Append the pieces of `bytes` that end at `ends` (increasing, none
    /// empty), the first starting at `from`.
    #[inline]
    pub fn push_pieces(&mut self, bytes: &[u8], from: usize, ends: &[usize]) {
        let Some(&last) = ends.last() else { return };
        let base = self.bytes.len();
        self.bytes.extend_from_slice(&bytes[from..last]);
        self.ends.extend(ends.iter().map(|&end| end - from + base));
    }

    /// Append an id of the caller's own after the pieces so far.
    #[inline]
    pub fn push_id(&mut self, id: u32) {
        self.marks.push((self.ends.len(), Mark::Id(id)));
    }

    /// Append ids of the caller's own.
    pub fn push_ids(&mut self, ids: &[u32]) {
        let at = self.ends.len();
        self.marks.extend(ids.iter().map(|&id| (at, Mark::Id(id))));
    }

    /// Whether text `index` of the batch may be cut into this run next: the
    /// run is empty, or its texts end just before it.
    pub(super) fn continues_at(&self, index: usize) -> bool {
        self.is_empty() || self.first_text + self.texts == index
    }

    /// Text `index` is cut next (`continues_at` holds).
    pub(super) fn begin_text(&mut self, index: usize) {
        debug_assert!(self.continues_at(index));
        if self.is_empty() {
            self.first_text = index;
        }
        self.text_start = (self.bytes.len(), self.ends.len(), self.marks.len());
    }

    /// The text begun last is cut whole.
    pub(super) fn end_text(&mut self) {
        self.marks.push((self.ends.len(), Mark::TextEnd));
        self.texts += 1;
    }

    /// Take out what the text begun last added (its cut failed).
    pub(super) fn abandon_text(&mut self) {
        let (bytes, pieces, marks) = self.text_start;
        self.bytes.truncate(bytes);
        self.ends.truncate(pieces);
        self.marks.truncate(marks);
    }

    /// Enough pieces to look up: a batch's worth.
    pub(super) fn is_full(&self) -> bool {
        self.ends.len() >= BATCH_PIECES
    }

    pub(super) fn is_empty(&self) -> bool {
        self.texts == 0 && self.ends.is_empty() && self.marks.is_empty()
    }

    /// The batch index of the first text and how many texts the run holds.
    pub(super) fn texts(&self) -> (usize, usize) {
        (self.first_text, self.texts)
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.marks.clear();
        self.texts = 0;
    }
}

impl Encoder {
    /// Append the ids of `run`'s texts to `out`, and where each text's end
    /// in `out` to `text_ends`, inside `in_call`; the run is emptied. The
    /// pieces are packed a batch of up to `BATCH_SLOTS` at a time (in
    /// batches of about equal size) and looked up between the marks.
    pub(super) fn encode_run(
        &self,
        run: &mut PieceRun,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
        text_ends: &mut Vec<usize>,
    ) {
        let mut batch = state.batch.take().unwrap_or_default();
        let pieces = run.ends.len();
        let batches = pieces.div_ceil(BATCH_SLOTS).max(1);
        let per_batch = pieces.div_ceil(batches).max(1);
        let mut marks = run.marks.iter().copied().peekable();
        let (mut first, mut from) = (0, 0);
        loop {
            let ends = &run.ends[first..pieces.min(first + per_batch)];
            if !ends.is_empty() {
                batch.pack(&run.bytes, from, ends, state);
                if batch.long_hashed {
                    (0..LONG_ENTRIES_AHEAD).for_each(|nth| batch.prefetch_long_entry(nth, &state.long));
                }
            }
            let (mut i, mut long_pieces) = (0, 0);
            loop {
                while let Some((_, mark)) = marks.next_if(|&(at, _)| at == first + i) {
                    match mark {
                        Mark::Id(id) => out.push(id),
                        Mark::TextEnd => text_ends.push(out.len()),
                    }
                }
                if i == ends.len() {
                    break;
                }
                let stop = marks.peek().map_or(ends.len(), |&(at, _)| ends.len().min(at - first));
                long_pieces =
                    self.encode_pieces_of_batch(&run.bytes, from, ends, &mut batch, i..stop, long_pieces, state, out);
                i = stop;
            }
            state.long_pieces_last_batch = long_pieces;
            if first + ends.len() == pieces {
                break;
            }
            first += ends.len();
            from = run.ends[first - 1];
        }
        debug_assert!(marks.next().is_none(), "every mark was placed");
        state.batch = Some(batch);
        run.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::PieceRun;
    use crate::bpe::vocab::Vocabulary;
    use crate::encode::Encoder;
    use crate::pretokenize::pattern::Pattern;

    fn encoder() -> Encoder {
        let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|byte| (u32::from(byte), vec![byte])).collect();
        entries.extend([(256, b"ab".to_vec()), (257, b"abab".to_vec()), (258, b" ab".to_vec())]);
        let merges =
            [(b"a".to_vec(), b"b".to_vec()), (b"ab".to_vec(), b"ab".to_vec()), (b" ".to_vec(), b"ab".to_vec())];
        Encoder::new(Vocabulary::new(entries, &merges).unwrap(), &[], Pattern::Gpt2).unwrap()
    }

    #[test]
    fn a_run_gives_each_text_its_ids_and_the_callers_ids_in_place() {
        // Pieces "xx", "abab", " ab", " ab", "x" again and again, and ids of the caller's own around and
        // between them; runs of fewer pieces than a batch, and of several batches.
        let encoder = encoder();
        for repeats in [1, 7, 120, 450] {
            let (mut run, mut out, mut text_ends) = (PieceRun::default(), Vec::new(), Vec::new());
            let (mut expected, mut expected_ends) = (Vec::new(), Vec::new());
            let bytes = b"xxabab ab abx".repeat(repeats);
            let ends: Vec<usize> = (0..repeats).flat_map(|at| [2, 6, 9, 12, 13].map(|end| at * 13 + end)).collect();
            let (head, tail) = ends.split_at(ends.len() / 2);
            let ids_of = |pieces: &[usize]| -> Vec<u32> {
                pieces
                    .iter()
                    .flat_map(|end| match end % 13 {
                        2 => vec![120, 120],
                        6 => vec![257],
                        9 | 12 => vec![258],
                        _ => vec![120],
                    })
                    .collect()
            };
            for text in 0..3 {
                run.begin_text(10 + text);
                run.push_id(900);
                run.push_pieces(&bytes, 0, head);
                run.push_ids(&[7, 8]);
                run.push_pieces(&bytes, head[head.len() - 1], tail);
                run.end_text();
                expected.push(900);
                expected.extend(ids_of(head));
                expected.extend([7, 8]);
                expected.extend(ids_of(tail));
                expected_ends.push(expected.len());
            }
            assert_eq!(run.texts(), (10, 3));
            let mut state = encoder.pooled_state();
            let encoded = encoder.in_call(&mut state, |state| {
                encoder.encode_run(&mut run, state, &mut out, &mut text_ends);
                Ok(())
            });
            encoded.unwrap();
            assert_eq!(out, expected, "{repeats} repeats");
            assert_eq!(text_ends, expected_ends);
            assert!(run.is_empty());
        }
    }

    #[test]
    fn an_abandoned_text_leaves_the_run_as_it_was() {
        let mut run = PieceRun::default();
        run.begin_text(0);
        run.push_pieces(b"ab", 0, &[2]);
        run.end_text();
        run.begin_text(1);
        run.push_pieces(b"abab", 0, &[2, 4]);
        run.push_id(3);
        run.abandon_text();
        assert_eq!((run.bytes.len(), run.ends.len(), run.marks.len(), run.texts()), (2, 1, 1, (0, 1)));
        assert!(run.continues_at(1) && !run.continues_at(2));
    }
}
