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

use super::blocks::{before, below};
use super::cl100k::{digit_starts, other_chars, whitespace_starts, word_and_other_starts};
use super::classify::Masks;
use super::{
    ascii_flags_at, byte_run, char_or_end, contraction_ci, digits_end, is_other, lower_run_and_contraction, other_run,
    whitespace_end,
};
use crate::pretokenize::charclass::{Flags, CR_LF, LETTER, LOWER, NUMBER, SPACE, UPPER};

pub(crate) struct O200k;

impl super::Scanner for O200k {
    #[inline(always)]
    fn piece_end(bytes: &[u8], start: usize) -> usize {
        piece_end(bytes, start)
    }

    const HAS_BLOCK_RULES: bool = true;

    /// In ASCII, with W, NL, Q and O as in `cl100k::block_starts`:
    /// - a letter run starts a piece, or its leading char does (as cl100k's),
    ///   and so does an upper-case letter after a lower-case one (an upper-
    ///   case run followed by lower case stays whole: `U*W+`);
    /// - after a letter, an apostrophe that begins a contraction joins the
    ///   letters' piece (`C?`), and the next piece starts after it;
    /// - digits in threes, O runs with a U+0020 before them, and whitespace
    ///   as cl100k's (`cl100k::whitespace_starts`);
    /// - an O run's piece takes the CR, LF and `/` chars after it (its
    ///   "tail"): nothing inside a tail starts a piece, its end does.
    #[inline(always)]
    fn block_starts(bytes: &[u8], start: usize, masks: &Masks, ahead: u8, trusted: usize) -> u64 {
        let mut trusted = trusted;
        let mut starts = word_and_other_starts(masks, ahead);
        starts |= (masks.letter & !masks.lower) & before(masks.lower);
        starts |= digit_starts::<3>(masks.digit);
        starts |= whitespace_starts(masks, ahead, &mut trusted);
        starts = without_tails(starts, masks, other_chars(masks), &mut trusted);
        starts = with_contractions(bytes, start, starts, masks, &mut trusted);
        (starts | 1) & below(trusted)
    }
}

/// `starts` with nothing inside the tails of O runs (the CR, LF and `/`
/// chars after them) and a start where each tail ends. An O char there
/// begins a new run whatever precedes it, so one followed by a letter leads
/// that letter's piece. A tail that may go on past what the block decides
/// ends the window where it begins.
#[inline(always)]
fn without_tails(mut starts: u64, masks: &Masks, other: u64, trusted: &mut usize) -> u64 {
    let tail_chars = masks.newline | masks.slash;
    let mut tails = masks.newline & before(other) & below(*trusted);
    while tails != 0 {
        let at = tails.trailing_zeros() as usize;
        let end = at + (!(tail_chars >> at)).trailing_zeros().min(64 - at as u32) as usize;
        if end >= 64 || end > *trusted {
            *trusted = at;
            break;
        }
        starts = (starts & !(below(end) & !below(at))) | 1 << end;
        if end < 63 && (other >> end) & 1 == 1 && (masks.letter >> (end + 1)) & 1 == 1 {
            starts &= !(1 << (end + 1));
        }
        // A CR/LF after a `/` of this tail belongs to it.
        tails &= !below(end);
    }
    starts
}

/// `starts` with each contraction right after a letter joined to the
/// letters' piece (`C?`): nothing starts inside it, the next piece starts
/// after it. One contraction a piece: an apostrophe right after another
/// contraction starts a piece of its own.
#[inline(always)]
fn with_contractions(bytes: &[u8], start: usize, mut starts: u64, masks: &Masks, trusted: &mut usize) -> u64 {
    let mut apostrophes = masks.apostrophe & before(masks.letter) & below(*trusted);
    let mut last_end = usize::MAX;
    while apostrophes != 0 {
        let at = apostrophes.trailing_zeros() as usize;
        apostrophes &= apostrophes - 1;
        if at == last_end {
            continue;
        }
        let len = contraction_ci(bytes, start + at);
        if len == 0 {
            continue;
        }
        let end = at + len;
        if end >= *trusted {
            *trusted = at;
            break;
        }
        starts = (starts & !(below(end) & !below(at))) | 1 << end;
        last_end = end;
    }
    starts
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
        // A run of CJK or kana (Lo: both U and W) goes by here char by char.
        (f, len) = super::char_or_end_inlined(bytes, i);
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
