"""Continuing training from an existing tokenizer: `train(..., extend=BASE)`.

The semantics are the core's (`crates/bpeforge/src/train/extend.rs`; see
docs/design.md, "Continuing training"): the base keeps every id, merge and
special token; each pre-token of the corpus starts as the base encodes it; the
merge loop goes on with the CS336 tie-break; new merges take the ids after the
base's largest, then come new special tokens. This module is the policy around
it: which tokenizer the base is, and which pattern and special tokens the
corpus is counted with (`bpeforge.train` builds the result).
"""

from __future__ import annotations

from bpeforge import _core
from bpeforge.open_tokenizer import TokenizerSource, is_tiktoken_file, open_tokenizer
from bpeforge.patterns import normalize_pattern
from bpeforge.tokenizer import Tokenizer


def open_base(base: TokenizerSource, pattern: str | None) -> Tokenizer:
    """The base tokenizer; `pattern` is the pre-tokenizer of a `.tiktoken` base
    (which does not record one) and an override for any other."""
    if is_tiktoken_file(base):
        return open_tokenizer(base, pattern=pattern)
    return open_tokenizer(base)


def extension_pattern(base: Tokenizer, pattern: str | None) -> str:
    """The base's pattern, or `pattern` if it cuts none of the base's tokens.

    A pattern that cuts a token (GPT-2's `" 2000"` is one piece with `gpt2` and
    two with `o200k`, which splits digits in threes) would make that token
    unreachable and every text holding it encode differently: refused."""
    if pattern is None:
        return base.pattern
    pattern = normalize_pattern(pattern)
    if pattern == base.pattern:
        return pattern
    specials = set(base.special_tokens)
    for token_id, token in sorted(base.vocab.items()):
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            continue  # part of a character: no pattern cuts inside one
        if text in specials:
            continue
        pieces = _core.pretokenize(text, pattern)
        if pieces != [text]:
            raise ValueError(
                f"pattern {pattern!r} cuts the base's token {text!r} (id {token_id}) into {pieces}, so the extended "
                f"tokenizer could never produce it; keep the base's pattern {base.pattern!r} (leave pattern unset)"
            )
    return pattern


def extension_specials(base: Tokenizer, special_tokens: list[str]) -> list[str]:
    """The base's special tokens (they keep their ids), then the new ones."""
    return base.special_tokens + [token for token in special_tokens if token not in base.special_tokens]
