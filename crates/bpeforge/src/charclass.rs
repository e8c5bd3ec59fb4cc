//! The three character classes of the GPT-2 pattern: `\p{L}`, `\p{N}`, `\s`.
//!
//! The ranges come from `unicode_tables.rs`, generated from the Python `regex`
//! package (the reference semantics), so classes agree with it code point for
//! code point. Lookups are O(1) for the Basic Multilingual Plane via a table
//! built once (64 KiB); astral code points fall back to a binary search.

use std::sync::OnceLock;

use crate::unicode_tables::{LETTER, NUMBER, WHITESPACE};

/// The class of a character as far as the GPT-2 pattern can tell them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CharClass {
    /// `\p{L}`
    Letter,
    /// `\p{N}`
    Number,
    /// `\s` (the Unicode White_Space property in `regex`)
    Whitespace,
    /// Everything else: what `[^\s\p{L}\p{N}]` matches.
    Other,
}

const BMP: usize = 0x1_0000;

/// Class of one code point.
#[inline]
pub fn classify(cp: u32) -> CharClass {
    if (cp as usize) < BMP {
        bmp_table()[cp as usize]
    } else {
        classify_by_search(cp)
    }
}

fn bmp_table() -> &'static [CharClass] {
    static TABLE: OnceLock<Box<[CharClass]>> = OnceLock::new();
    TABLE.get_or_init(|| (0..BMP as u32).map(classify_by_search).collect())
}

fn classify_by_search(cp: u32) -> CharClass {
    if in_ranges(LETTER, cp) {
        CharClass::Letter
    } else if in_ranges(NUMBER, cp) {
        CharClass::Number
    } else if in_ranges(WHITESPACE, cp) {
        CharClass::Whitespace
    } else {
        CharClass::Other
    }
}

fn in_ranges(ranges: &[(u32, u32)], cp: u32) -> bool {
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_and_beyond() {
        assert_eq!(classify('a' as u32), CharClass::Letter);
        assert_eq!(classify('7' as u32), CharClass::Number);
        assert_eq!(classify(' ' as u32), CharClass::Whitespace);
        assert_eq!(classify('\n' as u32), CharClass::Whitespace);
        // U+001C..U+001F are `str.isspace()` in Python but not `\s` in `regex`.
        assert_eq!(classify(0x1C), CharClass::Other);
        assert_eq!(classify('!' as u32), CharClass::Other);
        assert_eq!(classify('é' as u32), CharClass::Letter);
        assert_eq!(classify('²' as u32), CharClass::Number);
        assert_eq!(classify(0x3000), CharClass::Whitespace); // ideographic space
        assert_eq!(classify(0x1F600), CharClass::Other); // 😀
        assert_eq!(classify(0x20000), CharClass::Letter); // CJK extension B
    }
}
