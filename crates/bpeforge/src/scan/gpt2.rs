//! GPT-2's pattern:
//! `'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//!
//! 1. `'(?:[sdmt]|ll|ve|re)`: lower-case only, tried first.
//! 2-4. ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional U+0020, then
//!    a run of one class. The class of the char after the optional space picks
//!    the alternative; if that char is whitespace (or the text ends), none
//!    matches with the space, and without it the space (whitespace) starts
//!    none of them either, so the whitespace alternatives decide.
//! 5-6. `\s+(?!\S)|\s+`: see `whitespace_end` (no newline rule, no `$`).

use super::{char_at, other_run, run_any, whitespace_end};
use crate::charclass::{LETTER, NUMBER, SPACE};

/// End (exclusive) of the piece that starts at byte `start`.
#[inline(always)]
pub(crate) fn piece_end(bytes: &[u8], start: usize) -> usize {
    let first = bytes[start];
    if first == b'\'' {
        if let Some(len) = contraction_len(&bytes[start + 1..]) {
            return start + 1 + len;
        }
    }
    let body = if first == b' ' { start + 1 } else { start };
    if body < bytes.len() {
        let (f, len) = char_at(bytes, body);
        if f & LETTER != 0 {
            return run_any(bytes, body + len, LETTER);
        }
        if f & NUMBER != 0 {
            return run_any(bytes, body + len, NUMBER);
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
