//! Split regexes that are one run of a character class, maybe after one
//! optional char of another: `\p{N}{1,3}`, `[一-龥぀-ゟ゠-ヿ]+`, `[\r\n]`,
//! `\s?[A-Za-z...]+` (the DeepSeek family's). Matched here a char at a time
//! against bitmaps of the classes, with the matches a backtracking engine
//! finds: a regex search a piece cost more than the rest of the pipeline.
//!
//! The classes are read by `regex-syntax`, the parser of the `regex` crate
//! (fancy-regex's engine for such regexes), so the chars are the same.

use regex_syntax::hir::{Class, Hir, HirKind};

/// A set of chars: a bitmap for the Basic Multilingual Plane, ranges beyond.
pub struct ClassBits {
    bmp: Box<[u64; 1024]>,
    astral: Vec<(u32, u32)>,
}

/// Bytes a scan may step over one at a time: ASCII bytes of no char a run may start with.
struct AsciiSkip([bool; 128]);

impl ClassBits {
    pub fn new(ranges: impl IntoIterator<Item = (char, char)>) -> Self {
        let mut bmp = Box::new([0u64; 1024]);
        let mut astral = Vec::new();
        for (start, end) in ranges {
            let (start, end) = (u32::from(start), u32::from(end));
            for cp in start..=end.min(0xFFFF) {
                bmp[cp as usize / 64] |= 1 << (cp % 64);
            }
            if end > 0xFFFF {
                astral.push((start.max(0x10000), end));
            }
        }
        Self { bmp, astral }
    }

    /// Whether it holds the ASCII char `byte`.
    #[inline(always)]
    pub fn contains_ascii(&self, byte: u8) -> bool {
        self.bmp[usize::from(byte / 64)] >> (byte % 64) & 1 != 0
    }

    #[inline(always)]
    pub fn contains(&self, ch: char) -> bool {
        let cp = u32::from(ch);
        if cp <= 0xFFFF {
            return self.bmp[cp as usize / 64] & (1 << (cp % 64)) != 0;
        }
        let after = self.astral.partition_point(|&(start, _)| start <= cp);
        after > 0 && cp <= self.astral[after - 1].1
    }
}

/// `P? C{min,max}` (greedy), `P` optional.
pub struct ClassRun {
    prefix: Option<ClassBits>,
    class: ClassBits,
    min: usize,
    max: Option<usize>,
    skip: AsciiSkip,
}

impl ClassRun {
    /// The run `regex` is (as fancy-regex reads it), if it is one.
    pub fn of(regex: &str) -> Option<Self> {
        let hir = regex_syntax::parse(regex).ok()?;
        match hir.kind() {
            HirKind::Concat(parts) => match &parts[..] {
                [optional, run] => {
                    let (prefix, 0, Some(1)) = repeated_class(optional)? else { return None };
                    let (class, min, max) = repeated_class(run)?;
                    (min >= 1).then(|| Self::new(Some(prefix), class, min, max))
                }
                _ => None,
            },
            _ => {
                let (class, min, max) = repeated_class(&hir)?;
                (min >= 1).then(|| Self::new(None, class, min, max))
            }
        }
    }

    fn new(prefix: Option<ClassBits>, class: ClassBits, min: usize, max: Option<usize>) -> Self {
        let mut skip = [false; 128];
        for (byte, skipped) in (0u8..).zip(skip.iter_mut()) {
            *skipped = !class.contains_ascii(byte) && !prefix.as_ref().is_some_and(|p| p.contains_ascii(byte));
        }
        Self { prefix, class, min, max, skip: AsciiSkip(skip) }
    }

    /// The matches in `text`, left to right, as byte ranges, in `out` (emptied first).
    pub fn find(&self, text: &str, out: &mut Vec<(usize, usize)>) {
        out.clear();
        let bytes = text.as_bytes();
        let mut at = 0;
        loop {
            // English for `\p{N}{1,3}` or a CJK run: most bytes start no match.
            while at < bytes.len() && bytes[at] < 128 && self.skip.0[usize::from(bytes[at])] {
                at += 1;
            }
            let Some(ch) = text[at..].chars().next() else { break };
            if let Some(prefix) = &self.prefix {
                if prefix.contains(ch) {
                    if let Some(end) = self.run(text, at + ch.len_utf8()) {
                        out.push((at, end));
                        at = end;
                        continue;
                    }
                }
            }
            if !self.class.contains(ch) {
                at += ch.len_utf8();
                continue;
            }
            match self.run(text, at) {
                Some(end) => {
                    out.push((at, end));
                    at = end;
                }
                None => at += ch.len_utf8(),
            }
        }
    }

    /// The end of the greedy run of the class from `start`, if it holds `min` chars.
    #[inline]
    fn run(&self, text: &str, start: usize) -> Option<usize> {
        let (mut end, mut count) = (start, 0);
        let bytes = text.as_bytes();
        while end < bytes.len() && bytes[end] < 128 && self.max != Some(count) {
            if !self.class.contains_ascii(bytes[end]) {
                return (count >= self.min).then_some(end);
            }
            (end, count) = (end + 1, count + 1);
        }
        for ch in text[end..].chars() {
            if self.max == Some(count) || !self.class.contains(ch) {
                break;
            }
            end += ch.len_utf8();
            count += 1;
        }
        (count >= self.min).then_some(end)
    }
}

/// A class repeated greedily (once, for a bare class): its chars and bounds.
fn repeated_class(hir: &Hir) -> Option<(ClassBits, usize, Option<usize>)> {
    match hir.kind() {
        HirKind::Repetition(repetition) if repetition.greedy => {
            let bits = class(&repetition.sub)?;
            Some((bits, repetition.min as usize, repetition.max.map(|max| max as usize)))
        }
        _ => Some((class(hir)?, 1, Some(1))),
    }
}

/// The chars of a class, or of a literal of one char.
fn class(hir: &Hir) -> Option<ClassBits> {
    match hir.kind() {
        HirKind::Class(Class::Unicode(class)) => Some(ClassBits::new(class.iter().map(|r| (r.start(), r.end())))),
        HirKind::Literal(literal) => {
            let mut chars = std::str::from_utf8(&literal.0).ok()?.chars();
            let only = chars.next().filter(|_| chars.next().is_none())?;
            Some(ClassBits::new([(only, only)]))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regex_matches(regex: &str, text: &str) -> Vec<(usize, usize)> {
        let regex = fancy_regex::Regex::new(regex).unwrap();
        regex.find_iter(text).map(|m| m.unwrap()).map(|m| (m.start(), m.end())).collect()
    }

    #[test]
    fn hf_class_runs_match_what_the_regex_matches() {
        let texts = [
            "",
            "abc 12345 6789012 x1y22z333",
            "  a\tb\n\nc\r\n d  ",
            "日本語のテキスト、中文文本。한국어 テスト ok",
            "٣٤٥ ¹²³ ½ Ⅻ 𝟘𝟙𝟚 𐒠𐒡",
            " !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ ！＂ ‘’“” 　、。",
        ];
        let regexes = [
            r"\p{N}{1,3}",
            "[一-龥\u{3040}-ゟ゠-ヿ]+",
            r"[\r\n]",
            r"\s?[A-Za-zµÀ-ÖØ-öø-ƺ]+",
            r"\s?[!-/:-~！-／：-～‘-‟　-。]+",
            "[一-龥ࠀ-一가-퟿]+",
            r"\p{L}",
            r"x?\d{2,}",
        ];
        let mut found = Vec::new();
        for regex in regexes {
            let run = ClassRun::of(regex).unwrap_or_else(|| panic!("{regex} is a class run"));
            for text in texts {
                run.find(text, &mut found);
                assert_eq!(found, regex_matches(regex, text), "{regex} on {text:?}");
            }
        }
        for other in [r"\s+$", r"ab|c", r"\p{N}*", r"(?i:'s)", r"\p{L}+?"] {
            assert!(ClassRun::of(other).is_none(), "{other}");
        }
    }
}
