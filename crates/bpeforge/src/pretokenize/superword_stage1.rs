//! SuperBPE's stage-1 pattern (`STAGE1_PATTERN`, `bpeforge.superbpe`'s: the
//! reference's Digits + GPT-2 without contractions, numerals in groups of
//! three from the right), cut without a regex engine. On fancy-regex its
//! look-aheads sent every match through the backtracking VM, whose shared
//! scratch pool the threads fought over: 100 MB of Gutenberg took 3.5 s to
//! cut on one thread and no less on two.
//!
//! What the regex cuts, alternative by alternative, at a char that is
//! - a number (`\p{N}`): the numeral groups of the run of numbers, as in
//!   stage 2 (`superword::cut_numbers`);
//! - a letter (`\p{L}`): the run of letters; an "other" char (no letter,
//!   number nor `\s`): the run of such chars;
//! - the space U+0020 followed by a letter or an other char: the space and
//!   that char's run (` ?\p{L}+`, ` ?[^\s\p{L}\p{N}]+`);
//! - else whitespace (`\s`): its run, all of it when the end of the text or
//!   a number follows (`\s+(?![^\s\p{N}])`), else all but its last char
//!   (which leads the next piece, or is one alone), or the one char of a run
//!   of one (`\s+`).
//!
//! The classes are the scanners' (`charclass`), made from the tables of the
//! `regex-syntax` that fancy-regex reads; tested against the regex on random
//! text and on every code point.

use crate::error::Error;
use crate::pretokenize::charclass::{class_of_flags, flags_beyond_ascii, CharClass, ASCII};
use crate::pretokenize::superword::{char_at, cut_numbers, Batch};

/// `bpeforge.superbpe.STAGE1_PATTERN`: the pattern this file cuts.
pub const STAGE1_PATTERN: &str =
    r"\p{N}+?(?=(?:\d{3})+(?!\d)|(?!\p{N}))| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?![^\s\p{N}])|\s+";

/// `Pattern::for_each_batch` for `STAGE1_PATTERN`, compiled as `regex`
/// (for the runs of numbers that are not all ASCII digits).
pub fn for_each_batch(text: &str, regex: &fancy_regex::Regex, mut visit: impl FnMut(&[usize])) -> Result<(), Error> {
    let bytes = text.as_bytes();
    let mut batch = Batch::new();
    let mut at = 0;
    while at < bytes.len() {
        let (len, class) = class_at(bytes, at);
        let end = match class {
            CharClass::Number => {
                at = cut_numbers(text, at, regex, &mut batch, &mut visit)?;
                continue;
            }
            CharClass::Letter | CharClass::Other => run_end(bytes, at + len, class),
            CharClass::Whitespace => whitespace_piece_end(bytes, at),
        };
        batch.push(end, &mut visit);
        at = end;
    }
    batch.finish(&mut visit);
    Ok(())
}

/// Where the piece that starts with whitespace at `at` ends.
#[inline]
fn whitespace_piece_end(bytes: &[u8], at: usize) -> usize {
    if bytes[at] == b' ' && at + 1 < bytes.len() {
        let (len, next) = class_at(bytes, at + 1);
        if matches!(next, CharClass::Letter | CharClass::Other) {
            return run_end(bytes, at + 1 + len, next);
        }
    }
    // The run, and where its last char starts.
    let (mut end, mut last) = (at, at);
    while end < bytes.len() {
        let (len, class) = class_at(bytes, end);
        if class != CharClass::Whitespace {
            break;
        }
        (last, end) = (end, end + len);
    }
    let keeps_all = end == bytes.len() || class_at(bytes, end).1 == CharClass::Number;
    if keeps_all || last == at {
        end
    } else {
        last
    }
}

/// Where the run of chars of `class` from `at` ends.
#[inline]
fn run_end(bytes: &[u8], mut at: usize, class: CharClass) -> usize {
    while at < bytes.len() {
        let (len, next) = class_at(bytes, at);
        if next != class {
            break;
        }
        at += len;
    }
    at
}

/// The length and class of the char at `bytes[at]` (`bytes` is a `str`'s).
#[inline(always)]
fn class_at(bytes: &[u8], at: usize) -> (usize, CharClass) {
    let byte = bytes[at];
    if byte < 0x80 {
        (1, class_of_flags(ASCII[byte as usize]))
    } else {
        let (len, code) = char_at(bytes, at);
        (len, class_of_flags(flags_beyond_ascii(code)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::test_rng::XorShift as Rng;

    /// Digits, numbers that are digits (Arabic-Indic, mathematical bold) and
    /// that are not (superscript, fraction), letters (Latin, CJK, astral),
    /// marks, punctuation, symbols and emoji, and whitespace of each kind
    /// (the space, tab, newline, no-break and ideographic spaces, U+001C,
    /// which is no `\s`).
    const CHARS: [&str; 24] = [
        "0", "1", "7", "٣", "𝟗", "²", "½", "a", "Z", "é", "中", "𠀀", "\u{301}", "'", ".", "!", "😀", " ", " ", "\t",
        "\n", "\u{a0}", "\u{3000}", "\u{1c}",
    ];

    fn regex() -> fancy_regex::Regex {
        fancy_regex::Regex::new(STAGE1_PATTERN).unwrap()
    }

    fn regex_ends(regex: &fancy_regex::Regex, text: &str) -> Vec<usize> {
        regex.find_iter(text).map(|found| found.unwrap().end()).collect()
    }

    fn scanned_ends(regex: &fancy_regex::Regex, text: &str) -> Vec<usize> {
        let mut ends = Vec::new();
        for_each_batch(text, regex, |batch| ends.extend_from_slice(batch)).unwrap();
        ends
    }

    #[test]
    fn cuts_as_the_regex_does_on_random_text() {
        let regex = regex();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..20_000 {
            let chars = rng.below(40);
            // Some texts of few kinds of chars, so that long runs come up.
            let kinds = [3, 8, CHARS.len()][rng.below(3)];
            let offset = rng.below(CHARS.len() - kinds + 1);
            let text: String = (0..chars).map(|_| CHARS[offset + rng.below(kinds)]).collect();
            assert_eq!(scanned_ends(&regex, &text), regex_ends(&regex, &text), "round {round}: {text:?}");
        }
        // More pieces than a batch holds.
        let long = "a1234567 b,  c\n\n".repeat(1000);
        assert_eq!(scanned_ends(&regex, &long), regex_ends(&regex, &long));
    }

    #[test]
    fn cuts_as_the_regex_does_around_every_code_point() {
        let regex = regex();
        let code_points: Vec<char> = (0..0x11_0000).filter_map(char::from_u32).collect();
        // Each code point after a space, twice, before a digit, after two
        // spaces and before a letter; 64 code points a text.
        for chars in code_points.chunks(64) {
            let mut text = String::new();
            for &c in chars {
                text.extend([' ', c, c, '1', ' ', ' ', c, 'a']);
            }
            assert_eq!(scanned_ends(&regex, &text), regex_ends(&regex, &text), "{text:?}");
        }
    }

    #[test]
    fn cuts_numerals_and_whitespace_as_the_reference() {
        let regex = regex();
        let pieces = |text: &str| -> Vec<String> {
            let mut from = 0;
            let ends = scanned_ends(&regex, text);
            ends.iter()
                .map(|&end| {
                    let piece = text[from..end].to_string();
                    from = end;
                    piece
                })
                .collect()
        };
        assert_eq!(pieces("it's 1234567 ok"), ["it", "'", "s", " ", "1", "234", "567", " ok"]);
        assert_eq!(pieces("a   b  \n\nc   7"), ["a", "  ", " b", "  \n", "\n", "c", "   ", "7"]);
    }
}
