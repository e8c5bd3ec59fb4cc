"""Hypothesis strategies that generate training corpora.

A corpus is `(text, specials)`. The text is glued together from pieces chosen to
hit the edges of the semantics: tie-heavy two-letter alphabets, long runs, many
scripts, emoji sequences, every `\\s` character (and U+001C..U+001F, which
`str.isspace` calls whitespace but `regex` does not), NUL, CRLF, contractions,
and special tokens at the start, at the end, back to back and overlapping.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st

ENDOFTEXT = "<|endoftext|>"

# Every character `regex` matches with `\s` (checked against regex 2026.5).
REGEX_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B)) + "\u2028\u2029\u202f\u205f\u3000"
)
# Whitespace for `str.isspace()` but not for `regex`: they must join the
# punctuation run `[^\s\p{L}\p{N}]+`, not a whitespace run.
NOT_REGEX_WHITESPACE = "\x1c\x1d\x1e\x1f"

# Words and symbols of many scripts: letters (L), marks (M, neither letter nor
# number, so they go with punctuation), numbers (N) and punctuation (P, S).
SCRIPT_SAMPLES = [
    "hello", "World", "naïve", "façade", "Ærøskøbing", "straße",
    "αβγ", "Ελλάδα", "привет", "Ёж", "日本語", "中文字", "한국어", "カタカナ",
    "مرحبا", "العربية", "हिन्दी", "नमस्ते", "ไทย", "ภาษาไทย", "עברית",
    "e\u0301", "a\u0308\u0304", "\u0301\u0302", "ক্ষ", "ጤና",
    "123", "0", "٣٤٥", "१२३", "½", "Ⅻ", "①②", "𝟙𝟚",
    "!", "?!", "...", "—", "«»", "。", "、", "¿¡", "§", "©", "€$", "+-*/", "~~",
]  # fmt: skip

EMOJI = [
    "😀", "👍", "👍🏽", "👩\u200d💻", "👨\u200d👩\u200d👧\u200d👦", "🏳️\u200d🌈",
    "🇫🇷", "❤️", "\u200d", "\ufe0f", "🤷🏿\u200d♀️",
]  # fmt: skip

CONTRACTIONS = [
    "'s", "'t", "'d", "'m", "'ll", "'ve", "'re", "'S", "'LL", "'x", "'", "''s",
    "’s", "don't", "I'm", "it's", "they'll", "we've", "you're", "'1",
]  # fmt: skip

CONTROL = ["\x00", "\x00\x00", "\r\n", "\r\n\r\n", "\n\n\n", "\r", "\x7f", "\x01"]

# Sets of special tokens. Longest-first matching is exercised by the doubled
# end-of-text token and by "<|" (shortest-first would cut "<|endoftext|>" into
# "<|" and the text "endoftext|>"); the partial overlap "<s>" / "s><" pins
# down that the leftmost match wins.
SPECIAL_SETS = [
    [],
    [ENDOFTEXT],
    [ENDOFTEXT, ENDOFTEXT + ENDOFTEXT],
    [ENDOFTEXT + ENDOFTEXT, ENDOFTEXT],
    ["<|", ENDOFTEXT],  # a special that is a prefix of another one
    ["<s>", "</s>", "<pad>"],
    ["<s>", "s><"],
    ["§", "<|终|>"],  # "§" is two bytes: a special, not the byte token it would be as one byte
    ["ab"],
    [" a"],
]
# (A one-byte special such as "a" or " " is refused by training: that byte is
# already a token, and the special would get a second id no text produces.)

# Fragments that look like specials but are not: they must stay plain text.
SPECIAL_LOOKALIKES = ["<|", "|>", "<|endoftext", "endoftext|>", "<", "s>", "</"]


def run_of(chars: str, max_len: int = 12) -> st.SearchStrategy[str]:
    """A run of one repeated character, e.g. "aaaaaa" (stresses a a a -> aa a)."""
    return st.builds(lambda c, n: c * n, st.sampled_from(chars), st.integers(1, max_len))


# Pieces that only use a tiny alphabet: pair counts collide, so ties abound.
tie_piece = st.one_of(
    st.text(alphabet="ab", min_size=1, max_size=4),
    st.sampled_from(["ab", "ba", "aab", "abab", "bba", " ", "  ", "\n"]),
    run_of("ab "),
)

# Single characters of any category (surrogates excluded: not valid UTF-8).
any_char = st.characters(exclude_categories=("Cs",))

unicode_piece = st.one_of(
    st.sampled_from(SCRIPT_SAMPLES),
    st.sampled_from(EMOJI),
    st.sampled_from(CONTRACTIONS),
    st.sampled_from(CONTROL),
    st.sampled_from(list(REGEX_WHITESPACE + NOT_REGEX_WHITESPACE)),
    st.sampled_from(SPECIAL_LOOKALIKES),
    run_of("a \n'1.é\t\u3000", max_len=8),
    st.text(any_char, max_size=4),
    st.text(alphabet="ab '\n1.", max_size=6),
)


@st.composite
def training_corpora(draw, max_pieces: int = 80) -> tuple[str, list[str]]:
    """A corpus `(text, specials)`: tie-heavy or mixed Unicode, with specials.

    The drawn piece sequence is repeated a few times so pre-tokens and pairs
    get counts above one (otherwise almost every merge is a tie).
    """
    specials = draw(st.sampled_from(SPECIAL_SETS))
    base = draw(st.sampled_from([tie_piece, unicode_piece, st.one_of(tie_piece, unicode_piece)]))
    # Specials are drawn as pieces, so they land at the start, at the end and
    # back to back as often as in the middle.
    piece = st.one_of(base, st.sampled_from(specials)) if specials else base
    # Drawing the length first keeps long corpora common (list sizes drawn by
    # `st.lists` alone stay small).
    num_pieces = draw(st.integers(0, max_pieces))
    pieces = draw(st.lists(piece, min_size=num_pieces, max_size=num_pieces))
    repeats = draw(st.integers(1, 5))
    return with_text("".join(pieces * repeats), specials), specials


def with_text(text: str, specials: list[str]) -> str:
    """`text`, or `text` plus one word if it holds nothing but special tokens:
    training on no text is an error (tested on its own), not a corpus."""
    from reference_trainer import split_on_specials

    return text if any(split_on_specials(text, specials)) else text + " the"


@st.composite
def split_across_files(draw, text: str) -> list[str]:
    """Cut `text` into 1-3 file contents at code point boundaries.

    Cuts may fall inside a special token or a CRLF, and files may be empty:
    each file end is a document end, so both halves are then plain text.
    """
    num_files = draw(st.integers(1, 3))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), min_size=num_files - 1, max_size=num_files - 1)))
    bounds = [0, *cuts, len(text)]
    return [text[bounds[i] : bounds[i + 1]] for i in range(num_files)]


@st.composite
def vocab_sizes(draw, specials: list[str], max_merges: int = 300) -> int:
    """From the minimum (no merges at all) to a few hundred merges."""
    minimum = 256 + len(specials)
    return minimum + draw(st.integers(0, max_merges))


def write_files(directory: Path, contents: list[str]) -> list[Path]:
    """Write each text as UTF-8 bytes (binary: no newline translation)."""
    paths = []
    for i, text in enumerate(contents):
        path = directory / f"part{i}.txt"
        path.write_bytes(text.encode("utf-8"))
        paths.append(path)
    return paths
