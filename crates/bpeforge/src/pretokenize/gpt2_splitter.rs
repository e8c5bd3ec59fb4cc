//! The GPT-2 pre-tokenizer as an iterator.
//!
//! Pattern (semantics of the Python `regex` package):
//! `'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//!
//! Why not a regex engine: the `regex` crate has no look-ahead, and the
//! backtracking engines that do (`fancy-regex`, PCRE2) spend most of the
//! training time here. The scanner itself is `scan::gpt2`, beside those of
//! the other presets. Equality with `regex` is tested in
//! `tests/test_pretokenize.py`, on every code point and on random Unicode text.
//!
//! The scanners never look behind their start, so a text may be cut at any
//! boundary of its pieces and each part scanned alone (see `cuts.rs`).

/// Iterator over the pre-tokens of one document, as sub-slices of it.
///
/// ```
/// use bpeforge::Gpt2Splitter;
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
        let end = crate::pretokenize::scan::gpt2::piece_end(self.text.as_bytes(), start);
        self.pos = end;
        Some(&self.text[start..end])
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
}
