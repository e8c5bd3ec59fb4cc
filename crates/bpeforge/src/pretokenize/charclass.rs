//! The character classes of the preset patterns: `\p{L}`, `\p{N}`, `\s`, and
//! o200k's `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]` and `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
//!
//! The ranges come from `unicode_tables.rs`, generated from the Unicode 16.0
//! tables of `regex-syntax` (those of tiktoken's and `tokenizers`' engines).
//! Each code point gets one byte of flags (`Flags`):
//! - ASCII from a 128-entry table known at compile time (`ASCII`), so English
//!   text is classified without decoding or touching the big table;
//! - the rest of the Basic Multilingual Plane from a 64 KiB table built once;
//! - astral code points by a binary search over runs of equal flags.

use std::sync::OnceLock;

use crate::pretokenize::unicode_tables as ranges;

/// The classes of one code point, as bits (`LETTER | UPPER`, ...).
pub type Flags = u8;

/// `\p{L}`
pub const LETTER: Flags = 1;
/// `\p{N}`
pub const NUMBER: Flags = 2;
/// `\s`: the White_Space property (not U+001C..U+001F, which Python's
/// `str.isspace` counts).
pub const SPACE: Flags = 4;
/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]` (o200k's upper-case run).
pub const UPPER: Flags = 8;
/// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]` (o200k's lower-case run).
pub const LOWER: Flags = 16;
/// CR or LF, which the presets' `[^\r\n\p{L}\p{N}]` and `[\r\n]` name apart.
pub const CR_LF: Flags = 32;

/// Flags of the ASCII code points, written out from the rules (a unit test
/// checks them against the generated tables).
pub static ASCII: [Flags; 128] = ascii_flags();

const fn ascii_flags() -> [Flags; 128] {
    let mut table = [0; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        table[b] = if c.is_ascii_uppercase() {
            LETTER | UPPER
        } else if c.is_ascii_lowercase() {
            LETTER | LOWER
        } else if c.is_ascii_digit() {
            NUMBER
        } else if c == b'\r' || c == b'\n' {
            SPACE | CR_LF
        } else if c == b' ' || c == b'\t' || c == 0x0B || c == 0x0C {
            SPACE
        } else {
            0
        };
        b += 1;
    }
    table
}

/// Code points whose flags are read from a table (`Tables::direct`): the
/// BMP and the plane above it, where emoji are. Above it, a binary search of
/// runs: with the table at the BMP only, that search was 37% of encoding a
/// run of emoji (o200k, 0.25 MB, `perf`).
const DIRECT: usize = 0x2_0000;

struct Tables {
    /// The flags of each code point below `DIRECT` (128 KiB).
    direct: Box<[Flags]>,
    /// Runs of equal flags from `DIRECT` on: (first code point, flags), sorted.
    astral: Vec<(u32, Flags)>,
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(build_tables)
}

/// Each generated class and its flag.
const CLASSES: [(&[(u32, u32)], Flags); 5] = [
    (ranges::LETTER, LETTER),
    (ranges::NUMBER, NUMBER),
    (ranges::WHITESPACE, SPACE),
    (ranges::UPPER_OR_UNCASED, UPPER),
    (ranges::LOWER_OR_UNCASED, LOWER),
];

fn build_tables() -> Tables {
    let mut direct = vec![0 as Flags; DIRECT].into_boxed_slice();
    // Astral flags: every range end is a place where the flags may change.
    let mut bounds: Vec<u32> = vec![DIRECT as u32];
    for (ranges, flag) in CLASSES {
        for &(lo, hi) in ranges {
            for cp in lo..=hi.min(DIRECT as u32 - 1) {
                direct[cp as usize] |= flag;
            }
            if hi >= DIRECT as u32 {
                bounds.push(lo.max(DIRECT as u32));
                bounds.push(hi + 1);
            }
        }
    }
    for cp in [b'\r', b'\n'] {
        direct[cp as usize] |= CR_LF;
    }
    bounds.sort_unstable();
    bounds.dedup();
    let mut astral: Vec<(u32, Flags)> = Vec::new();
    for &start in &bounds {
        let flags = flags_by_search(start);
        if astral.last().is_none_or(|&(_, last)| last != flags) {
            astral.push((start, flags));
        }
    }
    Tables { direct, astral }
}

/// Flags of one code point by binary searches in the generated ranges (slow).
fn flags_by_search(cp: u32) -> Flags {
    CLASSES.iter().filter(|(ranges, _)| in_ranges(ranges, cp)).fold(0, |acc, &(_, flag)| acc | flag)
        | if cp == '\r' as u32 || cp == '\n' as u32 { CR_LF } else { 0 }
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

/// Flags of one code point.
#[inline]
pub fn flags(cp: u32) -> Flags {
    if cp < 0x80 {
        ASCII[cp as usize]
    } else {
        flags_beyond_ascii(cp)
    }
}

/// Flags of a code point of U+0080 or above (ASCII works too, slower).
#[inline]
pub fn flags_beyond_ascii(cp: u32) -> Flags {
    let tables = tables();
    if (cp as usize) < DIRECT {
        tables.direct[cp as usize]
    } else {
        let i = tables.astral.partition_point(|&(start, _)| start <= cp);
        // i >= 1: the first run starts at `DIRECT`.
        tables.astral[i - 1].1
    }
}

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

/// GPT-2 class of one code point.
#[inline]
pub fn classify(cp: u32) -> CharClass {
    class_of_flags(flags(cp))
}

/// GPT-2 class of a code point's flags (no code point is both a letter and a
/// number or a space).
#[inline(always)]
pub fn class_of_flags(f: Flags) -> CharClass {
    if f & LETTER != 0 {
        CharClass::Letter
    } else if f & NUMBER != 0 {
        CharClass::Number
    } else if f & SPACE != 0 {
        CharClass::Whitespace
    } else {
        CharClass::Other
    }
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

    #[test]
    fn the_ascii_table_equals_the_generated_ranges() {
        for cp in 0..0x80 {
            assert_eq!(ASCII[cp as usize], flags_by_search(cp), "U+{cp:04X}");
        }
    }

    #[test]
    fn the_fast_tables_equal_the_generated_ranges() {
        for cp in (0..0x11_0000).filter(|cp| !(0xD800..0xE000).contains(cp)) {
            assert_eq!(flags(cp), flags_by_search(cp), "U+{cp:04X}");
        }
    }

    #[test]
    fn o200k_case_classes() {
        assert_eq!(flags('A' as u32), LETTER | UPPER);
        assert_eq!(flags('a' as u32), LETTER | LOWER);
        assert_eq!(flags('ǅ' as u32), LETTER | UPPER); // Lt
        assert_eq!(flags('ʰ' as u32), LETTER | UPPER | LOWER); // Lm
        assert_eq!(flags('日' as u32), LETTER | UPPER | LOWER); // Lo
        assert_eq!(flags(0x0301), UPPER | LOWER); // a mark is no letter
        assert_eq!(flags(0x1D400), LETTER | UPPER); // 𝐀 MATHEMATICAL BOLD CAPITAL A
    }
}
