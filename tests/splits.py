"""The reference split of a text, and the check against it, for the pre-tokenizer tests.

The contract (DESIGN §1.1.2): bpeforge's pieces are the Python `regex` package's
matches, left to right, whole and non-empty; text no match covers is a piece of its
own (only custom regexes leave any). Shared by tests/test_patterns.py and
tests/test_scanners.py.
"""

from __future__ import annotations

import bpeforge
import regex

PATTERNS = dict(bpeforge.PATTERNS)


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
    """bpeforge.pretokenize equals `regex_pieces` (a preset by its regex); on a mismatch, show the first difference."""
    expected = regex_pieces(PATTERNS.get(pattern, pattern), text)
    actual = bpeforge.pretokenize(text, pattern)
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
