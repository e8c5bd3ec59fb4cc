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
#[cfg(test)]
use super::deepseek_split::cut_isolated;
use super::deepseek_split::{self, is_deepseek_words, parsed};

const NUMBER_GROUPS: &str = r"\p{N}{1,3}";
const CJK_RUNS: &str = "[一-龥\u{3040}-ゟ゠-ヿ]+";

static NUMBER: LazyLock<ClassBits> = LazyLock::new(|| parsed(r"\p{N}"));
static CJK: LazyLock<ClassBits> = LazyLock::new(|| parsed("[一-龥\u{3040}-ゟ゠-ヿ]"));
/// The CJK chars that are `[\p{L}\p{M}]`: a run of them is a piece.
pub(super) static CJK_WORD: LazyLock<ClassBits> = LazyLock::new(|| {
    let word = parsed(r"[\p{L}\p{M}]");
    let chars = ('\u{3040}'..='\u{30FF}').chain('一'..='龥');
    ClassBits::new(chars.filter(|&ch| word.contains(ch)).map(|ch| (ch, ch)))
});

/// The chars of three bytes that are `[\p{P}\p{S}]` outside the CJK
/// Split's class (`、` `。` `「` `」` `（` `）`: a Japanese line has two or
/// three): in the word regex's stretch each acts as ASCII punctuation does
/// but never leads letters (`[P][A-Za-z]+` takes only ASCII punctuation),
/// so a window may pass one as three bytes of "other" (`deepseek_blocks.rs`).
pub(super) static PASSED_PUNCTUATION: LazyLock<ClassBits> = LazyLock::new(|| {
    let (punctuation, cjk) = (parsed(r"[\p{P}\p{S}]"), &*CJK);
    let chars = ('\u{800}'..='\u{FFFF}').filter(|&ch| punctuation.contains(ch) && !cjk.contains(ch));
    ClassBits::new(chars.map(|ch| (ch, ch)))
});

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

/// Where the piece the three Splits make at `start` of `text` ends (`start`
/// the end of the previous piece): the char-by-char step of their scanner
/// (`deepseek_blocks.rs`). A group of numbers, else the word regex's match
/// in the stretch the numbers and CJK runs leave, or the gap up to its next
/// match. A match is found in the whole text, and again in the stretch
/// when the stretch ends where that changes it (inside it, or where
/// `(?!\S)` looked): no piece looks for its stretch's end past itself.
pub fn piece_end(text: &str, start: usize) -> usize {
    if let Some(end) = line_end_piece(text.as_bytes(), start) {
        return end;
    }
    let (number, cjk) = (&*NUMBER, &*CJK);
    let is_number = |ch: char| ch.is_ascii_digit() || (!ch.is_ascii() && number.contains(ch));
    let is_cjk = |ch: char| !ch.is_ascii() && cjk.contains(ch);
    let first = text[start..].chars().next().expect("a piece starts at `start`");
    if is_number(first) {
        // A piece that starts in a run of numbers starts one of its groups of three.
        let group = text[start..].char_indices().take_while(|&(_, ch)| is_number(ch)).take(3).last();
        let (at, last) = group.expect("the first char is a number");
        return start + at + last.len_utf8();
    }
    let in_cjk = is_cjk(first);
    if in_cjk && CJK_WORD.contains(first) {
        // The word regex's `[\p{L}\p{M}]+`, in a stretch of CJK chars (all of three bytes).
        let bytes = text.as_bytes();
        let mut end = start + 3;
        while end + 3 <= bytes.len() && (0xE3..=0xE9).contains(&bytes[end]) {
            let ch = u32::from(bytes[end] & 0x0F) << 12 | u32::from(bytes[end + 1] & 0x3F) << 6;
            let ch = char::from_u32(ch | u32::from(bytes[end + 2] & 0x3F)).expect("a char of three bytes");
            if !CJK_WORD.contains(ch) {
                break;
            }
            end += 3;
        }
        return end;
    }
    let ends_stretch = |ch: char| if in_cjk { !is_cjk(ch) } else { is_number(ch) || is_cjk(ch) };
    let match_in_stretch = |at: usize| -> Option<usize> {
        let end = deepseek_split::match_end(text, at)?;
        // After its first char no alternative's run holds a number, so in a
        // stretch of neither only a CJK char may end it: a char of three
        // bytes led by E3-E9 (U+3000..U+9FFF). Multilingual text has none.
        let inside = &text[at..end];
        let may_end = in_cjk || inside.bytes().any(|byte| (0xE3..=0xE9).contains(&byte));
        let within = if may_end { inside.char_indices().skip(1).find(|&(_, ch)| ends_stretch(ch)) } else { None };
        // A stretch that ends right after the match changes it only where the
        // match is space, which `\s+(?!\S)` ended by the char after the run.
        let stretch_end = within.map(|(offset, _)| at + offset).or_else(|| {
            let byte = text.as_bytes()[at];
            let ascii_not_space = byte < 128 && !matches!(byte, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ');
            let space_end = if ascii_not_space { at } else { deepseek_split::space_run_end(text, at) };
            let after = text[space_end..].chars().next().filter(|_| at < space_end && end <= space_end);
            after.filter(|&ch| ends_stretch(ch)).map(|_| space_end)
        });
        match stretch_end {
            Some(stretch_end) => deepseek_split::match_end(&text[..stretch_end], at),
            None => Some(end),
        }
    };
    if let Some(end) = match_in_stretch(start) {
        return end;
    }
    // A gap: chars no alternative matches (control chars), up to the next match or the stretch's end.
    let mut at = start + first.len_utf8();
    while let Some(ch) = text[at..].chars().next() {
        if ends_stretch(ch) || match_in_stretch(at).is_some() {
            break;
        }
        at += ch.len_utf8();
    }
    at
}

/// The end of the piece at `start` where it is a line's end in ASCII, which
/// the windows leave to this step at the end of nearly every line (the pad
/// of a text's last window cannot tell them where a run of spaces after a
/// CR/LF stops): CR/LF first, the word regex's `\s*[\r\n]+` up to the last
/// CR/LF of the ASCII whitespace run; or ASCII punctuation (all `\p{P}` or
/// `\p{S}`) then CR/LF, its ` ?[\p{P}\p{S}]+[\r\n]*` (no letter follows the
/// first, which `[P][A-Za-z]+` would take). `None` where a non-ASCII char
/// could change that; neither run may end a stretch. Matched in full, such a
/// piece was a tenth of DeepSeek V3's time on lines.
fn line_end_piece(bytes: &[u8], start: usize) -> Option<usize> {
    let is_line_end = |byte: &u8| matches!(byte, b'\r' | b'\n');
    let run_end = |from: usize, holds: &dyn Fn(&u8) -> bool| {
        bytes[from..].iter().position(|byte| !holds(byte)).map_or(bytes.len(), |offset| from + offset)
    };
    if is_line_end(&bytes[start]) {
        let spaces_end = run_end(start, &|byte| matches!(byte, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' '));
        if bytes.get(spaces_end).is_some_and(|&byte| byte >= 0x80) {
            return None;
        }
        return bytes[..spaces_end].iter().rposition(is_line_end).map(|last| last + 1);
    }
    if !bytes[start].is_ascii_punctuation() {
        return None;
    }
    let punctuation_end = run_end(start, &u8::is_ascii_punctuation);
    let line_ends_end = run_end(punctuation_end, &is_line_end);
    (line_ends_end > punctuation_end).then_some(line_ends_end)
}

/// Append to `out` the pieces the three Splits make of `text`, moved by
/// `offset`, a stretch at a time: the reference their scanner is tested
/// against.
#[cfg(test)]
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
#[cfg(test)]
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
    use crate::hf::deepseek_blocks::DeepSeekV3;
    use crate::hf::deepseek_split::DEEPSEEK_V3_WORDS;
    use crate::hf::regexes::Matcher;
    use crate::pretokenize::scan::for_each_batch;

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
            // Their scanner (`deepseek_blocks.rs`), windows and char-by-char steps.
            let (mut scanned, mut start) = (Vec::new(), 0);
            for_each_batch::<DeepSeekV3>(text, |ends| {
                scanned.extend(ends.iter().map(|&end| (std::mem::replace(&mut start, end), end)));
            });
            assert_eq!(scanned, pieces, "{text:?}");
        }
    }
}
