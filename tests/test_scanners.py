"""The hand-written preset scanners against the Python `regex` package (issue 12).

Each preset ("gpt2", "cl100k", "o200k", "llama3", "qwen2") runs on its own
scanner (crates/bpeforge/src/pretokenize/scan/), whose character classes are
Unicode 16.0's (scripts/gen_unicode_tables.py). The contract: the pieces are
exactly `[m.group(0) for m in regex.finditer(PATTERNS[preset], text)]`, on
every input, with `regex` shown the text as Unicode 16.0 classes it
(tests/splits.py): on the ~4,700 code points that Unicode 17.0 (regex's since
2025) newly assigned, the presets follow tiktoken and `tokenizers` (pinned
down below; tests/test_unicode_version.py compares with them directly).

Every check through `assert_same_split` (tests/splits.py) splits the text at each
SIMD level of the block scanners this CPU has (baseline, avx2, avx512; neon on
aarch64) and asserts they agree before comparing with `regex`.

The corpus tests need BPEFORGE_TEST_DATA (the shared data directory holding
`corpora/`) and are skipped, saying why, without it.
"""

from __future__ import annotations

import functools
import lzma
import os
from pathlib import Path

import bpeforge
import pytest
import regex
from corpora import EMOJI, NOT_REGEX_WHITESPACE, REGEX_WHITESPACE, SCRIPT_SAMPLES
from hypothesis import given, settings
from hypothesis import strategies as st
from splits import assert_same_split

PATTERNS = dict(bpeforge.PATTERNS)
PRESETS = ["gpt2", "cl100k", "o200k", "llama3", "qwen2"]
NEW_PRESETS = ["cl100k", "o200k", "llama3", "qwen2"]  # gpt2's every-code-point tests are in test_pretokenize.py
COMPILED = {name: regex.compile(PATTERNS[name]) for name in PRESETS}

RANDOM = settings(max_examples=300, deadline=None, derandomize=True, database=None)


def test_the_presets_and_their_regexes():
    assert [name for name, _ in bpeforge.PATTERNS] == PRESETS
    # Llama 3's tokenizer.json and transformers' Qwen2 tokenizer (PRETOKENIZE_REGEX).
    common = r"[^\r\n\p{L}\p{N}]?\p{L}+|{digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
    contractions = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|"
    assert PATTERNS["llama3"] == contractions + common.replace("{digits}", r"\p{N}{1,3}")
    assert PATTERNS["qwen2"] == contractions + common.replace("{digits}", r"\p{N}")


# --------------------------------------------------------------------------
# Every code point
# --------------------------------------------------------------------------

ALL_CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]  # surrogates are not UTF-8


@functools.cache
def all_code_points() -> str:
    return "".join(map(chr, ALL_CODE_POINTS))


@functools.cache
def newer_than_fancy_regex() -> list[str]:
    """The code points that `regex` (Unicode 17.0) puts in a class the presets use and fancy-regex
    (Unicode 16.0, what a custom pattern runs on) does not: those newly assigned in 17.0. Empty with
    a `regex` older than 2025, which has Unicode 16.0 too."""
    classes = r"[\p{L}\p{M}\p{N}]"
    text = all_code_points()
    return sorted(set(regex.findall(classes, text)) - set(bpeforge.pretokenize(text, classes)))


# Each template puts the code point in contexts that exercise the presets'
# rules: after and before letters of each case (o200k's case runs, the one
# char before a letter run), after a space, an apostrophe and a word (the
# contractions), before and after digits, marks and newlines, and in a run.
TEMPLATES = {
    "letters around": "A{c}b{c}a{c}A{c}ǅ{c}日{c}ʰ",
    "spaces, digits, newlines": " {c}1 {c}{c} x{c}\n{c}\r\n1{c}\t{c}  {c}!",
    "contractions, marks, slashes": "'{c}a'{c}{c}'s\u0301{c}{c}\u0301/{c}/\n",
}


@functools.cache
def code_point_texts() -> dict[str, str]:
    # The unassigned code points (no class, no case) are all alike: one in 64 stands for the rest.
    text = all_code_points()
    unassigned = set(regex.findall(r"\p{Cn}", text))
    chars = [ch for i, ch in enumerate(text) if ch not in unassigned or i % 64 == 0]
    return {name: "".join(template.format(c=ch) for ch in chars) for name, template in TEMPLATES.items()}


@pytest.mark.parametrize("template", TEMPLATES)
@pytest.mark.parametrize("preset", NEW_PRESETS)
def test_every_code_point(preset, template):
    # One big string per template: a single call checks every code point.
    assert_same_split(code_point_texts()[template], preset)


@pytest.mark.parametrize("preset", PRESETS)
def test_every_code_point_at_the_end_and_alone(preset):
    # The end of the text matters to whitespace (cl100k's \s++$, `\s+(?!\S)`).
    for ch in REGEX_WHITESPACE + NOT_REGEX_WHITESPACE + "a\u0301'!":
        for text in [ch, "x" + ch, "x" + ch + ch, "x" + ch + "\n", "x\n" + ch, "x " + ch]:
            assert_same_split(text, preset)


@pytest.mark.parametrize("preset", PRESETS)
def test_general_punctuation_at_every_offset_of_a_window(preset):
    # GPT-2's block scanner reads 64 bytes and one more at a time, and passes U+2000..U+203F but the
    # spaces (E2 80 xx: ’ “ ” — …) as "other" bytes (crates/bpeforge/src/pretokenize/scan/blocks.rs): each of these
    # code points after ASCII of every length up to past the first window, the text ending at or
    # after it, before letters, spaces, a contraction and more of the block.
    prefixes = ["x" * 70, "it's a " * 10, " " * 70, "1, " * 24]
    tails = ["", "s", " y", "  ", "\u2019s", "\u2014\u2009x", "\n"]
    for ch in map(chr, range(0x2000, 0x2040)):
        for length in range(70):
            for prefix in prefixes:
                for tail in tails:
                    assert_same_split(prefix[:length] + ch + tail, preset)


@pytest.mark.parametrize("preset", PRESETS)
def test_contractions_fold_case_as_regex_does(preset):
    # (?i:'s) also matches 'ſ (U+017F LONG S folds to s); the Kelvin sign
    # U+212A folds to k, which no contraction has. Every code point after an
    # apostrophe, then after an apostrophe and "l" (for 'll), "r", "v".
    chars = [chr(c) for c in ALL_CODE_POINTS if c < 0x20000]
    for prefix in ["'", "'l", "'r", "'v", "a'", "A'", "a'l"]:
        assert_same_split(" ".join(prefix + ch for ch in chars), preset)


@pytest.mark.parametrize("preset", NEW_PRESETS)
def test_presets_follow_unicode_16_where_regex_is_newer(preset):
    # tiktoken and `tokenizers` split these as fancy-regex does (all three run
    # Unicode 16.0 tables), and so do the scanners; `regex` 2025+ differs.
    newer = newer_than_fancy_regex()
    if not newer:
        pytest.skip(f"regex {regex.__version__} has no code points that Unicode 16.0 lacks")
    assert 4600 < len(newer) < 4800, len(newer)  # 4,699 with regex 2026.5.9 (Unicode 17.0)
    text = "".join(f"a{c}a {c}1'{c}s A{c}b\n" for c in newer)
    assert_same_split(text, preset)
    assert bpeforge.pretokenize(text, PATTERNS[preset]) == bpeforge.pretokenize(text, preset)
    assert bpeforge.pretokenize(text, preset) != COMPILED[preset].findall(text)


# --------------------------------------------------------------------------
# Random text
# --------------------------------------------------------------------------

# The General Punctuation spaces (U+2009, U+202F, U+2028) next to the punctuation GPT-2's block
# scanner passes (U+2000..U+203F but the spaces: ’ “ ” — …, crates/bpeforge/src/pretokenize/scan/blocks.rs).
WHITESPACE = [
    " ", "  ", "\t", "\n", "\n\n", "\r", "\r\n", " \n", "\xa0", "\u3000", "\x1c", "\x00", "\u2009", "\u202f", "\u2028",
]  # fmt: skip
APOSTROPHES = ["'", "''", "’", "'ſ", "'\u212a"] + [
    "'" + suffix for s in ["s", "t", "re", "ve", "m", "ll", "d"] for suffix in (s, s.upper(), s.capitalize())
]
LETTERS = [
    "a", "Z", "é", "É", "ß", "ſ", "ǅ", "ʰ", "ー", "日", "ا", "한", "\u0301", "\u0903", "\u20dd",
    "Hello", "HelloWorld", "XMLHttp", "iPhone", "ǅungla", "aBc", "\u0301A", "ʰA",
]  # fmt: skip
DIGITS = ["0", "12", "1234", "1234567", "٣٤٥", "½", "Ⅻ", "𝟙"]
PUNCTUATION = [
    ".", ",", "!", "!!", "/", "//", "-", "«", "。", "$", "…", "’", "“", "”", "—", " — ", "†", "\u200b", "\u2060",
]  # fmt: skip
FRAGMENTS = WHITESPACE + APOSTROPHES + LETTERS + DIGITS + PUNCTUATION + SCRIPT_SAMPLES + EMOJI

any_char = st.characters(exclude_categories=("Cs",))  # surrogates are not UTF-8


def newer_char_at(i: int) -> str:
    """The i-th code point that Unicode 17.0 newly assigned (cycling); a letter where `regex` has none."""
    newer = newer_than_fancy_regex()
    return newer[i % len(newer)] if newer else "a"


newer_char = st.builds(newer_char_at, st.integers(0, 4000))

piece = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.sampled_from(WHITESPACE + APOSTROPHES),
    any_char,
    newer_char,
    st.sampled_from(list(REGEX_WHITESPACE + NOT_REGEX_WHITESPACE)),
)
ENDINGS = ["", "", " ", "  ", "\n", "\n ", " \n\t", "\r\n ", "!\n", "a", "\u3000"]


def text_of(part: st.SearchStrategy[str], max_parts: int) -> st.SearchStrategy[str]:
    """Length drawn first: `st.lists` alone keeps most lists tiny."""
    return st.integers(0, max_parts).flatmap(lambda n: st.lists(part, min_size=n, max_size=n)).map("".join)


random_text = st.tuples(text_of(piece, 80), st.sampled_from(ENDINGS)).map("".join)
any_text = st.integers(0, 200).flatmap(lambda n: st.text(any_char, min_size=n, max_size=n))


@pytest.mark.parametrize("preset", PRESETS)
@RANDOM
@given(text=random_text)
def test_random_text(preset, text):
    assert_same_split(text, preset)


@pytest.mark.parametrize("preset", PRESETS)
@RANDOM
@given(text=any_text)
def test_random_unicode(preset, text):
    assert_same_split(text, preset)


# --------------------------------------------------------------------------
# The corpora
# --------------------------------------------------------------------------

# The first 4 MB of each corpus: CI's time is bounded (the `regex` package splits a few MB/s, and this is
# run for five presets at three SIMD levels; the every-code-point and random-text tests above carry the
# rest). All of 20news and multilingual and 20 MB of Gutenberg were checked once, for every preset
# (docs/pretokenizer.md); set BPEFORGE_SCANNER_CORPUS_MB to check more.
CORPUS_BYTES = int(float(os.environ.get("BPEFORGE_SCANNER_CORPUS_MB", 4)) * 1_000_000)
BLOCK = 2_000_000


@functools.cache
def corpus(name: str) -> str:
    root = os.environ.get("BPEFORGE_TEST_DATA")
    if not root:
        pytest.skip("set BPEFORGE_TEST_DATA=path/to/shared/data to run the corpus tests")
    path = Path(root) / "corpora" / f"{name}.txt.xz"
    assert path.is_file(), f"BPEFORGE_TEST_DATA={root} has no corpora/{name}.txt.xz"
    with lzma.open(path) as f:
        limit = CORPUS_BYTES
        data = f.read(limit + 1)
    end = min(len(data), limit)
    while end < len(data) and data[end] & 0xC0 == 0x80:
        end -= 1  # cut before a char, never inside one
    return data[:end].decode("utf-8")


def blocks(text: str) -> list[str]:
    """~2 MB blocks, each a whole text of its own (so the comparison holds wherever they are cut)."""
    return [text[i : i + BLOCK] for i in range(0, len(text), BLOCK)]


@pytest.mark.parametrize("name", ["20news", "multilingual", "gutenberg_500MB"])
@pytest.mark.parametrize("preset", PRESETS)
def test_corpora(preset, name):
    for block in blocks(corpus(name)):
        assert_same_split(block, preset)
