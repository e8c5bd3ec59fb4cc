//! Each preset's scanner against its regex on fancy-regex: tricky cases
//! written out, then every short string over an alphabet with a char of each
//! class the patterns tell apart. (fancy-regex and `regex` differ only on the
//! code points Unicode 17.0 newly assigned, none of which is used here; the
//! Python tests compare against `regex` itself.) Each test runs at every
//! SIMD level this CPU has (`at_every_level`).

use crate::pretokenize::pattern::{Pattern, PRESETS};
use crate::util::simd_level::{with_level, SimdLevel};

/// Run `check` with the scanners of this thread at each level the CPU has.
fn at_every_level(check: impl Fn()) {
    let levels = SimdLevel::supported();
    assert!(levels.contains(&SimdLevel::best()));
    for level in levels {
        with_level(level, &check);
    }
}

fn pieces<'t>(pattern: &Pattern, text: &'t str) -> Vec<&'t str> {
    let mut out = Vec::new();
    pattern.for_each_piece(text, |p| out.push(p)).unwrap();
    out
}

/// The scanner and fancy-regex, for each preset.
fn pairs() -> Vec<(&'static str, Pattern, Pattern)> {
    PRESETS.iter().map(|&(name, source)| (name, Pattern::new(name).unwrap(), Pattern::new(source).unwrap())).collect()
}

fn assert_same(pairs: &[(&str, Pattern, Pattern)], text: &str) {
    for (name, scanner, regex) in pairs {
        assert_eq!(pieces(scanner, text), pieces(regex, text), "{name} on {text:?}");
    }
}

#[test]
fn narrated_cases() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "cl100k",
            "Hello world's 12345  foo!!\n\n bar",
            &["Hello", " world", "'s", " ", "123", "45", " ", " foo", "!!\n\n", " bar"],
        ),
        ("cl100k", "DON'T stop", &["DON", "'T", " stop"]),
        ("cl100k", "a  \n", &["a", "  \n"]), // \s++$: the trailing run whole
        ("cl100k", "a\n ", &["a", "\n "]),
        ("cl100k", "x\n\n  y", &["x", "\n\n", " ", " y"]),
        ("cl100k", "\tword \u{3000}x", &["\tword", " ", "\u{3000}x"]), // any X before a letter run
        ("cl100k", "it'ſ", &["it", "'ſ"]),                             // long s folds to s
        ("llama3", "a\n ", &["a", "\n", " "]),                         // no \s++$
        ("llama3", "a \n\n b", &["a", " \n\n", " b"]),
        ("llama3", "1234567", &["123", "456", "7"]),
        ("qwen2", "1234567", &["1", "2", "3", "4", "5", "6", "7"]),
        ("qwen2", "x ١٢", &["x", " ", "١", "٢"]),
        ("o200k", "HelloWorld's 1234", &["Hello", "World's", " ", "123", "4"]),
        ("o200k", "XMLHttpRequest", &["XMLHttp", "Request"]),
        ("o200k", "a/b//\n", &["a", "/b", "//\n"]),
        ("o200k", "\u{301}AB", &["\u{301}", "AB"]), // a mark alone: branch 1 without the optional X
        ("o200k", "\u{301}ʰAB", &["\u{301}ʰ", "AB"]), // the last uncased char ends branch 1
        ("o200k", "ABC'S", &["ABC'S"]),
        ("o200k", " ǅungla", &[" ǅungla"]),
        ("o200k", "a\n ", &["a", "\n", " "]),
        ("gpt2", "DON'T", &["DON", "'", "T"]),
    ];
    let by_name = pairs();
    at_every_level(|| {
        for &(name, text, expected) in cases {
            let (_, scanner, regex) = by_name.iter().find(|(n, ..)| *n == name).unwrap();
            assert_eq!(pieces(regex, text), expected, "the expectation itself, {name} on {text:?}");
            assert_eq!(pieces(scanner, text), expected, "{name} on {text:?}");
        }
    });
}

/// Every string of up to `max_len` chars of `alphabet`.
fn all_strings(alphabet: &[&str], max_len: u32, mut check: impl FnMut(&str)) {
    for len in 0..=max_len {
        for mut index in 0..alphabet.len().pow(len) {
            let mut text = String::new();
            for _ in 0..len {
                text.push_str(alphabet[index % alphabet.len()]);
                index /= alphabet.len();
            }
            check(&text);
        }
    }
}

#[test]
fn every_short_string() {
    let pairs = pairs();
    // A letter of each case (Lu, Ll, Lt, Lm, Lo), a mark, digits, spaces of
    // each kind, punctuation, o200k's slash, and the contractions' letters.
    let alphabet = [
        "a", "A", "ǅ", "ʰ", "日", "\u{301}", "1", "٣", " ", "\t", "\n", "\r", "\u{3000}", "!", "/", "'", "s", "S", "ſ",
        "l", "e", "\u{212A}",
    ];
    let small = [" ", "\n", "a", "A", "ʰ", "\u{301}", "1", "!", "'", "s", "L"];
    at_every_level(|| {
        all_strings(&alphabet, 3, |text| assert_same(&pairs, text));
        all_strings(&small, 5, |text| assert_same(&pairs, text));
    });
}

/// Texts longer than a window (64 bytes), so that the block scanners and
/// their classifier decide most pieces: each short string above repeated
/// past two windows, and after ASCII prefixes of each length up to one.
#[test]
fn strings_longer_than_a_window() {
    let pairs = pairs();
    let alphabet = [" ", "\n", "a", "A", "1", "!", "'", "s", "/", "é", "\r", "—"];
    at_every_level(|| {
        all_strings(&alphabet, 3, |text| {
            let repeated = text.repeat(140 / text.len().max(1));
            assert_same(&pairs, &repeated);
        });
        for len in 0..=65 {
            let prefix: String = "ab 1'x\n".chars().cycle().take(len).collect();
            assert_same(&pairs, &format!("{prefix}don't  stop—’s 42 é ok"));
        }
    });
}

/// Japanese and Chinese text, whose letters of three bytes and punctuation
/// the cl100k family's windows pass (`letters_of_three.rs`): strings of
/// kana, ideographs, their punctuation, the letters and chars of other
/// lengths that stop a window, ASCII of every class and the contractions'
/// letters, each repeated past two windows and after ASCII prefixes of each
/// length up to one, so that chars fall on every place of a window and
/// across its end.
#[test]
fn japanese_text_across_windows() {
    let pairs = pairs();
    let alphabet = [
        "日", "あ", "ア", "ー", "、", "。", "「", "・", "゛", "\u{3099}", "\u{3000}", "한", "é", "１", "a", " ", "1",
        "'", "s", "!", "\n",
    ];
    let sentence = "新しい ``ContextVar`` オブジェクトを作成します。*name* 引数は「内部」走査とデバッグの目的で、\
                    使われます。's 'S'll\tカタカナ・ひらがな 한국어 é１２３ 。、a、 、b .、c";
    at_every_level(|| {
        all_strings(&alphabet, 3, |text| {
            let repeated = text.repeat(200 / text.len().max(1));
            assert_same(&pairs, &repeated);
        });
        for len in 0..=70 {
            let prefix: String = "ab 1'x\n".chars().cycle().take(len).collect();
            assert_same(&pairs, &format!("{prefix}{sentence}"));
            let kana: String = "あいうえおカキクケコ日本語".chars().cycle().take(len).collect();
            assert_same(&pairs, &format!("{kana}{sentence}{kana}"));
        }
    });
}
