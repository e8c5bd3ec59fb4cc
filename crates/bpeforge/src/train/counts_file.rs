//! The pre-token count file (`bpeforge count -o counts.bin`), format version 2.
//!
//! Little-endian, in order (see docs/format.md):
//! - magic `b"BPEFCNT\0"`, format version `u32`;
//! - pattern name: `u16` length + UTF-8;
//! - special tokens: `u32` number, then each as `u32` length + UTF-8;
//! - bytes counted `u64`, entries `u64`;
//! - entries sorted by bytes: `u32` length + bytes + `u64` count;
//! - end marker `b"END\0"`;
//! - CRC-32 (`u32`, gzip's) of every byte before it.
//!
//! Sorted entries make the file a function of the counts alone (byte-identical
//! for any thread count); the entry count and end marker catch truncation, the
//! checksum any changed byte (a count of 18 read as 2,130,706,450 trains as
//! happily as the right one). Version 1 had no checksum, so its files cannot
//! be told sound from damaged and are refused: count the corpus again.

use std::io::{self, BufRead, Read, Write};

use super::table::PretokenCounts;
use crate::error::Error;

const MAGIC: &[u8; 8] = b"BPEFCNT\0";
const END: &[u8; 4] = b"END\0";
pub const FORMAT_VERSION: u32 = 2;

/// A count table with what it was counted with.
#[derive(Debug, Clone, Default)]
pub struct CountsFile {
    pub pattern: String,
    pub special_tokens: Vec<String>,
    pub bytes_counted: u64,
    /// Of `bytes_counted`, those no match of a custom pattern covered (see
    /// `Pattern::unmatched_bytes`). Kept in memory for the report only: not in
    /// the file format, so 0 after reading a file.
    pub unmatched_bytes: u64,
    pub counts: PretokenCounts,
}

impl CountsFile {
    pub fn write_to(&self, out: impl Write) -> io::Result<()> {
        let mut out = Checksummed::new(out);
        out.write_all(MAGIC)?;
        out.write_all(&FORMAT_VERSION.to_le_bytes())?;
        write_str(&mut out, &self.pattern, 2)?;
        out.write_all(&(self.special_tokens.len() as u32).to_le_bytes())?;
        for token in &self.special_tokens {
            write_str(&mut out, token, 4)?;
        }
        let mut entries: Vec<(Vec<u8>, u64)> = Vec::with_capacity(self.counts.len());
        self.counts.for_each(|bytes, n| entries.push((bytes.to_vec(), n)));
        entries.sort_unstable();
        out.write_all(&self.bytes_counted.to_le_bytes())?;
        out.write_all(&(entries.len() as u64).to_le_bytes())?;
        for (bytes, n) in &entries {
            out.write_all(&(bytes.len() as u32).to_le_bytes())?;
            out.write_all(bytes)?;
            out.write_all(&n.to_le_bytes())?;
        }
        out.write_all(END)?;
        let checksum = out.checksum();
        out.inner.write_all(&checksum.to_le_bytes())?;
        out.inner.flush()
    }

    /// Read a count file; `what` names it in errors.
    pub fn read_from(input: impl BufRead, what: &str) -> Result<Self, Error> {
        let mut input = Checksummed::new(input);
        let bad = |why: String| Error::InvalidArgument(format!("{what}: {why}"));
        let io_err = |e: io::Error| match e.kind() {
            io::ErrorKind::UnexpectedEof => bad("the file is truncated".into()),
            _ => bad(e.to_string()),
        };
        let mut magic = [0u8; 8];
        input.read_exact(&mut magic).map_err(io_err)?;
        if &magic != MAGIC {
            return Err(bad("not a bpeforge count file (written by `bpeforge count`)".into()));
        }
        let version = read_u32(&mut input).map_err(io_err)?;
        if version == 1 {
            return Err(bad(format!(
                "count file format version 1, which has no checksum to tell a sound file from a damaged one; this \
                 bpeforge reads version {FORMAT_VERSION}: count the corpus again (bpeforge count)"
            )));
        }
        if version != FORMAT_VERSION {
            return Err(bad(format!(
                "count file format version {version}; this bpeforge reads version {FORMAT_VERSION} (recount the corpus)"
            )));
        }
        let pattern = read_str(&mut input, 2).map_err(io_err)?;
        let num_specials = read_u32(&mut input).map_err(io_err)?;
        let special_tokens =
            (0..num_specials).map(|_| read_str(&mut input, 4)).collect::<io::Result<_>>().map_err(io_err)?;
        let bytes_counted = read_u64(&mut input).map_err(io_err)?;
        let entries = read_u64(&mut input).map_err(io_err)?;
        let mut counts = PretokenCounts::default();
        let (mut bytes, mut previous) = (Vec::new(), None::<Vec<u8>>);
        for _ in 0..entries {
            let len = read_u32(&mut input).map_err(io_err)?;
            read_exactly(&mut input, len as u64, &mut bytes).map_err(io_err)?;
            let n = read_u64(&mut input).map_err(io_err)?;
            // Entries are written sorted and unique; anything else is a damaged
            // file (and a repeated entry could add up past u64).
            if previous.as_deref().is_some_and(|p| p >= bytes.as_slice()) {
                return Err(bad("corrupt: entries are not sorted and unique".into()));
            }
            // `bpeforge count` writes only pre-tokens it saw; a count of 0
            // would make pairs that are in no word (the merge loop takes a
            // pair of count 0 for no pair at all).
            if n == 0 {
                return Err(bad(format!("corrupt: pre-token {:?} has a count of 0", String::from_utf8_lossy(&bytes))));
            }
            counts.insert(&bytes, n);
            previous = Some(bytes.clone());
        }
        let mut end = [0u8; 4];
        input.read_exact(&mut end).map_err(io_err)?;
        if &end != END {
            return Err(bad("corrupt: no end marker after the last entry".into()));
        }
        let computed = input.checksum();
        let stored = read_u32(&mut input.inner).map_err(io_err)?;
        if stored != computed {
            return Err(bad(format!(
                "corrupt: its checksum is {stored:#010x} but its contents sum to {computed:#010x} (a byte changed \
                 since it was written); count the corpus again"
            )));
        }
        if !input.inner.fill_buf().map_err(io_err)?.is_empty() {
            return Err(bad("corrupt: more data after its checksum".into()));
        }
        Ok(Self { pattern, special_tokens, bytes_counted, unmatched_bytes: 0, counts })
    }

    /// Add `other`'s counts; both must be counted the same way.
    pub fn merge(&mut self, other: CountsFile, what: &str) -> Result<(), Error> {
        if other.pattern != self.pattern || other.special_tokens != self.special_tokens {
            return Err(Error::InvalidArgument(format!(
                "{what}: counted with pattern {:?} and special tokens {:?}, not {:?} and {:?}; \
                 count files can only be added when both match",
                other.pattern, other.special_tokens, self.pattern, self.special_tokens
            )));
        }
        let overflow = || Error::InvalidArgument(format!("{what}: adding its counts overflows 64 bits"));
        self.bytes_counted = self.bytes_counted.checked_add(other.bytes_counted).ok_or_else(overflow)?;
        self.unmatched_bytes = self.unmatched_bytes.saturating_add(other.unmatched_bytes);
        let mut overflowed = false;
        other.counts.for_each(|bytes, n| overflowed |= self.counts.add_checked(bytes, n).is_none());
        if overflowed {
            return Err(overflow());
        }
        Ok(())
    }
}

/// A reader or writer that sums (CRC-32) every byte that passes through it.
struct Checksummed<T> {
    inner: T,
    sum: crc32fast::Hasher,
}

impl<T> Checksummed<T> {
    fn new(inner: T) -> Self {
        Self { inner, sum: crc32fast::Hasher::new() }
    }

    fn checksum(&self) -> u32 {
        self.sum.clone().finalize()
    }
}

impl<R: Read> Read for Checksummed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.sum.update(&buf[..n]);
        Ok(n)
    }
}

impl<W: Write> Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.sum.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn write_str(out: &mut impl Write, text: &str, width: usize) -> io::Result<()> {
    out.write_all(&(text.len() as u64).to_le_bytes()[..width])?;
    out.write_all(text.as_bytes())
}

fn read_str(input: &mut impl Read, width: usize) -> io::Result<String> {
    let mut len = [0u8; 8];
    input.read_exact(&mut len[..width])?;
    let mut text = Vec::new();
    read_exactly(input, u64::from_le_bytes(len), &mut text)?;
    String::from_utf8(text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Read `len` bytes into `buf` (replacing its contents). The length comes
/// from the file, so it is not trusted for an allocation: the buffer grows
/// only with bytes actually read, and a short file is `UnexpectedEof`.
fn read_exactly(input: &mut impl Read, len: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    input.take(len).read_to_end(buf)?;
    if (buf.len() as u64) < len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

fn read_u32(input: &mut impl Read) -> io::Result<u32> {
    let mut buf = [0u8; 4];
    input.read_exact(&mut buf)?;
    Ok(u32::from_le_bytes(buf))
}

fn read_u64(input: &mut impl Read) -> io::Result<u64> {
    let mut buf = [0u8; 8];
    input.read_exact(&mut buf)?;
    Ok(u64::from_le_bytes(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CountsFile {
        let mut counts = PretokenCounts::default();
        counts.insert(b" the", 5_000_000_000); // beyond u32
        counts.insert(b"\xff\x00", 1);
        counts.insert(b"a long pre-token of more than fifteen bytes", 2);
        CountsFile {
            pattern: "gpt2".into(),
            special_tokens: vec!["<|e|>".into()],
            bytes_counted: 99,
            unmatched_bytes: 0,
            counts,
        }
    }

    fn entries(file: &CountsFile) -> Vec<(Vec<u8>, u64)> {
        let mut out = Vec::new();
        file.counts.for_each(|b, n| out.push((b.to_vec(), n)));
        out.sort();
        out
    }

    #[test]
    fn round_trip_is_exact_and_deterministic() {
        let mut written = Vec::new();
        sample().write_to(&mut written).unwrap();
        let read = CountsFile::read_from(written.as_slice(), "c.bin").unwrap();
        assert_eq!(entries(&read), entries(&sample()));
        assert_eq!((read.pattern.as_str(), read.bytes_counted), ("gpt2", 99));
        let mut again = Vec::new();
        read.write_to(&mut again).unwrap();
        assert_eq!(again, written);
    }

    #[test]
    fn truncation_and_other_versions_are_named() {
        let mut written = Vec::new();
        sample().write_to(&mut written).unwrap();
        let err = CountsFile::read_from(&written[..written.len() - 6], "c.bin").unwrap_err();
        assert_eq!(err.to_string(), "c.bin: the file is truncated");
        written[8] = 7; // format version 7
        let err = CountsFile::read_from(written.as_slice(), "c.bin").unwrap_err();
        assert!(err.to_string().contains("format version 7; this bpeforge reads version 2"), "{err}");
    }

    #[test]
    fn any_changed_byte_is_refused_naming_the_file() {
        let mut written = Vec::new();
        sample().write_to(&mut written).unwrap();
        for at in 0..written.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut damaged = written.clone();
                damaged[at] ^= flip;
                let err = CountsFile::read_from(damaged.as_slice(), "c.bin").unwrap_err().to_string();
                assert!(err.starts_with("c.bin: "), "byte {at}: {err}");
            }
        }
        // A count (18 -> 2,130,706,450 in the wild) reads as a valid entry: only the checksum sees it.
        let count_at = written.len() - 8 - 8;
        let mut damaged = written.clone();
        damaged[count_at + 3] ^= 0x7f;
        let err = CountsFile::read_from(damaged.as_slice(), "c.bin").unwrap_err().to_string();
        assert!(err.contains("corrupt: its checksum is") && err.contains("count the corpus again"), "{err}");
    }

    #[test]
    fn version_1_and_data_after_the_checksum_are_refused() {
        let mut written = Vec::new();
        sample().write_to(&mut written).unwrap();
        let mut version_1 = written[..written.len() - 4].to_vec(); // version 1 ended at the end marker
        version_1[8..12].copy_from_slice(&1u32.to_le_bytes());
        let err = CountsFile::read_from(version_1.as_slice(), "old.bin").unwrap_err().to_string();
        assert!(err.starts_with("old.bin: count file format version 1, which has no checksum"), "{err}");
        assert!(err.contains("count the corpus again"), "{err}");
        written.push(0);
        let err = CountsFile::read_from(written.as_slice(), "c.bin").unwrap_err().to_string();
        assert_eq!(err, "c.bin: corrupt: more data after its checksum");
    }

    #[test]
    fn a_lying_length_is_a_truncation_not_a_huge_allocation() {
        let mut written = Vec::new();
        sample().write_to(&mut written).unwrap();
        // The pattern's u16 length sits at byte 12; special-token lengths are u32.
        let mut lying = written.clone();
        let specials_at = 12 + 2 + 4 + 4; // magic+version, "gpt2" with its length, count
        lying[specials_at..specials_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = CountsFile::read_from(lying.as_slice(), "c.bin").unwrap_err();
        assert_eq!(err.to_string(), "c.bin: the file is truncated");
    }

    #[test]
    fn a_count_of_zero_is_refused() {
        let mut counts = PretokenCounts::default();
        counts.insert(b"ab", 3);
        let mut written = Vec::new();
        CountsFile { pattern: "gpt2".into(), counts, ..CountsFile::default() }.write_to(&mut written).unwrap();
        // The one entry's u64 count ends 8 bytes before the end (the end marker, the checksum).
        let count_at = written.len() - 8 - 8;
        written[count_at..count_at + 8].copy_from_slice(&0u64.to_le_bytes());
        let err = CountsFile::read_from(written.as_slice(), "z.bin").unwrap_err();
        assert_eq!(err.to_string(), "z.bin: corrupt: pre-token \"ab\" has a count of 0");
    }

    #[test]
    fn repeated_entries_and_overflowing_sums_are_refused() {
        let mut counts = PretokenCounts::default();
        counts.insert(b"a", u64::MAX);
        let huge = CountsFile { pattern: "gpt2".into(), counts, ..CountsFile::default() };
        let mut total = huge.clone();
        assert!(total.merge(huge.clone(), "h.bin").unwrap_err().to_string().contains("overflows 64 bits"));
        // A file listing one entry twice (never written by us) is corrupt.
        let mut written = Vec::new();
        huge.write_to(&mut written).unwrap();
        let entry_at = written.len() - 8 - (4 + 1 + 8);
        let entry = written[entry_at..written.len() - 8].to_vec();
        let mut doubled = written[..entry_at].to_vec();
        let count_at = doubled.len() - 8;
        doubled[count_at..].copy_from_slice(&2u64.to_le_bytes());
        doubled.extend_from_slice(&entry);
        doubled.extend_from_slice(&entry);
        doubled.extend_from_slice(b"END\0");
        let err = CountsFile::read_from(doubled.as_slice(), "d.bin").unwrap_err().to_string();
        assert_eq!(err, "d.bin: corrupt: entries are not sorted and unique");
    }

    #[test]
    fn merge_adds_and_refuses_other_settings() {
        let mut total = sample();
        total.merge(sample(), "b.bin").unwrap();
        assert_eq!(entries(&total)[0], (b" the".to_vec(), 10_000_000_000));
        let mut other = sample();
        other.special_tokens.clear();
        assert!(total.merge(other, "x.bin").unwrap_err().to_string().contains("x.bin: counted with"));
    }
}
