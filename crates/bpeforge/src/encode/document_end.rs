//! Where the document being scanned ends (at the next special token), found a
//! few KiB ahead of the scanner instead of before it, and the encoder's loop
//! over the documents of a text.
//!
//! Why: splitting a text on its special tokens first, then scanning each
//! document, read the text twice from L3 (or memory), and the search was 4-5%
//! of a warm call. Here the first bytes of the specials are looked for
//! (`SpecialSplitter::first_starting_in`) in the next `AHEAD` bytes before each
//! batch is scanned: those are then in L1 for the scanner, and a document is
//! still scanned knowing where it ends.
//!
//! Except where a batch of pieces runs past what was searched (pieces of KiBs,
//! or the look-ahead of a long run of whitespace): then the batch was scanned
//! as if the document ran on. Its pieces stand if a split point follows them
//! (`pretokenize/cuts.rs`) before any special starts; otherwise the batch is
//! scanned again, up to the special (`settles`). The pieces before the batch
//! stand either way: they were settled by a split point no later than the
//! special, and the scan restarts at the batch's first piece, which looks
//! behind nothing.

use std::ops::Range;

use super::{EncodeState, Encoder};
use crate::error::Error;
use crate::pretokenize::scan::PieceEnds;

use crate::pretokenize::cuts::is_split_point;
use crate::pretokenize::specials::SpecialSplitter;

/// How far ahead of the scanner the specials are looked for: a batch of
/// English (512 pieces) is about 2.5 KB, and L1 holds 32-48 KiB.
pub(super) const AHEAD: usize = 8 << 10;

/// The end of the document that starts at byte 0 of `text` (the rest of a
/// text after a special token): the next special's start, or the end of
/// `text`.
pub(super) struct DocumentEnd<'t> {
    text: &'t [u8],
    specials: &'t SpecialSplitter,
    /// The bytes the pattern may be cut before (`Pattern::cut_before`,
    /// all ASCII controls or the space), bit `b` for byte `b`.
    cut_before_bits: u64,
    ahead: usize,
    /// No special starts before this.
    searched: usize,
    /// The special that ends the document `(start, end, index)`, once found.
    special: Option<(usize, usize, usize)>,
    /// No split point lies in `to..cuts_looked_at` for the `to` last asked
    /// about, so the next ask need not look there again.
    cuts_looked_at: usize,
}

impl<'t> DocumentEnd<'t> {
    /// `specials.has_few_first_bytes()` must hold; `ahead` is `AHEAD` but in tests.
    pub(super) fn new(text: &'t [u8], specials: &'t SpecialSplitter, cut_before: &'static [u8], ahead: usize) -> Self {
        debug_assert!(cut_before.iter().all(|&byte| byte < 64), "whitespace bytes");
        let cut_before_bits = cut_before.iter().fold(0u64, |bits, &byte| bits | 1 << byte);
        let ahead = ahead.max(1);
        Self { text, specials, cut_before_bits, ahead, searched: 0, special: None, cuts_looked_at: 0 }
    }

    /// Where the document ends as far as is known: the special's start, or
    /// the end of the text while none has been found.
    pub(super) fn end(&self) -> usize {
        self.special.map_or(self.text.len(), |(start, _, _)| start)
    }

    /// The special that ends the document, if one does.
    pub(super) fn special(&self) -> Option<(usize, usize, usize)> {
        self.special
    }

    /// Make sure the `ahead` bytes from `from` on have been searched, before
    /// a batch that starts there is scanned up to `end()`. Searches `ahead`
    /// bytes at a time, so the text is searched once in all.
    pub(super) fn look_ahead_of(&mut self, from: usize) {
        if self.special.is_none() && self.searched < (from + self.ahead / 2).min(self.text.len()) {
            self.search_to(from + self.ahead);
        }
    }

    /// Whether the pieces of a batch, from `from` to `to`, scanned up to
    /// `end()` as it was before the batch, are the document's; if not, the
    /// special is now known and the batch is to be scanned again from
    /// `from`.
    pub(super) fn settles(&mut self, from: usize, to: usize) -> bool {
        debug_assert!(from < to && self.searched >= from.min(self.text.len()));
        if self.special.is_some() || self.searched >= self.text.len() {
            // Scanned up to the special, or there is none: no guess was made.
            return true;
        }
        if self.has_split_point(to.max(self.cuts_looked_at)..self.searched) {
            return true;
        }
        // Rare in text with spaces; then search on to the next special (or
        // the end), and only then look for a split point up to it: text with
        // none (digits, CJK) is looked through once, not a byte at a time.
        self.cuts_looked_at = self.searched.max(to);
        self.search_to(self.text.len());
        match self.special {
            // A split point up to the special's start also settles the
            // batch: the document up to the special is cut there alike.
            Some((start, _, _)) => self.has_split_point(self.cuts_looked_at..start + 1),
            None => true,
        }
    }

    /// Search on to `until` (or the end of the text), unless a special is
    /// found first.
    fn search_to(&mut self, until: usize) {
        let until = until.min(self.text.len());
        if self.searched < until {
            self.special = self.specials.first_starting_in(self.text, self.searched..until);
            self.searched = self.special.map_or(until, |(start, _, _)| start);
        }
    }

    /// Whether a split point lies in `range` (clipped to the text).
    fn has_split_point(&self, range: Range<usize>) -> bool {
        let range = range.start..range.end.min(self.text.len());
        range.clone().any(|at| self.may_cut_before(self.text[at]) && is_split_point(self.text, at))
    }

    /// Whether `byte` is one of `cut_before`: a bit test, since a scan for
    /// split points may look at every byte of a text that has none.
    #[inline(always)]
    fn may_cut_before(&self, byte: u8) -> bool {
        byte < 64 && self.cut_before_bits & (1 << byte) != 0
    }
}

impl Encoder {
    /// The pre-tokens of one document: text with no special token in it, a
    /// batch at a time: each piece packed, hashed and its bucket prefetched
    /// (`PieceBatch::pack`), then looked up.
    pub(super) fn encode_document(
        &self,
        document: &str,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) -> Result<(), Error> {
        let bytes = document.as_bytes();
        // The state's, not a new one: zeroing 24 KiB for each document (20news
        // has one every 1.6 KB) cost more than short documents' encoding.
        let mut batch = state.batch.take().unwrap_or_default();
        let mut from = 0;
        let result = self.pattern.for_each_batch(
            document,
            #[inline(always)]
            |ends| {
                batch.pack(bytes, from, ends, state);
                self.encode_batch_of_pieces(bytes, from, ends, &mut batch, state, out);
                from = ends[ends.len() - 1];
            },
        );
        state.batch = Some(batch);
        result
    }

    /// `encode_pieces` with the specials looked for `ahead` bytes ahead of
    /// `scan` (a preset's `Pattern::batch_scanner`; `text` is valid UTF-8).
    pub(super) fn encode_documents_scanning_ahead(
        &self,
        text: &[u8],
        scan: fn(&mut PieceEnds, &[u8]) -> bool,
        ahead: usize,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) {
        let mut start = 0;
        loop {
            let rest = &text[start..];
            let mut end = DocumentEnd::new(rest, &self.specials, self.pattern.cut_before(), ahead);
            self.encode_document_scanning_ahead(rest, scan, &mut end, state, out);
            let Some((_, special_end, index)) = end.special() else { return };
            out.push(self.special_ids[index]);
            start += special_end;
        }
    }

    /// The pieces of the document at the start of `text`, which ends where
    /// `end` finds (`document_end.rs`), a batch at a time as in
    /// `encode_document`; a batch scanned past a special found only after
    /// it is scanned again.
    pub(super) fn encode_document_scanning_ahead(
        &self,
        text: &[u8],
        scan: fn(&mut PieceEnds, &[u8]) -> bool,
        end: &mut DocumentEnd,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) {
        let mut batch = state.batch.take().unwrap_or_default();
        let mut pieces = PieceEnds::new();
        let mut from = 0;
        loop {
            end.look_ahead_of(from);
            if !scan(&mut pieces, &text[..end.end()]) {
                break;
            }
            let ends = pieces.as_slice();
            if !end.settles(from, ends[ends.len() - 1]) {
                pieces.rewind(from);
                continue;
            }
            batch.pack(text, from, ends, state);
            self.encode_batch_of_pieces(text, from, ends, &mut batch, state, out);
            from = ends[ends.len() - 1];
        }
        state.batch = Some(batch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::specials::tests::splitter as specials;

    /// GPT-2 scans "ab![ x]" as if it ran on: "ab", "![", ... The special
    /// "[ x]" starts at 3, inside "![", and the split point at 4 (a space
    /// after "[") is the special's own, so the batch is scanned again.
    #[test]
    fn a_batch_past_a_special_found_late_is_scanned_again() {
        let tokens = specials(&["[ x]"]);
        let mut end = DocumentEnd::new(b"ab![ x]cd", &tokens, b" \t\r\n", 1);
        end.look_ahead_of(0);
        assert_eq!(end.end(), 9, "nothing searched yet with a look-ahead of 1");
        assert!(!end.settles(0, 4));
        assert_eq!((end.special(), end.end()), (Some((3, 7, 0)), 3));
        assert!(end.settles(0, 2), "scanned up to the special: settled");
    }

    /// A split point between the batch's end and the special settles it,
    /// whether it lies in what was searched before (the special then still
    /// unknown) or is found once the special is; none there does not.
    #[test]
    fn a_split_point_before_the_special_settles_the_batch() {
        let tokens = specials(&["[ x]"]);
        let text = format!("ab cd{}[ x]", "e".repeat(100));
        let mut end = DocumentEnd::new(text.as_bytes(), &tokens, b" \t\r\n", 8);
        end.look_ahead_of(0);
        assert!(end.settles(0, 2));
        assert_eq!(end.special(), None, "the split point at 2 is in the 8 bytes searched");
        let mut end = DocumentEnd::new(b"ab cd[ x]", &tokens, b" \t\r\n", 1);
        assert!(end.settles(0, 2));
        assert_eq!(end.special(), Some((5, 9, 0)));
        let mut end = DocumentEnd::new(b"ab cd[ x]", &tokens, b" \t\r\n", 64);
        assert!(!end.settles(0, 3), "no split point in 3..=5");
        // A special that starts with whitespace may start at the split point.
        let tokens = specials(&[" [y]"]);
        let mut end = DocumentEnd::new(b"ab [y]", &tokens, b" \t\r\n", 64);
        assert!(end.settles(0, 2));
        assert_eq!(end.special(), Some((2, 6, 0)));
    }

    /// Without a special the document is the whole text, however far a
    /// batch ran past the search.
    #[test]
    fn without_a_special_every_batch_settles() {
        let tokens = specials(&["<|e|>"]);
        let text = "a".repeat(100);
        let mut end = DocumentEnd::new(text.as_bytes(), &tokens, b" \t\r\n", 8);
        end.look_ahead_of(0);
        assert!(end.settles(0, 100));
        assert_eq!((end.special(), end.end()), (None, 100));
    }
}
