//! DeepSeek V3's three Splits (`deepseek_v3`) as a scanner of the block
//! loop (`pretokenize/scan/blocks.rs`): 64 bytes of ASCII at a time by word
//! operations on the byte classes, a piece at a time (`deepseek_v3::piece_end`)
//! elsewhere. A piece a char at a time was half of a warm call on lines of
//! English.
//!
//! In ASCII the three Splits cut as Llama 3's pattern does (the
//! `cl100k` family's rules, digits in threes), but for three things:
//! - no contractions: an apostrophe is punctuation, and `[P][A-Za-z]+`
//!   takes the letters after it ("'there", not "'t" "here");
//! - a number ends the stretch the word regex sees, so a run of two or more
//!   spaces before a digit keeps its last space (`\s+(?!\S)` meets the end
//!   of its stretch, not a digit);
//! - a control char (neither letter, number, space, punctuation nor symbol)
//!   may lead a word but joins no punctuation, and alone is a gap: the
//!   rules are not trusted from the byte before one on, and the char-by-char
//!   step takes it.
//!
//! The window is exact where `block_starts` trusts it (checked against the
//! char-by-char step on generated text below, which is checked against the
//! three Splits run one after the other in `deepseek_v3.rs`).

use super::class_run::ClassBits;
use super::deepseek_v3::{self, CJK_WORD, PASSED_PUNCTUATION};
use crate::pretokenize::scan::cl100k::{digit_starts, other_chars, whitespace_starts, word_and_other_starts};
use crate::pretokenize::scan::{after, before, below, Masks, Scanner, BLOCK};

/// The scanner of DeepSeek V3's (V3.1's, R1's, V4's) pre-tokenizer.
pub struct DeepSeekV3;

impl Scanner for DeepSeekV3 {
    #[inline]
    fn piece_end(bytes: &[u8], start: usize) -> usize {
        // SAFETY: a scan's bytes are a `str`'s (`for_each_batch` takes one).
        let text = unsafe { std::str::from_utf8_unchecked(bytes) };
        deepseek_v3::piece_end(text, start)
    }

    const HAS_BLOCK_RULES: bool = true;

    const BLOCKS_PASS_CJK_WORDS: bool = true;

    #[inline(always)]
    fn block_starts(bytes: &[u8], start: usize, masks: &Masks, ahead: u8, trusted: usize) -> u64 {
        // A run of CJK word chars ends the stretch before it and is a piece,
        // as a number does and is, but whole (see the top).
        let cjk = masks.cjk;
        let masks = &Masks { digit: masks.digit | cjk, ..*masks };
        let mut trusted = trusted.min(before_first_control(bytes, start, masks, ahead));
        let starts = word_and_other_starts(masks, ahead)
            | digit_starts::<3>(masks.digit & !cjk)
            | cjk & !before(cjk)
            | whitespace_starts(masks, ahead, &mut trusted);
        // The last of two or more spaces before a digit starts a piece in the
        // cl100k family only (`whitespace_starts`, `q & before(q) & after(!space)`).
        let q = masks.space & !masks.newline;
        let last_before_digit = q & before(q) & after(masks.digit, ahead.is_ascii_digit());
        ((starts & !last_before_digit) | 1) & below(trusted)
    }

    /// The CJK word chars (`[\p{L}\p{M}]` of the CJK Split's class: all of
    /// three bytes, E3..E9), whose runs are pieces whatever stands around
    /// them, and the punctuation of three bytes outside that class
    /// (`PASSED_PUNCTUATION`), whose bytes the masks already class as
    /// "other" (no letter, digit or space bit): the rules take a run of them
    /// as they take ASCII punctuation, and a letter after one as a run of
    /// its own (the char's last byte follows its other bytes, so it leads no
    /// letter), as the word regex does. Sent char by char, `、` and `。`
    /// cost DeepSeek V3 a fifth of its time on Japanese lines.
    /// The ideographs and kana letters of `leads` (`letters_of_three::leads_from`:
    /// all CJK words) are passed at once; the loop looks up only the rest.
    #[inline(always)]
    fn pass_cjk_words(bytes: &[u8], start: usize, masks: &mut Masks, leads: u64) -> u64 {
        let (words, punctuation): (&ClassBits, &ClassBits) = (&CJK_WORD, &PASSED_PUNCTUATION);
        let led = leads | leads << 1 | leads << 2;
        masks.cjk |= led;
        let mut non_ascii = masks.non_ascii & !led;
        while non_ascii != 0 {
            let at = non_ascii.trailing_zeros() as usize;
            let i = start + at;
            // A window begins at a char boundary and passes whole chars, so this is a lead byte.
            if at + 3 > BLOCK || bytes[i] & 0xF0 != 0xE0 {
                break;
            }
            let cp = u32::from(bytes[i] & 0x0F) << 12 | u32::from(bytes[i + 1] & 0x3F) << 6;
            let ch = char::from_u32(cp | u32::from(bytes[i + 2] & 0x3F)).expect("a char of three bytes");
            if words.contains(ch) {
                masks.cjk |= 0b111 << at;
            } else if !punctuation.contains(ch) {
                break;
            }
            non_ascii &= !(0b111 << at);
        }
        masks.non_ascii = non_ascii;
        non_ascii
    }
}

/// The bits of the window at `start` that the rules may trust for control
/// chars: those below the byte before the first one (64: none in the
/// window; 63: the look-ahead byte is one). Only "other" bytes (neither
/// letter, digit nor space) are looked at: punctuation, a few a window.
#[inline(always)]
fn before_first_control(bytes: &[u8], start: usize, masks: &Masks, ahead: u8) -> usize {
    let mut other = other_chars(masks) & !masks.non_ascii;
    while other != 0 {
        let at = other.trailing_zeros() as usize;
        if is_control(bytes[start + at]) {
            return at.saturating_sub(1);
        }
        other &= other - 1;
    }
    if is_control(ahead) {
        63
    } else {
        64
    }
}

/// An ASCII char that is no letter, digit, `\s`, punctuation or symbol.
#[inline(always)]
fn is_control(byte: u8) -> bool {
    (byte < 0x20 && !matches!(byte, b'\t' | b'\n' | 0x0B | 0x0C | b'\r')) || byte == 0x7F
}

#[cfg(test)]
mod tests {
    use super::DeepSeekV3;
    use crate::hf::deepseek_v3::cut;
    use crate::pretokenize::scan::for_each_batch;
    use crate::util::test_rng::XorShift;

    /// The pieces of the scanner (windows and char-by-char steps).
    fn scanned(text: &str) -> Vec<(usize, usize)> {
        let (mut pieces, mut start) = (Vec::new(), 0);
        for_each_batch::<DeepSeekV3>(text, |ends| {
            for &end in ends {
                pieces.push((start, end));
                start = end;
            }
        });
        pieces
    }

    /// The pieces of the three Splits, a stretch at a time.
    fn reference(text: &str) -> Vec<(usize, usize)> {
        let mut pieces = Vec::new();
        cut(text, 0, &mut pieces);
        pieces
    }

    const FRAGMENTS: &[&str] = &[
        "a",
        "Z",
        "word",
        "Hello",
        " ",
        "  ",
        "   ",
        "\n",
        "\n\n",
        "\r\n",
        "\t",
        " \t",
        "\x0B",
        "\x0C",
        "\r",
        "1",
        "12",
        "2024",
        "12345678",
        " 7",
        "  7",
        ".",
        ",",
        "!?",
        "'",
        "''",
        "'s",
        "'t",
        "'there",
        "don't",
        "x.y",
        "..",
        ".\n",
        " .",
        " .a",
        "-",
        "/",
        "//",
        "(x)",
        "[y]",
        "$5",
        "#tag",
        "@u",
        "~",
        "`",
        "_a",
        "\x00",
        "\x01a",
        "\x7F",
        " \x02",
        ".\x03",
        "é",
        "café",
        "日本",
        "カタカナ",
        "・",
        "、",
        "。",
        "「",
        "」",
        "（",
        "）",
        "！",
        "…",
        "─",
        "‘",
        "\u{3000}",
        "\u{301}",
        "١٢",
        "½",
        "—",
        "’",
        "\u{A0}",
        "😀",
        "한국어",
    ];

    /// Texts of fragments, mostly ASCII so that most windows take the block
    /// path, of every length up to a few windows.
    fn generated_texts(count: usize) -> impl Iterator<Item = String> {
        let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
        let mut next = move || rng.next();
        (0..count).map(move |i| {
            let fragments = (next() % 90) as usize;
            let mut text = String::new();
            while text.len() < fragments * 3 {
                let fragment = FRAGMENTS[next() as usize % FRAGMENTS.len()];
                if i % 3 == 0 || fragment.is_ascii() {
                    text.push_str(fragment);
                }
            }
            text
        })
    }

    #[test]
    fn hf_deepseek_scanner_cuts_as_the_three_splits() {
        for text in generated_texts(20_000) {
            assert_eq!(scanned(&text), reference(&text), "{text:?}");
        }
        let long = "Hello, world! It's 2024-03-01 at 12345678.\n\n  Next 7 line\r\n\t123abc   \n".repeat(40);
        assert_eq!(scanned(&long), reference(&long));
    }

    #[test]
    fn hf_deepseek_scanner_on_every_stretch_of_a_text_of_end_cases() {
        let text = "It's 12345 o'clock.\n  Don't\t\x0b 'll say 'RE: x.y/z\r\n \n\n  a—b ’s \u{3000}!!\n \
                    HTTPRequest 'sa'\n\t\n word  \n   end.// \"\"\"\n1 22 333 4444 \r\r\n  \n x  1 \x01\x02a.\x03";
        let boundaries: Vec<usize> = text.char_indices().map(|(at, _)| at).chain([text.len()]).collect();
        for (i, &start) in boundaries.iter().enumerate() {
            for &end in boundaries[i..].iter().take_while(|&&end| end - start <= 140) {
                let stretch = &text[start..end];
                assert_eq!(scanned(stretch), reference(stretch), "{stretch:?}");
            }
        }
    }

    /// Japanese text, whose CJK word chars the windows pass: every stretch
    /// of a text of kana, ideographs, their punctuation and marks, the CJK
    /// class's non-words, and ASCII of each class around them, so that each
    /// char falls on every place of a window and across its end.
    #[test]
    fn hf_deepseek_scanner_on_japanese_across_windows() {
        let text = "新しい ``ContextVar`` オブジェクトを作成します。*name* 引数は「内部」走査の目的で、使われます。\
                    カタカナ・ひらがな゛ゞ\u{3099}ー゠ 日本1語23 . 日  本\n\t日'本 a日 (日) 龥龦 한국 é日 x\u{3000}日。";
        let boundaries: Vec<usize> = text.char_indices().map(|(at, _)| at).chain([text.len()]).collect();
        for (i, &start) in boundaries.iter().enumerate() {
            for &end in boundaries[i..].iter().take_while(|&&end| end - start <= 150) {
                let stretch = &text[start..end];
                assert_eq!(scanned(stretch), reference(stretch), "{stretch:?}");
            }
        }
        for prefix in 0..70 {
            let long = format!("{}{}", "a 1.".repeat(20).get(..prefix).unwrap_or(""), text.repeat(3));
            assert_eq!(scanned(&long), reference(&long));
        }
    }
}
