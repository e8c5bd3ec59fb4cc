//! The chars a Unicode normal form leaves as they are whatever stands around
//! them (no decomposition, combining class 0, none a char before them
//! composes with): text made only of them is in that form. A bitmap over the
//! Basic Multilingual Plane, made when a file's normalizer needs it, answers
//! for a char at a time; `is_nfc_quick` looked up two tables a char and was
//! a seventh of Qwen2's warm encoding of multilingual lines.

use std::sync::LazyLock;

use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{is_nfc_quick, is_nfd_quick, is_nfkc_quick, is_nfkd_quick, IsNormalized};

pub struct StableChars {
    bmp: Box<[u64; 1024]>,
}

pub static NFC: LazyLock<StableChars> = LazyLock::new(|| StableChars::new(|ch| is_nfc_quick(std::iter::once(ch))));
pub static NFD: LazyLock<StableChars> = LazyLock::new(|| StableChars::new(|ch| is_nfd_quick(std::iter::once(ch))));
pub static NFKC: LazyLock<StableChars> = LazyLock::new(|| StableChars::new(|ch| is_nfkc_quick(std::iter::once(ch))));
pub static NFKD: LazyLock<StableChars> = LazyLock::new(|| StableChars::new(|ch| is_nfkd_quick(std::iter::once(ch))));

/// `value`, once `chars` are found.
pub fn loaded<T>(chars: &LazyLock<StableChars>, value: T) -> T {
    LazyLock::force(chars);
    value
}

impl StableChars {
    /// The chars of the plane whose quick check is Yes (a char a preceding
    /// one composes with has Maybe) and whose combining class is 0.
    fn new(quick_check: impl Fn(char) -> IsNormalized) -> Self {
        let mut bmp = Box::new([0u64; 1024]);
        for ch in (0..=0xFFFFu32).filter_map(char::from_u32) {
            if canonical_combining_class(ch) == 0 && quick_check(ch) == IsNormalized::Yes {
                let cp = u32::from(ch) as usize;
                bmp[cp / 64] |= 1 << (cp % 64);
            }
        }
        Self { bmp }
    }

    /// Whether every char of `text` is one (then `text` is in the form); a
    /// char beyond the plane is not known here.
    pub fn hold_all(&self, text: &str) -> bool {
        text.chars().all(|ch| {
            let cp = u32::from(ch) as usize;
            cp <= 0xFFFF && self.bmp[cp / 64] & (1 << (cp % 64)) != 0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_normalization::UnicodeNormalization;

    #[test]
    fn hf_text_of_stable_chars_is_in_the_form() {
        assert!(NFC.hold_all("abc déjà 日本語 한국어 Привет"));
        assert!(!NFC.hold_all("e\u{301}"), "a mark a char before composes with");
        assert!(!NFC.hold_all("\u{1161}"), "a Hangul vowel a syllable before composes with");
        assert!(!NFD.hold_all("é") && NFD.hold_all("e"));
        assert!(!NFKC.hold_all("\u{fb01}") && !NFKC.hold_all("\u{a0}"));
        // Each stable char next to any other stable char stays as it is.
        let stable: Vec<char> =
            (0..0x3400u32).filter_map(char::from_u32).filter(|&ch| NFC.hold_all(&ch.to_string())).collect();
        let text: String = stable.iter().flat_map(|&ch| [ch, 'a', ch]).collect();
        assert_eq!(text.nfc().collect::<String>(), text);
        let text: String = stable.iter().rev().collect();
        assert_eq!(text.nfc().collect::<String>(), text);
    }
}
