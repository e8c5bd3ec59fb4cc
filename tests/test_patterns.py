"""Pre-tokenizer presets (issues 4 and 12): "gpt2", "cl100k", "o200k", "llama3", "qwen2" and custom regexes.

Each preset must split exactly as `regex.findall` with its regex from
`bpeforge.PATTERNS` (random text and the shared multilingual corpus); training
with a preset must give the merges of the plain-Python oracle run with that
regex; encoding with a preset must give tiktoken's ids. The multilingual corpus
tests need BPEFORGE_TEST_DATA (the shared data directory holding `corpora/`);
the tiktoken tests need `tiktoken`. Each is skipped, saying why, without it.

Unicode versions. Every preset runs on a hand-written scanner whose character
classes are Unicode 16.0's, read from `regex-syntax` 0.8.11 (the tables of the
Rust `fancy-regex`, which custom regexes run on, and of tiktoken 0.14); HF
`tokenizers`' Oniguruma has Unicode 16.0 too. The Python `regex` package has
had Unicode 17.0 since 2025, and Python's own `unicodedata` (3.11) is 14.0.
Probed over all 1,112,064 code points (each class through a custom pattern
such as r"\\p{Lo}"):

- Unicode 17.0 added 4,803 characters: `regex` assigns them, Rust has them
  as \\p{Cn}. 4,699 of them are in a class the presets use (4,644 L, among
  them CJK Extension J U+323B0..U+33479; 42 M; 13 N); the other 104 are
  symbols and punctuation, in no class for either side. Besides these, one
  code point changed category: U+0295 LATIN LETTER PHARYNGEAL VOICED
  FRICATIVE, Ll up to Unicode 16.0 and Lo from 17.0. \\s agrees everywhere.
- On these the presets follow tiktoken and `tokenizers`, not `regex` 2025+:
  the reference split (tests/splits.py) shows `regex` the text as Unicode
  16.0 classes it, and `test_preset_ids_equal_tiktoken_where_unicode_versions_differ`
  compares the ids on exactly these code points.
- All 4,803 are unassigned (Cn) in Python's `unicodedata` 14.0, which
  Hypothesis uses; Unicode 15.0-16.0 (10,301 more code points) both sides know.

`test_unicode_tables_differ_only_where_the_unicode_versions_do` pins down
that the tables differ from `regex` in no other place.
"""

from __future__ import annotations

import functools
import json
import lzma
import os
import random
import re
import subprocess
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import bpeforge
import pytest
import regex
from bpeforge import Tokenizer
from corpora import (
    EMOJI,
    SCRIPT_SAMPLES,
    split_across_files,
    training_corpora,
    vocab_sizes,
    with_text,
    write_files,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_trainer import (
    GPT2_PATTERN,
    build_vocab,
    read_corpus_file,
    reference_train_bpe,
    split_on_specials,
    train_on_word_counts,
)
from splits import assert_same_split, regex_pieces

PATTERNS = dict(bpeforge.PATTERNS)
PRESETS = ["gpt2", "cl100k", "o200k", "llama3", "qwen2"]
OTHER_PRESETS = ["cl100k", "o200k", "llama3", "qwen2"]  # cut before spaces and tabs only, unlike gpt2
COMPILED = {name: regex.compile(PATTERNS[name]) for name in PRESETS}
SPECIAL = "<|endoftext|>"

RANDOM = settings(max_examples=300, deadline=None, derandomize=True, database=None)
TRAINING = settings(max_examples=40, deadline=None, derandomize=True, database=None)
MATRIX = settings(max_examples=15, deadline=None, derandomize=True, database=None)
ENCODING = settings(max_examples=150, deadline=None, derandomize=True, database=None)


def test_patterns_lists_the_presets():
    assert [name for name, _ in bpeforge.PATTERNS] == PRESETS
    assert PATTERNS["gpt2"] == GPT2_PATTERN  # the oracle's pattern


def rust_matches(chars: str, pattern: str, marker: str = "\uffff") -> set[str]:
    """The chars of `chars` that the Rust engine matches with a one-char `pattern`.

    Text no match covers comes back as pieces too, so each char is followed by
    `marker`, which the pattern must never match: a piece without it is a match.
    """
    pieces = bpeforge.pretokenize(marker.join(chars) + marker, pattern)
    return {piece for piece in pieces if marker not in piece}


# --------------------------------------------------------------------------
# Unicode tables: Rust (fancy-regex / regex-syntax) against Python `regex`
# --------------------------------------------------------------------------

ALL_CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]  # surrogates are not UTF-8

# The classes the presets are made of (o200k tells \p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M} from \p{Ll}).
CLASSES = [r"\p{L}", r"\p{Lu}", r"\p{Ll}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}", r"\p{M}", r"\p{N}", r"\s"]

# Code points whose general category changed between Rust's Unicode (16.0) and
# regex's (17.0), with the classes they move between.
KNOWN_RECATEGORIZED = {0x0295: frozenset({r"\p{Ll}", r"\p{Lo}"})}  # Ll -> Lo in Unicode 17.0


@functools.cache
def all_code_points() -> str:
    return "".join(map(chr, ALL_CODE_POINTS))


@functools.cache
def class_disagreements() -> dict[int, frozenset[str]]:
    """For each code point that Rust and `regex` class differently, the classes they disagree on.

    A custom pattern of one class runs on the same fancy-regex tables as the
    presets, so one call lists every code point Rust puts in that class.
    """
    text = all_code_points()
    found: dict[int, set[str]] = {}
    for cls in CLASSES:
        rust = rust_matches(text, cls)
        python = set(regex.findall(cls, text))
        for ch in rust ^ python:
            found.setdefault(ord(ch), set()).add(cls)
    return {cp: frozenset(classes) for cp, classes in found.items()}


def agreed(ch: str) -> bool:
    """Rust and `regex` put `ch` in the same classes (see the module docstring)."""
    return ord(ch) not in class_disagreements()


def without_disagreements(text: str) -> str:
    return "".join(ch for ch in text if agreed(ch))


def test_unicode_tables_differ_only_where_the_unicode_versions_do():
    text = all_code_points()
    rust_unassigned = {ord(c) for c in rust_matches(text, r"\p{Cn}", marker="a")}
    regex_unassigned = {ord(c) for c in regex.findall(r"\p{Cn}", text)}
    assert not regex_unassigned - rust_unassigned, "Rust knows characters that regex does not: Rust's Unicode is newer"
    newly_assigned = rust_unassigned - regex_unassigned  # 4,803 with Unicode 16.0 against 17.0
    # Python's unicodedata (14.0, older than both) does not know them either,
    # so they are all \p{Cn} to Hypothesis.
    assert all(unicodedata.category(chr(cp)) == "Cn" for cp in newly_assigned)

    disagreements = class_disagreements()
    others = {cp: classes for cp, classes in disagreements.items() if cp not in newly_assigned}
    unexplained = {f"U+{cp:04X}": sorted(classes) for cp, classes in others.items() if cp not in KNOWN_RECATEGORIZED}
    assert not unexplained, f"Rust and regex class assigned code points differently: {unexplained}"
    for cp, classes in others.items():
        assert classes == KNOWN_RECATEGORIZED[cp], f"U+{cp:04X}"
    assert not any(r"\s" in classes for classes in disagreements.values())


# Every code point, the new ones of Unicode 17.0 included, in several contexts
# for each preset: tests/test_scanners.py.


# --------------------------------------------------------------------------
# Random text
# --------------------------------------------------------------------------

WHITESPACE = [" ", " ", "  ", "\t", "\n", "\n\n", "\r", "\r\n", "\r\n\r\n", " \n", "\x0b", "\x0c", "\xa0", "\u3000"]
WHITESPACE += ["\u2028", "\x85", "\x1c", "\x00"]  # \x1c and NUL are not \s
APOSTROPHES = (
    ["'", "'", "’", "''"]
    + ["'" + suffix for s in ["s", "t", "re", "ve", "m", "ll", "d"] for suffix in (s, s.upper(), s.capitalize())]
    + ["'ſ", "ſ", "'\u212a"]
)  # U+017F LONG S folds to s; U+212A KELVIN SIGN to k (which no contraction uses)
DIGITS = ["0", "7", "12", "1234", "1234567", "٣", "٣٤٥", "१२", "½", "Ⅻ", "𝟙", "①"]
PUNCTUATION = [".", ",", "!", "?", "!!", "/", "//", "-", "—", "«", "»", "。", "$", "+", "~", "@", "#", "…", "¿"]
LETTERS = [
    # Lu, Ll
    "A", "Z", "É", "Σ", "Ж", "a", "z", "é", "σ", "ж", "ß", "ſ",
    # Lt (titlecase), Lm (modifier), Lo (other)
    "ǅ", "ǈ", "ᾈ", "ʰ", "ˆ", "ー", "々", "日", "本", "ا", "א", "ก", "한", "ǀ", "ꀀ",
    # M: combining marks (Mn, Mc, Me)
    "\u0301", "\u0308", "\u0903", "\u20dd", "\u0e31", "\u094d",
    # words with case changes (o200k splits CamelCase)
    "Hello", "HelloWorld", "XMLHttp", "iPhone", "HTML", "aBc", "ǅungla", "Éa", "eÉ",
]  # fmt: skip
FRAGMENTS = WHITESPACE + APOSTROPHES + DIGITS + PUNCTUATION + LETTERS + SCRIPT_SAMPLES + EMOJI

# Any character on which both tables agree (surrogates excluded: not UTF-8).
any_agreed_char = st.characters(exclude_categories=("Cs",)).filter(agreed)

biased_piece = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.sampled_from(WHITESPACE + APOSTROPHES),
    st.sampled_from(LETTERS + DIGITS + PUNCTUATION),
    any_agreed_char,
)


def text_of(piece: st.SearchStrategy[str], max_pieces: int) -> st.SearchStrategy[str]:
    """Length drawn first: `st.lists` alone keeps most lists tiny."""
    return st.integers(0, max_pieces).flatmap(lambda n: st.lists(piece, min_size=n, max_size=n)).map("".join)


# How a text ends matters to cl100k's \s++$ (a whitespace run at the very end stays whole).
ENDINGS = ["", "", " ", "  ", "\n", "\n ", " \n\t", "\r\n ", "!\n", "a"]
random_text = st.tuples(text_of(biased_piece, 80), st.sampled_from(ENDINGS)).map("".join)


@pytest.mark.parametrize("preset", PRESETS)
@RANDOM
@given(text=random_text)
def test_presets_equal_regex_on_random_text(preset, text):
    assert_same_split(text, preset)


def test_presets_on_narrated_cases():
    # A few cases that show how the presets differ, checked against regex too.
    cases = {
        ("cl100k", "Hello world's 12345  foo!!\n\n bar"): [
            "Hello", " world", "'s", " ", "123", "45", " ", " foo", "!!\n\n", " bar"
        ],
        ("cl100k", "DON'T stop"): ["DON", "'T", " stop"],  # case-insensitive contractions
        ("cl100k", "a  \n"): ["a", "  \n"],  # \s++$ keeps trailing whitespace together
        ("cl100k", "a\n "): ["a", "\n "],  # even when a newline is not its last character
        ("cl100k", "x\n\n  y"): ["x", "\n\n", " ", " y"],
        ("o200k", "HelloWorld's 1234"): ["Hello", "World's", " ", "123", "4"],
        ("o200k", "XMLHttpRequest"): ["XMLHttp", "Request"],
        ("o200k", "a/b//\n"): ["a", "/b", "//\n"],
        ("gpt2", "DON'T"): ["DON", "'", "T"],
    }  # fmt: skip
    for (preset, text), pieces in cases.items():
        assert COMPILED[preset].findall(text) == pieces, (preset, text)  # the expectation itself is right
        assert bpeforge.pretokenize(text, preset) == pieces, (preset, text)


# --------------------------------------------------------------------------
# The shared multilingual corpus
# --------------------------------------------------------------------------

CORPUS_BYTES = 3_000_000


@functools.cache
def multilingual_parts() -> dict[str, str]:
    """The first ~3 MB (Japanese Python docs) and the last ~3 MB (the UDHR in hundreds of languages)."""
    root = os.environ.get("BPEFORGE_TEST_DATA")
    if not root:
        pytest.skip("set BPEFORGE_TEST_DATA=path/to/shared/data to run the multilingual corpus tests")
    path = Path(root) / "corpora" / "multilingual.txt.xz"
    assert path.is_file(), f"BPEFORGE_TEST_DATA={root} has no corpora/multilingual.txt.xz"
    with lzma.open(path) as f:
        data = f.read()
    # Cut at character boundaries: never just before a UTF-8 continuation byte.
    end, start = CORPUS_BYTES, len(data) - CORPUS_BYTES
    while data[end] & 0xC0 == 0x80:
        end -= 1
    while data[start] & 0xC0 == 0x80:
        start += 1
    return {"head": data[:end].decode("utf-8"), "tail": data[start:].decode("utf-8")}


@pytest.mark.parametrize("part", ["head", "tail"])
@pytest.mark.parametrize("preset", PRESETS)
def test_presets_equal_regex_on_multilingual_corpus(preset, part):
    text = multilingual_parts()[part]
    assert len(text.encode("utf-8")) > CORPUS_BYTES - 4
    assert_same_split(text, preset)  # whole lists; the first difference is reported


# --------------------------------------------------------------------------
# Custom regexes
# --------------------------------------------------------------------------


def test_custom_regex_keeps_text_between_matches_as_pieces():
    # Lossless for every pattern (issue 11): what no match covers is a piece of its own.
    assert bpeforge.pretokenize("ab, cd!", r"\w+") == ["ab", ", ", "cd", "!"]
    assert regex_pieces(r"\w+", "ab, cd!") == ["ab", ", ", "cd", "!"]


CUSTOM_PATTERNS = [
    r"\p{L}+|\p{N}{1,2}|\s+(?!\S)|\s+|[^\s\p{L}\p{N}]+",  # look-ahead
    r"(?i:'s|'ll)|\p{Lu}?\p{Ll}++|\p{Lu}++|\p{N}|[^\p{L}\p{N}\s]++[\r\n]*+",  # possessive, case-insensitive
]


@pytest.mark.parametrize("pattern", CUSTOM_PATTERNS)
@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(text=random_text)
def test_custom_regexes_equal_regex_on_random_text(pattern, text):
    assert_same_split(text, pattern)


# (pattern, the position a parse error should point at, or None where only "some pointer" is checked)
BAD_PATTERNS = [
    ("(unclosed", 9),
    ("[abc", 4),
    ("*a", 0),
    ("[z-a]", None),  # a range backwards: rejected by the regex crate under fancy-regex
    (r"\p{NoSuchClass}", None),  # an unknown Unicode class: likewise
]


@pytest.mark.parametrize(("pattern", "position"), BAD_PATTERNS)
def test_a_bad_custom_regex_names_itself_and_where_it_fails(pattern, position):
    with pytest.raises(ValueError) as caught:
        bpeforge.pretokenize("some text", pattern)
    message = str(caught.value)
    # The message quotes the pattern (Rust's {:?} doubles backslashes).
    assert pattern in message or pattern.replace("\\", "\\\\") in message, message
    if position is not None:
        assert f"position {position}" in message, message
    # Where it fails: a position, or the regex crate's caret under the pattern.
    assert re.search(r"position \d+|\^", message), f"the error does not say where {pattern!r} fails: {message}"


def test_a_bad_custom_regex_fails_training_and_encoding_too(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("some text", encoding="utf-8")
    byte_vocab = {i: bytes([i]) for i in range(256)}
    for attempt in [
        lambda: bpeforge.train_bpe(path, 300, [], pattern="(unclosed"),
        lambda: bpeforge.train_from_iterator(["some text"], 300, pattern="(unclosed"),
        lambda: Tokenizer(byte_vocab, [], pattern="(unclosed"),
    ]:
        with pytest.raises(ValueError, match=r'"\(unclosed".*position 9'):
            attempt()


# --------------------------------------------------------------------------
# Training with a preset against the oracle
# --------------------------------------------------------------------------


def reference_train_with_pattern(
    paths: list, vocab_size: int, special_tokens: list[str], pattern: str
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """`reference_train_bpe` with another pre-tokenizer regex: words counted by `regex.findall`.

    The oracle's own reading, splitting on specials and merge loop are reused;
    only the regex differs (the oracle itself always uses GPT-2's).
    """
    compiled = regex.compile(PATTERNS.get(pattern, pattern))
    words: Counter[tuple[bytes, ...]] = Counter()
    for path in paths:  # each file ends a document
        for document in split_on_specials(read_corpus_file(path), special_tokens):
            for piece in regex_pieces(compiled, document):
                words[tuple(bytes([b]) for b in piece.encode("utf-8"))] += 1
    merges = train_on_word_counts(words, vocab_size - 256 - len(special_tokens))
    return build_vocab(merges, special_tokens), merges


# Words and separators that the presets treat differently from GPT-2: punctuation
# that keeps its newlines, digit runs cut in threes, CamelCase, uppercase
# contractions, whitespace runs before and at the ends of documents.
WORDS = [
    *SCRIPT_SAMPLES, *EMOJI, "the", "The", "THE", "HelloWorld", "XMLHttpRequest", "iPhone", "don't", "DON'T",
    "we'LL", "it'S", "1234567", "2024", "3.14", "ǅungla", "ſ's", "ʰa",
]  # fmt: skip
SEPARATORS = [" "] * 10 + [
    "  ",
    "\n",
    "\n\n",
    "\r\n",
    "\t",
    ", ",
    ". ",
    "!\n",
    "?!\r\n\r\n",
    "/",
    " //\n",
    "   \n  ",
    "\u3000",
    " \xa0",
]


def seeded_corpus(seed: int, documents: int, special: str | None = SPECIAL) -> str:
    """Made-up text in many scripts, Zipf-like word frequencies, documents ending in whitespace now and then."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "Mi", "te", "RA", "pon", "dar", "the", "ing", "tion", *WORDS]
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 3))) for _ in range(1500)]
    words = [word for rank, word in enumerate(words) for _ in range(max(1, 30 // (rank + 1)))]
    docs = []
    for _ in range(documents):
        doc = "".join(rng.choice(words) + rng.choice(SEPARATORS) for _ in range(rng.randint(5, 60)))
        docs.append(doc + rng.choice(["", "", "\n", "  \n", " "]))
    return (special or "").join(docs)


def split_text(text: str, parts: int, seed: int) -> list[str]:
    """Cut at random code point boundaries (inside specials and CRLFs too: each file end ends a document)."""
    rng = random.Random(seed)
    cuts = sorted(rng.randrange(len(text) + 1) for _ in range(parts - 1))
    bounds = [0, *cuts, len(text)]
    return [text[bounds[i] : bounds[i + 1]] for i in range(parts)]


def test_the_wrapper_is_the_oracle_for_gpt2(tmp_path):
    paths = write_files(tmp_path, split_text(seeded_corpus(0, 40), 2, seed=0))
    expected = reference_train_bpe(paths, 400, [SPECIAL])
    assert reference_train_with_pattern(paths, 400, [SPECIAL], "gpt2") == expected
    assert bpeforge.train_bpe(paths, 400, [SPECIAL], pattern="gpt2") == expected


@pytest.mark.parametrize(
    ("pattern", "seed", "files", "specials"),
    [
        ("cl100k", 1, 1, [SPECIAL]),
        ("cl100k", 2, 3, [SPECIAL]),
        ("cl100k", 3, 2, []),
        ("o200k", 4, 1, [SPECIAL]),
        ("o200k", 5, 3, []),
        (CUSTOM_PATTERNS[1], 6, 2, [SPECIAL]),
    ],
)
def test_training_with_a_pattern_equals_the_oracle(tmp_path, pattern, seed, files, specials):
    text = seeded_corpus(seed, 80, SPECIAL if specials else None)
    paths = write_files(tmp_path, split_text(text, files, seed))
    vocab, merges = bpeforge.train_bpe(paths if files > 1 else paths[0], 400, specials, pattern=pattern)
    expected_vocab, expected_merges = reference_train_with_pattern(paths, 400, specials, pattern)
    assert merges == expected_merges
    assert vocab == expected_vocab
    assert len(merges) == 400 - 256 - len(specials)


def generated_corpus(draw) -> tuple[list[str], list[str]]:
    """A corpus of tests/corpora.py (scrubbed of the characters Rust and regex disagree on), in 1-3 files."""
    text, specials = draw(training_corpora(), label="corpus")
    text = with_text(without_disagreements(text), specials)
    return draw(split_across_files(text), label="files"), specials


@pytest.mark.parametrize("preset", OTHER_PRESETS)
@TRAINING
@given(data=st.data())
def test_generated_corpora_equal_the_oracle(tmp_path_factory, preset, data):
    contents, specials = generated_corpus(data.draw)
    vocab_size = data.draw(vocab_sizes(specials, max_merges=150), label="vocab_size")
    paths = write_files(tmp_path_factory.mktemp("corpus"), contents)
    result = bpeforge.train_bpe(paths, vocab_size, specials, pattern=preset)
    assert result == reference_train_with_pattern(paths, vocab_size, specials, preset)


THREADS = [1, 2]
CHUNK_SIZES = [1, 64, None]  # 1: a read boundary inside nearly every piece; None: the default


def assert_same_for_every_chunk_size_and_thread_count(
    paths: list[Path], vocab_size: int, specials: list[str], pattern: str = "cl100k"
):
    expected = reference_train_with_pattern(paths, vocab_size, specials, pattern)
    for threads in THREADS:
        for chunk_size in CHUNK_SIZES:
            result = bpeforge.train_bpe(
                paths, vocab_size, specials, pattern=pattern, num_threads=threads, chunk_size=chunk_size
            )
            assert result == expected, f"{pattern}: num_threads={threads}, chunk_size={chunk_size}"


@pytest.mark.parametrize("pattern", OTHER_PRESETS)
@pytest.mark.parametrize("specials", [[SPECIAL], []])
def test_chunk_size_and_threads_do_not_change_preset_training(tmp_path, pattern, specials):
    # The presets are cut before spaces and tabs that follow a non-space, but
    # never before CR or LF: punctuation keeps its newlines ("!\n", and o200k's
    # "/"), and whitespace runs are single pieces. Without special tokens every
    # cut is such a whitespace cut.
    text = seeded_corpus(7, 120, SPECIAL if specials else None)
    paths = write_files(tmp_path, split_text(text, 3, seed=7))
    assert_same_for_every_chunk_size_and_thread_count(paths, 400, specials, pattern)


@pytest.mark.parametrize("pattern", OTHER_PRESETS)
@MATRIX
@given(data=st.data())
def test_chunk_size_and_threads_do_not_change_preset_training_on_generated_corpora(tmp_path_factory, pattern, data):
    contents, specials = generated_corpus(data.draw)
    vocab_size = data.draw(vocab_sizes(specials, max_merges=80), label="vocab_size")
    paths = write_files(tmp_path_factory.mktemp("corpus"), contents)
    assert_same_for_every_chunk_size_and_thread_count(paths, vocab_size, specials, pattern)


# --------------------------------------------------------------------------
# Encoding with a preset against tiktoken
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiktoken():
    return pytest.importorskip("tiktoken", reason="tiktoken is not installed (pip install tiktoken)")


@pytest.fixture(scope="module", params=OTHER_PRESETS)
def preset_pair(request, tmp_path_factory, tiktoken):
    """A tokenizer trained with the preset on ~300 KB, and tiktoken's Encoding over its saved ranks."""
    from tiktoken.load import load_tiktoken_bpe

    preset = request.param
    directory = tmp_path_factory.mktemp(f"tiktoken-{preset}")
    corpus = directory / "corpus.txt"
    corpus.write_bytes(seeded_corpus(11, 1200).encode("utf-8"))
    assert corpus.stat().st_size > 200_000
    vocab, merges = bpeforge.train_bpe(corpus, 1500, [SPECIAL], pattern=preset)
    tok = Tokenizer(vocab, merges, [SPECIAL], pattern=preset)
    assert tok.pattern == preset
    tok.save_tiktoken(directory / "ranks.tiktoken")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken caches files by path; tmp paths are reused
        ranks = load_tiktoken_bpe(str(directory / "ranks.tiktoken"))
    enc = tiktoken.Encoding(
        name=f"bpeforge-{preset}",
        pat_str=PATTERNS[preset],
        mergeable_ranks=ranks,
        special_tokens={SPECIAL: tok.token_to_id(SPECIAL)},
    )
    return tok, enc


def assert_same_ids(tok: Tokenizer, enc, text: str) -> None:
    expected = enc.encode(text, allowed_special="all")
    actual = tok.encode(text)
    if actual == expected:
        return
    i = next((k for k, (a, e) in enumerate(zip(actual, expected)) if a != e), min(len(actual), len(expected)))
    offset = len(enc.decode_bytes(expected[:i]))
    raise AssertionError(
        f"{tok.pattern}: first different id at {i} (byte offset {offset}):\n"
        f"  text     {text.encode('utf-8')[max(0, offset - 10) : offset + 20]!r}\n"
        f"  got      {[tok.id_to_token(t) for t in actual[max(0, i - 2) : i + 3]]}\n"
        f"  expected {[enc.decode_single_token_bytes(t) for t in expected[max(0, i - 2) : i + 3]]}"
    )


encoding_text = text_of(st.one_of(biased_piece, st.sampled_from([SPECIAL, "<|", "endoftext|>"])), 60)


@ENCODING
@given(text=encoding_text)
def test_preset_ids_equal_tiktoken_on_random_text(preset_pair, text):
    assert_same_ids(*preset_pair, text)


def test_preset_ids_equal_tiktoken_on_generated_corpus(preset_pair):
    assert_same_ids(*preset_pair, seeded_corpus(12, 300))


@pytest.mark.parametrize("part", ["head", "tail"])
def test_preset_ids_equal_tiktoken_on_multilingual_corpus(preset_pair, part):
    assert_same_ids(*preset_pair, multilingual_parts()[part][:1_000_000])


def test_preset_ids_equal_tiktoken_where_unicode_versions_differ(preset_pair):
    # tiktoken runs fancy-regex (Unicode 16.0 tables), as the scanners do: on
    # the code points that Unicode 17.0 newly assigned `regex` 2025+ splits
    # otherwise, and bpeforge follows tiktoken.
    tok, enc = preset_pair
    chars = [chr(cp) for cp in sorted(class_disagreements())]
    if not chars:
        pytest.skip(f"regex {regex.__version__} has Unicode 16.0 too: no code point to compare on")
    text = "".join(f"a{c}a {c}1'{c}s A{c}b\n" for c in chars)
    assert bpeforge.pretokenize(text, tok.pattern) == bpeforge.pretokenize(text, PATTERNS[tok.pattern])  # fancy-regex
    assert bpeforge.pretokenize(text, tok.pattern) != COMPILED[tok.pattern].findall(text)
    assert_same_ids(tok, enc, text)
    assert tok.decode(tok.encode(text)) == text


# --------------------------------------------------------------------------
# The CLI keeps the pattern
# --------------------------------------------------------------------------


def test_cli_train_with_a_preset_keeps_the_pattern(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(seeded_corpus(13, 60).encode("utf-8"))
    out = tmp_path / "tok"
    command = [sys.executable, "-m", "bpeforge", "train", str(corpus), "--vocab-size", "400", "-o", str(out)]
    done = subprocess.run(
        [*command, "--pattern", "cl100k", "--no-progress"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr

    meta = json.loads((out / "bpeforge.json").read_text(encoding="utf-8"))
    assert meta["pattern"] == "cl100k"
    tok = Tokenizer.load(out)
    assert tok.pattern == "cl100k"
    assert "pattern='cl100k'" in repr(tok)
    # The CLI trains what the API trains, and encodes with the preset.
    vocab, merges = bpeforge.train_bpe(corpus, 400, [SPECIAL], pattern="cl100k")
    assert (tok.vocab, tok.merges) == (vocab, merges)
    text = "Hello!!\n\nworld's 12345" + SPECIAL
    assert tok.encode(text) == Tokenizer(vocab, merges, [SPECIAL], pattern="cl100k").encode(text)

    # HF exports keep the pattern (a Split pre-tokenizer; tests/test_hf_export.py compares the ids).
    back = Tokenizer.from_hf(tok.save_hf(tmp_path / "tokenizer.json"))
    assert back.pattern == "cl100k" and back.encode(text) == tok.encode(text)
