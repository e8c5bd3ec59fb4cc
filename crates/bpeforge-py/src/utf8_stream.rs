//! The UTF-8 of one `str` for a single encode call, a stretch at a time.
//!
//! A `str` that `text.rs` transcodes (long, not ASCII, new) is read about
//! `STREAM_CHARS` characters ahead of the encoder into one small buffer, and
//! the encoder takes from its front only what more text cannot change
//! (`stable_prefix_len`, as for Ctrl-C: the ids equal one call's). The
//! whole text's UTF-8 never exists at once: 10 MB of Gutenberg in one
//! buffer was 10 MB of fresh pages for every first call (and a 1 GB `str`
//! would have needed 1 GB more), and the scanner now reads text the
//! transcoder has just left in the cache. Any other `str` is CPython's UTF-8,
//! borrowed whole.

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::text::{LastTranscoded, Transcoder, TRANSCODE_MIN_CHARS};

/// Characters transcoded ahead of the encoder at a time (more when the text
/// has no place to cut in them: a megabyte-long run of one letter).
const STREAM_CHARS: usize = 1 << 20;

pub struct Utf8Stream<'a, 'py> {
    text: &'a Bound<'py, PyString>,
    /// CPython's UTF-8 of the whole `str`, when it is not transcoded.
    borrowed: Option<&'a str>,
    transcoder: Transcoder,
    /// Characters of `text` transcoded so far (all of them: `length`).
    read_chars: usize,
    length: usize,
    /// Bytes taken by the encoder: from the front of the transcoder's buffer,
    /// or of `borrowed`.
    taken: usize,
}

impl<'a, 'py> Utf8Stream<'a, 'py> {
    /// Transcoded or borrowed as `text.rs` decides (the same rule as batches:
    /// a `str` the previous call saw is asked of CPython).
    pub fn new(text: &'a Bound<'py, PyString>, last: &LastTranscoded) -> PyResult<Self> {
        let length = text.len()?;
        // A short `str` is always borrowed: asking `last` (a lock, two allocations) was a tenth of a sentence's call.
        let transcode = length >= TRANSCODE_MIN_CHARS && last.choose(std::slice::from_ref(text), &[length])?[0];
        let borrowed = if transcode { None } else { Some(text.to_str()?) };
        let transcoder = Transcoder::for_chars(if transcode { STREAM_CHARS.min(length) * 2 } else { 0 });
        let mut stream = Self { text, borrowed, transcoder, read_chars: 0, length, taken: 0 };
        if transcode {
            stream.read_more()?;
        }
        Ok(stream)
    }

    /// About the bytes of the whole text, to size the ids' buffer: exact when
    /// borrowed, twice the characters when transcoded (`ids_buffer` reserves
    /// an id per two bytes: one a character, which CJK text needs).
    pub fn bytes_hint(&self) -> usize {
        self.borrowed.map_or(self.length * 2, str::len)
    }

    /// The text read and not taken yet.
    pub fn rest(&self) -> &str {
        match self.borrowed {
            Some(text) => &text[self.taken..],
            None => self.transcoder.as_str(),
        }
    }

    /// Whether `rest` runs to the end of the text.
    pub fn is_complete(&self) -> bool {
        self.borrowed.is_some() || self.read_chars == self.length
    }

    /// The encoder took the first `bytes` of `rest` (a prefix ending on a character).
    pub fn take(&mut self, bytes: usize) {
        if self.borrowed.is_none() {
            self.transcoder.drop_front(bytes);
        }
        self.taken += bytes;
    }

    /// Transcode the next characters: `STREAM_CHARS`, or as many as `rest`
    /// holds when that is more (so a text with no cut reads in doubling
    /// steps, and the scans for a cut stay linear in all). A lone surrogate
    /// raises CPython's UnicodeEncodeError for the whole `str`.
    pub fn read_more(&mut self) -> PyResult<()> {
        let chars = STREAM_CHARS.max(self.transcoder.as_str().len());
        let next = self.read_chars..(self.read_chars + chars).min(self.length);
        if self.transcoder.append(self.text, next.clone())?.is_none() {
            // CPython finds the surrogate too and raises; were it to convert
            // the text after all, its UTF-8 goes on from the bytes taken.
            let whole = self.text.to_str()?;
            let read = self.taken + self.transcoder.as_str().len();
            self.transcoder.clear();
            self.borrowed = Some(whole);
            debug_assert!(whole.is_char_boundary(read), "CPython's UTF-8 differs from the transcoded one");
            return Ok(());
        }
        self.read_chars = next.end;
        Ok(())
    }
}
