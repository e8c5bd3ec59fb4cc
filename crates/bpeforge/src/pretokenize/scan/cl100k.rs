//! The cl100k family: three patterns that differ only in two details.
//!
//! - cl100k (tiktoken's `cl100k_base`):
//!   `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`
//! - llama3 (Llama 3's `tokenizer.json`, once tiktoken's own spelling of cl100k):
//!   `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
//! - qwen2: llama3's with `\p{N}` (one digit a piece) for `\p{N}{1,3}`.
//!
//! Alternative by alternative, with X = `[^\r\n\p{L}\p{N}]` and
//! P = `[^\s\p{L}\p{N}]`:
//! - (1) The contractions, case-insensitive: the same set in both spellings
//!   (`contraction_ci`). Only an apostrophe starts one.
//! - (2) `X?+\p{L}++` / `X?\p{L}+`: a letter run, with one X char before it.
//!   Possessive or not, the same: if the first char is X, taking it is the
//!   only way to match (X has no letters); otherwise the run starts at the
//!   first char. So: a letter first, or an X first and a letter second.
//!   X includes spaces other than CR/LF (tab, U+3000, ...) and marks.
//! - (3) `\p{N}{1,3}` (`\p{N}` for qwen2): nothing follows it, so greedy.
//! - (4) ` ?P+[\r\n]*`: a P char first, or U+0020 then a P char; the P run, then
//!   any CR/LF after it (greedy is the first success: nothing follows).
//! - (5) cl100k only, `\s++$`: a whitespace run that reaches the end of the
//!   text is one piece.
//! - (6) `\s*[\r\n]` / `\s*[\r\n]+`: up to the run's last CR/LF (both spellings
//!   give the same piece, see `whitespace_end`).
//! - (7-8) `\s+(?!\S)`, then `\s` / `\s+`: a run before a non-space char gives
//!   its last char to the next piece; a run of one char is itself.
//!
//! Which alternative applies is decided by the first char, the second, and for
//! whitespace the run: a letter starts 2; a number 3; an apostrophe 1 if a
//! contraction follows; then an X char followed by a letter 2; a P char 4;
//! a space followed by a P char 4; any other whitespace 5-8.

use super::blocks::{after, apply_contractions, before, below};
use super::classify::Masks;
use super::{
    ascii_flags_at, byte_run, char_at, char_or_end, contraction_ci, digits_end, is_other, letter_run, other_run,
    whitespace_end, Scanner,
};
use crate::pretokenize::charclass::{ASCII, CR_LF, LETTER, NUMBER, SPACE};

/// cl100k: digits in threes, `\s++$`.
pub(crate) struct Cl100k;
/// llama3: digits in threes, no `\s++$`.
pub(crate) struct Llama3;
/// qwen2: one digit a piece, no `\s++$`.
pub(crate) struct Qwen2;

impl Scanner for Cl100k {
    #[inline(always)]
    fn piece_end(bytes: &[u8], start: usize) -> usize {
        piece_end::<3, true>(bytes, start)
    }

    const HAS_BLOCK_RULES: bool = true;
    const BLOCKS_PASS_LETTERS: bool = true;

    /// `\s++$` takes a whitespace run to the end whole, where followed by a
    /// space it would end at its last CR/LF: only a text that ends in
    /// U+0020, tab, VT or FF may hold such a run ("\n " at the end). (The
    /// window's rules do not trust a start after a CR/LF whose spaces run
    /// to its end, so they would leave that run to the char-by-char scanner
    /// anyway; this keeps the padded window exact without relying on it.)
    #[inline(always)]
    fn ends_as_if_spaces_followed(text: &[u8]) -> bool {
        !matches!(text.last(), Some(b' ' | b'\t' | b'\x0b' | b'\x0c'))
    }

    #[inline(always)]
    fn block_starts(bytes: &[u8], start: usize, masks: &Masks, ahead: u8, trusted: usize) -> u64 {
        block_starts::<3>(bytes, start, masks, ahead, trusted)
    }
}

impl Scanner for Llama3 {
    #[inline(always)]
    fn piece_end(bytes: &[u8], start: usize) -> usize {
        piece_end::<3, false>(bytes, start)
    }

    const HAS_BLOCK_RULES: bool = true;
    const BLOCKS_PASS_LETTERS: bool = true;

    #[inline(always)]
    fn block_starts(bytes: &[u8], start: usize, masks: &Masks, ahead: u8, trusted: usize) -> u64 {
        block_starts::<3>(bytes, start, masks, ahead, trusted)
    }
}

impl Scanner for Qwen2 {
    #[inline(always)]
    fn piece_end(bytes: &[u8], start: usize) -> usize {
        piece_end::<1, false>(bytes, start)
    }

    const HAS_BLOCK_RULES: bool = true;
    const BLOCKS_PASS_LETTERS: bool = true;

    #[inline(always)]
    fn block_starts(bytes: &[u8], start: usize, masks: &Masks, ahead: u8, trusted: usize) -> u64 {
        block_starts::<1>(bytes, start, masks, ahead, trusted)
    }
}

/// The piece starts of a block (`Scanner::block_starts`), `DIGITS` the
/// longest digit piece. In ASCII, with W the whitespace, NL its CR and LF,
/// Q the rest of it, and O the other chars (the P of the alternatives above):
/// - (2) a letter run starts a piece, or the char before it does when that
///   char may lead it: a Q char (the last of a whitespace run always starts
///   a piece), or an O char that is a run of its own and follows no U+0020
///   (one after U+0020 is taken by (4) from the space);
/// - (3) a digit run starts a piece, and again every `DIGITS` digits;
/// - (4) an O run starts a piece, or the U+0020 before it does;
/// - (6-8) a whitespace run starts a piece after a letter or a digit; after
///   an O run, whose piece takes the CR/LF right after it, at its first Q
///   char; inside a run, the last of two or more Q chars before a non-space
///   starts one (`\s+(?!\S)` gives it back), and so does the Q char after
///   the run's last CR/LF (`\s*[\r\n]` ends there), found by a loop over
///   the Q chars after CR/LF (one or two a line of text);
/// - (1) a contraction at a piece start is a piece (`apply_contractions`).
#[inline(always)]
fn block_starts<const DIGITS: usize>(bytes: &[u8], start: usize, masks: &Masks, ahead: u8, trusted: usize) -> u64 {
    let mut trusted = trusted;
    let mut starts = word_and_other_starts(masks, ahead);
    starts |= digit_starts::<DIGITS>(masks.digit);
    starts |= whitespace_starts(masks, ahead, &mut trusted);
    let starts = apply_contractions(bytes, start, starts | 1, masks, trusted, |bytes, at| {
        contraction_ci(bytes, at).saturating_sub(1)
    });
    starts & below(trusted)
}

/// The O chars of a block: neither letter, digit nor space.
#[inline(always)]
pub(crate) fn other_chars(masks: &Masks) -> u64 {
    !(masks.letter | masks.digit | masks.space)
}

/// The letter and O run starts (2 and 4 above, which o200k shares): a letter
/// run or the char that leads it, an O run or the U+0020 before it.
#[inline(always)]
pub(crate) fn word_and_other_starts(masks: &Masks, ahead: u8) -> u64 {
    let (letter, blank, other) = (masks.letter, masks.blank, other_chars(masks));
    let ahead_flags = ASCII[(ahead & 0x7F) as usize];
    let letter_runs = letter & !before(letter);
    let leaders = (masks.space & !masks.newline) | (other & !before(other) & !before(blank));
    let letter_run_ahead = ahead_flags & LETTER != 0 && letter >> 63 == 0;
    let other_runs = other & !before(other);
    let other_run_ahead = ahead_flags & (LETTER | NUMBER | SPACE) == 0 && other >> 63 == 0;
    (letter_runs & !before(leaders))
        | (leaders & after(letter_runs, letter_run_ahead))
        | (other_runs & !before(blank))
        | (blank & after(other_runs, other_run_ahead))
}

/// The whitespace starts (6-8 above, which o200k shares), `ahead` the byte
/// after the block. Lowers `trusted` where the rest of a run decides and is
/// not in the block.
#[inline(always)]
pub(crate) fn whitespace_starts(masks: &Masks, ahead: u8, trusted: &mut usize) -> u64 {
    let (space, other) = (masks.space, other_chars(masks));
    let ahead_word = ASCII[(ahead & 0x7F) as usize] & SPACE == 0;
    let q = space & !masks.newline;
    let mut starts = space & before(masks.letter | masks.digit);
    starts |= q & before(other);
    starts |= q & before(q) & after(!space, ahead_word);
    let mut after_newlines = q & before(masks.newline) & below(*trusted);
    while after_newlines != 0 {
        let at = after_newlines.trailing_zeros() as usize;
        after_newlines &= after_newlines - 1;
        // Where the Q chars from `at` end (64: past the block).
        let q_end = at + (!(q >> at)).trailing_zeros().min(64 - at as u32) as usize;
        if q_end >= 64 || q_end > *trusted {
            // What follows decides, and it is not seen: the window ends here.
            *trusted = at;
            break;
        }
        let before_word = (!space >> q_end) & 1 == 1;
        // The CR/LF run before `at` follows an O char, whose piece took it.
        let not_newline_below = !masks.newline & below(at);
        let newlines_after_other =
            not_newline_below != 0 && (other >> (63 - not_newline_below.leading_zeros())) & 1 == 1;
        if before_word || newlines_after_other {
            starts |= 1 << at;
        }
    }
    starts
}

/// Digit piece starts: each run's start, and every `DIGITS` digits after it.
#[inline(always)]
pub(crate) fn digit_starts<const DIGITS: usize>(digit: u64) -> u64 {
    if DIGITS == 1 {
        return digit;
    }
    let run_starts = digit & !before(digit);
    let mut starts = run_starts;
    // Runs longer than `DIGITS` (rare in prose).
    let mut long_runs = run_starts & (digit >> DIGITS);
    while long_runs != 0 {
        let at = long_runs.trailing_zeros() as usize;
        long_runs &= long_runs - 1;
        let len = (!(digit >> at)).trailing_zeros().min(64 - at as u32) as usize;
        for k in (DIGITS..len).step_by(DIGITS) {
            starts |= 1 << (at + k);
        }
    }
    starts
}

/// End (exclusive) of the piece that starts at byte `start`: `DIGITS` is the
/// longest digit piece, `WHOLE_AT_END` whether the pattern has `\s++$`.
#[inline(always)]
fn piece_end<const DIGITS: usize, const WHOLE_AT_END: bool>(bytes: &[u8], start: usize) -> usize {
    // The common cases first, ASCII only: a word, or a space and a word (2).
    if ascii_flags_at(bytes, start) & LETTER != 0 {
        return letter_run(bytes, start + 1);
    }
    if bytes[start] == b' ' && ascii_flags_at(bytes, start + 1) & LETTER != 0 {
        return letter_run(bytes, start + 2);
    }
    let (first, first_len) = char_at(bytes, start);
    let next = start + first_len;
    // A letter or a number is no apostrophe and no X: 2 or 3 at once.
    if first & LETTER != 0 {
        return letter_run(bytes, next);
    }
    if first & NUMBER != 0 {
        return digits_end::<DIGITS>(bytes, next);
    }
    if bytes[start] == b'\'' {
        let len = contraction_ci(bytes, start);
        if len != 0 {
            return start + len;
        }
    }
    let (second, second_len) = char_or_end(bytes, next);
    if first & CR_LF == 0 && second & LETTER != 0 {
        return letter_run(bytes, next + second_len);
    }
    if first & SPACE == 0 {
        return byte_run(bytes, other_run(bytes, next), b"\r\n");
    }
    if bytes[start] == b' ' && is_other(second) {
        return byte_run(bytes, other_run(bytes, next + second_len), b"\r\n");
    }
    whitespace_end::<true, WHOLE_AT_END>(bytes, start)
}
