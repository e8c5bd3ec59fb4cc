//! JSON Lines records read in the core: each record's text field, as
//! Python's `bpeforge.inputs.jsonl_texts` takes it, for a block of lines
//! (`line_blocks.rs`) read in parallel.
//!
//! The core takes a record itself only where it cannot disagree with
//! Python's `json`: a line of UTF-8 that serde_json reads as an object whose
//! field (the last one, when it repeats, as a Python dict keeps it) is a
//! string. serde_json is the stricter of the two, never the looser: it
//! refuses a lone surrogate escape (in any string), `NaN` and `Infinity`,
//! numbers past a double's range, and nesting deeper than 128 levels, all
//! of which Python reads. Every line it refuses, and every line that is not
//! a record with the field as a string, is handed back to Python as it is
//! (`Record::ForPython`), and Python decides: the error it reports for a bad
//! record (not JSON, not an object, no field, a field that is not a string,
//! a lone surrogate in the field), in its own words, or the record's text.
//! So the messages are Python's, and a record's text is the same either way.
//!
//! One way Python refuses what serde_json reads: an integer of more digits
//! than `sys.get_int_max_str_digits()` (4,300 by default, 640 at least)
//! raises a ValueError. A line with a run of more than 640 digits goes to
//! Python.

use std::ops::Range;

use rayon::prelude::*;
use serde::de::{Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::io::line_blocks::LineBlock;

/// What one line of a JSON Lines file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    /// Only whitespace (Python's `bytes.strip`): skipped.
    Blank,
    /// A record whose text was appended to the caller's buffer.
    Text,
    /// A line for Python to read (see the module's comment).
    ForPython,
}

/// What Python's `bytes.strip()` removes: ASCII whitespace.
const PYTHON_WHITESPACE: &[u8] = b" \t\n\r\x0b\x0c";

/// The fewest digits Python's limit on integer conversion may be set to
/// (`sys.int_info.str_digits_check_threshold`).
const PYTHON_INT_DIGITS_MIN_LIMIT: usize = 640;

/// Read the record on `line` (no `\n`): its `field`'s text is appended to `out` when it is `Record::Text`;
/// otherwise `out` is as it was.
pub fn read_record(line: &[u8], field: &str, out: &mut String) -> Record {
    if line.iter().all(|byte| PYTHON_WHITESPACE.contains(byte)) {
        return Record::Blank;
    }
    let Ok(line) = simdutf8::basic::from_utf8(line) else { return Record::ForPython };
    if has_digit_run_over(line.as_bytes(), PYTHON_INT_DIGITS_MIN_LIMIT) {
        return Record::ForPython;
    }
    let start = out.len();
    let mut json = serde_json::Deserializer::from_str(line);
    let found = json.deserialize_map(FieldText { field, out, start }).and_then(|found| json.end().map(|()| found));
    if let Ok(true) = found {
        return Record::Text;
    }
    out.truncate(start);
    Record::ForPython
}

/// Whether `bytes` hold more than `limit` ASCII digits in a row. Such a run
/// covers a multiple of `limit`: only the bytes there start a look around.
fn has_digit_run_over(bytes: &[u8], limit: usize) -> bool {
    (0..bytes.len()).step_by(limit).any(|at| {
        let before = bytes[..at].iter().rev().take_while(|byte| byte.is_ascii_digit()).count();
        let after = bytes[at..].iter().take_while(|byte| byte.is_ascii_digit()).count();
        before + after > limit
    })
}

/// Visits a record's object: whether it has `field` as a string, whose text (the last one's) is in `out` from `start`.
struct FieldText<'a> {
    field: &'a str,
    out: &'a mut String,
    start: usize,
}

impl<'de> Visitor<'de> for FieldText<'_> {
    type Value = bool;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(is_field) = map.next_key_seed(KeyIs(self.field))? {
            if is_field {
                // A repeated field: Python's dict keeps the last.
                self.out.truncate(self.start);
                map.next_value_seed(AppendString(self.out))?;
                found = true;
            } else {
                map.next_value::<Skipped>()?;
            }
        }
        Ok(found)
    }
}

/// A value read and dropped, as `IgnoredAny` but through `deserialize_any`, so that serde_json's limit
/// of 128 levels of nesting holds (it skips an ignored value to any depth, where Python's `json` raises a
/// RecursionError past its own limit): a deeper record goes to Python.
struct Skipped;

impl<'de> Deserialize<'de> for Skipped {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Skipped, D::Error> {
        deserializer.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skipped;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_str<E>(self, _: &str) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_unit<E>(self) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skipped, A::Error> {
        while seq.next_element::<Skipped>()?.is_some() {}
        Ok(Skipped)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skipped, A::Error> {
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value::<Skipped>()?;
        }
        Ok(Skipped)
    }
}

/// Whether a key is the field.
struct KeyIs<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<bool, E> {
        Ok(key == self.0)
    }
}

/// A string value appended to the buffer; any other value is an error (the record goes to Python).
struct AppendString<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for AppendString<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        // serde_json's strings as `str` refuse a lone surrogate escape.
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for AppendString<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<(), E> {
        self.0.push_str(text);
        Ok(())
    }
}

/// A line the core left for Python to read, and where it goes among the documents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineForPython {
    /// The index in the block of the document it comes before.
    pub before: usize,
    pub number: u64,
    pub line: Vec<u8>,
}

/// A block's records: the texts the core read, and the lines it left for Python, in line order.
#[derive(Debug, Default)]
pub struct BlockRecords {
    parts: Vec<PartRecords>,
    pub for_python: Vec<LineForPython>,
}

/// The records of a run of a block's lines, read by one worker.
#[derive(Debug, Default)]
struct PartRecords {
    text: String,
    /// Where each document's text ends in `text`.
    ends: Vec<usize>,
    /// Lines for Python: the documents before them in this part, their index among its lines, their bytes.
    for_python: Vec<(usize, u64, Range<usize>)>,
    lines: u64,
}

impl BlockRecords {
    /// The documents' texts, in order.
    pub fn texts(&self) -> Vec<&str> {
        let mut texts = Vec::with_capacity(self.parts.iter().map(|part| part.ends.len()).sum());
        for part in &self.parts {
            let mut start = 0;
            for &end in &part.ends {
                texts.push(&part.text[start..end]);
                start = end;
            }
        }
        texts
    }

    /// The bytes of all the documents' texts.
    pub fn text_bytes(&self) -> u64 {
        self.parts.iter().map(|part| part.text.len() as u64).sum()
    }
}

/// Read the records of `block` in `parts` runs of lines, in parallel on the current rayon pool.
pub fn read_block(block: &LineBlock, field: &str, parts: usize) -> BlockRecords {
    let runs = line_runs(&block.bytes, parts.max(1));
    let read: Vec<PartRecords> = runs.into_par_iter().map(|run| read_part(&block.bytes, run, field)).collect();
    let (mut documents, mut line) = (0, block.first_line);
    let mut for_python = Vec::new();
    for part in &read {
        for (before, index, bytes) in &part.for_python {
            let line_bytes = block.bytes[bytes.clone()].to_vec();
            for_python.push(LineForPython { before: documents + before, number: line + index, line: line_bytes });
        }
        documents += part.ends.len();
        line += part.lines;
    }
    BlockRecords { parts: read, for_python }
}

/// `bytes` cut into about `parts` runs of whole lines.
fn line_runs(bytes: &[u8], parts: usize) -> Vec<Range<usize>> {
    let mut runs = Vec::with_capacity(parts);
    let mut start = 0;
    for part in 1..=parts {
        if start >= bytes.len() {
            break;
        }
        let target = (bytes.len() * part / parts).max(start);
        let end = match memchr::memchr(b'\n', &bytes[target..]) {
            Some(newline) if part < parts => target + newline + 1,
            _ => bytes.len(),
        };
        runs.push(start..end);
        start = end;
    }
    runs
}

fn read_part(bytes: &[u8], run: Range<usize>, field: &str) -> PartRecords {
    let mut part = PartRecords { text: String::with_capacity(run.len()), ..PartRecords::default() };
    let mut start = run.start;
    while start < run.end {
        let end = memchr::memchr(b'\n', &bytes[start..run.end]).map_or(run.end, |newline| start + newline);
        match read_record(&bytes[start..end], field, &mut part.text) {
            Record::Blank => {}
            Record::Text => part.ends.push(part.text.len()),
            Record::ForPython => part.for_python.push((part.ends.len(), part.lines, start..end)),
        }
        part.lines += 1;
        start = end + 1;
    }
    part
}

#[cfg(test)]
#[path = "jsonl_tests.rs"]
mod tests;
