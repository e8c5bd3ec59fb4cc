//! The GPT-2 pre-tokenizer as a hand-written scanner.
//!
//! Pattern (semantics of the Python `regex` package):
//! `'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//!
//! Why not a regex engine: the `regex` crate has no look-ahead, and the
//! backtracking engines that do (`fancy-regex`, PCRE2) spend most of the
//! training time here. The pattern is simple enough to decide with one char of
//! look-ahead, so each alternative is one branch below, tried in the pattern's
//! order. Equality with `regex` is tested in `tests/test_pretokenize.py`, on every
//! code point and on random Unicode text.
//!
//! The scanner never looks behind its start, so a text may be cut at any
//! boundary of its pieces and each part scanned alone (see `chunking.rs`).

use crate::charclass::{classify, CharClass};

/// Iterator over the pre-tokens of one document, as sub-slices of it.
///
/// ```
/// use bpeforge::pretokenize::Gpt2Splitter;
/// let pieces: Vec<&str> = Gpt2Splitter::new("I'm here  now\n\n\nok").collect();
/// assert_eq!(pieces, ["I", "'m", " here", " ", " now", "\n\n", "\n", "ok"]);
/// ```
pub struct Gpt2Splitter<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Gpt2Splitter<'a> {
    pub fn new(text: &'a str) -> Self {
        Self { text, pos: 0 }
    }
}

impl<'a> Iterator for Gpt2Splitter<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let start = self.pos;
        if start >= self.text.len() {
            return None;
        }
        let end = piece_end(self.text.as_bytes(), start);
        self.pos = end;
        Some(&self.text[start..end])
    }
}

/// Decode the char at byte `i` of valid UTF-8: (code point, its byte length).
#[inline(always)]
fn decode(bytes: &[u8], i: usize) -> (u32, usize) {
    let b0 = bytes[i] as u32;
    if b0 < 0x80 {
        return (b0, 1);
    }
    let cont = |k: usize| (bytes[i + k] & 0x3F) as u32;
    if b0 < 0xE0 {
        (((b0 & 0x1F) << 6) | cont(1), 2)
    } else if b0 < 0xF0 {
        (((b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2), 3)
    } else {
        (((b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3), 4)
    }
}

#[inline(always)]
fn class_at(bytes: &[u8], i: usize) -> (CharClass, usize) {
    let (cp, len) = decode(bytes, i);
    (classify(cp), len)
}

/// End (exclusive) of the piece that starts at byte `start`.
#[inline]
fn piece_end(bytes: &[u8], start: usize) -> usize {
    let first = bytes[start];
    // 1. `'(?:[sdmt]|ll|ve|re)`
    if first == b'\'' {
        if let Some(len) = contraction_len(&bytes[start + 1..]) {
            return start + 1 + len;
        }
    }
    // 2-4. ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional space, then a run.
    let body = if first == b' ' { start + 1 } else { start };
    if body < bytes.len() {
        let (class, _) = class_at(bytes, body);
        if class != CharClass::Whitespace {
            return run_end(bytes, body, class);
        }
    }
    // 5-6. `\s+(?!\S)|\s+`
    whitespace_end(bytes, start)
}

/// Length of a contraction suffix right after an apostrophe, if any.
#[inline]
fn contraction_len(rest: &[u8]) -> Option<usize> {
    match rest {
        [b'l', b'l', ..] | [b'v', b'e', ..] | [b'r', b'e', ..] => Some(2),
        [b's' | b'd' | b'm' | b't', ..] => Some(1),
        _ => None,
    }
}

/// End of the run of chars of `class` starting at `i` (the char at `i` is one).
#[inline]
fn run_end(bytes: &[u8], mut i: usize, class: CharClass) -> usize {
    while i < bytes.len() {
        let (c, len) = class_at(bytes, i);
        if c != class {
            break;
        }
        i += len;
    }
    i
}

/// End of the whitespace piece starting at `start` (the char there is `\s`).
///
/// `\s+(?!\S)` takes the whole run when it ends the text; when a non-space char
/// follows a run of two or more, it backtracks one char so that the last one
/// may lead the next piece (`"a   b"` gives `"a"`, `"  "`, `" b"`). A single
/// whitespace char before a non-space falls through to plain `\s+`.
#[inline]
fn whitespace_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start;
    let mut last_char_start = start;
    while i < bytes.len() {
        let (c, len) = class_at(bytes, i);
        if c != CharClass::Whitespace {
            break;
        }
        last_char_start = i;
        i += len;
    }
    if i < bytes.len() && last_char_start > start {
        last_char_start
    } else {
        i
    }
}

/// Whether the pattern always splits just before byte `pos` of `bytes`:
/// the char before `pos` is not whitespace and the byte at `pos` is ASCII
/// whitespace. No piece holds a non-space char followed by a space char, and
/// each side scans alone exactly as it does in the whole (no look-behind; the
/// last piece before `pos` stops at whitespace or at the end alike).
/// `bytes` must be valid UTF-8 up to `pos`; `pos` must be inside `bytes`.
pub fn is_split_point(bytes: &[u8], pos: usize) -> bool {
    if pos == 0 || !bytes[pos].is_ascii() || classify(bytes[pos] as u32) != CharClass::Whitespace {
        return false;
    }
    let mut char_start = pos - 1;
    while char_start > 0 && (bytes[char_start] & 0xC0) == 0x80 {
        char_start -= 1;
    }
    match std::str::from_utf8(&bytes[char_start..pos]) {
        Ok(s) => s.chars().all(|c| classify(c as u32) != CharClass::Whitespace),
        Err(_) => false, // invalid UTF-8 is reported by the reader, never cut here
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<&str> {
        Gpt2Splitter::new(text).collect()
    }

    #[test]
    fn whitespace_runs_give_their_last_char_to_the_next_piece() {
        assert_eq!(split("a\n\n\nb"), ["a", "\n\n", "\n", "b"]);
        assert_eq!(split("a   b"), ["a", "  ", " b"]);
        assert_eq!(split("a \n"), ["a", " \n"]); // a trailing run stays whole
        assert_eq!(split("x\ty"), ["x", "\t", "y"]); // one non-space char alone
    }

    #[test]
    fn contractions_only_at_a_piece_start_and_lowercase() {
        assert_eq!(split("we'll it's I'M"), ["we", "'ll", " it", "'s", " I", "'", "M"]);
        assert_eq!(split("!'s"), ["!'", "s"]);
    }

    #[test]
    fn letters_numbers_other_with_optional_space() {
        assert_eq!(split("héllo 123 !? 😀😀"), ["héllo", " 123", " !?", " 😀😀"]);
        assert_eq!(split("abc123def"), ["abc", "123", "def"]);
        assert_eq!(split(" "), [" "]);
        assert_eq!(split(""), Vec::<&str>::new());
    }

    #[test]
    fn split_points() {
        let text = "ab \ncd".as_bytes();
        assert!(is_split_point(text, 2)); // "b" | " "
        assert!(!is_split_point(text, 3)); // " " | "\n": inside a run
        assert!(!is_split_point(text, 4)); // "\n" | "c": the run's last char may lead
        assert!(!is_split_point(text, 0));
        assert!(is_split_point("é\n".as_bytes(), 2));
    }
}
