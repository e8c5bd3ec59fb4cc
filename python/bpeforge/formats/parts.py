"""What the format writers share: the parts a loader returns, and the checks every export makes.

Loaders return `TokenizerParts` rather than a `Tokenizer`, so that `bpeforge.formats` never imports the
tokenizer (the tokenizer's `from_*` and `save_*` methods call down into this package, never the reverse).
Writers take any object with the tokenizer's `vocab`, `merges`, `special_tokens`, `pattern` and
`token_to_id`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple, Union

if TYPE_CHECKING:
    from bpeforge.tokenizer import Tokenizer

PathLike = Union[str, "os.PathLike[str]"]
Merges = list[tuple[bytes, bytes]]


class TokenizerParts(NamedTuple):
    """What a file holds: the arguments of `Tokenizer(vocab, merges, special_tokens, pattern=pattern)`."""

    vocab: dict[int, bytes]
    merges: Merges
    special_tokens: Iterable[str] | None
    pattern: str


def special_ids(tokenizer: Tokenizer) -> dict[str, int]:
    ids = {}
    for token in tokenizer.special_tokens:
        token_id = tokenizer.token_to_id(token)
        assert token_id is not None, "Tokenizer puts every special token in its vocab"
        ids[token] = token_id
    return ids


def ordinary_tokens(tokenizer: Tokenizer) -> set[bytes]:
    """The tokens BPE can produce: the 256 bytes and every merge result."""
    return {bytes([b]) for b in range(256)} | {left + right for left, right in tokenizer.merges}


def check_unique_bytes(vocab: Mapping[int, bytes], reason: str, target: str) -> None:
    """Refuse to export a vocabulary where two ids share bytes, which `target` cannot hold."""
    duplicate = first_duplicate(vocab)
    if duplicate:
        first, second, token = duplicate
        raise ValueError(
            f"ids {first} and {second} are both {token!r} (two merges that spell the same bytes, see "
            f"docs/format.md), but {reason}; this tokenizer cannot be exported {target}"
        )


def first_duplicate(vocab: Mapping[int, bytes]) -> tuple[int, int, bytes] | None:
    """The first two ids (in id order) with the same bytes, and the bytes."""
    first: dict[bytes, int] = {}
    for token_id in sorted(vocab):
        token = vocab[token_id]
        if token in first:
            return first[token], token_id, token
        first[token] = token_id
    return None
