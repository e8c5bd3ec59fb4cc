"""bpeforge.pretokenize (a hand-written scanner) against `regex.findall`.

The scanner must equal the Python `regex` package on the GPT-2 pattern for every
input: random Unicode text, every code point in several contexts, and the
narrated corner cases of DESIGN §1.1.2.
"""

import bpeforge
import pytest
import regex
import splits
from corpora import EMOJI, NOT_REGEX_WHITESPACE, REGEX_WHITESPACE, SCRIPT_SAMPLES
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_trainer import GPT2_PATTERN

PAT = regex.compile(GPT2_PATTERN)

RANDOM = settings(max_examples=400, deadline=None, derandomize=True, database=None)


def assert_same_split(text: str) -> None:
    """The GPT-2 split of `text` equals regex's (tests/splits.py shows the first difference)."""
    splits.assert_same_split(text, "gpt2")


# --- random text ------------------------------------------------------------------


def text_of_length(alphabet: st.SearchStrategy[str], max_size: int) -> st.SearchStrategy[str]:
    """Text whose length is drawn first: `st.text` alone keeps most strings tiny."""
    return st.integers(0, max_size).flatmap(lambda n: st.text(alphabet, min_size=n, max_size=n))


# Surrogates are excluded: a lone surrogate is not valid UTF-8.
any_text = text_of_length(st.characters(exclude_categories=("Cs",)), max_size=200)

# Few distinct characters, each a different class of the pattern, so the
# interesting sequences (space before a word, whitespace runs before a word,
# apostrophes before s/t/ll) come up constantly.
BIASED_ALPHABET = " \n\t\r'sdmtlvreSLabc019.,!?é日٣\u3000\xa0\x1c\x00\u0301😀"
biased_text = text_of_length(st.sampled_from(BIASED_ALPHABET), max_size=120)

pieces_text = st.lists(
    st.one_of(
        st.sampled_from(SCRIPT_SAMPLES),
        st.sampled_from(EMOJI),
        st.sampled_from(list(REGEX_WHITESPACE + NOT_REGEX_WHITESPACE)),
        st.sampled_from(["'s", "'t", "'ll", "'ve", "'re", "'d", "'m", "'S", "'", " ", "  ", "\n\n"]),
    ),
    min_size=1,
    max_size=40,
).map("".join)


@RANDOM
@given(any_text)
def test_random_unicode_text(text):
    assert_same_split(text)


@RANDOM
@given(biased_text)
def test_biased_alphabet(text):
    assert_same_split(text)


@RANDOM
@given(pieces_text)
def test_scripts_emoji_whitespace_and_contractions(text):
    assert_same_split(text)


# --- every code point -------------------------------------------------------------

ALL_CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]

# Each template puts one code point in a context that exercises one rule:
CONTEXTS = {
    "joins a following letter?": lambda ch: ch + "a",
    "joins a following digit?": lambda ch: ch + "1",
    "taken by a leading space?": lambda ch: " " + ch,
    "after a run of two spaces": lambda ch: "  " + ch,
    "before whitespace and a word": lambda ch: ch + " x",
    "after an apostrophe (contractions)": lambda ch: "'" + ch,
    "run of itself after a newline": lambda ch: "\n" + ch + ch,
}


@pytest.mark.parametrize("context", CONTEXTS)
def test_every_code_point(context):
    # One big string per context: a single call checks all 1.1M code points.
    template = CONTEXTS[context]
    assert_same_split("".join(template(chr(c)) for c in ALL_CODE_POINTS))


# --- narrated cases ---------------------------------------------------------------

NARRATED = [
    # A whitespace run before a word leaves its last character to the word;
    # a newline is no space, so it stands alone.
    ("a\n\n\nb", ["a", "\n\n", "\n", "b"]),
    ("a   b", ["a", "  ", " b"]),
    ("a\r\nb", ["a", "\r", "\n", "b"]),
    ("a\r\n", ["a", "\r\n"]),  # at the end the whole run stays together
    ("x  !!", ["x", " ", " !!"]),
    ("Hello world", ["Hello", " world"]),
    # Contractions are lowercase only, and they split off even mid-word.
    ("don't", ["don", "'t"]),
    ("DON'T", ["DON", "'", "T"]),
    ("we'll've", ["we", "'ll", "'ve"]),
    ("'sd", ["'s", "d"]),
    ("it’s", ["it", "’", "s"]),  # U+2019 is no apostrophe
    # Letters, numbers and the rest are separate classes.
    ("abc123", ["abc", "123"]),
    ("3.14", ["3", ".", "14"]),
    ("١٢٣abc", ["١٢٣", "abc"]),
    ("Ⅻ½", ["Ⅻ½"]),  # Nl and No are \p{N}
    ("e\u0301", ["e", "\u0301"]),  # a combining mark is not \p{L}
    ("👍🏽!", ["👍🏽!"]),  # So, Sk and Po form one punctuation run
    (" \x00", [" \x00"]),  # NUL is not whitespace
    ("a\x1cb", ["a", "\x1c", "b"]),  # U+001C is not \s for regex (it is for str.isspace)
    # Other Unicode spaces are \s but only U+0020 is the optional leading space.
    ("a\u3000b", ["a", "\u3000", "b"]),
    ("a\xa0 b", ["a", "\xa0", " b"]),
    ("  ", ["  "]),
    ("", []),
]


@pytest.mark.parametrize(("text", "pieces"), NARRATED)
def test_narrated_cases(text, pieces):
    assert PAT.findall(text) == pieces  # the expectation itself is right
    assert bpeforge.pretokenize(text) == pieces
