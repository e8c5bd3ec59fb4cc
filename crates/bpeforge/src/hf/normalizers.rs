//! The normalizers of a `tokenizer.json`, as `tokenizers` applies them to
//! each stretch of text between added tokens. Text a normalizer leaves as it
//! is (NFC of ASCII, say) is not copied.

mod normalization_ages;

use std::borrow::Cow;

use serde_json::Value;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::{is_nfc_quick, is_nfd_quick, is_nfkc_quick, is_nfkd_quick, IsNormalized};

use super::json::{field_bool, field_str, kind, refuse};
use super::regexes::Matcher;
use super::stable_chars::{self, StableChars};
use crate::error::Error;

pub enum Normalizer {
    Nfc,
    Nfd,
    Nfkc,
    Nfkd,
    Lowercase,
    Strip { left: bool, right: bool },
    Replace { pattern: Matcher, content: String },
    Prepend(String),
    Sequence(Vec<Normalizer>),
}

impl Normalizer {
    /// The normalizer a `tokenizer.json` describes (`None` for `null`).
    pub fn parse(json: &Value) -> Result<Option<Self>, Error> {
        if json.is_null() {
            return Ok(None);
        }
        let component = "normalizer";
        Ok(Some(match kind(json, component)? {
            // Each form's stable chars are found here, when loading, not in a first call.
            "NFC" => stable_chars::loaded(&stable_chars::NFC, Normalizer::Nfc),
            "NFD" => stable_chars::loaded(&stable_chars::NFD, Normalizer::Nfd),
            "NFKC" => stable_chars::loaded(&stable_chars::NFKC, Normalizer::Nfkc),
            "NFKD" => stable_chars::loaded(&stable_chars::NFKD, Normalizer::Nfkd),
            "Lowercase" => Normalizer::Lowercase,
            "Strip" => Normalizer::Strip {
                left: field_bool(json, "strip_left", component)?.unwrap_or(true),
                right: field_bool(json, "strip_right", component)?.unwrap_or(true),
            },
            "Replace" => Normalizer::Replace {
                pattern: pattern(json, "normalizer Replace")?,
                content: field_str(json, "content", component)?.to_string(),
            },
            "Prepend" => Normalizer::Prepend(field_str(json, "prepend", component)?.to_string()),
            "Sequence" => {
                let steps = json.get("normalizers").and_then(Value::as_array).ok_or_else(|| {
                    Error::InvalidArgument("normalizer Sequence has no 'normalizers' list".to_string())
                })?;
                let mut parsed = Vec::with_capacity(steps.len());
                for step in steps {
                    parsed.extend(Normalizer::parse(step)?);
                }
                // No step (DeepSeek's files) is no normalizer, one step that step: no call a stretch for them.
                match parsed.len() {
                    0 => return Ok(None),
                    1 => parsed.pop().expect("one step"),
                    _ => Normalizer::Sequence(parsed),
                }
            }
            other => return Err(refuse(&format!("normalizer {other:?}"), "bpeforge does not implement it")),
        }))
    }

    /// `text` normalized; borrowed when nothing changed.
    pub fn normalize<'t>(&self, text: Cow<'t, str>) -> Cow<'t, str> {
        match self {
            Normalizer::Nfc => {
                unicode_form(text, &stable_chars::NFC, |t| is_nfc_quick(t.chars()), |t| t.nfc().collect())
            }
            Normalizer::Nfd => {
                unicode_form(text, &stable_chars::NFD, |t| is_nfd_quick(t.chars()), |t| t.nfd().collect())
            }
            Normalizer::Nfkc => {
                unicode_form(text, &stable_chars::NFKC, |t| is_nfkc_quick(t.chars()), |t| t.nfkc().collect())
            }
            Normalizer::Nfkd => {
                unicode_form(text, &stable_chars::NFKD, |t| is_nfkd_quick(t.chars()), |t| t.nfkd().collect())
            }
            // Char by char, as `tokenizers` does (no final-sigma rule of `str::to_lowercase`).
            Normalizer::Lowercase => {
                if text.chars().all(|ch| ch.to_lowercase().eq(std::iter::once(ch))) {
                    text
                } else {
                    Cow::Owned(text.chars().flat_map(char::to_lowercase).collect())
                }
            }
            Normalizer::Strip { left, right } => {
                let mut stripped: &str = &text;
                if *left {
                    stripped = stripped.trim_start_matches(char::is_whitespace);
                }
                if *right {
                    stripped = stripped.trim_end_matches(char::is_whitespace);
                }
                if stripped.len() == text.len() {
                    text
                } else {
                    Cow::Owned(stripped.to_string())
                }
            }
            Normalizer::Replace { pattern, content } => {
                let mut found = Vec::new();
                // A regex that fails on this text leaves it as it is, as in `tokenizers`.
                if pattern.find(&text, &mut found).is_err() || found.is_empty() {
                    return text;
                }
                let mut out = String::with_capacity(text.len());
                let mut last = 0;
                for (start, end) in found {
                    out.push_str(&text[last..start]);
                    out.push_str(content);
                    last = end;
                }
                out.push_str(&text[last..]);
                Cow::Owned(out)
            }
            Normalizer::Prepend(prefix) => {
                if text.is_empty() {
                    text
                } else {
                    Cow::Owned(format!("{prefix}{text}"))
                }
            }
            Normalizer::Sequence(steps) => steps.iter().fold(text, |text, step| step.normalize(text)),
        }
    }
}

fn unicode_form<'t>(
    text: Cow<'t, str>,
    stable: &StableChars,
    quick_check: impl Fn(&str) -> IsNormalized,
    normalize: impl Fn(&str) -> String,
) -> Cow<'t, str> {
    if text.is_ascii() || stable.hold_all(&text) || quick_check(&text) == IsNormalized::Yes {
        return text;
    }
    let normalized = as_tokenizers_normalizes(&text, normalize);
    if normalized == *text {
        text
    } else {
        Cow::Owned(normalized)
    }
}

/// `normalize` of `text` as `tokenizers` computes it: its normalization data
/// is Unicode 9.0's (`scripts/gen_normalization_ages.py`), so a char assigned
/// later (or not at all) is left as it is and, being no combining mark to it,
/// ends the run of text around it: each run between such chars is normalized
/// on its own. (`unicode-normalization`, on a newer Unicode, would reorder or
/// compose a later mark, and decompose a later compatibility char.)
fn as_tokenizers_normalizes(text: &str, normalize: impl Fn(&str) -> String) -> String {
    if text.chars().all(known_to_tokenizers) {
        return normalize(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut start = 0;
    for (at, ch) in text.char_indices() {
        if !known_to_tokenizers(ch) {
            out.push_str(&normalize(&text[start..at]));
            out.push(ch);
            start = at + ch.len_utf8();
        }
    }
    out.push_str(&normalize(&text[start..]));
    out
}

/// Whether `tokenizers`' normalization data (Unicode 9.0) has `ch`.
fn known_to_tokenizers(ch: char) -> bool {
    let code = u32::from(ch);
    code < 0x378 || {
        let ranges = normalization_ages::KNOWN_TO_TOKENIZERS;
        let at = ranges.partition_point(|&(_, last)| last < code);
        ranges.get(at).is_some_and(|&(first, _)| first <= code)
    }
}

/// The `pattern` of a Split or Replace: `{"String": ...}` or `{"Regex": ...}`.
pub fn pattern(json: &Value, component: &str) -> Result<Matcher, Error> {
    let pattern = json.get("pattern");
    if let Some(literal) = pattern.and_then(|p| p.get("String")).and_then(Value::as_str) {
        if literal.is_empty() {
            return Err(refuse(
                &format!("{component} with an empty String pattern"),
                "tokenizers' own result is ill-defined",
            ));
        }
        return Ok(Matcher::Literal(literal.to_string()));
    }
    if let Some(regex) = pattern.and_then(|p| p.get("Regex")).and_then(Value::as_str) {
        return Matcher::onig(regex, component);
    }
    Err(Error::InvalidArgument(format!("{component} has no pattern {{\"String\": ...}} or {{\"Regex\": ...}}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalize(json: &str, text: &str) -> String {
        let normalizer = Normalizer::parse(&serde_json::from_str(json).unwrap()).unwrap().unwrap();
        normalizer.normalize(Cow::Borrowed(text)).into_owned()
    }

    #[test]
    fn hf_normalizers_change_text_as_tokenizers_does() {
        assert_eq!(normalize(r#"{"type": "NFC"}"#, "e\u{301}"), "\u{e9}");
        assert_eq!(normalize(r#"{"type": "NFKC"}"#, "\u{fb01}"), "fi");
        assert_eq!(normalize(r#"{"type": "Lowercase"}"#, "ΟΔΟΣ"), "οδοσ");
        assert_eq!(normalize(r#"{"type": "Strip", "strip_left": true, "strip_right": false}"#, " a "), "a ");
        assert_eq!(normalize(r#"{"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "}"#, "a \n b"), "a b");
        assert_eq!(normalize(r#"{"type": "Prepend", "prepend": "▁"}"#, "a"), "▁a");
        assert_eq!(
            normalize(r#"{"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Lowercase"}]}"#, "É"),
            "e\u{301}"
        );
    }

    #[test]
    fn hf_unchanged_text_is_not_copied() {
        let nfc = Normalizer::Nfc;
        assert!(matches!(nfc.normalize(Cow::Borrowed("plain ascii")), Cow::Borrowed(_)));
        assert!(matches!(nfc.normalize(Cow::Borrowed("déjà")), Cow::Borrowed(_)));
    }
}
