//! o200k (tiktoken's `o200k_base`, GPT-4o):
//!
//! ```text
//! [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! |\p{N}{1,3}
//! | ?[^\s\p{L}\p{N}]+[\r\n/]*
//! |\s*[\r\n]+
//! |\s+(?!\S)
//! |\s+
//! ```
//!
//! Write X = `[^\r\n\p{L}\p{N}]`, U = `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`
//! (flag `UPPER`), W = `[\p{Ll}\p{Lm}\p{Lo}\p{M}]` (flag `LOWER`), C = the
//! optional contraction. Every letter is in U or W; Lm, Lo and the marks M
//! are in both ("uncased"); a mark is no letter, so it is in X as well.
//! There are no possessive quantifiers: the backtracking matters.
//!
//! Branches 1-2 from a start q (`case_run`): `U*` takes the longest run of U
//! chars from q, to u. If the char at u is W (then it is W only: lower case),
//! `W+` takes the run of W chars from there and branch 1 matches. Otherwise
//! `U*` backs off char by char, and `W+` first succeeds at the last uncased
//! char of the U run (the chars after it are U only, the char at u no W), so
//! branch 1 ends right after that char. With no uncased char in the run,
//! branch 1 fails from q and branch 2 (`U+W*`) takes the U run, if not empty
//! (`W*` is empty: the char at u is no W). `C?` is greedy and cannot fail, so
//! it just extends the first success.
//!
//! The optional X in front is greedy: with a first char in X, the engine
//! tries branch 1 with it (q = the second char), then branch 1 without it
//! (q = the first char), then branch 2 with it, then without. Without it
//! matters only for a first char that is also U or W, that is a mark: branch
//! 1 then ends after the mark itself (the U run from it is the mark and the
//! one from the second char, which has no uncased char, so the mark is the
//! last uncased char). So:
//! - a letter first: `case_run` from it (branch 1 or 2 always matches);
//! - an X char first and a U or W char second: `case_run` from the second;
//!   where that finds no W, a first char that is a mark ends alone (branch 1
//!   without X), any other takes the U run (branch 2);
//! - a mark first and no U or W second: the mark alone (branch 1, no X).
//!
//! Then `\p{N}{1,3}`; ` ?[^\s\p{L}\p{N}]+[\r\n/]*` as cl100k's punctuation,
//! with slashes too; and the whitespace alternatives as llama3's (`\s*[\r\n]+`
//! up to the last CR/LF of the run, no `\s++$`, see `whitespace_end`).

use super::{
    ascii_flags_at, byte_run, char_or_end, contraction_ci, digits_end, is_other, lower_run_and_contraction, other_run,
    whitespace_end,
};
use crate::charclass::{Flags, CR_LF, LETTER, LOWER, NUMBER, SPACE, UPPER};

pub(crate) struct O200k;

impl super::Scanner for O200k {
    #[inline(always)]
    fn piece_end(bytes: &[u8], start: usize) -> usize {
        piece_end(bytes, start)
    }
}

/// End (exclusive) of the piece that starts at byte `start`.
#[inline(always)]
pub(crate) fn piece_end(bytes: &[u8], start: usize) -> usize {
    // The common cases first, ASCII only: a word, or a space and a word.
    let ascii = ascii_flags_at(bytes, start);
    if ascii & LETTER != 0 {
        return word(bytes, start, ascii, 1, None);
    }
    if bytes[start] == b' ' {
        let second = ascii_flags_at(bytes, start + 1);
        if second & LETTER != 0 {
            return word(bytes, start + 1, second, 1, None);
        }
    }
    let (first, first_len) = super::char_at(bytes, start);
    let next = start + first_len;
    if first & LETTER != 0 {
        return word(bytes, start, first, first_len, None);
    }
    if first & NUMBER != 0 {
        return digits_end::<3>(bytes, next);
    }
    if first & CR_LF == 0 {
        // The first char is X: whitespace other than CR/LF, a mark, or "other".
        let (second, second_len) = char_or_end(bytes, next);
        let is_mark = first & (UPPER | LOWER) != 0;
        if second & (UPPER | LOWER) != 0 {
            return word(bytes, next, second, second_len, is_mark.then_some(next));
        }
        if is_mark {
            return with_contraction(bytes, next);
        }
        if first & SPACE == 0 {
            return byte_run(bytes, other_run(bytes, next), b"\r\n/");
        }
        if bytes[start] == b' ' && is_other(second) {
            return byte_run(bytes, other_run(bytes, next + second_len), b"\r\n/");
        }
    }
    whitespace_end::<true, false>(bytes, start)
}

/// Branch 1 or 2 from byte `q`, whose char (flags `f`, length `len`) is U or
/// W, with its contraction. Where branch 1 fails from `q`, the piece ends at
/// `mark_end` if given (a mark first, alone: branch 1 without the optional
/// X), else at the end of the U run (branch 2).
#[inline(always)]
fn word(bytes: &[u8], q: usize, f: Flags, len: usize, mark_end: Option<usize>) -> usize {
    match case_run(bytes, q, f, len) {
        Ok(end) => end,
        Err(upper_end) => with_contraction(bytes, mark_end.unwrap_or(upper_end)),
    }
}

/// `end`, or the end of the contraction that starts there.
#[inline(always)]
fn with_contraction(bytes: &[u8], end: usize) -> usize {
    end + contraction_ci(bytes, end)
}

/// `U*W+C?` from byte `q`, whose char (flags `f`, length `len`) is U or W:
/// `Ok(end)` where `U*W+` matches (branch 1; the end is after the
/// contraction, if any), else `Err(end of the U run)` (branch 2's match
/// before its contraction, when not empty).
#[inline(always)]
fn case_run(bytes: &[u8], q: usize, mut f: Flags, mut len: usize) -> Result<usize, usize> {
    let mut i = q;
    let mut after_uncased = 0; // end of the last char in both U and W; 0: none yet
    while f & UPPER != 0 {
        i += len;
        if f & LOWER != 0 {
            after_uncased = i;
        }
        (f, len) = char_or_end(bytes, i);
    }
    if f & LOWER != 0 {
        return Ok(lower_run_and_contraction(bytes, i + len));
    }
    if after_uncased != 0 {
        Ok(with_contraction(bytes, after_uncased))
    } else {
        Err(i)
    }
}
