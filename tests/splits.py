"""The reference split of a text, and the check against it, for the pre-tokenizer tests.

The contract (DESIGN §1.1.2): bpeforge's pieces are the Python `regex` package's
matches, left to right, whole and non-empty; text no match covers is a piece of its
own (only custom regexes leave any). With one refinement: the character classes are
Unicode 16.0's, the version of tiktoken's and `tokenizers`' engines, whose ids
bpeforge reproduces. `regex` releases since 2025 have Unicode 17.0, so the
reference runs `regex` on the text seen through `unicode16_view` (each code point
that 17.0 newly assigned stands in as an unassigned one, U+0295 as the Ll it was)
and cuts the original text at the same places. Shared by tests/test_patterns.py and
tests/test_scanners.py. `assert_same_split` checks the split at every SIMD level
of the block scanners this CPU has (`bpeforge.build_info()["simd_levels"]`).
"""

from __future__ import annotations

import functools

import bpeforge
import regex
from bpeforge._core import set_simd_level

PATTERNS = dict(bpeforge.PATTERNS)
# Levels of the block scanners this CPU has; the one `BPEFORGE_SIMD` chose is restored after each check.
SIMD_LEVELS = bpeforge.build_info()["simd_levels"]
ACTIVE_LEVEL = bpeforge.build_info()["simd_level"]


def pretokenize_at_every_level(text: str, pattern: str) -> list[str]:
    """bpeforge.pretokenize at each SIMD level this CPU has; asserts that they agree."""
    splits = {}
    try:
        for level in SIMD_LEVELS:
            set_simd_level(level)
            splits[level] = bpeforge.pretokenize(text, pattern)
    finally:
        set_simd_level(ACTIVE_LEVEL)
    first = splits[SIMD_LEVELS[0]]
    for level, pieces in splits.items():
        assert pieces == first, f"{pattern}: SIMD level {level} splits {text[:60]!a} unlike {SIMD_LEVELS[0]}"
    return first


# Stand-ins of the same classes in both Unicode versions: U+0378 is unassigned in
# every version; U+0250 is a lowercase letter in every version and, like U+0295,
# folds to no letter that a contraction has.
UNASSIGNED_STAND_IN = "\u0378"
RECATEGORIZED = {0x0295: "\u0250"}  # Ll up to Unicode 16.0, Lo from 17.0


@functools.cache
def unicode16_view() -> dict[int, str]:
    """`str.translate` table that shows `regex` (whatever its Unicode version) a text as Unicode 16.0 classes it.

    The code points `regex` assigns and Unicode 16.0 does not are read from fancy-regex (regex-syntax 0.8's
    Unicode 16.0 tables) through a custom pattern, a separate engine from the scanners under test.
    """
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    # Each char followed by "a", which \p{Cn} never matches: a piece without it is a match.
    pieces = bpeforge.pretokenize("a".join(chars) + "a", r"\p{Cn}")
    unassigned_in_16 = {piece for piece in pieces if "a" not in piece}
    unassigned_here = set(regex.findall(r"\p{Cn}", "".join(chars)))
    view = {ord(ch): UNASSIGNED_STAND_IN for ch in unassigned_in_16 - unassigned_here}
    if not regex.fullmatch(r"\p{Ll}", "\u0295"):
        view.update(RECATEGORIZED)
    return view


@functools.cache
def regex_unassigned() -> frozenset[str]:
    """The code points that `regex` (its own Unicode version) classes as unassigned, \\p{Cn}: found in one pass
    over all of them, where a `regex.match` a code point took 5 s."""
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    return frozenset(regex.findall(r"\p{Cn}", every))


def assigned_code_points(start: int, one_unassigned_in: int) -> list[str]:
    """From `start` on (surrogates aside), every code point that `regex` assigns, and one in `one_unassigned_in`
    of the others (counted from `start`): the unassigned ones are all alike, and these stand for the rest."""
    chars = [chr(c) for c in range(start, 0x110000) if not 0xD800 <= c <= 0xDFFF]
    unassigned = regex_unassigned()
    return [ch for i, ch in enumerate(chars) if ch not in unassigned or i % one_unassigned_in == 0]


def regex_pieces(pattern: str | regex.Pattern, text: str) -> list[str]:
    """What bpeforge's pre-tokenizer must give for `pattern` (a regex or a compiled one)."""
    seen = text.translate(unicode16_view())
    assert len(seen) == len(text)  # each stand-in is one code point, so offsets carry over
    pieces, covered = [], 0
    for found in regex.finditer(pattern, seen):
        if found.start() > covered:
            pieces.append(text[covered : found.start()])
        if found.end() > found.start():
            pieces.append(text[found.start() : found.end()])
        covered = max(covered, found.end())
    if covered < len(text):
        pieces.append(text[covered:])
    return pieces


def assert_same_split(text: str, pattern: str) -> None:
    """bpeforge.pretokenize equals `regex_pieces` (a preset by its regex) at every SIMD level; on a mismatch, show
    the first difference."""
    expected = regex_pieces(PATTERNS.get(pattern, pattern), text)
    actual = pretokenize_at_every_level(text, pattern)
    if actual == expected:
        return
    i = next((k for k, (a, e) in enumerate(zip(actual, expected)) if a != e), min(len(actual), len(expected)))
    offset = sum(len(piece) for piece in expected[:i])
    raise AssertionError(
        f"{pattern}: first difference at piece {i} (text offset {offset}, regex {regex.__version__}):\n"
        f"  text     {text[max(0, offset - 10) : offset + 20]!a}\n"
        f"  got      {actual[max(0, i - 2) : i + 3]!a}\n"
        f"  expected {expected[max(0, i - 2) : i + 3]!a}"
    )
