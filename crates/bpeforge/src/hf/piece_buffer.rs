//! One stretch's pieces as the BPE merges them: their bytes end to end and
//! where each ends, the form `Encoder::encode_piece_ends` takes, filled by
//! the pre-tokenizer (`pre_tokenizers.rs`) with buffers kept from stretch to
//! stretch (a `String` a piece a step, and a `Vec` a piece a step for its
//! cuts, took most of a general pipeline's time).

use super::split::Event;

#[derive(Default)]
pub struct PieceBuffer {
    pub bytes: Vec<u8>,
    pub ends: Vec<usize>,
    /// The pieces are the stretch itself, cut at `ends` (no byte of it
    /// removed, added or spelled otherwise): `bytes` is not used.
    pub in_stretch: bool,
}

/// What one step of the pre-tokenizer cuts with, kept between stretches.
#[derive(Default)]
pub struct CutLevel {
    /// One piece's matches.
    pub found: Vec<(usize, usize)>,
    /// One piece's matches and gaps.
    pub events: Vec<Event>,
    /// The pieces this step made of one piece.
    pub pieces: Vec<(usize, usize)>,
}

/// What the pre-tokenizer's steps cut with, kept between stretches.
#[derive(Default)]
pub struct CutBuffers {
    /// A level a step before ByteLevel.
    pub levels: Vec<CutLevel>,
    /// A level a step after it.
    pub after_levels: Vec<CutLevel>,
    /// A piece with ByteLevel's prefix space.
    pub spaced: String,
    /// The pieces in GPT-2's byte chars, for steps after ByteLevel...
    pub spelled: String,
    /// ... and their ranges there.
    pub parts: Vec<(usize, usize)>,
}

impl PieceBuffer {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.in_stretch = false;
    }

    /// End a piece of the stretch at `end` (`in_stretch`), unless it is empty.
    #[inline]
    pub fn push_end(&mut self, end: usize) {
        if self.ends.last().map_or(0, |&last| last) < end {
            self.ends.push(end);
        }
    }

    /// The bytes the ends cut: the stretch's, or the buffer's own.
    pub fn bytes_of<'a>(&'a self, stretch: &'a str) -> &'a [u8] {
        if self.in_stretch {
            stretch.as_bytes()
        } else {
            &self.bytes
        }
    }

    /// Append a piece, without the bytes `dropped` marks (those with no
    /// token); a piece left empty is none, as `tokenizers` drops it.
    #[inline]
    pub fn push(&mut self, piece: &[u8], dropped: Option<&[bool; 256]>) {
        match dropped {
            None => self.bytes.extend_from_slice(piece),
            Some(dropped) => self.bytes.extend(piece.iter().filter(|&&byte| !dropped[usize::from(byte)])),
        }
        if self.ends.last().map_or(0, |&end| end) < self.bytes.len() {
            self.ends.push(self.bytes.len());
        }
    }

    /// Append a byte of a piece being built (`end_piece` ends it).
    #[inline]
    pub fn push_byte(&mut self, byte: u8, dropped: Option<&[bool; 256]>) {
        if dropped.is_none_or(|dropped| !dropped[usize::from(byte)]) {
            self.bytes.push(byte);
        }
    }

    /// End the piece `push_byte` built, unless it is empty.
    #[inline]
    pub fn end_piece(&mut self) {
        if self.ends.last().map_or(0, |&end| end) < self.bytes.len() {
            self.ends.push(self.bytes.len());
        }
    }

    /// The pieces, in order (`stretch` the text they were cut from).
    pub fn pieces<'a>(&'a self, stretch: &'a str) -> impl Iterator<Item = &'a [u8]> {
        let bytes = self.bytes_of(stretch);
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(self.ends.iter().copied()).map(move |(start, end)| &bytes[start..end])
    }
}
