//! The GPT-2 scanner on arbitrary bytes: for valid UTF-8, the pieces are
//! non-empty and concatenate back to the input, and every `is_split_point`
//! is a real boundary (each side scanned alone gives the whole's pieces).
#![no_main]

use bpeforge::pretokenize::{is_split_point, Gpt2Splitter};
use libfuzzer_sys::fuzz_target;

/// Split points checked per input (each check rescans the text).
const MAX_CHECKED_SPLITS: usize = 16;

fuzz_target!(|data: &[u8]| {
    // Invalid UTF-8 never reaches the scanner, but the chunk reader asks
    // is_split_point about raw bytes before it validates them: no panic there.
    for pos in 0..data.len() {
        let _ = is_split_point(data, pos);
    }
    let Ok(text) = std::str::from_utf8(data) else { return };
    let pieces: Vec<&str> = Gpt2Splitter::new(text).collect();
    assert!(pieces.iter().all(|p| !p.is_empty()), "empty piece in {pieces:?}");
    assert_eq!(pieces.concat(), text);

    let mut ends = Vec::with_capacity(pieces.len() + 1);
    let mut end = 0;
    ends.push(0);
    for piece in &pieces {
        end += piece.len();
        ends.push(end);
    }
    let splits: Vec<usize> = (0..data.len()).filter(|&pos| is_split_point(data, pos)).collect();
    let step = splits.len().div_ceil(MAX_CHECKED_SPLITS).max(1);
    for &pos in splits.iter().step_by(step).chain(splits.last()) {
        assert!(text.is_char_boundary(pos), "split point {pos} inside a char");
        let index = ends.binary_search(&pos).unwrap_or_else(|_| panic!("split point {pos} is inside a piece"));
        let left: Vec<&str> = Gpt2Splitter::new(&text[..pos]).collect();
        let right: Vec<&str> = Gpt2Splitter::new(&text[pos..]).collect();
        assert_eq!(left, pieces[..index], "left of split point {pos}");
        assert_eq!(right, pieces[index..], "right of split point {pos}");
    }
});
