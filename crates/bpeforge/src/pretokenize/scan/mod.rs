//! Hand-written pre-tokenizers for the preset patterns, one file per family:
//! - `gpt2`: GPT-2's pattern (the default, CS336);
//! - `cl100k`: cl100k (GPT-3.5/4) and its relatives llama3 (Llama 3) and
//!   qwen2 (Qwen2), which differ only in digit runs and trailing whitespace;
//! - `o200k`: o200k (GPT-4o), which splits words at case changes.
//!
//! Each `piece_end(bytes, start)` returns where the piece that starts at
//! `start` ends, trying the regex's alternatives in the pattern's order, as the
//! Python `regex` package does (the reference semantics): at a position, the
//! first alternative that matches wins, and within it the backtracking engine's
//! first success. None of the patterns can fail or match empty at any position
//! (every char is a letter, a number, whitespace or "other", and each has an
//! alternative), so the pieces tile the text and none is dropped.
//!
//! The backtracking of each alternative is worked out once, in the comments
//! of each family, into a one-pass rule with at most one char of look-ahead
//! (plus, for whitespace, the end of the run). Nothing looks behind its start,
//! so a text may be cut at any boundary of its pieces and each part scanned
//! alone (see `cuts.rs` and `Pattern::cut_before`).
//!
//! Speed: the classes come from `charclass` as one byte of flags per char; an
//! ASCII byte is looked up in a 128-entry table without decoding, so English
//! text never touches the Unicode tables. Exactness against `regex` is tested
//! in `tests/test_scanners.py` (every code point in several contexts, random
//! Unicode, corpora) and against fancy-regex by `fuzz/fuzz_targets/pretokenize.rs`.

mod blocks;
pub(crate) mod cl100k;
mod classify;
pub(crate) mod gpt2;
mod letters_of_three;
#[cfg(target_arch = "aarch64")]
mod neon;
pub(crate) mod o200k;

pub(crate) use blocks::{after, before, below, for_each_batch, PieceEnds, BATCH_PIECES, BATCH_ROOM};
pub(crate) use classify::{Masks, BLOCK};

use crate::pretokenize::charclass::{flags_beyond_ascii, Flags, ASCII, CR_LF, LETTER, LOWER, NUMBER, SPACE};

/// One preset's scanner.
pub(crate) trait Scanner {
    /// End (exclusive) of the piece that starts at byte `start` of `bytes`
    /// (valid UTF-8, `start` a char boundary before its end).
    fn piece_end(bytes: &[u8], start: usize) -> usize;

    /// Whether the family has `block_starts` (the scanning loop asks at
    /// compile time).
    const HAS_BLOCK_RULES: bool = false;

    /// Whether a window passes the General Punctuation chars that are
    /// "other" (`blocks::is_other_punctuation`: ’ “ ” — …) as three bytes of
    /// "other" instead of stopping at them. Exact only where an "other" char
    /// joins nothing but a run of "other" chars and U+0020 before it, as in
    /// GPT-2; the cl100k and o200k families let any char that is not a
    /// letter, number or CR/LF prefix a letter run, which byte rules cannot
    /// apply to a multi-byte char.
    const BLOCKS_PASS_PUNCTUATION: bool = false;

    /// Whether a window passes chars of three bytes that are letters (CJK,
    /// kana, Hangul, ...) as three ASCII letters (`letters_of_three.rs`).
    /// Exact where the pattern asks of a letter only that it is `\p{L}`,
    /// but in contractions of ASCII letters: the cl100k family. Not o200k,
    /// which tells letters apart by case, nor GPT-2 (which passes
    /// punctuation instead).
    const BLOCKS_PASS_LETTERS: bool = false;

    /// Whether a window passes chars of three bytes that its
    /// `pass_cjk_words` marks in `Masks::cjk` (DeepSeek's CJK runs, stretches
    /// of their own, which its `block_starts` reads as it reads digits).
    const BLOCKS_PASS_CJK_WORDS: bool = false;

    /// Mark in `masks.cjk` the chars of the window at `start` that the
    /// scanner passes, from its first non-ASCII byte up to the first it
    /// cannot pass (each whole in the block), and take them out of
    /// `masks.non_ascii`; what is left of it. `leads` are the lead bytes of
    /// the CJK ideographs and kana letters the classifier found by their
    /// bytes (`Classify::letter_leads`; 0 where it finds none).
    fn pass_cjk_words(_bytes: &[u8], _start: usize, _masks: &mut Masks, _leads: u64) -> u64 {
        unreachable!("only called where BLOCKS_PASS_CJK_WORDS")
    }

    /// The piece starts among the 64 bytes at `start` (a piece start), bit
    /// `i` for byte `start + i`, from their `masks` and the byte after them,
    /// `ahead`. Only the bits below `trusted` are used: those whose bytes
    /// `i - 1..=i + 1` are ASCII, or bytes of passed punctuation (see
    /// `blocks.rs`).
    fn block_starts(_bytes: &[u8], _start: usize, _masks: &Masks, _ahead: u8, _trusted: usize) -> u64 {
        unreachable!("only called where HAS_BLOCK_RULES")
    }

    /// Whether every piece start of `text` but its last piece's is where it
    /// would be if U+0020 followed the text: then a window of its last
    /// bytes padded with spaces finds them (`blocks::tail_window`). True of
    /// a pattern whose only look at what follows is `(?!\S)` and whose
    /// whitespace runs hold no `$` (a space and the end are both "no \S";
    /// a space joins only a whitespace run, which holds no CR/LF from the
    /// pad).
    fn ends_as_if_spaces_followed(_text: &[u8]) -> bool {
        true
    }
}

/// Decode the char at byte `i` of valid UTF-8 whose lead byte is not ASCII:
/// (code point, its byte length).
#[inline(always)]
fn decode_multibyte(bytes: &[u8], i: usize) -> (u32, usize) {
    let b0 = bytes[i] as u32;
    let cont = |k: usize| (bytes[i + k] & 0x3F) as u32;
    if b0 < 0xE0 {
        (((b0 & 0x1F) << 6) | cont(1), 2)
    } else if b0 < 0xF0 {
        (((b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2), 3)
    } else {
        (((b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3), 4)
    }
}

/// Flags and byte length of the char at byte `i` (`i < bytes.len()`).
#[inline(always)]
pub(crate) fn char_at(bytes: &[u8], i: usize) -> (Flags, usize) {
    let b = bytes[i];
    if b < 0x80 {
        (ASCII[b as usize], 1)
    } else {
        non_ascii_at(bytes, i)
    }
}

#[inline(never)]
fn non_ascii_at(bytes: &[u8], i: usize) -> (Flags, usize) {
    non_ascii_inline(bytes, i)
}

#[inline(always)]
fn non_ascii_inline(bytes: &[u8], i: usize) -> (Flags, usize) {
    let (cp, len) = decode_multibyte(bytes, i);
    (flags_beyond_ascii(cp), len)
}

/// What `char_or_end` gives at the end of the text: whitespace as far as the
/// one-char look-aheads can tell (no letter, number, mark or "other" char
/// follows), with length 0.
pub(crate) const END: (Flags, usize) = (SPACE, 0);

/// `char_or_end` with the lookup of a char beyond ASCII inlined, for the
/// char-by-char loops of `scalar_turn`'s baseline code only (see `run_then`).
#[inline(always)]
pub(crate) fn char_or_end_inlined(bytes: &[u8], i: usize) -> (Flags, usize) {
    match bytes.get(i) {
        Some(&b) if b < 0x80 => (ASCII[b as usize], 1),
        Some(_) => non_ascii_inline(bytes, i),
        None => END,
    }
}

/// `char_at`, or `END` past the end of the text.
#[inline(always)]
pub(crate) fn char_or_end(bytes: &[u8], i: usize) -> (Flags, usize) {
    if i < bytes.len() {
        char_at(bytes, i)
    } else {
        END
    }
}

/// `[^\s\p{L}\p{N}]`: the "other" chars (punctuation, symbols, marks, controls).
#[inline(always)]
pub(crate) fn is_other(f: Flags) -> bool {
    f & (LETTER | NUMBER | SPACE) == 0
}

/// The flags of each byte as a char: those of ASCII, none for the bytes of
/// multi-byte chars (check `b < 0x80` before trusting a 0).
static BYTE: [Flags; 256] = {
    let mut table = [0; 256];
    let mut b = 0;
    while b < 128 {
        table[b] = ASCII[b];
        b += 1;
    }
    table
};

/// Flags of byte `i` if it is an ASCII char, else 0 (also past the end).
#[inline(always)]
pub(crate) fn ascii_flags_at(bytes: &[u8], i: usize) -> Flags {
    bytes.get(i).map_or(0, |&b| BYTE[b as usize])
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Eight bytes as a little-endian word, so byte k of the text is byte k of it.
#[inline(always)]
fn word_at(bytes: &[u8], i: usize) -> Option<u64> {
    bytes.get(i..i + 8).map(|chunk| u64::from_le_bytes(chunk.try_into().unwrap()))
}

/// SWAR: the high bit of each byte of `x` that is in `lo..=hi` (both ASCII);
/// a byte of 0x80 or above never. No carry crosses bytes: the sums below
/// stay under 0x100 for 7-bit values.
#[inline(always)]
fn in_range(x: u64, lo: u8, hi: u8) -> u64 {
    let low7 = x & !HIGHS;
    let at_least_lo = low7.wrapping_add(ONES * (0x80 - lo as u64));
    let above_hi = low7.wrapping_add(ONES * (0x7F - hi as u64));
    at_least_lo & !above_hi & !x & HIGHS
}

/// `in_range` for ASCII letters of either case.
#[inline(always)]
fn ascii_letters(x: u64) -> u64 {
    in_range(x | (ONES * 0x20), b'a', b'z')
}

/// `in_range` for ASCII lower-case letters.
#[inline(always)]
fn ascii_lower(x: u64) -> u64 {
    in_range(x, b'a', b'z')
}

/// End of the run, from byte `i`, of chars that have any of the `mask` flags.
/// `swar` marks those of eight bytes that are in the run: exactly the ASCII
/// bytes with a `mask` flag (never a byte of a multi-byte char, which the
/// char-by-char path then decides).
#[inline(always)]
fn run_of(bytes: &[u8], i: usize, mask: Flags, swar: impl Fn(u64) -> u64) -> usize {
    run_then(bytes, i, mask, swar, |end, _| end)
}

/// `run_of`, then `at_ascii(end, byte)` where the run stops at an ASCII byte
/// (which the run has just read: no second load of it).
#[inline(always)]
fn run_then(
    bytes: &[u8],
    mut i: usize,
    mask: Flags,
    swar: impl Fn(u64) -> u64,
    at_ascii: impl Fn(usize, u8) -> usize,
) -> usize {
    loop {
        while let Some(x) = word_at(bytes, i) {
            let stop = !swar(x) & HIGHS;
            if stop != 0 {
                let k = stop.trailing_zeros() / 8;
                i += k as usize;
                if x & stop & stop.wrapping_neg() == 0 {
                    // An ASCII byte out of the run (`swar` is exact on ASCII).
                    return at_ascii(i, (x >> (8 * k)) as u8);
                }
                break;
            }
            i += 8;
        }
        let Some(&b) = bytes.get(i) else { return i };
        if b < 0x80 {
            if ASCII[b as usize] & mask == 0 {
                return at_ascii(i, b);
            }
            i += 1;
        } else {
            // Chars beyond ASCII one after another (CJK, Hangul, kana, ...)
            // are taken here, without the eight-byte ASCII test above, which
            // would stop at each one's first byte, and with the table lookup
            // inlined (this runs in `scalar_turn`'s baseline code, away from
            // the AVX loops `non_ascii_at` is kept out of): the gpt2 and
            // cl100k scanners 23% faster on the multilingual corpus, then 9%.
            loop {
                let (f, len) = non_ascii_inline(bytes, i);
                if f & mask == 0 {
                    return i;
                }
                i += len;
                if bytes.get(i).is_none_or(|&b| b < 0x80) {
                    break;
                }
            }
        }
    }
}

/// End of the run of o200k's W chars from byte `i`, and of the contraction
/// right after it if any (`(?i:'s|'t|'re|'ve|'m|'ll|'d)?`).
#[inline(always)]
pub(crate) fn lower_run_and_contraction(bytes: &[u8], i: usize) -> usize {
    run_then(bytes, i, LOWER, ascii_lower, |end, b| if b == b'\'' { end + contraction_ci(bytes, end) } else { end })
}

/// End of the run of `\p{L}` chars from byte `i`.
#[inline(always)]
pub(crate) fn letter_run(bytes: &[u8], i: usize) -> usize {
    run_of(bytes, i, LETTER, ascii_letters)
}

/// End of the run of `\p{N}` chars from byte `i`.
#[inline(always)]
pub(crate) fn number_run(bytes: &[u8], i: usize) -> usize {
    run_of(bytes, i, NUMBER, |x| in_range(x, b'0', b'9'))
}

/// End of the run, from byte `i`, of `[^\s\p{L}\p{N}]` chars.
#[inline(always)]
pub(crate) fn other_run(bytes: &[u8], mut i: usize) -> usize {
    const MASK: Flags = LETTER | NUMBER | SPACE;
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            if ASCII[b as usize] & MASK != 0 {
                break;
            }
            i += 1;
        } else {
            let (f, len) = non_ascii_at(bytes, i);
            if f & MASK != 0 {
                break;
            }
            i += len;
        }
    }
    i
}

/// End of the run, from byte `i`, of ASCII bytes in `set` (`[\r\n]*`, `[\r\n/]*`).
#[inline(always)]
pub(crate) fn byte_run(bytes: &[u8], mut i: usize, set: &[u8]) -> usize {
    while i < bytes.len() && set.contains(&bytes[i]) {
        i += 1;
    }
    i
}

/// End of `\p{N}{1,MAX}` whose first char ends at byte `i`: greedy, up to
/// `MAX` chars in all (nothing follows it in any pattern, so greedy and
/// possessive agree).
#[inline(always)]
pub(crate) fn digits_end<const MAX: usize>(bytes: &[u8], mut i: usize) -> usize {
    for _ in 1..MAX {
        if i >= bytes.len() {
            break;
        }
        let (f, len) = char_at(bytes, i);
        if f & NUMBER == 0 {
            break;
        }
        i += len;
    }
    i
}

/// Byte length of the case-insensitive contraction `'s|'t|'re|'ve|'m|'ll|'d`
/// at byte `i` (the apostrophe included), or 0 where there is none.
///
/// `regex` matches case-insensitively by simple case folding (not full
/// folding, in its default version 0): besides the ASCII upper-case letters
/// it lets only U+017F LATIN SMALL LETTER LONG S stand for `s` (U+212A KELVIN
/// SIGN folds to `k`, which no contraction has; `tests/test_scanners.py`
/// checks every code point after an apostrophe). The alternatives differ in
/// their first letter, so their order does not matter here.
#[inline]
pub(crate) fn contraction_ci(bytes: &[u8], i: usize) -> usize {
    let lower = |k: usize| bytes.get(i + k).map_or(0, |&b| b | 0x20);
    if bytes.get(i) != Some(&b'\'') {
        return 0;
    }
    match lower(1) {
        b's' | b't' | b'm' | b'd' => 2,
        b'r' | b'v' if lower(2) == b'e' => 3,
        b'l' if lower(2) == b'l' => 3,
        // ſ (U+017F) is C5 BF in UTF-8; 0xC5 | 0x20 is 0xE5, no ASCII letter.
        0xE5 if bytes[i + 1] == 0xC5 && bytes.get(i + 2) == Some(&0xBF) => 3,
        _ => 0,
    }
}

/// End of the whitespace piece at `start`, whose char is `\s`, once no
/// earlier alternative took it. The run of `\s` chars from `start` ends at
/// `run_end` (at the end of the text or before a non-space char):
/// - `WHOLE_AT_END` (cl100k's `\s++$`): a run that reaches the end of the
///   text is one piece. `$` could also match before a final "\n", but the
///   possessive `\s++` has taken that "\n" already, so only the true end counts.
/// - `NEWLINES` (`\s*[\r\n]` in cl100k, `\s*[\r\n]+` in the others): if the
///   run holds CR or LF, the greedy `\s*` backs off to the last of them, and
///   the piece ends right after it (`[\r\n]+` then takes just that one: the
///   char after it is a non-CR/LF space or the end of the run).
/// - `\s+(?!\S)`: at the end of the text the whole run; before a non-space
///   char, `\s+` backs off one char so that the next char is a space, which
///   leaves a run of one char to the last alternative (`\s` or `\s+`, both
///   that one char).
#[inline]
pub(crate) fn whitespace_end<const NEWLINES: bool, const WHOLE_AT_END: bool>(bytes: &[u8], start: usize) -> usize {
    let mut i = start;
    let mut last_char_start = start;
    let mut after_newline = 0; // 0: no CR/LF in the run (a piece never ends at 0)
    while i < bytes.len() {
        let (f, len) = char_at(bytes, i);
        if f & SPACE == 0 {
            break;
        }
        if NEWLINES && f & CR_LF != 0 {
            after_newline = i + 1;
        }
        last_char_start = i;
        i += len;
    }
    let run_end = i;
    if WHOLE_AT_END && run_end == bytes.len() {
        run_end
    } else if NEWLINES && after_newline != 0 {
        after_newline
    } else if run_end < bytes.len() && last_char_start > start {
        last_char_start
    } else {
        run_end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swar_ranges_equal_the_byte_tests() {
        for b in 0..=255u8 {
            let x = u64::from_le_bytes([b'a', b, b'Z', b, 0x80, b, b'5', b]);
            let marked = |mask: u64| (0..8).map(|k| mask >> (8 * k + 7) & 1 == 1).collect::<Vec<_>>();
            let expect = |f: fn(u8) -> bool| [b'a', b, b'Z', b, 0x80, b, b'5', b].map(f).to_vec();
            assert_eq!(marked(ascii_letters(x)), expect(|c| c.is_ascii_alphabetic()), "{b:#x}");
            assert_eq!(marked(ascii_lower(x)), expect(|c| c.is_ascii_lowercase()), "{b:#x}");
            assert_eq!(marked(in_range(x, b'0', b'9')), expect(|c| c.is_ascii_digit()), "{b:#x}");
        }
    }

    #[test]
    fn letter_runs_end_where_the_letters_do_across_and_after_chars_beyond_ascii() {
        // (text, run start, run end): runs of CJK, Hangul and kana that end
        // at the text's end, at an ASCII byte (letter or not), at a char
        // beyond ASCII that is not a letter, and mixed with ASCII letters.
        for (text, start, end) in [
            ("日本語", 0, 9),
            ("日本語.", 0, 9),
            ("日本語abc def", 0, 12),
            ("日本語。次", 0, 9),
            ("한국어 텍스트", 0, 9),
            ("ひらがなカタカナ漢字", 0, 30),
            ("abc日本def語 x", 0, 15),
            ("x日本１２", 0, 7),
            ("é日ü", 0, 7),
        ] {
            assert_eq!(letter_run(text.as_bytes(), start), end, "{text:?}");
        }
    }

    #[test]
    fn contractions_fold_case_as_regex_does() {
        for (text, len) in [
            ("'s", 2),
            ("'S", 2),
            ("'ſ", 3),
            ("'t", 2),
            ("'M", 2),
            ("'d", 2),
            ("'re", 3),
            ("'rE", 3),
            ("'VE", 3),
            ("'Ll", 3),
            ("'l", 0),
            ("'r", 0),
            ("'x", 0),
            ("'", 0),
            ("s", 0),
            ("'\u{212A}", 0), // KELVIN SIGN folds to k: no contraction
            ("'é", 0),
        ] {
            assert_eq!(contraction_ci(text.as_bytes(), 0), len, "{text:?}");
        }
    }

    #[test]
    fn whitespace_rules() {
        let ws = |text: &str, start| whitespace_end::<true, false>(text.as_bytes(), start);
        assert_eq!(ws("  \n  x", 0), 3); // up to the last newline
        assert_eq!(ws("   x", 0), 2); // leaves one space to the word
        assert_eq!(ws(" x", 0), 1);
        assert_eq!(ws("\u{3000}\u{3000}x", 0), 3);
        assert_eq!(ws("\n ", 0), 1); // no `\s++$`: the newline rule first
        assert_eq!(whitespace_end::<true, true>(b"\n ", 0), 2); // cl100k: the whole trailing run
        assert_eq!(whitespace_end::<false, false>(b" \n x", 0), 2); // GPT-2: no newline rule
    }
}

#[cfg(test)]
mod differential;
