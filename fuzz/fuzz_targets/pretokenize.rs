//! The preset scanners on arbitrary bytes. For valid UTF-8, each preset's
//! pieces are non-empty and concatenate back to the input; they equal those
//! of the preset's regex run on fancy-regex (a custom pattern), once the few
//! code points the two disagree on are left out of the text (below); and every
//! place where the preset may cut a text (`cut_before` + `is_split_point`) is
//! a real boundary: each side scanned alone gives the whole's pieces.
#![no_main]

use std::sync::OnceLock;

use bpeforge::PRESETS;
use bpeforge::{is_split_point, Gpt2Splitter};
use bpeforge::Pattern;
use libfuzzer_sys::fuzz_target;

/// Split points checked per input and preset (each check rescans the text).
const MAX_CHECKED_SPLITS: usize = 8;

/// Where fancy-regex's Unicode 16.0 classes and the scanners' (from Python's
/// `regex`, Unicode 17.0) differ: the code points 17.0 newly assigned to a
/// letter, mark or number class, and U+0295 (Ll in 16.0, Lo in 17.0). Listed
/// by `tests/test_patterns.py::class_disagreements` (4,700 code points; these
/// ranges cover them, with a few unassigned neighbours).
const NEWER_IN_UNICODE_17: [(u32, u32); 19] = [
    (0x295, 0x295),
    (0x88F, 0x88F),
    (0xC5C, 0xC5C),
    (0xCDC, 0xCDC),
    (0x1ACF, 0x1AEB),
    (0xA7CE, 0xA7F1),
    (0x10940, 0x10959),
    (0x10EC5, 0x10EFB),
    (0x11B60, 0x11B67),
    (0x11DB0, 0x11DE9),
    (0x16EA0, 0x16ED3),
    (0x16FF2, 0x16FF6),
    (0x187F8, 0x187FF),
    (0x18D09, 0x18D1E),
    (0x18D80, 0x18DF2),
    (0x1E6C0, 0x1E6FF),
    (0x2B73A, 0x2B73F),
    (0x2CEA2, 0x2CEAD),
    (0x323B0, 0x33479),
];

/// Each preset's scanner and its regex on fancy-regex, compiled once.
fn presets() -> &'static [(Pattern, Pattern)] {
    static PATTERNS: OnceLock<Vec<(Pattern, Pattern)>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        PRESETS
            .iter()
            .map(|&(name, regex)| (Pattern::new(name).expect("preset"), Pattern::new(regex).expect("regex")))
            .collect()
    })
}

fn pieces<'t>(pattern: &Pattern, text: &'t str) -> Vec<&'t str> {
    let mut out = Vec::new();
    pattern.for_each_piece(text, |p| out.push(p)).expect("a preset never fails");
    out
}

fuzz_target!(|data: &[u8]| {
    // Invalid UTF-8 never reaches the scanners, but the chunk reader asks
    // is_split_point about raw bytes before it validates them: no panic there.
    for pos in 0..data.len() {
        let _ = is_split_point(data, pos);
    }
    let Ok(text) = std::str::from_utf8(data) else { return };
    let gpt2: Vec<&str> = Gpt2Splitter::new(text).collect();
    let agreed: String = text
        .chars()
        .filter(|&c| !NEWER_IN_UNICODE_17.iter().any(|&(lo, hi)| (lo..=hi).contains(&(c as u32))))
        .collect();

    for (scanner, regex) in presets() {
        let name = scanner.spec();
        let whole = pieces(scanner, text);
        assert!(whole.iter().all(|p| !p.is_empty()), "{name}: empty piece in {whole:?}");
        assert_eq!(whole.concat(), text, "{name}");
        if name == "gpt2" {
            assert_eq!(whole, gpt2, "the iterator and for_each_piece");
        }
        assert_eq!(pieces(scanner, &agreed), pieces(regex, &agreed), "{name} against fancy-regex");
        check_split_points(scanner, text, &whole);
    }
});

/// Each place where `scanner`'s pattern may cut `text` is a boundary of its
/// pieces `whole`, and the two sides scanned alone give the whole's pieces.
fn check_split_points(scanner: &Pattern, text: &str, whole: &[&str]) {
    let name = scanner.spec();
    let bytes = text.as_bytes();
    let mut ends = Vec::with_capacity(whole.len() + 1);
    let mut end = 0;
    ends.push(0);
    for piece in whole {
        end += piece.len();
        ends.push(end);
    }
    let cut_before = scanner.cut_before();
    let splits: Vec<usize> =
        (0..bytes.len()).filter(|&pos| cut_before.contains(&bytes[pos]) && is_split_point(bytes, pos)).collect();
    let step = splits.len().div_ceil(MAX_CHECKED_SPLITS).max(1);
    for &pos in splits.iter().step_by(step).chain(splits.last()) {
        assert!(text.is_char_boundary(pos), "{name}: split point {pos} inside a char");
        let index = ends.binary_search(&pos).unwrap_or_else(|_| panic!("{name}: split point {pos} is inside a piece"));
        assert_eq!(pieces(scanner, &text[..pos]), whole[..index], "{name}: left of split point {pos}");
        assert_eq!(pieces(scanner, &text[pos..]), whole[index..], "{name}: right of split point {pos}");
    }
}
