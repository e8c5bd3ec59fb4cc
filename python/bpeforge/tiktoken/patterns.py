"""tiktoken's `pat_str` regexes and the bpeforge pre-tokenizers that split text exactly as they do.

A preset runs on bpeforge's hand-written scanner; any other `pat_str` runs as
a custom regex on fancy-regex, the engine tiktoken itself uses.
"""

from __future__ import annotations

from bpeforge._core import PATTERNS

# The pattern of tiktoken's gpt2, r50k_base and p50k_base: GPT-2's, written
# with possessive quantifiers and an end anchor (the same pieces, faster for
# a backtracking engine). bpeforge's "gpt2" preset is GPT-2's original regex.
R50K_PAT_STR = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""

_PRESET_OF = {regex: name for name, regex in PATTERNS} | {R50K_PAT_STR: "gpt2"}


def pattern_for(pat_str: str) -> str:
    """The bpeforge preset with the same pieces as `pat_str`, or `pat_str` itself (a custom regex)."""
    if not isinstance(pat_str, str):
        raise TypeError(f"pat_str must be a regex string, got {type(pat_str).__name__}")
    return _PRESET_OF.get(pat_str, pat_str)
