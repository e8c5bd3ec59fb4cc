"""Pre-tokenizer names: presets by any common spelling, and typos refused.

A pattern is a preset name (`bpeforge.PATTERNS`) or a regex. Preset names are
case-insensitive and take the obvious aliases ("GPT2", "gpt-2", "o200k_base").
A pattern that is not a preset but looks like a name (letters, digits, `-`,
`_`, `.`, spaces), or whose letters and digits spell a preset amid other marks
("gpt2!"), is refused with the closest preset: as a regex it would match only
that literal word, and training "succeeds" on almost nothing. A regex that
reads like a name is written inside a group: `(?:gpt2)`.

The rule lives in the Rust core (`pretokenize/pattern_names.rs`), which applies it
to every pattern it is given, so `bpeforge.Counts(..., pattern="gtp2")` is
refused as `bpeforge.train(..., pattern="gtp2")` is.
"""

from __future__ import annotations

from bpeforge._core import PATTERNS, resolve_pattern

PRESETS = [name for name, _ in PATTERNS]


def normalize_pattern(pattern: object) -> str:
    """The canonical preset name for any spelling of one, or the custom regex unchanged."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str (a preset name or a regex), got {type(pattern).__name__}")
    return resolve_pattern(pattern)
