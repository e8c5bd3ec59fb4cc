//! Reading a file in bounded chunks cut where the result cannot change.
//!
//! Each chunk is pre-tokenized on its own, in parallel, so a cut must fall where
//! the whole text would split anyway:
//! - right after a special token (a document boundary), or
//! - before ASCII whitespace that follows a non-space char
//!   (`pretokenize/cuts.rs`), never inside a special token.
//!
//! When each line is a document (`cutting_after_newlines`), right after a
//! newline is a cut too, whatever the pattern: a custom regex has no
//! whitespace cuts, and without this a file was one chunk, read whole and
//! pre-tokenized on one thread.
//!
//! Special-token matches that start `max_len` bytes or more before the end of
//! the buffer cannot change when more input arrives, so only those decide a cut.
//! Where no cut exists (one huge piece), the reader reads on, doubling its
//! target: memory is then bounded by the largest piece, not the file.

use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::io::input::{open_input, open_range, Compression};
use crate::pretokenize::cuts::find_cut;
use crate::pretokenize::specials::SpecialSplitter;

/// A run of whole documents or pieces of one: valid UTF-8 and cut safely.
///
/// Whitespace cuts are before the bytes of `Pattern::cut_before`; with none
/// (a custom regex) only special tokens and file ends cut.
pub struct Chunk {
    pub text: String,
    /// Byte offset of `text` in its file, for error messages.
    pub offset: u64,
}

impl AsRef<str> for Chunk {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

/// A whole input file, or a byte range of one whose ends are safe cuts
/// (`shards.rs` plans them), so that its chunks are those of the whole file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub path: PathBuf,
    pub range: Option<Range<u64>>,
}

impl Source {
    pub fn whole(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), range: None }
    }

    pub fn range(path: impl Into<PathBuf>, range: Range<u64>) -> Self {
        Self { path: path.into(), range: Some(range) }
    }

    fn open(&self) -> Result<Box<dyn Read + Send>, Error> {
        match &self.range {
            None => open_input(&self.path),
            Some(range) => open_range(&self.path, range),
        }
    }

    fn start(&self) -> u64 {
        self.range.as_ref().map_or(0, |range| range.start)
    }
}

impl From<PathBuf> for Source {
    fn from(path: PathBuf) -> Self {
        Source::whole(path)
    }
}

pub struct ChunkReader<'s, R> {
    reader: R,
    path: PathBuf,
    specials: &'s SpecialSplitter,
    cut_before: &'static [u8],
    /// Each line is a document: a cut right after a newline is safe.
    after_newlines: bool,
    target: usize,
    buf: Vec<u8>,
    offset: u64,
    eof: bool,
    /// The input has filled the buffer to a chunk's size at least once.
    long_input: bool,
}

impl<'s, R: Read> ChunkReader<'s, R> {
    /// `target` is the preferred chunk size in bytes (at least 1).
    pub fn new(
        reader: R,
        path: &Path,
        specials: &'s SpecialSplitter,
        cut_before: &'static [u8],
        target: usize,
    ) -> Self {
        Self {
            reader,
            path: path.to_path_buf(),
            specials,
            cut_before,
            after_newlines: false,
            target: target.max(1),
            buf: Vec::new(),
            offset: 0,
            eof: false,
            long_input: false,
        }
    }

    /// Cut right after newlines too (each line is a document).
    pub fn cutting_after_newlines(mut self, yes: bool) -> Self {
        self.after_newlines = yes;
        self
    }

    /// Report byte offsets (of invalid UTF-8, say) as if the input began at
    /// `offset` of its file, as a shard does.
    pub fn starting_at(mut self, offset: u64) -> Self {
        self.offset = offset;
        self
    }

    /// The next chunk, or `None` at the end of the input.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>, Error> {
        let mut want = self.target;
        loop {
            self.fill(want)?;
            if self.buf.is_empty() {
                return Ok(None);
            }
            if self.eof {
                let all = std::mem::take(&mut self.buf);
                return self.finish(all).map(Some);
            }
            self.long_input = true;
            let cut = find_cut(&self.buf, self.specials, self.cut_before);
            let line_cut = if self.after_newlines { last_line_cut(&self.buf, self.specials) } else { None };
            if let Some(cut) = cut.max(line_cut) {
                let rest = self.buf.split_off(cut);
                let chunk = std::mem::replace(&mut self.buf, rest);
                return self.finish(chunk).map(Some);
            }
            want = want.saturating_mul(2);
        }
    }

    /// Read until the buffer holds `want` bytes or the input ends.
    ///
    /// `read_to_end` grows the buffer with the data (a 20 KB file costs about
    /// 20 KB), where sizing it to `want` up front cost every small file of a
    /// many-file corpus a whole chunk of memory. Once the input has filled a
    /// buffer (`long_input`), the buffer is sized once instead: grown with the
    /// data, each chunk was copied again on every doubling, into new pages
    /// faulted in each time (`bpeforge encode` of 500 MB: 0.09 s of `memmove`
    /// on the reading thread, a third of its time).
    fn fill(&mut self, want: usize) -> Result<(), Error> {
        if self.long_input {
            self.buf.reserve(want.saturating_sub(self.buf.len()));
        }
        while self.buf.len() < want && !self.eof {
            let missing = (want - self.buf.len()) as u64;
            let read = (&mut self.reader).take(missing).read_to_end(&mut self.buf);
            match read {
                Ok(0) => self.eof = true,
                Ok(_) => {}
                Err(e) => return Err(Error::io(&self.path, e)),
            }
        }
        Ok(())
    }

    fn finish(&mut self, bytes: Vec<u8>) -> Result<Chunk, Error> {
        let offset = self.offset;
        self.offset += bytes.len() as u64;
        // simdutf8 validates with SIMD chosen at run time: std's check was
        // 3.5% of `bpeforge encode` on 500 MB of Gutenberg. Its `compat`
        // error gives the same `valid_up_to` as std's.
        match simdutf8::compat::from_utf8(&bytes) {
            // SAFETY: just validated as UTF-8.
            Ok(_) => Ok(Chunk { text: unsafe { String::from_utf8_unchecked(bytes) }, offset }),
            Err(e) => Err(Error::InvalidUtf8 { path: self.path.clone(), offset: offset + e.valid_up_to() as u64 }),
        }
    }
}

/// The last cut right after a newline that no special token straddles, and
/// after which `max_len` bytes are read (so that a token there is seen whole).
fn last_line_cut(buf: &[u8], specials: &SpecialSplitter) -> Option<usize> {
    let mut end = (buf.len() + 1).checked_sub(specials.max_len().max(1))?;
    while let Some(newline) = memchr::memrchr(b'\n', &buf[..end]) {
        let cut = newline + 1;
        if !specials.straddles(buf, cut) {
            return Some(cut);
        }
        end = newline;
    }
    None
}

/// The corpus size for progress reports, or 0 when unknown (a compressed
/// input's text size is known only once read). Checking every path up front
/// also names a missing file, a directory or an unsupported compression
/// before any work is done.
pub fn total_size(sources: &[Source]) -> Result<u64, Error> {
    let (mut total, mut unknown) = (0, false);
    for source in sources {
        let path = &source.path;
        if let Some(range) = &source.range {
            total += range.end.saturating_sub(range.start);
            continue;
        }
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        if meta.is_dir() {
            let err = std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory, not a text file");
            return Err(Error::io(path, err));
        }
        match Compression::of(path) {
            Compression::None => total += meta.len(),
            Compression::Unsupported(_) => return open_input(path).map(|_| 0),
            _ => unknown = true,
        }
    }
    Ok(if unknown { 0 } else { total })
}

/// The total to report with `done` bytes: 0 (unknown) stays 0.
pub fn progress_total(total: u64, done: u64) -> u64 {
    if total == 0 {
        0
    } else {
        total.max(done)
    }
}

/// The chunks of all sources in order; a source's end is a chunk's end.
pub struct CorpusChunks<'p, 's> {
    sources: &'p [Source],
    next_source: usize,
    reader: Option<ChunkReader<'s, Box<dyn Read + Send>>>,
    specials: &'s SpecialSplitter,
    cut_before: &'static [u8],
    after_newlines: bool,
    chunk_size: usize,
}

impl<'p, 's> CorpusChunks<'p, 's> {
    pub fn new(
        sources: &'p [Source],
        specials: &'s SpecialSplitter,
        cut_before: &'static [u8],
        chunk_size: usize,
    ) -> Self {
        Self { sources, next_source: 0, reader: None, specials, cut_before, after_newlines: false, chunk_size }
    }

    /// Cut right after newlines too (each line is a document).
    pub fn cutting_after_newlines(mut self, yes: bool) -> Self {
        self.after_newlines = yes;
        self
    }

    /// Chunks adding up to about `max_bytes` (at least one), across files.
    pub fn next_batch(&mut self, max_bytes: usize) -> Result<Vec<Chunk>, Error> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        while bytes < max_bytes {
            match self.next_chunk()? {
                Some(chunk) => {
                    bytes += chunk.text.len();
                    batch.push(chunk);
                }
                None => break,
            }
        }
        Ok(batch)
    }

    /// The next chunk, across files, or `None` at the end of the last.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>, Error> {
        loop {
            if let Some(reader) = self.reader.as_mut() {
                if let Some(chunk) = reader.next_chunk()? {
                    return Ok(Some(chunk));
                }
                self.reader = None;
            }
            let Some(source) = self.sources.get(self.next_source) else {
                return Ok(None);
            };
            self.next_source += 1;
            let reader =
                ChunkReader::new(source.open()?, &source.path, self.specials, self.cut_before, self.chunk_size);
            self.reader = Some(reader.starting_at(source.start()).cutting_after_newlines(self.after_newlines));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(text: &str, specials: &[&str], target: usize) -> Vec<String> {
        let tokens: Vec<String> = specials.iter().map(|s| s.to_string()).collect();
        let splitter = SpecialSplitter::new(&tokens).unwrap();
        let mut reader = ChunkReader::new(text.as_bytes(), Path::new("t"), &splitter, b" \t\r\n", target);
        let mut out = Vec::new();
        while let Some(chunk) = reader.next_chunk().unwrap() {
            out.push(chunk.text);
        }
        out
    }

    #[test]
    fn a_special_across_a_position_is_seen_overlapping_ones_too() {
        let tokens: Vec<String> = ["<|e|>", "e|><"].iter().map(|t| t.to_string()).collect();
        let splitter = SpecialSplitter::new(&tokens).unwrap();
        let buf = b"ab<|e|><|e|>cd";
        let across: Vec<usize> = (0..=buf.len()).filter(|&at| splitter.straddles(buf, at)).collect();
        // "<|e|>" at 2..7 and 7..12, and "e|><" at 4..8 across 7.
        assert_eq!(across, [3, 4, 5, 6, 7, 8, 9, 10, 11]);
    }

    #[test]
    fn cuts_before_whitespace_after_a_word() {
        // "a  b" must not be cut inside the run: the run's last space leads " b".
        assert_eq!(chunks("aa  bb cc", &[], 3), ["aa", "  bb", " cc"]);
    }

    #[test]
    fn never_cuts_inside_a_special_token() {
        let tokens = ["<|e|>".to_string(), "<|e|><|e|>".to_string()];
        let splitter = SpecialSplitter::new(&tokens).unwrap();
        let specials_in =
            |text: &str| -> Vec<usize> { splitter.find_all(text.as_bytes()).map(|(_, _, index)| index).collect() };
        let text = "x<|e|> y<|e|><|e|>z <|e|>";
        // In the whole text: one single, one double (longest first), one single.
        assert_eq!(specials_in(text), [0, 1, 0]);
        for target in 1..text.len() + 2 {
            let parts = chunks(text, &["<|e|>", "<|e|><|e|>"], target);
            assert_eq!(parts.concat(), text);
            let found: Vec<usize> = parts.iter().flat_map(|p| specials_in(p)).collect();
            assert_eq!(found, [0, 1, 0], "target {target}: {parts:?}");
        }
    }

    #[test]
    fn cuts_after_newlines_when_lines_are_documents_never_inside_a_special_token() {
        let tokens = ["<\n>".to_string(), "b\nc".to_string()];
        let splitter = SpecialSplitter::new(&tokens).unwrap();
        let text = "aa\nb\ncc<\n>d\n\nee\n";
        let lines = |target| {
            let reader = ChunkReader::new(text.as_bytes(), Path::new("t"), &splitter, b"", target);
            let mut reader = reader.cutting_after_newlines(true);
            let mut out = Vec::new();
            while let Some(chunk) = reader.next_chunk().unwrap() {
                out.push(chunk.text);
            }
            out
        };
        // After "b\nc" (a special token ends a document) and after newlines outside the specials.
        assert_eq!(lines(1), ["aa\nb\nc", "c<\n>d\n", "\n", "ee\n"]);
        for target in 1..text.len() + 2 {
            let parts = lines(target);
            assert_eq!(parts.concat(), text);
            let cut_well = |part: &String| ["\n", "b\nc", "<\n>"].iter().any(|end| part.ends_with(end));
            assert!(parts[..parts.len() - 1].iter().all(cut_well), "{parts:?}");
            let found: usize = parts.iter().map(|part| splitter.find_all(part.as_bytes()).count()).sum();
            assert_eq!(found, 2, "target {target}: {parts:?}");
        }
        // Without it, a pattern with no whitespace cuts reads a text with no special token whole.
        let none = SpecialSplitter::new(&[]).unwrap();
        let mut reader = ChunkReader::new(text.as_bytes(), Path::new("t"), &none, b"", 1);
        assert_eq!(reader.next_chunk().unwrap().unwrap().text, text);
    }

    #[test]
    fn reports_the_file_offset_of_invalid_utf8() {
        let splitter = SpecialSplitter::new(&[]).unwrap();
        let bytes: &[u8] = b"ok ok ok \xff";
        let mut reader = ChunkReader::new(bytes, Path::new("bad.txt"), &splitter, b" \t\r\n", 4);
        let err = loop {
            match reader.next_chunk() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("no error"),
                Err(e) => break e,
            }
        };
        assert_eq!(err.to_string(), "bad.txt: invalid UTF-8 at byte offset 9; the corpus must be UTF-8 text");
    }

    /// The first error's offset (or none), as std's `from_utf8` finds it in
    /// the whole input: simdutf8 validates the chunks.
    #[test]
    fn utf8_errors_where_std_finds_them_for_any_chunk_size() {
        let splitter = SpecialSplitter::new(&[]).unwrap();
        let alphabet: [&[u8]; 12] = [
            b"a",
            b" ",
            b"\n",
            "é".as_bytes(),
            "中".as_bytes(),
            "😀".as_bytes(),
            b"\xff",
            b"\xc3",
            b"\xe4\xb8",
            b"\xed\xa0\x80",
            b"\xf0\x9f",
            b"\x80",
        ];
        let mut rng = crate::util::test_rng::XorShift(0x9e37_79b9_7f4a_7c15);
        for case in 0..400 {
            let mut bytes = Vec::new();
            for _ in 0..(case % 97) * 3 {
                let draw = rng.next();
                // Mostly valid text; an invalid sequence about one time in 40.
                let pick =
                    if draw.is_multiple_of(40) { 6 + (draw >> 8) as usize % 6 } else { (draw >> 8) as usize % 6 };
                bytes.extend_from_slice(alphabet[pick]);
            }
            let expected = std::str::from_utf8(&bytes).err().map(|e| e.valid_up_to() as u64);
            for target in [1, 5, 64, 1 << 20] {
                let mut reader = ChunkReader::new(&bytes[..], Path::new("t"), &splitter, b" \t\r\n", target);
                let got = loop {
                    match reader.next_chunk() {
                        Ok(Some(_)) => continue,
                        Ok(None) => break None,
                        Err(Error::InvalidUtf8 { offset, .. }) => break Some(offset),
                        Err(e) => panic!("{e}"),
                    }
                };
                assert_eq!(got, expected, "case {case}, target {target}: {bytes:?}");
            }
        }
    }
}
