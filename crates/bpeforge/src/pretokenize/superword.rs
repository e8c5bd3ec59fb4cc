//! SuperBPE's stage-2 pattern (`SUPERWORD_PATTERN`, `bpeforge.superbpe`'s),
//! cut without a regex engine: its pieces are whole lines, so on fancy-regex
//! (its look-ahead sends every match through the backtracking VM) cutting
//! took a fifth of encoding them.
//!
//! What the regex cuts, alternative by alternative at each position:
//! - a char that is no number (`\P{N}`): the whole run of such chars;
//! - a number (`\p{N}`): the fewest chars of the run of numbers after which
//!   the rest of the run starts with a multiple of three decimal digits (`\d`)
//!   that is followed by no digit, or that end the run. After a run comes a
//!   char that is no number, hence no digit, so a run's pieces depend on the
//!   run alone: a run of ASCII digits cuts into its first `len % 3` digits
//!   (three if none) and then threes, here; a run with any other number
//!   (`²`, `٣`, `½`: is it a `\d`?) is cut by the regex itself, run on the run.
//!
//! `\p{N}` is the scanners' table (`charclass`), made from the tables of the
//! `regex-syntax` that fancy-regex reads; tested against the regex on
//! random text of digits, other numbers and words.

use std::mem::MaybeUninit;

use crate::error::Error;
use crate::pretokenize::charclass::{flags_beyond_ascii, NUMBER};
use crate::pretokenize::scan::BATCH_PIECES;

/// `bpeforge.superbpe.SUPERWORD_PATTERN`: the pattern this file cuts.
pub const SUPERWORD_PATTERN: &str = r"\p{N}+?(?=(?:\d{3})+(?!\d)|(?!\p{N}))|\P{N}+";

/// `Pattern::for_each_batch` for `SUPERWORD_PATTERN`, compiled as `regex`
/// (for the runs of numbers that are not all ASCII digits).
pub fn for_each_batch(text: &str, regex: &fancy_regex::Regex, mut visit: impl FnMut(&[usize])) -> Result<(), Error> {
    let bytes = text.as_bytes();
    let mut batch = Batch::new();
    let mut at = 0;
    while at < bytes.len() {
        let numbers = skip_non_numbers(bytes, at);
        if numbers > at {
            batch.push(numbers, &mut visit);
        }
        if numbers == bytes.len() {
            break;
        }
        at = cut_numbers(text, numbers, regex, &mut batch, &mut visit)?;
    }
    batch.finish(&mut visit);
    Ok(())
}

/// Cut the run of numbers that starts at `numbers` as `NUMERAL_GROUPS`
/// (`bpeforge.superbpe`'s, the first alternative of both SuperBPE patterns)
/// does; returns where the run ends. `regex` is a pattern that starts with
/// that alternative: on a run of numbers alone, it matches as it would alone.
pub(super) fn cut_numbers(
    text: &str,
    numbers: usize,
    regex: &fancy_regex::Regex,
    batch: &mut Batch,
    visit: &mut impl FnMut(&[usize]),
) -> Result<usize, Error> {
    let (run_end, all_ascii) = number_run(text.as_bytes(), numbers);
    if all_ascii {
        let digits = run_end - numbers;
        // The first piece takes what is left over by the threes (three if nothing is).
        let mut end = numbers + (digits - 1) % 3 + 1;
        while end <= run_end {
            batch.push(end, visit);
            end += 3;
        }
    } else {
        for found in regex.find_iter(&text[numbers..run_end]) {
            let found = found.map_err(|e| {
                Error::InvalidArgument(format!("pattern {:?} failed on the input: {e}", regex.as_str()))
            })?;
            batch.push(numbers + found.end(), visit);
        }
    }
    Ok(run_end)
}

/// Piece ends, handed on `BATCH_PIECES` at a time. Not zeroed first: a text
/// is often one line of one piece, and zeroing 4 KiB for it cost 3% of
/// encoding Gutenberg's lines.
pub(super) struct Batch {
    ends: [MaybeUninit<usize>; BATCH_PIECES],
    /// `ends[..len]` are written.
    len: usize,
}

impl Batch {
    pub(super) fn new() -> Self {
        // SAFETY: an array of `MaybeUninit` needs no initialising.
        let ends = unsafe { MaybeUninit::<[MaybeUninit<usize>; BATCH_PIECES]>::uninit().assume_init() };
        Batch { ends, len: 0 }
    }

    #[inline]
    pub(super) fn push(&mut self, end: usize, visit: &mut impl FnMut(&[usize])) {
        self.ends[self.len].write(end);
        self.len += 1;
        if self.len == BATCH_PIECES {
            visit(self.filled());
            self.len = 0;
        }
    }

    /// Hand the ends written to `visit`, if any (the last batch of a text).
    #[inline]
    pub(super) fn finish(&self, visit: &mut impl FnMut(&[usize])) {
        if self.len > 0 {
            visit(self.filled());
        }
    }

    /// The ends written.
    #[inline]
    fn filled(&self) -> &[usize] {
        // SAFETY: `ends[..len]` were written (`push`), and `MaybeUninit<usize>` has `usize`'s layout.
        unsafe { std::slice::from_raw_parts(self.ends.as_ptr().cast::<usize>(), self.len) }
    }
}

/// Where the run of chars that are no number from `at` ends: at the first
/// number, or at the end of `bytes`.
#[inline]
fn skip_non_numbers(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() {
        let byte = bytes[at];
        if byte < 0x80 {
            if byte.is_ascii_digit() {
                return at;
            }
            at += 1;
        } else {
            let (len, code) = char_at(bytes, at);
            if flags_beyond_ascii(code) & NUMBER != 0 {
                return at;
            }
            at += len;
        }
    }
    at
}

/// Where the run of numbers from `at` ends, and whether they are all ASCII
/// digits.
#[inline]
fn number_run(bytes: &[u8], mut at: usize) -> (usize, bool) {
    let mut all_ascii = true;
    while at < bytes.len() {
        let byte = bytes[at];
        if byte < 0x80 {
            if !byte.is_ascii_digit() {
                break;
            }
            at += 1;
        } else {
            let (len, code) = char_at(bytes, at);
            if flags_beyond_ascii(code) & NUMBER == 0 {
                break;
            }
            all_ascii = false;
            at += len;
        }
    }
    (at, all_ascii)
}

/// The length and code point of the char at `bytes[at]`, a lead byte of
/// U+0080 or above in valid UTF-8 (`bytes` is a `str`'s).
#[inline]
pub(super) fn char_at(bytes: &[u8], at: usize) -> (usize, u32) {
    let lead = bytes[at] as u32;
    let tail = |i: usize| (bytes[at + i] & 0x3F) as u32;
    match lead {
        0xC0..=0xDF => (2, (lead & 0x1F) << 6 | tail(1)),
        0xE0..=0xEF => (3, (lead & 0x0F) << 12 | tail(1) << 6 | tail(2)),
        _ => (4, (lead & 0x07) << 18 | tail(1) << 12 | tail(2) << 6 | tail(3)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::test_rng::XorShift as Rng;

    /// Digits, numbers that are digits (Arabic-Indic, Devanagari,
    /// mathematical bold) and that are not (superscript, fraction, Roman),
    /// letters, CJK, spaces, newlines.
    const CHARS: [&str; 14] = ["0", "1", "7", "٣", "७", "𝟗", "²", "½", "Ⅻ", "a", "Z", "中", " ", "\n"];

    fn regex_ends(regex: &fancy_regex::Regex, text: &str) -> Vec<usize> {
        regex.find_iter(text).map(|found| found.unwrap().end()).collect()
    }

    fn scanned_ends(regex: &fancy_regex::Regex, text: &str) -> Vec<usize> {
        let mut ends = Vec::new();
        for_each_batch(text, regex, |batch| ends.extend_from_slice(batch)).unwrap();
        ends
    }

    #[test]
    fn cuts_as_the_regex_does() {
        let regex = fancy_regex::Regex::new(SUPERWORD_PATTERN).unwrap();
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for round in 0..20_000 {
            // Mostly ASCII digits in some texts, so that long runs of them come up.
            let digits_only = rng.below(3) == 0;
            let chars = rng.below(40);
            let text: String =
                (0..chars).map(|_| CHARS[if digits_only { rng.below(3) } else { rng.below(CHARS.len()) }]).collect();
            assert_eq!(scanned_ends(&regex, &text), regex_ends(&regex, &text), "round {round}: {text:?}");
        }
        // More pieces than a batch holds.
        let long = "a1234567 ".repeat(3 * BATCH_PIECES);
        assert_eq!(scanned_ends(&regex, &long), regex_ends(&regex, &long));
    }
}
