//! Pre-tokenizer names: a preset by any common spelling, and what looks like
//! a misspelt one refused. Every entry point that takes a pattern comes here
//! ([`Pattern::new`](crate::pretokenize::pattern::Pattern::new)), so a typo is refused in
//! each the same way: as a regex, `"gtp2"` would match only that word, and
//! training "succeeds" on almost nothing.
//!
//! The rule: a spelling of a preset (compared without case and without `-`,
//! `_`, `.`, spaces: `"GPT-2"`, `"o200k_base"`) is that preset; a pattern of
//! only letters, digits and those marks that is no preset, or whose letters
//! and digits spell one amid other marks (`"gpt2!"`), is refused, naming the
//! closest preset. A regex that would read so is written inside a group:
//! `(?:gpt2)` is a regex, never a name.

use crate::error::Error;
use crate::pretokenize::pattern::PRESETS;

/// Spellings that name a preset, compared after [`key`]. tiktoken's encoding
/// names map to their patterns (r50k_base and p50k_base use GPT-2's).
const ALIASES: [(&str, &str); 13] = [
    ("gpt2", "gpt2"),
    ("r50k", "gpt2"),
    ("r50kbase", "gpt2"),
    ("p50k", "gpt2"),
    ("p50kbase", "gpt2"),
    ("cl100k", "cl100k"),
    ("cl100kbase", "cl100k"),
    ("gpt4", "cl100k"),
    ("o200k", "o200k"),
    ("o200kbase", "o200k"),
    ("gpt4o", "o200k"),
    ("llama3", "llama3"),
    ("qwen2", "qwen2"),
];

/// How close (0 to 1, the share of characters in common) a refused name must
/// be to a preset to be offered as "did you mean".
const CLOSE_ENOUGH: f64 = 0.5;

/// The preset `spec` names (its canonical name), or `spec` itself: a regex.
/// A name that is no preset is an error that names the closest one.
pub fn resolve(spec: &str) -> Result<&str, Error> {
    let key = key(spec);
    if let Some(&(_, preset)) = ALIASES.iter().find(|(alias, _)| *alias == key) {
        return Ok(preset);
    }
    let name_like = !spec.is_empty() && spec.chars().all(is_name_char);
    let spells_a_preset = !spec.starts_with('(') && ALIASES.iter().any(|(alias, _)| *alias == letters_and_digits(spec));
    if name_like || spells_a_preset {
        return Err(Error::InvalidArgument(not_a_preset(spec, &key)));
    }
    Ok(spec)
}

fn not_a_preset(spec: &str, key: &str) -> String {
    let names: Vec<&str> = PRESETS.iter().map(|(name, _)| *name).collect();
    let hint = closest(key, &names).map(|name| format!("did you mean {name:?}? ")).unwrap_or_default();
    format!(
        "pattern {spec:?} is not a preset; {hint}presets: {}. A regex that reads like a name would match little \
         but that word; to mean it, write it inside a group: (?:{spec})",
        names.join(", ")
    )
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ' ')
}

/// `name` lower-cased without `-`, `_`, `.` and spaces.
fn key(name: &str) -> String {
    name.chars().filter(|c| !matches!(c, '-' | '_' | '.' | ' ')).flat_map(char::to_lowercase).collect()
}

fn letters_and_digits(spec: &str) -> String {
    spec.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

/// The name of `names` closest to `key` (the share of characters the two
/// have in common, in order: twice their longest common subsequence over
/// their lengths), if close enough.
fn closest<'a>(key: &str, names: &[&'a str]) -> Option<&'a str> {
    let scored = names.iter().map(|name| (similarity(key, name), *name));
    let (score, name) = scored.fold((0.0, ""), |best, next| if next.0 > best.0 { next } else { best });
    (score >= CLOSE_ENOUGH).then_some(name)
}

fn similarity(a: &str, b: &str) -> f64 {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let mut row = vec![0usize; b.len() + 1];
    for &x in &a {
        let mut diagonal = 0;
        for (j, &y) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if x == y { diagonal + 1 } else { above.max(row[j]) };
            diagonal = above;
        }
    }
    2.0 * row[b.len()] as f64 / (a.len() + b.len()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_spelling_of_a_preset_is_that_preset() {
        for (spelling, preset) in
            [("GPT-2", "gpt2"), ("o200K", "o200k"), ("cl100k_base", "cl100k"), ("Llama 3", "llama3")]
        {
            assert_eq!(resolve(spelling).unwrap(), preset);
        }
    }

    #[test]
    fn a_name_that_is_no_preset_is_refused_with_the_closest() {
        for (typo, meant) in
            [("gtp2", "gpt2"), ("o200", "o200k"), ("qwen", "qwen2"), ("gpt2!", "gpt2"), ("O200k*", "o200k")]
        {
            let message = resolve(typo).unwrap_err().to_string();
            assert!(message.contains(&format!("did you mean {meant:?}?")), "{typo}: {message}");
            assert!(message.contains(&format!("(?:{typo})")), "{message}");
        }
        let message = resolve("words").unwrap_err().to_string();
        assert!(message.contains("is not a preset") && !message.contains("did you mean"), "{message}");
    }

    #[test]
    fn a_regex_stays_a_regex() {
        for regex in [r"\w+", r"(?:gpt2)", r"(?:words)", r"[a-z]+|\s+", r"\p{L}+"] {
            assert_eq!(resolve(regex).unwrap(), regex);
        }
    }
}
