//! GPT-2's tokenizer files, `vocab.json` (`{token text: id}`) and `merges.txt`
//! (`left right` lines), read in one pass without Python (75 ms of Python per
//! process, which `bpeforge encode` pays on every run).
//!
//! Strict on purpose: anything a well-formed file does not hold (invalid UTF-8,
//! an id that is not an integer in 0..2^32, an id given twice, a character that
//! is not one of GPT-2's 256 byte characters, a malformed merge line, JSON that
//! is not one flat object) gives `None`, and the caller's reference reader (the
//! Python one, which names the file and line of every problem) decides. So this
//! reader only ever agrees with it or defers to it; `tests/test_io.py` checks
//! both on generated and mutated files.

use std::fmt;

use rustc_hash::FxHashSet;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};

use crate::bpe::merges::Merge;

/// `vocab.json`'s entries, `(id, token bytes)`, in file order (two ids may
/// share bytes), or `None` (see the module's comment).
pub fn parse_vocab(json: &[u8]) -> Option<Vec<(u32, Vec<u8>)>> {
    let Entries(entries) = serde_json::from_slice(json).ok()?;
    let decode = ByteDecoder::new();
    let mut seen = FxHashSet::with_capacity_and_hasher(entries.len(), Default::default());
    let mut vocab = Vec::with_capacity(entries.len());
    for (text, id) in entries {
        let id = u32::try_from(id).ok()?;
        if !seen.insert(id) {
            return None;
        }
        vocab.push((id, decode.token(&text)?));
    }
    Some(vocab)
}

/// `merges.txt`'s merges in order, or `None`. As GPT-2 writes it: an optional
/// first line `#version...`, then `left right` per line (`\r\n` ends allowed,
/// blank lines skipped).
pub fn parse_merges(text: &[u8]) -> Option<Vec<Merge<Vec<u8>>>> {
    let text = std::str::from_utf8(text).ok()?;
    let decode = ByteDecoder::new();
    let mut lines = text.split('\n').peekable();
    if lines.peek().is_some_and(|first| first.starts_with("#version")) {
        lines.next();
    }
    let mut merges = Vec::new();
    for line in lines {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let (left, right) = line.split_once(' ')?;
        if left.is_empty() || right.is_empty() || right.contains(' ') {
            return None;
        }
        merges.push((decode.token(left)?, decode.token(right)?));
    }
    Some(merges)
}

/// GPT-2's byte-to-character table, inverted: the printable bytes `!..~`,
/// `¡..¬` and `®..ÿ` stand for themselves, the other 68 bytes for U+0100 onwards
/// in byte order (U+0143 is 0xAD).
struct ByteDecoder {
    byte_of: [Option<u8>; 256 + 68],
}

impl ByteDecoder {
    fn new() -> Self {
        let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        let mut byte_of = [None; 256 + 68];
        let mut shifted = 256;
        for b in 0..=255u8 {
            if printable(b) {
                byte_of[b as usize] = Some(b);
            } else {
                byte_of[shifted] = Some(b);
                shifted += 1;
            }
        }
        Self { byte_of }
    }

    fn token(&self, text: &str) -> Option<Vec<u8>> {
        text.chars().map(|c| self.byte_of.get(c as usize).copied().flatten()).collect()
    }
}

/// A JSON object's entries as `(key, unsigned integer)` pairs in order,
/// repeated keys kept (serde's maps would keep only the last).
struct Entries(Vec<(String, u64)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EntriesVisitor)
    }
}

struct EntriesVisitor;

impl<'de> Visitor<'de> for EntriesVisitor {
    type Value = Entries;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object of token texts to ids")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(entry) = map.next_entry::<String, u64>()? {
            entries.push(entry);
        }
        Ok(Entries(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_gpt2_spellings_and_keeps_file_order() {
        let vocab = parse_vocab(r#"{"!": 0, "\u0120the": 7, "Ġa": 3, "Ā": 9, "Ń": 2}"#.as_bytes()).unwrap();
        let expected: Vec<(u32, Vec<u8>)> =
            vec![(0, b"!".to_vec()), (7, b" the".to_vec()), (3, b" a".to_vec()), (9, vec![0]), (2, vec![0xAD])];
        assert_eq!(vocab, expected);
        let merges = parse_merges("#version: 0.2\nĠ t\r\n\nĠt he\n".as_bytes()).unwrap();
        assert_eq!(merges, vec![(b" ".to_vec(), b"t".to_vec()), (b" t".to_vec(), b"he".to_vec())]);
    }

    #[test]
    fn defers_whatever_is_unusual() {
        for json in [
            r#"{"a": 1, "b": 1}"#,  // an id twice
            r#"{"a": 4294967296}"#, // not 32-bit
            r#"{"a": 1.0}"#,        // not an integer
            r#"{"a": -1}"#,         // negative
            r#"{"a": true}"#,       // a bool
            r#"{" ": 1}"#,          // a space is not a GPT-2 byte character
            r#"{"ń": 1}"#,          // U+0144, one past the table
            r#"["a", 1]"#,          // not an object
            r#"{"a": 1"#,           // truncated
            "{\"\\ud800\": 1}",     // a lone surrogate
            "\u{feff}{\"a\": 1}",   // a byte-order mark
        ] {
            assert_eq!(parse_vocab(json.as_bytes()), None, "{json}");
        }
        assert!(parse_vocab(br#"{"a": 1, "a": 2}"#).is_some(), "two ids may share bytes");
        for merges in ["a  b", "a b c", " a b", "a", "a b ", "a\tb", "#version\nx\u{3000}y"] {
            assert_eq!(parse_merges(merges.as_bytes()), None, "{merges:?}");
        }
        assert_eq!(parse_merges(b"\xff b"), None, "invalid UTF-8");
    }
}
