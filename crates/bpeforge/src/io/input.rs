//! Opening an input file: plain text, or text compressed with gzip, xz or
//! zstd, decoded as it is read (never decompressed to disk or to memory whole).
//!
//! The decoders are the reference libraries' (`flate2`, `liblzma`, `zstd`); a
//! truncated or corrupt stream is a read error naming the file, never a
//! silently shorter corpus. Multi-member gzip and multi-stream xz files (what
//! `cat a.gz b.gz` makes) are read to the end.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::Path;

use crate::error::Error;

/// Compressions whose names we know; `Unsupported` ones get a clear error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Xz,
    Zstd,
    Unsupported(&'static str),
}

pub const SUPPORTED: &str = "plain UTF-8 text, .gz, .xz, .zst";

impl Compression {
    /// By the file name's last extension.
    pub fn of(path: &Path) -> Self {
        let extension = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        match extension.as_deref() {
            Some("gz" | "gzip") => Compression::Gzip,
            Some("xz") => Compression::Xz,
            Some("zst" | "zstd") => Compression::Zstd,
            Some("bz2") => Compression::Unsupported("bzip2"),
            Some("lz4") => Compression::Unsupported("lz4"),
            Some("br") => Compression::Unsupported("brotli"),
            Some("zip" | "7z" | "tar" | "tgz" | "rar") => Compression::Unsupported("an archive"),
            _ => Compression::None,
        }
    }

    pub fn is_compressed(self) -> bool {
        !matches!(self, Compression::None)
    }
}

/// A reader of the file's text bytes, decompressing as it goes.
pub fn open_input(path: &Path) -> Result<Box<dyn Read + Send>, Error> {
    let io_error = |e| Error::io(path, e);
    let compression = Compression::of(path);
    if let Compression::Unsupported(what) = compression {
        return Err(Error::InvalidArgument(format!(
            "{}: {what} is not supported; inputs may be {SUPPORTED} (decompress it first)",
            path.display()
        )));
    }
    let file = File::open(path).map_err(io_error)?;
    Ok(match compression {
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(BufReader::new(file))),
        Compression::Xz => Box::new(liblzma::read::XzDecoder::new_multi_decoder(BufReader::new(file))),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(file).map_err(io_error)?),
        Compression::None | Compression::Unsupported(_) => Box::new(file),
    })
}

/// A reader of the bytes `range` of an uncompressed file (a shard of it,
/// see `shards.rs`). A file now shorter than `range.end` is an error, never a
/// silently shorter shard: it changed since its shards were planned.
pub fn open_range(path: &Path, range: &Range<u64>) -> Result<Box<dyn Read + Send>, Error> {
    if Compression::of(path).is_compressed() {
        return Err(Error::InvalidArgument(format!(
            "{}: a byte range of a compressed file cannot be read; shard it whole",
            path.display()
        )));
    }
    let io_error = |e| Error::io(path, e);
    let mut file = File::open(path).map_err(io_error)?;
    let len = file.metadata().map_err(io_error)?.len();
    if len < range.end || range.start > range.end {
        return Err(Error::InvalidArgument(format!(
            "{}: bytes {}..{} asked for, but the file has {len} bytes; it changed since its shards were planned",
            path.display(),
            range.start,
            range.end
        )));
    }
    file.seek(SeekFrom::Start(range.start)).map_err(io_error)?;
    Ok(Box::new(file.take(range.end - range.start)))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn read_all(path: &Path) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        open_input(path).map_err(|e| e.to_string())?.read_to_end(&mut out).map_err(|e| e.to_string())?;
        Ok(out)
    }

    fn compressed(kind: &str, data: &[u8]) -> Vec<u8> {
        match kind {
            "gz" => {
                let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                enc.write_all(data).unwrap();
                enc.finish().unwrap()
            }
            "xz" => {
                let mut enc = liblzma::write::XzEncoder::new(Vec::new(), 6);
                enc.write_all(data).unwrap();
                enc.finish().unwrap()
            }
            _ => zstd::stream::encode_all(data, 3).unwrap(),
        }
    }

    #[test]
    fn decodes_and_refuses_truncated_streams() {
        let dir = std::env::temp_dir().join(format!("bpeforge-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text: Vec<u8> = "the cat sat on the mat\n".repeat(5000).into_bytes();
        for kind in ["gz", "xz", "zst"] {
            let bytes = compressed(kind, &text);
            let path = dir.join(format!("t.txt.{kind}"));
            std::fs::write(&path, &bytes).unwrap();
            assert_eq!(read_all(&path).unwrap(), text, "{kind}");
            std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
            let err = read_all(&path).expect_err(kind);
            assert!(!err.is_empty(), "{kind}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unsupported_compressions_list_the_supported_ones() {
        let err = open_input(Path::new("corpus.txt.bz2")).err().unwrap().to_string();
        assert_eq!(err, "corpus.txt.bz2: bzip2 is not supported; inputs may be plain UTF-8 text, .gz, .xz, .zst (decompress it first)");
    }
}
