//! A JSON Lines file read in blocks of whole lines, decompressed as it is
//! read (`input.rs`), each block numbered by its first line: what
//! `jsonl.rs` reads records from, a block at a time.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::io::input::open_input;

/// Whole lines of a JSON Lines file, numbered from 1 as Python's `enumerate(lines, start=1)` counts them.
#[derive(Debug)]
pub struct LineBlock {
    /// Lines, each ended by `\n` but maybe the file's last.
    pub bytes: Vec<u8>,
    /// The number of its first line.
    pub first_line: u64,
}

impl LineBlock {
    /// How many lines it holds.
    pub fn lines(&self) -> u64 {
        let newlines = memchr::memchr_iter(b'\n', &self.bytes).count() as u64;
        newlines + u64::from(!self.bytes.ends_with(b"\n"))
    }
}

/// Bytes asked of the decoder at a time.
const READ_BYTES: usize = 1 << 20;

/// A JSON Lines file read in blocks of whole lines, decompressed as it is read.
pub struct LineBlocks {
    path: PathBuf,
    reader: Box<dyn Read + Send>,
    /// Read and not yet handed out: the start of a line.
    rest: Vec<u8>,
    next_line: u64,
}

impl LineBlocks {
    pub fn open(path: &Path) -> Result<Self, Error> {
        Ok(Self { path: path.to_path_buf(), reader: open_input(path)?, rest: Vec::new(), next_line: 1 })
    }

    /// The next block of whole lines: up to the end of the line that holds its `min_bytes`th byte (a line is
    /// never cut), or to the end of the file; `None` at the end. A read error names the file.
    pub fn next_block(&mut self, min_bytes: usize) -> Result<Option<LineBlock>, Error> {
        let mut bytes = std::mem::take(&mut self.rest);
        // Where to look for the block's last newline: from its `min_bytes`th byte, and never twice over the
        // same bytes of a long line.
        let mut searched = min_bytes.max(1) - 1;
        loop {
            if bytes.len() > searched {
                if let Some(newline) = memchr::memchr(b'\n', &bytes[searched..]) {
                    self.rest = bytes.split_off(searched + newline + 1);
                    return Ok(Some(self.hand_out(bytes)));
                }
                searched = bytes.len();
            }
            if self.read_more(&mut bytes)? == 0 {
                return Ok((!bytes.is_empty()).then(|| self.hand_out(bytes)));
            }
        }
    }

    fn hand_out(&mut self, bytes: Vec<u8>) -> LineBlock {
        let block = LineBlock { bytes, first_line: self.next_line };
        self.next_line += block.lines();
        block
    }

    /// Append up to `READ_BYTES` to `bytes`; the bytes appended (0 at the end).
    fn read_more(&mut self, bytes: &mut Vec<u8>) -> Result<usize, Error> {
        let start = bytes.len();
        bytes.resize(start + READ_BYTES, 0);
        let read = loop {
            match self.reader.read(&mut bytes[start..]) {
                Ok(read) => break read,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(err) => {
                    bytes.truncate(start);
                    return Err(Error::Io { path: self.path.clone(), source: err });
                }
            }
        };
        bytes.truncate(start + read);
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn write_file(name: &str, bytes: &[u8]) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("bpeforge-jsonl-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    /// Every block of `path` read with `min_bytes`: (first line, bytes).
    fn blocks(path: &Path, min_bytes: usize) -> Vec<(u64, Vec<u8>)> {
        let mut lines = LineBlocks::open(path).unwrap();
        std::iter::from_fn(|| lines.next_block(min_bytes).unwrap())
            .map(|block| (block.first_line, block.bytes))
            .collect()
    }

    #[test]
    fn blocks_hold_whole_lines_numbered_as_python_counts_them() {
        let text = b"{\"text\": \"one\"}\n\n{\"text\": \"three\"}\r\nlast without newline";
        let (dir, path) = write_file("lines.jsonl", text);
        for min_bytes in [1, 5, 17, 18, 1000] {
            let got = blocks(&path, min_bytes);
            assert_eq!(got.concat_bytes(), text, "min {min_bytes}");
            let mut line = 1;
            for (index, (first, bytes)) in got.iter().enumerate() {
                assert_eq!(*first, line, "min {min_bytes}");
                if index + 1 < got.len() {
                    assert!(bytes.len() >= min_bytes && bytes.ends_with(b"\n"), "min {min_bytes}: {bytes:?}");
                }
                line += bytes.iter().filter(|&&b| b == b'\n').count() as u64;
            }
        }
        assert_eq!(blocks(&path, 1).len(), 4, "one line a block");
        assert_eq!(blocks(&path, 18).len(), 2, "the line holding the 18th byte ends the first block");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    trait ConcatBytes {
        fn concat_bytes(&self) -> Vec<u8>;
    }

    impl ConcatBytes for Vec<(u64, Vec<u8>)> {
        fn concat_bytes(&self) -> Vec<u8> {
            self.iter().flat_map(|(_, bytes)| bytes.iter().copied()).collect()
        }
    }

    #[test]
    fn compressed_files_are_read_through_the_decoders_and_truncation_is_an_error() {
        let text: Vec<u8> = (0..3000).flat_map(|i| format!("{{\"text\": \"record {i}\"}}\n").into_bytes()).collect();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&text).unwrap();
        let gz = gz.finish().unwrap();
        let (dir, path) = write_file("r.jsonl.gz", &gz);
        assert_eq!(blocks(&path, 4096).concat_bytes(), text);
        std::fs::write(&path, &gz[..gz.len() / 2]).unwrap();
        let mut lines = LineBlocks::open(&path).unwrap();
        let err = loop {
            match lines.next_block(4096) {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("a truncated stream read to its end"),
                Err(err) => break err.to_string(),
            }
        };
        assert!(err.contains("r.jsonl.gz"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
