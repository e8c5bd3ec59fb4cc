//! DeepSeek V3's pre-tokenizer (V3.1's, R1's and V4's too): three Isolated
//! Splits, `\p{N}{1,3}`, then `[一-龥぀-ゟ゠-ヿ]+` (CJK ideographs and kana),
//! then the word regex (`deepseek_split`), run as one pass. The first two
//! cut the text at runs of numbers (in groups of up to three) and runs of
//! CJK chars, whose classes share no char; the word regex then cuts each
//! stretch between them, and each CJK run (which may hold kana punctuation
//! and marks), on its own (a number group it leaves whole: it matches no
//! number). One pass over the text instead of three Splits, each over every
//! piece the one before made.

use std::sync::LazyLock;

use serde_json::Value;

use super::class_run::ClassBits;
use super::deepseek_split::{cut_isolated, is_deepseek_words, parsed};

const NUMBER_GROUPS: &str = r"\p{N}{1,3}";
const CJK_RUNS: &str = "[一-龥\u{3040}-ゟ゠-ヿ]+";

static NUMBER: LazyLock<ClassBits> = LazyLock::new(|| parsed(r"\p{N}"));
static CJK: LazyLock<ClassBits> = LazyLock::new(|| parsed("[一-龥\u{3040}-ゟ゠-ヿ]"));

/// Whether `steps` (a pre-tokenizer's, as the file holds them) begin with the three Splits.
pub fn starts_with_v3_splits(steps: &[&Value]) -> bool {
    let isolated_split = |step: &&Value, holds: &dyn Fn(&str) -> bool| {
        step.get("type").and_then(Value::as_str) == Some("Split")
            && step.get("behavior").and_then(Value::as_str) == Some("Isolated")
            && !step.get("invert").and_then(Value::as_bool).unwrap_or(false)
            && step.get("pattern").and_then(|p| p.get("Regex")).and_then(Value::as_str).is_some_and(holds)
    };
    match steps {
        [numbers, cjk, words, ..] => {
            isolated_split(numbers, &|regex| regex == NUMBER_GROUPS)
                && isolated_split(cjk, &|regex| regex == CJK_RUNS)
                && isolated_split(words, &is_deepseek_words)
        }
        _ => false,
    }
}

/// Append to `out` the pieces the three Splits make of `text`, moved by `offset`.
pub fn cut(text: &str, offset: usize, out: &mut Vec<(usize, usize)>) {
    let (number, cjk) = (&*NUMBER, &*CJK);
    let bytes = text.as_bytes();
    let (mut stretch, mut at) = (0, 0);
    while at < bytes.len() {
        let byte = bytes[at];
        if byte < 128 && !byte.is_ascii_digit() {
            at += 1;
            continue;
        }
        let ch = text[at..].chars().next().expect("a char starts here");
        let is_number = byte.is_ascii_digit() || number.contains(ch);
        if !is_number && !cjk.contains(ch) {
            at += ch.len_utf8();
            continue;
        }
        if stretch < at {
            cut_isolated(&text[stretch..at], offset + stretch, out);
        }
        if is_number {
            at = number_groups(text, at, number, offset, out);
        } else {
            let rest = &text[at..];
            let end = at + rest.find(|ch: char| !cjk.contains(ch)).unwrap_or(rest.len());
            cut_isolated(&text[at..end], offset + at, out);
            at = end;
        }
        stretch = at;
    }
    if stretch < bytes.len() {
        cut_isolated(&text[stretch..], offset + stretch, out);
    }
}

/// Append the groups of up to three chars of the run of numbers at `start`; where it ends.
fn number_groups(text: &str, start: usize, number: &ClassBits, offset: usize, out: &mut Vec<(usize, usize)>) -> usize {
    let (mut group_start, mut in_group, mut end) = (start, 0, start);
    for ch in text[start..].chars() {
        if !(ch.is_ascii_digit() || (!ch.is_ascii() && number.contains(ch))) {
            break;
        }
        end += ch.len_utf8();
        in_group += 1;
        if in_group == 3 {
            out.push((group_start + offset, end + offset));
            (group_start, in_group) = (end, 0);
        }
    }
    if group_start < end {
        out.push((group_start + offset, end + offset));
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hf::deepseek_split::DEEPSEEK_V3_WORDS;
    use crate::hf::regexes::Matcher;

    /// The three Splits one after another, as `tokenizers` runs them.
    fn three_splits(text: &str) -> Vec<(usize, usize)> {
        let mut pieces = vec![(0, text.len())];
        for regex in [NUMBER_GROUPS, CJK_RUNS, DEEPSEEK_V3_WORDS] {
            let matcher = Matcher::onig(regex, "test").unwrap();
            let mut next = Vec::new();
            for (start, end) in pieces {
                let mut found = Vec::new();
                matcher.find(&text[start..end], &mut found).unwrap();
                crate::hf::split::isolated(end - start, &found, start, &mut next);
            }
            pieces = next;
        }
        pieces
    }

    #[test]
    fn hf_deepseek_v3_splits_cut_in_one_pass_as_three() {
        let mut texts: Vec<String> = [
            "Hello, world! It's 2024-03-01 at 12345678.\n\n  Next 7 line\r\n\t123abc   \n",
            "日本語のテキスト123、中文文本。カタカナ・ひらがな゛゜ ゙x 한국어 ４５６７ ²³ Ⅻ",
            "  1  ",
            "",
            "a",
            "x1y22z333w4444",
            " ゠ ・ \u{3040}\u{3097}",
        ]
        .iter()
        .map(|text| text.to_string())
        .collect();
        texts.push((0..0x3100u32).filter_map(char::from_u32).collect());
        texts.push(
            (0x3000..0xA000u32).step_by(7).filter_map(char::from_u32).flat_map(|ch| [ch, ' ', '1', ch]).collect(),
        );
        for text in &texts {
            let mut pieces = Vec::new();
            cut(text, 0, &mut pieces);
            assert_eq!(pieces, three_splits(text), "{text:?}");
        }
    }
}
