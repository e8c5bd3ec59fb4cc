//! The regexes of a `tokenizer.json` (Split pre-tokenizers, Replace
//! normalizers): written for Oniguruma, the engine of HF `tokenizers`, run
//! here on bpeforge's hand-written scanner when the regex is a preset's, by
//! hand when it is one run of a class (`class_run`) or DeepSeek V3's word
//! regex (`deepseek_split`), else on fancy-regex with Oniguruma's meaning.
//!
//! Two constructs read differently in the engines (found by comparing
//! cl100k's pieces, see `python/bpeforge/formats/oniguruma.py`): `$` and `^`
//! are line anchors in Oniguruma (Ruby syntax) but text anchors in
//! fancy-regex, and `X{n,m}+` repeats `X{n,m}` in Oniguruma but is possessive
//! in fancy-regex. `to_fancy` rewrites both; `to_onig` is the reverse
//! spelling bpeforge's own exports use, so a preset is recognised however the
//! file spells it.

use std::sync::LazyLock;

use super::class_run::ClassRun;
use super::deepseek_split::{self, is_deepseek_words};
use crate::error::Error;
use crate::pretokenize::pattern::{fancy_regex_for_long_texts, search_failed, Pattern, PRESETS};

/// What a Split or Replace looks for.
pub enum Matcher {
    /// A preset's regex, on its scanner.
    Preset(Pattern),
    /// One run of a class, maybe after one optional char (`class_run`).
    ClassRun(Box<ClassRun>),
    /// DeepSeek V3's word regex, by hand (`deepseek_split`).
    DeepSeekWords,
    /// Any other regex.
    Regex(Box<fancy_regex::Regex>),
    /// A literal string (non-empty).
    Literal(String),
}

/// `X{n,m}+` where X is one atom: a `\p{..}`, an escape, a class, a group
/// without nested groups, or a plain char.
const INTERVAL_ATOM: &str =
    r"(\\p\{\w+\}|\\.|\[(?:\\.|[^\]\\])*\]|\((?:\\.|[^()\\])*\)|[^\\()\[\]{}])(\{\d+(?:,\d*)?\})";

static POSSESSIVE_INTERVAL: LazyLock<fancy_regex::Regex> =
    LazyLock::new(|| fancy_regex::Regex::new(&format!(r"{INTERVAL_ATOM}\+")).expect("a valid regex"));

impl Matcher {
    /// The matcher of a regex as a `tokenizer.json` holds it (Oniguruma syntax).
    pub fn onig(source: &str, component: &str) -> Result<Self, Error> {
        if let Some(preset) = preset_of(source) {
            return Ok(Matcher::Preset(Pattern::new(preset)?));
        }
        if let Some(escape) = onig_only_escape(source) {
            return Err(super::json::refuse(
                &format!("{component} regex {source:?} with {escape}"),
                "Oniguruma and fancy-regex read that escape differently, or fancy-regex lacks it",
            ));
        }
        if is_deepseek_words(source) {
            return Ok(Matcher::DeepSeekWords);
        }
        let translated = to_fancy(source);
        if let Some(run) = ClassRun::of(&translated) {
            return Ok(Matcher::ClassRun(Box::new(run)));
        }
        let regex = fancy_regex_for_long_texts(&translated).map_err(|err| {
            Error::InvalidArgument(format!("{component}: regex {source:?} is not supported here ({err})"))
        })?;
        Ok(Matcher::Regex(Box::new(regex)))
    }

    /// The non-overlapping matches in `text`, left to right, as byte ranges.
    pub fn find(&self, text: &str, out: &mut Vec<(usize, usize)>) -> Result<(), Error> {
        out.clear();
        match self {
            Matcher::Preset(pattern) => {
                // The presets cover every char: each piece is a match.
                let base = text.as_ptr() as usize;
                pattern.for_each_piece(text, |piece| {
                    let start = piece.as_ptr() as usize - base;
                    out.push((start, start + piece.len()));
                })?;
            }
            Matcher::ClassRun(run) => run.find(text, out),
            Matcher::DeepSeekWords => deepseek_split::find(text, out),
            Matcher::Regex(regex) => {
                for found in regex.find_iter(text) {
                    let found = found.map_err(|err| search_failed(&format!("regex {:?}", regex.as_str()), &err))?;
                    out.push((found.start(), found.end()));
                }
            }
            Matcher::Literal(literal) => {
                out.extend(text.match_indices(literal.as_str()).map(|(at, found)| (at, at + found.len())));
            }
        }
        Ok(())
    }
}

/// The preset whose regex `source` is, in bpeforge's spelling where both
/// engines read it alike, or in the Oniguruma spelling of it.
pub fn preset_of(source: &str) -> Option<&'static str> {
    PRESETS.iter().find_map(|(name, regex)| {
        let same_in_both = to_onig(regex) == *regex;
        ((same_in_both && source == *regex) || source == to_onig(regex)).then_some(*name)
    })
}

/// An Oniguruma regex as fancy-regex reads it with the same matches.
pub fn to_fancy(source: &str) -> String {
    let anchored = swap_outside_classes(source, &[("$", "(?m:$)"), ("^", "(?m:^)")]);
    POSSESSIVE_INTERVAL.replace_all(&anchored, "(?:$1$2)+").into_owned()
}

/// A bpeforge regex as Oniguruma reads it with the same matches (as
/// `formats/oniguruma.py` exports it).
pub fn to_onig(source: &str) -> String {
    let anchored = swap_outside_classes(source, &[("$", r"\z")]);
    POSSESSIVE_INTERVAL.replace_all(&anchored, "(?>$1$2)").into_owned()
}

/// The first escape whose meaning in Oniguruma (Ruby syntax) fancy-regex does
/// not share: `\h` is a hex digit there, `\Z`, `\R`, `\X`, `\K`, `\G`, `\O`,
/// `\y` and `\Y` exist only there.
fn onig_only_escape(source: &str) -> Option<String> {
    let mut chars = source.chars();
    while let Some(ch) = chars.next() {
        if ch == '\\' {
            if let Some(escaped @ ('h' | 'H' | 'Z' | 'R' | 'X' | 'K' | 'G' | 'O' | 'y' | 'Y')) = chars.next() {
                return Some(format!("\\{escaped}"));
            }
        }
    }
    source.contains("(?~").then(|| "(?~".to_string())
}

/// `source` with each token `old` replaced by `new` outside character
/// classes; an escape is one token.
fn swap_outside_classes(source: &str, swaps: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(source.len() + 8);
    let mut in_class = false;
    let mut chars = source.char_indices().peekable();
    while let Some((at, ch)) = chars.next() {
        let end =
            if ch == '\\' { chars.next().map_or(source.len(), |(i, c)| i + c.len_utf8()) } else { at + ch.len_utf8() };
        let token = &source[at..end];
        if token == "[" && !in_class {
            in_class = true;
        } else if token == "]" && in_class {
            in_class = false;
        }
        match swaps.iter().find(|(old, _)| *old == token) {
            Some((_, new)) if !in_class => out.push_str(new),
            _ => out.push_str(token),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hf_presets_are_recognised_in_either_spelling() {
        for (name, regex) in PRESETS {
            assert_eq!(preset_of(&to_onig(regex)), Some(name), "{name}");
        }
        assert_eq!(preset_of(crate::pretokenize::pattern::LLAMA3), Some("llama3"));
        // cl100k as bpeforge spells it means something else in Oniguruma.
        assert_eq!(preset_of(crate::pretokenize::pattern::CL100K), None);
        assert_eq!(preset_of(r"\p{N}{1,3}"), None);
    }

    #[test]
    fn hf_onig_constructs_translate_to_fancy_regex() {
        assert_eq!(to_fancy(r"\s+$|[$^]"), r"\s+(?m:$)|[$^]");
        assert_eq!(to_fancy(r"\p{N}{1,3}+"), r"(?:\p{N}{1,3})+");
        assert_eq!(to_onig(r"\p{N}{1,3}+|\s++$"), r"(?>\p{N}{1,3})|\s++\z");
    }

    #[test]
    fn hf_escapes_only_oniguruma_reads_are_refused() {
        for regex in [r"\h+", r"a\Z", r"[\h]", r"\R", r"(?~ab)"] {
            let refused = Matcher::onig(regex, "pre_tokenizer Split").err().expect("refused").to_string();
            assert!(refused.contains("not supported"), "{regex}: {refused}");
        }
        assert!(Matcher::onig(r"\\h\s", "test").is_ok(), "an escaped backslash before h is a plain h");
    }

    #[test]
    fn hf_a_lookahead_searches_a_long_text_without_a_match() {
        // fancy-regex's default limit counted each of these start positions and failed past 10^6.
        let mut found = Vec::new();
        let split = Matcher::onig(r"(?=(\d{3})+(?!\d))", "pre_tokenizer Split").unwrap();
        let text = format!("{} 1234567", "word ".repeat(400_000));
        split.find(&text, &mut found).unwrap();
        let end = text.len();
        assert_eq!(found, [(end - 6, end - 6), (end - 3, end - 3)], "empty matches before 234 and 567");
    }

    #[test]
    fn hf_matchers_find_what_oniguruma_finds() {
        let mut found = Vec::new();
        Matcher::onig(r"\d+$", "test").unwrap().find("12\n34", &mut found).unwrap();
        assert_eq!(found, [(0, 2), (3, 5)]);
        Matcher::Literal("ab".into()).find("abab a", &mut found).unwrap();
        assert_eq!(found, [(0, 2), (2, 4)]);
        Matcher::onig(&to_onig(crate::pretokenize::pattern::CL100K), "test")
            .unwrap()
            .find("Hi 123!", &mut found)
            .unwrap();
        assert_eq!(found, [(0, 2), (2, 3), (3, 6), (6, 7)]);
    }
}
