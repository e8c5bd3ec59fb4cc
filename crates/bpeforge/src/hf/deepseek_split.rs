//! The word regex of DeepSeek V3's (and V3.1's, R1's, V4's) pre-tokenizer,
//! its third Split:
//!
//! ```text
//! [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+   (1) ASCII punctuation, then ASCII letters
//! |[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+            (2) a word, maybe after one char
//! | ?[\p{P}\p{S}]+[\r\n]*                          (3) punctuation and symbols, then line ends
//! |\s*[\r\n]+                                      (4) space up to the last line end
//! |\s+(?!\S)                                       (5) space but its last char, before a word
//! |\s+                                             (6) space
//! ```
//!
//! matched by hand, a char at a time against one table of classes, with the
//! matches of a backtracking engine (the alternatives in order at each
//! position). Its `(?!\S)` sent it to fancy-regex's backtracking VM, which
//! took two thirds of the pipeline's time.

use std::sync::LazyLock;

use super::class_run::ClassBits;

/// The regex as DeepSeek's files write it, line ends as escapes.
pub const DEEPSEEK_V3_WORDS: &str = concat!(
    r##"[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"##,
    r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
);

/// Whether `source` (a Split's regex in the file) is that regex.
pub fn is_deepseek_words(source: &str) -> bool {
    source.replace('\r', r"\r").replace('\n', r"\n") == DEEPSEEK_V3_WORDS
}

struct Classes {
    /// `[\p{L}\p{M}]`, the word's chars.
    word: ClassBits,
    /// `[\r\n\p{L}\p{P}\p{S}]`, the chars that may not lead a word.
    not_leading: ClassBits,
    punctuation_or_symbol: ClassBits,
    space: ClassBits,
}

/// The classes as the `regex` crate reads them (`regex-syntax`'s tables).
static CLASSES: LazyLock<Classes> = LazyLock::new(|| Classes {
    word: parsed(r"[\p{L}\p{M}]"),
    not_leading: parsed(r"[\r\n\p{L}\p{P}\p{S}]"),
    punctuation_or_symbol: parsed(r"[\p{P}\p{S}]"),
    space: parsed(r"\s"),
});

pub fn parsed(class: &str) -> ClassBits {
    use regex_syntax::hir::{Class, HirKind};
    let hir = regex_syntax::parse(class).expect("a valid class");
    let HirKind::Class(Class::Unicode(class)) = hir.kind() else { unreachable!("{class} is a class") };
    ClassBits::new(class.iter().map(|range| (range.start(), range.end())))
}

/// The matches in `text`, left to right, as byte ranges, in `out` (emptied first).
pub fn find(text: &str, out: &mut Vec<(usize, usize)>) {
    out.clear();
    let classes = &*CLASSES;
    let mut at = 0;
    while let Some(ch) = text[at..].chars().next() {
        match classes.match_at(text, at, ch) {
            Some(end) => {
                out.push((at, end));
                at = end;
            }
            None => at += ch.len_utf8(),
        }
    }
}

/// Append to `out` the pieces an Isolated Split on the regex makes of
/// `text` (each match and each gap), moved by `offset`.
#[cfg(test)]
pub fn cut_isolated(text: &str, offset: usize, out: &mut Vec<(usize, usize)>) {
    let classes = &*CLASSES;
    let (mut at, mut gap) = (0, 0);
    while let Some(ch) = text[at..].chars().next() {
        match classes.match_at(text, at, ch) {
            Some(end) => {
                if gap < at {
                    out.push((gap + offset, at + offset));
                }
                out.push((at + offset, end + offset));
                (at, gap) = (end, end);
            }
            None => at += ch.len_utf8(),
        }
    }
    if gap < text.len() {
        out.push((gap + offset, text.len() + offset));
    }
}

/// The end of the regex's match at `at` of `text`, if one starts there.
pub fn match_end(text: &str, at: usize) -> Option<usize> {
    let ch = text[at..].chars().next()?;
    CLASSES.match_at(text, at, ch)
}

/// Where the run of `\s` chars from `at` ends (`at` when there is none).
pub fn space_run_end(text: &str, at: usize) -> usize {
    let classes = &*CLASSES;
    let rest = &text[at..];
    at + rest.find(|ch: char| !classes.is_space(ch)).unwrap_or(rest.len())
}

impl Classes {
    fn is_word(&self, ch: char) -> bool {
        if ch.is_ascii() {
            return ch.is_ascii_alphabetic();
        }
        self.word.contains(ch)
    }

    fn is_punctuation_or_symbol(&self, ch: char) -> bool {
        if ch.is_ascii() {
            return ch.is_ascii_punctuation();
        }
        self.punctuation_or_symbol.contains(ch)
    }

    fn is_space(&self, ch: char) -> bool {
        if ch.is_ascii() {
            return matches!(ch, ' ' | '\t' | '\n' | '\x0B' | '\x0C' | '\r');
        }
        self.space.contains(ch)
    }

    /// The end of the match starting at `at` (`ch` the char there), if one does.
    #[inline]
    fn match_at(&self, text: &str, at: usize, ch: char) -> Option<usize> {
        let after = at + ch.len_utf8();
        let bytes = text.as_bytes();
        // Most pieces of text: "word" and " word", (2) without and with its optional space.
        let word_start = match ch {
            'a'..='z' | 'A'..='Z' => Some(at),
            ' ' if bytes.get(after).is_some_and(u8::is_ascii_alphabetic) => Some(after),
            _ => None,
        };
        if let Some(start) = word_start {
            return Some(run_end(text, start, |byte| byte.is_ascii_alphabetic(), |ch| self.is_word(ch)));
        }
        let next = text[after..].chars().next();
        // (1)
        if ch.is_ascii_punctuation() && next.is_some_and(|next| next.is_ascii_alphabetic()) {
            return Some(run_end(text, after, |byte| byte.is_ascii_alphabetic(), |ch| ch.is_ascii_alphabetic()));
        }
        // (2), first with the optional char, then without.
        let is_word = |ch: char| self.is_word(ch);
        let may_lead = !self.not_leading.contains(ch);
        if may_lead && next.is_some_and(is_word) {
            return Some(run_end(text, after, |byte| byte.is_ascii_alphabetic(), is_word));
        }
        if is_word(ch) {
            return Some(run_end(text, at, |byte| byte.is_ascii_alphabetic(), is_word));
        }
        // (3)
        let symbols = if ch == ' ' { after } else { at };
        if text[symbols..].chars().next().is_some_and(|ch| self.is_punctuation_or_symbol(ch)) {
            let end =
                run_end(text, symbols, |byte| byte.is_ascii_punctuation(), |ch| self.is_punctuation_or_symbol(ch));
            return Some(run_end(text, end, |byte| matches!(byte, b'\r' | b'\n'), |ch| matches!(ch, '\r' | '\n')));
        }
        if !self.is_space(ch) {
            return None;
        }
        let (space_end, last_line_end, last_char) = self.space_run(text, at);
        // (4)
        if let Some(line_end) = last_line_end {
            return Some(line_end + 1);
        }
        // (5): the run less its last char, unless the text ends with it; (6) otherwise.
        if space_end == text.len() || last_char == at {
            return Some(space_end);
        }
        Some(last_char)
    }

    /// The end of the run of space from `at`, the position of its last line
    /// end (CR or LF) if any, and the start of its last char.
    fn space_run(&self, text: &str, at: usize) -> (usize, Option<usize>, usize) {
        let (mut end, mut line_end, mut last) = (at, None, at);
        for ch in text[at..].chars() {
            if !self.is_space(ch) {
                break;
            }
            if matches!(ch, '\r' | '\n') {
                line_end = Some(end);
            }
            last = end;
            end += ch.len_utf8();
        }
        (end, line_end, last)
    }
}

/// The end of the run of chars from `start` for which `holds` holds
/// (`holds` of an ASCII char is `ascii_holds` of its byte: a byte loop
/// while the text is ASCII).
#[inline(always)]
fn run_end(text: &str, start: usize, ascii_holds: impl Fn(u8) -> bool, holds: impl Fn(char) -> bool) -> usize {
    let bytes = text.as_bytes();
    let mut end = start;
    while end < bytes.len() && bytes[end] < 128 {
        if !ascii_holds(bytes[end]) {
            return end;
        }
        end += 1;
    }
    let rest = &text[end..];
    end + rest.find(|ch: char| !holds(ch)).unwrap_or(rest.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hf::regexes::to_fancy;

    #[test]
    fn hf_deepseek_words_match_what_the_regex_matches() {
        let regex = fancy_regex::Regex::new(&to_fancy(DEEPSEEK_V3_WORDS)).unwrap();
        let mut texts: Vec<String> = [
            "Hello, world! It's 2024-03-01.\n\n  Next line\r\n\tindented   \n",
            "a.b .c ..d (x) [y]z {q} $5 #tag @user ~~ ``code``",
            "  \n  end  ",
            " \u{a0}\u{3000}x \u{2028} \u{85}",
            "naïve café e\u{301}x \u{301}\u{301}a 9\u{301}b",
            "日本語のテキスト、中文文本。한국어 «quotes» — dash … ellipsis",
            "¹²³ ½ ٣٤٥ ₹100 €5 ©® ™ ✓ 😀😀 x😀y",
            "\r\r\n\n \r x\r\n",
            "1a 1 a _a _ a-b-c",
            "",
            " ",
            "  ",
            "!",
            " !\n",
        ]
        .iter()
        .map(|text| text.to_string())
        .collect();
        texts.push((0..0x3000u32).filter_map(char::from_u32).collect());
        texts.push((0..0x3000u32).rev().filter_map(char::from_u32).flat_map(|ch| [ch, ' ', 'a', ch]).collect());
        let mut found = Vec::new();
        for text in &texts {
            find(text, &mut found);
            let expected: Vec<(usize, usize)> =
                regex.find_iter(text).map(|m| m.unwrap()).map(|m| (m.start(), m.end())).collect();
            assert_eq!(found, expected, "{text:?}");
        }
    }

    #[test]
    fn hf_deepseek_words_are_recognised_as_the_files_write_them() {
        let file_spelling = DEEPSEEK_V3_WORDS.replace(r"\r", "\r").replace(r"\n", "\n");
        assert!(is_deepseek_words(&file_spelling));
        assert!(is_deepseek_words(DEEPSEEK_V3_WORDS));
        assert!(!is_deepseek_words(&DEEPSEEK_V3_WORDS.replace("|\\s+", "")));
    }
}
