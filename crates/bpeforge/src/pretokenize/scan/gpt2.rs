//! GPT-2's pattern:
//! `'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//!
//! - (1) `'(?:[sdmt]|ll|ve|re)`: lower-case only, tried first.
//! - (2-4) ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional U+0020,
//!   then a run of one class. The class of the char after the optional space
//!   picks the alternative; if that char is whitespace (or the text ends),
//!   none matches with the space, and without it the space (whitespace)
//!   starts none of them either, so the whitespace alternatives decide.
//! - (5-6) `\s+(?!\S)|\s+`: see `whitespace_end` (no newline rule, no `$`).
//!
//! So an "other" char only ever joins a run of "other" chars (4), with
//! U+0020 as its only prefix: the block rules may read one as a run of
//! "other" bytes, and pass the General Punctuation chars that are "other"
//! (’ “ ” — …: `BLOCKS_PASS_PUNCTUATION`, `blocks.rs`) instead of leaving
//! them to `piece_end`.

use super::blocks::{after, apply_contractions, before};
use super::classify::Masks;
use super::{ascii_flags_at, char_at, letter_run, number_run, other_run, whitespace_end};
use crate::pretokenize::charclass::{ASCII, LETTER, NUMBER, SPACE};

pub(crate) struct Gpt2;

impl super::Scanner for Gpt2 {
    #[inline(always)]
    fn piece_end(bytes: &[u8], start: usize) -> usize {
        piece_end(bytes, start)
    }

    const HAS_BLOCK_RULES: bool = true;

    /// An "other" char here only ever continues a run of "other" chars or
    /// takes U+0020 before it, which its three bytes classed "other" do too.
    const BLOCKS_PASS_PUNCTUATION: bool = true;

    /// In ASCII, with "word" a byte that is not `\s` (letter, digit or other):
    /// - a word byte starts a piece unless it continues a run of its class
    ///   (letters, digits, others) or follows U+0020, which it takes as its
    ///   prefix (that space then starts the piece: the byte before it is a
    ///   word byte, or the space ends a run of spaces, as below);
    /// - a space starts a piece after a word byte (runs stop at spaces);
    /// - inside a run of spaces, the last one starts a piece when a word
    ///   byte follows (`\s+(?!\S)` gives the run back one char: it then
    ///   prefixes the word if it is U+0020, or is a piece of its own);
    /// - a contraction at a piece start is a piece (`apply_contractions`).
    #[inline(always)]
    fn block_starts(bytes: &[u8], start: usize, masks: &Masks, ahead: u8, trusted: usize) -> u64 {
        let word = !masks.space;
        let other = word & !(masks.letter | masks.digit);
        let same_run =
            (masks.letter & before(masks.letter)) | (masks.digit & before(masks.digit)) | (other & before(other));
        let ahead_is_word = ASCII[(ahead & 0x7F) as usize] & SPACE == 0;
        let starts = (word & !before(masks.blank) & !same_run)
            | (masks.space & before(word))
            | (masks.space & before(masks.space) & after(word, ahead_is_word));
        apply_contractions(bytes, start, starts | 1, masks, trusted, |bytes, at| {
            contraction_len(&bytes[at + 1..]).unwrap_or(0)
        })
    }
}

/// End (exclusive) of the piece that starts at byte `start`.
#[inline(always)]
pub(crate) fn piece_end(bytes: &[u8], start: usize) -> usize {
    let first = bytes[start];
    // The common cases first, ASCII only: a word, or a space and a word.
    if ascii_flags_at(bytes, start) & LETTER != 0 {
        return letter_run(bytes, start + 1);
    }
    if first == b' ' && ascii_flags_at(bytes, start + 1) & LETTER != 0 {
        return letter_run(bytes, start + 2);
    }
    if first == b'\'' {
        if let Some(len) = contraction_len(&bytes[start + 1..]) {
            return start + 1 + len;
        }
    }
    let body = if first == b' ' { start + 1 } else { start };
    if body < bytes.len() {
        let (f, len) = char_at(bytes, body);
        if f & LETTER != 0 {
            return letter_run(bytes, body + len);
        }
        if f & NUMBER != 0 {
            return number_run(bytes, body + len);
        }
        if f & SPACE == 0 {
            return other_run(bytes, body + len);
        }
    }
    whitespace_end::<false, false>(bytes, start)
}

/// Length of a lower-case contraction suffix right after an apostrophe, if any.
#[inline]
fn contraction_len(rest: &[u8]) -> Option<usize> {
    match rest {
        [b'l', b'l', ..] | [b'v', b'e', ..] | [b'r', b'e', ..] => Some(2),
        [b's' | b'd' | b'm' | b't', ..] => Some(1),
        _ => None,
    }
}
