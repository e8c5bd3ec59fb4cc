//! The special-token splitter over arbitrary token lists and text: the pieces
//! reassemble the text, text pieces are never empty, and the split is the one
//! of Python's `re.split` on the tokens sorted longest first.
//!
//! Input: UTF-8 fields separated by the byte 0xFF (never in UTF-8): the
//! special tokens, then the text (`tests/test_fuzz_regressions.py` reads the
//! corpus the same way).
#![no_main]

use bpeforge::{Piece, SpecialSplitter};
use bpeforge_fuzz::{reference_special_split, utf8_fields};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(mut fields) = utf8_fields(data) else { return };
    let text = fields.pop().unwrap();
    let mut tokens: Vec<String> = fields.into_iter().map(str::to_string).collect();
    tokens.truncate(16);
    let splitter = match SpecialSplitter::new(&tokens) {
        Ok(splitter) => splitter,
        Err(_) => {
            // Refused only for an empty or a repeated token.
            let mut seen = std::collections::HashSet::new();
            assert!(tokens.iter().any(|t| t.is_empty() || !seen.insert(t)), "refused {tokens:?}");
            return;
        }
    };
    assert_eq!(splitter.max_len(), tokens.iter().map(String::len).max().unwrap_or(0));
    let pieces: Vec<Piece> = splitter.split(text).collect();
    let mut joined = String::new();
    for (i, piece) in pieces.iter().enumerate() {
        match *piece {
            Piece::Text(t) => {
                assert!(!t.is_empty(), "empty text piece");
                assert!(!matches!(pieces.get(i + 1), Some(Piece::Text(_))), "two text pieces in a row");
                joined.push_str(t);
            }
            Piece::Special(index) => joined.push_str(&tokens[index]),
        }
    }
    assert_eq!(joined, text);

    let expected = reference_special_split(&tokens, text);
    let got: Vec<Result<usize, String>> = pieces
        .iter()
        .map(|p| match *p {
            Piece::Special(index) => Ok(index),
            Piece::Text(t) => Err(t.to_string()),
        })
        .collect();
    assert_eq!(got, expected, "tokens {tokens:?}");

    // find_all gives the same matches, at byte ranges holding the token.
    let mut specials_seen = Vec::new();
    for (start, end, index) in splitter.find_all(text.as_bytes()) {
        assert_eq!(&text.as_bytes()[start..end], tokens[index].as_bytes());
        specials_seen.push(index);
    }
    let from_split: Vec<usize> = got.iter().filter_map(|p| p.as_ref().ok().copied()).collect();
    assert_eq!(specials_seen, from_split);
});
