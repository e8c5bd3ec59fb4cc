"""Pre-tokenizer names: presets by any common spelling, and typos refused.

A pattern is a preset name (`bpeforge.PATTERNS`) or a regex. Preset names are
case-insensitive and take the obvious aliases ("GPT2", "gpt-2", "o200k_base").
A pattern that is not a preset but looks like a name (letters, digits, `-`,
`_`, `.`, no regex syntax) is refused with the presets listed: as a regex it
would match only that literal word, and training "succeeds" on almost nothing.
"""

from __future__ import annotations

import difflib
import re

from bpeforge._core import PATTERNS

# Spellings that name a preset, compared after lower-casing and dropping
# "-", "_", "." and spaces. tiktoken's encoding names map to their patterns
# (r50k_base and p50k_base use GPT-2's).
_ALIASES = {
    "gpt2": "gpt2",
    "r50k": "gpt2",
    "r50kbase": "gpt2",
    "p50k": "gpt2",
    "p50kbase": "gpt2",
    "cl100k": "cl100k",
    "cl100kbase": "cl100k",
    "gpt4": "cl100k",
    "o200k": "o200k",
    "o200kbase": "o200k",
    "gpt4o": "o200k",
    "llama3": "llama3",
    "qwen2": "qwen2",
}
PRESETS = [name for name, _ in PATTERNS]
_LOOKS_LIKE_A_NAME = re.compile(r"[A-Za-z0-9_.\- ]+")


def _key(name: str) -> str:
    return re.sub(r"[-_. ]", "", name.lower())


def normalize_pattern(pattern: object) -> str:
    """The canonical preset name for any spelling of one, or the custom regex unchanged."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str (a preset name or a regex), got {type(pattern).__name__}")
    preset = _ALIASES.get(_key(pattern))
    if preset in PRESETS:
        return preset
    if _LOOKS_LIKE_A_NAME.fullmatch(pattern):
        close = difflib.get_close_matches(_key(pattern), PRESETS, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(
            f"pattern {pattern!r} is not a preset; {hint}presets: {', '.join(PRESETS)}. A regex of only "
            f"letters and digits would match nothing but that word; to mean it, write it as (?:{pattern})"
        )
    return pattern
