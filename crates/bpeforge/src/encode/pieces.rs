//! PIECES DOC

use std::sync::Arc;

use super::document_end::AHEAD;
use super::parts::{self, Part};
use super::piece_batch::{PieceBatch, BATCH_SLOTS, L1_AHEAD, LONG_ENTRIES_AHEAD, UNPACKED};
use super::state::NEW_ENTRIES_MAX;
use super::{EncodeState, Encoder};
use crate::bpe::{encode_piece, merge_run};
use crate::encode::cache::long_pieces::LONG_PIECE_MAX;
use crate::encode::cache::piece_table::INLINE_IDS;
use crate::encode::cache::shared::NewEntry;
use crate::error::Error;
use crate::pretokenize::specials::Piece;
use crate::util::packed_key::{hash_packed, pack};
use crate::util::prefetch::L1;

/// Room for ids beyond `INLINE_IDS` a piece that a run of hits may write
/// (`encode_hits`): a piece whose ids overflow its entry (0.8% of English
/// pieces, 21 K a call on 10 MB of Gutenberg) is copied there, not sent to
/// the slow path, until the run has used this much (then it ends the run).
/// In the warm path they made GPT-2 on 20news and multilingual text 4-7%
/// faster, on Gutenberg 2% (`examples/encode_file`).
const OVERFLOW_ROOM: usize = 256;

/// The room `encode_hits` reserves in the output for `pieces` pieces.
pub(super) const fn hits_room(pieces: usize) -> usize {
    pieces * INLINE_IDS + 1 + OVERFLOW_ROOM
}

impl Encoder {
    /// The documents of `text` and the special tokens between them: each
    /// document's end found as it is scanned (`document_end.rs`) where the
    /// pattern is a preset and the specials begin with few distinct bytes,
    /// else by splitting the text first.
    pub(super) fn encode_pieces(&self, text: &str, state: &mut EncodeState, out: &mut Vec<u32>) -> Result<(), Error> {
        match self.pattern.batch_scanner().filter(|_| self.specials.has_few_first_bytes()) {
            Some(scan) => {
                self.encode_documents_scanning_ahead(text.as_bytes(), scan, AHEAD, state, out);
                Ok(())
            }
            None => self.encode_split_first(text, state, out),
        }
    }

    /// `encode_pieces` by `SpecialSplitter::split`: the whole text searched
    /// for specials before any of it is scanned.
    pub(super) fn encode_split_first(
        &self,
        text: &str,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) -> Result<(), Error> {
        for piece in self.specials.split(text) {
            match piece {
                Piece::Special(index) => out.push(self.special_ids[index]),
                Piece::Text(document) => self.encode_document(document, state, out)?,
            }
        }
        Ok(())
    }

    /// Encode the pieces of one batch in order (`ends` as
    /// `Pattern::for_each_batch` gives them, the first piece starting at
    /// `from`; `batch` their keys): runs of pieces the thread's table holds
    /// (`encode_hits`), and each piece between them by `encode_pretoken`
    /// or, too long to pack, `encode_long_pretoken`.
    pub(super) fn encode_batch_of_pieces(
        &self,
        document: &[u8],
        from: usize,
        ends: &[usize],
        batch: &mut PieceBatch,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) {
        if batch.long_hashed {
            (0..LONG_ENTRIES_AHEAD).for_each(|nth| batch.prefetch_long_entry(nth, &state.long));
        }
        let long_pieces = self.encode_pieces_of_batch(document, from, ends, batch, 0..ends.len(), 0, state, out);
        state.long_pieces_last_batch = long_pieces;
    }

    /// `encode_batch_of_pieces` of the batch's pieces `range` only
    /// (`long_pieces`: how many pieces too long to pack came before it in
    /// the batch); how many have come after it. For a batch of pieces of
    /// several texts, with ids of their own between them (`piece_run.rs`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn encode_pieces_of_batch(
        &self,
        document: &[u8],
        from: usize,
        ends: &[usize],
        batch: &mut PieceBatch,
        range: std::ops::Range<usize>,
        mut long_pieces: usize,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) -> usize {
        let (mut i, stop) = (range.start, range.end);
        while i < stop {
            i = self.encode_hits(batch, stop, i, state, out);
            if i < stop {
                let start = if i == 0 { from } else { ends[i - 1] };
                let piece = &document[start..ends[i]];
                if batch.keys[i] == UNPACKED {
                    batch.prefetch_long_entry(long_pieces + LONG_ENTRIES_AHEAD, &state.long);
                    long_pieces += 1;
                    self.encode_long_pretoken(piece, batch.long_hash(i, piece), state, out);
                } else {
                    let key = batch.keys[i];
                    self.encode_pretoken(piece, key, hash_packed(key), state, out);
                }
                i += 1;
            }
        }
        long_pieces
    }

    /// The warm path: from piece `from` on (of `pieces` in `batch`), as long as
    /// the thread's table holds each piece's ids, write them and go on; the
    /// index of the first piece it does not hold (or `pieces`). Each hit
    /// copies its whole table entry (`INLINE_IDS` ids and the length) into
    /// room reserved for the rest of the batch (not zeroed: nothing is read
    /// there before it is written) and keeps the ids it has, so a piece
    /// costs no capacity check and no branch on its length.
    /// A piece with more ids than its entry holds takes them from the
    /// table's overflow, within `OVERFLOW_ROOM`.
    #[inline(always)]
    pub(super) fn encode_hits(
        &self,
        batch: &mut PieceBatch,
        pieces: usize,
        from: usize,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) -> usize {
        let table = state.table.probe();
        batch.refresh_buckets(table, from, pieces);
        // Each hit copies a whole entry: `INLINE_IDS` ids and its length.
        out.reserve(hits_room(pieces - from));
        let room = out.spare_capacity_mut().as_mut_ptr();
        let (mut i, mut written, mut overflow_room) = (from, 0, OVERFLOW_ROOM);
        while i < pieces {
            // Past `pieces` this prefetches a stale hash: harmless, and no branch.
            table.prefetch_at::<L1>(batch.buckets[(i + L1_AHEAD) % BATCH_SLOTS]);
            // A piece too long to pack (`UNPACKED`) is never found: it ends the run too.
            let key = batch.keys[i % BATCH_SLOTS];
            let bucket = batch.buckets[i % BATCH_SLOTS];
            // SAFETY: `refresh_buckets` made the buckets of pieces `from..pieces` this table's.
            if let Some(entry) = unsafe { table.get_inline_at(key, bucket) } {
                // SAFETY: `written <= (i - from) * INLINE_IDS + OVERFLOW_ROOM - overflow_room`, so
                // these `INLINE_IDS + 1` slots are within the room reserved above.
                unsafe {
                    std::ptr::copy_nonoverlapping(entry.words(), room.add(written).cast::<u32>(), INLINE_IDS + 1)
                };
                written += entry.id_count();
            } else {
                // SAFETY: as above.
                let ids = unsafe { table.get_overflowed_at(key, bucket) };
                let Some(ids) = ids.filter(|ids| ids.len() - INLINE_IDS <= overflow_room) else { break };
                overflow_room -= ids.len() - INLINE_IDS;
                // SAFETY: the room of this piece (`INLINE_IDS`) and `ids.len() - INLINE_IDS` of
                // `overflow_room`, within the room reserved above.
                unsafe { std::ptr::copy_nonoverlapping(ids.as_ptr(), room.add(written).cast::<u32>(), ids.len()) };
                written += ids.len();
            }
            i += 1;
        }
        // SAFETY: the first `written` slots of the spare capacity were
        // written just above (each hit wrote `INLINE_IDS + 1` from its start
        // and kept `len <= INLINE_IDS` of them).
        unsafe { out.set_len(out.len() + written) };
        state.hits += (i - from) as u64;
        i
    }

    /// `key` is the packed pre-token and `hash` its `hash_packed`.
    #[inline]
    pub(super) fn encode_pretoken(
        &self,
        bytes: &[u8],
        key: u128,
        hash: u64,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) {
        if bytes.len() == 1 {
            let id = self.vocab.byte_id(bytes[0]);
            out.push(id);
            // Kept in the table too, so that the warm path takes it.
            state.table.insert(key, hash, &[id]);
            return;
        }
        if state.table.get(key, hash, out) {
            state.hits += 1;
            return;
        }
        let start = out.len();
        let shared = state.shared.as_ref().map(|(_, shared)| &**shared).filter(|shared| shared.is_enabled());
        if let Some(shared) = shared.filter(|_| !state.skip_shared_lookups) {
            if shared.get(key, hash, out) || shared.get_long(bytes, hash, out) {
                state.hits += 1;
                state.table.insert(key, hash, &out[start..]);
                return;
            }
        }
        state.misses += 1;
        self.merge_piece(bytes, &mut state.scratch, out);
        if let Some(shared) = shared.filter(|_| state.publish) {
            // Added in groups (`SharedCache::insert_all`), at the end of the
            // call or when this many wait; more ids than a slot holds go to
            // the second level at once.
            match NewEntry::new(key, hash, &out[start..]) {
                Some(entry) => state.new_entries.push(entry),
                None => state.added_here += shared.insert_long(bytes, hash, &out[start..]),
            }
            if state.new_entries.len() >= NEW_ENTRIES_MAX {
                state.added_here += shared.insert_all(&mut state.new_entries);
            }
        }
        state.unpublished |= !state.publish;
        state.table.insert(key, hash, &out[start..]);
    }

    /// A pre-token of more than 15 bytes (`hash` its `hash_long`): the
    /// state's long-piece table, or merges.
    pub(super) fn encode_long_pretoken(&self, bytes: &[u8], hash: u64, state: &mut EncodeState, out: &mut Vec<u32>) {
        let huge = bytes.len() > LONG_PIECE_MAX;
        if state.long.get(bytes, hash, out) || (huge && state.huge.get(bytes, hash, out)) {
            state.hits += 1;
            return;
        }
        let start = out.len();
        // Cloned (the merges below borrow the state) only when it is used:
        // a first call on one thread neither asks nor fills it.
        let sharing = state.publish || !state.skip_shared_lookups;
        let shared = state.shared.as_ref().filter(|_| sharing).map(|(_, shared)| Arc::clone(shared));
        let shared = shared.filter(|shared| shared.is_enabled());
        if let Some(shared) = shared.as_ref().filter(|_| !state.skip_shared_lookups) {
            if shared.get_long(bytes, hash, out) {
                state.hits += 1;
                state.long.insert(bytes, hash, &out[start..]);
                return;
            }
        }
        state.misses += 1;
        match self.unmerged_token(bytes) {
            Some(id) => out.push(id),
            None => self.encode_in_parts(bytes, state, out),
        }
        if let Some(shared) = shared.filter(|_| state.publish) {
            state.added_here += shared.insert_long(bytes, hash, &out[start..]);
        }
        if huge {
            state.huge.insert(bytes, hash, &out[start..]);
        }
        state.long.insert(bytes, hash, &out[start..]);
    }

    /// A pre-token cut where no merge can join its bytes
    /// (`Vocabulary::can_cut_between`), each part encoded as a pre-token of
    /// its own: a part of up to 15 bytes through the tables like any short
    /// piece, a longer one merged. With GPT-2 a CJK clause, a new long piece
    /// nearly every time, cuts into characters and short runs the tables
    /// already hold. A piece too long for the long-piece table is cut a
    /// window at a time instead (`encode_in_windows`), unless it repeats a
    /// short period: a run is merged a chunk at a time (`bpe/period.rs`).
    pub(super) fn encode_in_parts(&self, bytes: &[u8], state: &mut EncodeState, out: &mut Vec<u32>) {
        if bytes.len() > LONG_PIECE_MAX {
            if merge_run(bytes, &self.vocab, &mut state.scratch, out) {
                return;
            }
            return self.encode_in_windows(bytes, state, out);
        }
        if self.vocab.word_phases().is_some() {
            // SuperBPE's pieces (lines) are cut there too, and finer, and their words kept (`bpe/phased.rs`).
            return encode_piece(bytes, &self.vocab, &mut state.scratch, out);
        }
        let mut start = 0;
        for end in parts::part_ends(bytes, &self.vocab) {
            let part = &bytes[start..end];
            match pack(part) {
                Some(key) => self.encode_part(part, key, hash_packed(key), state, out),
                None => encode_piece(part, &self.vocab, &mut state.scratch, out),
            }
            start = end;
        }
    }

    /// `encode_in_parts` for a piece longer than `LONG_PIECE_MAX` (1 MB of
    /// CJK is one cl100k pre-token): its parts cut a window at a time, each
    /// window's buckets prefetched before its parts are looked up
    /// (`parts.rs`), and its parts too long to pack kept in the long-piece
    /// table, which does not keep the piece. A clause of a few dozen bytes
    /// takes the byte loop: its parts' buckets are in cache and where its
    /// parts end is regular, so the windows made first calls on 10 MB of
    /// multilingual text 7% slower (`examples/encode_file`).
    pub(super) fn encode_in_windows(&self, bytes: &[u8], state: &mut EncodeState, out: &mut Vec<u32>) {
        let mut windows = state.parts.take().unwrap_or_default();
        windows[0].cut(bytes, 0, 0, &self.vocab, state.table.probe(), &state.long);
        let (mut this, mut at, mut start) = (0, 0, 0);
        while at < bytes.len() {
            let next_at = at + parts::WINDOW;
            if next_at < bytes.len() {
                let next_start = windows[this].end();
                windows[1 - this].cut(bytes, next_start, next_at, &self.vocab, state.table.probe(), &state.long);
            }
            for (end, part) in windows[this].parts() {
                let piece = &bytes[start..end];
                match part {
                    Part::Packed { key, hash } => self.encode_part(piece, key, hash, state, out),
                    Part::Long { hash } => self.encode_long_part(piece, hash, state, out),
                    Part::Unkept => encode_piece(piece, &self.vocab, &mut state.scratch, out),
                }
                start = end;
            }
            (this, at) = (1 - this, next_at);
        }
        state.parts = Some(windows);
    }

    /// A part of a long piece (`encode_in_parts`) that packs: a byte is its
    /// token, not kept in the table as a piece of one byte is
    /// (`encode_pretoken`): with GPT-2, CJK chars cut into bytes and pairs,
    /// and keeping each byte again on every call took a quarter of the call.
    /// A part the table holds inline is taken here, without the call: the
    /// parts of a run of one char are a few pieces found again and again.
    #[inline(always)]
    pub(super) fn encode_part(&self, part: &[u8], key: u128, hash: u64, state: &mut EncodeState, out: &mut Vec<u32>) {
        if let &[byte] = part {
            return out.push(self.vocab.byte_id(byte));
        }
        if self.unmerged_token(part).is_some() {
            // The caches hold the token for it as a piece (`unmerged_tokens.rs`).
            return encode_piece(part, &self.vocab, &mut state.scratch, out);
        }
        let table = state.table.probe();
        // SAFETY: the bucket index is this probe's.
        if let Some(entry) = unsafe { table.get_inline_at(key, table.bucket_index(hash)) } {
            match entry.inline_ids() {
                &[id] => out.push(id),
                ids => out.extend_from_slice(ids),
            }
            state.hits += 1;
            return;
        }
        self.encode_pretoken(part, key, hash, state, out)
    }

    /// A part of a piece too long for the long-piece table (`encode_in_windows`),
    /// itself too long to pack (`hash` its `hash_long`): that table, or merges.
    pub(super) fn encode_long_part(&self, part: &[u8], hash: u64, state: &mut EncodeState, out: &mut Vec<u32>) {
        if self.unmerged_token(part).is_some() {
            // As in `encode_part`.
            return encode_piece(part, &self.vocab, &mut state.scratch, out);
        }
        if state.long.get(part, hash, out) {
            state.hits += 1;
            return;
        }
        state.misses += 1;
        let start = out.len();
        encode_piece(part, &self.vocab, &mut state.scratch, out);
        state.long.insert(part, hash, &out[start..]);
    }
}
