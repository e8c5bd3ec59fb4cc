"""The reference split of a text, and the check against it, for the pre-tokenizer tests.

The contract (DESIGN §1.1.2): bpeforge's pieces are the Python `regex` package's
matches, left to right, whole and non-empty; text no match covers is a piece of its
own (only custom regexes leave any). Shared by tests/test_patterns.py and
tests/test_scanners.py. `assert_same_split` checks the split at every SIMD level
of the block scanners this CPU has (`bpeforge.build_info()["simd_levels"]`).
"""

from __future__ import annotations

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


def regex_pieces(pattern: str | regex.Pattern, text: str) -> list[str]:
    """What bpeforge's pre-tokenizer must give for `pattern` (a regex or a compiled one)."""
    pieces, covered = [], 0
    for found in regex.finditer(pattern, text):
        if found.start() > covered:
            pieces.append(text[covered : found.start()])
        if found.group(0):
            pieces.append(found.group(0))
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
