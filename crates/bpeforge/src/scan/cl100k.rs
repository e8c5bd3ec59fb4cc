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

use super::{
    ascii_flags_at, byte_run, char_at, char_or_end, contraction_ci, digits_end, is_other, letter_run, other_run,
    whitespace_end, Scanner,
};
use crate::charclass::{CR_LF, LETTER, NUMBER, SPACE};

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
}

impl Scanner for Llama3 {
    #[inline(always)]
    fn piece_end(bytes: &[u8], start: usize) -> usize {
        piece_end::<3, false>(bytes, start)
    }
}

impl Scanner for Qwen2 {
    #[inline(always)]
    fn piece_end(bytes: &[u8], start: usize) -> usize {
        piece_end::<1, false>(bytes, start)
    }
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
