//! The Unicode classes `tokenizers` tests chars against, taken from the
//! tables of `regex-syntax` (those of the `regex` crate `tokenizers` uses for
//! `\w` and `\s`).

use std::sync::LazyLock;

use regex_syntax::hir::{Class, HirKind};

pub struct CharClass {
    ranges: Vec<(char, char)>,
}

impl CharClass {
    fn new(class: &str) -> Self {
        let hir = regex_syntax::parse(class).expect("a valid class");
        let ranges = match hir.kind() {
            HirKind::Class(Class::Unicode(unicode)) => {
                unicode.iter().map(|range| (range.start(), range.end())).collect()
            }
            _ => unreachable!("{class} is a Unicode class"),
        };
        Self { ranges }
    }

    pub fn contains(&self, ch: char) -> bool {
        let after = self.ranges.partition_point(|&(start, _)| start <= ch);
        after > 0 && ch <= self.ranges[after - 1].1
    }
}

/// `\w` of the `regex` crate.
pub static WORD: LazyLock<CharClass> = LazyLock::new(|| CharClass::new(r"\w"));
/// `\s` of the `regex` crate.
pub static SPACE: LazyLock<CharClass> = LazyLock::new(|| CharClass::new(r"\s"));
/// The general category P (`unicode_categories`' `is_punctuation`).
static PUNCTUATION: LazyLock<CharClass> = LazyLock::new(|| CharClass::new(r"\p{P}"));

/// The Punctuation pre-tokenizer's test: ASCII punctuation (symbols such as
/// `$` and `+` included) or Unicode category P.
pub fn is_punctuation(ch: char) -> bool {
    ch.is_ascii_punctuation() || PUNCTUATION.contains(ch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hf_char_classes_hold_what_regex_says() {
        assert!(WORD.contains('a') && WORD.contains('_') && WORD.contains('é') && !WORD.contains('-'));
        assert!(SPACE.contains(' ') && SPACE.contains('\u{3000}') && !SPACE.contains('x'));
        assert!(is_punctuation('$') && is_punctuation('«') && is_punctuation('、') && !is_punctuation('a'));
    }
}
