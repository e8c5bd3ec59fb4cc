"""A tiktoken rank file straight to the core's encoder (`_core.encoder_from_rank_file`): no Python object per
token while loading.

Loading o200k through Python objects (its `{token: rank}` dict, the vocabulary dict and its items, 400 K merge
sides) took more than the core's whole build of the encoder. Here the core parses the file, takes the merges
from the shipped splits of a rank file bpeforge ships (recognised by its sha256) or recovers them from the
ranks, places the special tokens and builds the encoder; the tokenizer makes its vocabulary and merges as
Python objects only when asked for them (`bpeforge.core_tables`).

Anything unusual (a line the core's parser defers, a token that is no merge, a special token spelled like a
token or given a token's id, arguments of the wrong type) gives None: the caller then loads the file through
`tiktoken_ranks.load_tiktoken`, which decides and names the problem.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bpeforge import _core
from bpeforge.formats.shipped_merges import shipped_rank_file, shipped_splits

SpecialIds = list[tuple[str, "int | None"]]


def rank_file_encoder(
    data: bytes, pattern: str, special_tokens: Iterable[str] | Mapping[str, int] | None, cache_size: object
) -> tuple[Any, list[str]] | None:
    """The core encoder of the rank file whose bytes are `data` and the names of its special tokens, or None
    (see the top). `pattern` is a preset name or a regex, already normalized; `special_tokens` as
    `Tokenizer.from_tiktoken` takes them (a list: ids after the largest rank, in order)."""
    specials = _special_ids(special_tokens)
    if specials is None or type(cache_size) is not int or not 0 <= cache_size < 2**63:
        return None
    shipped = shipped_rank_file(data)
    splits = shipped_splits(shipped) if shipped else None
    core = _core.encoder_from_rank_file(data, splits, specials, pattern, cache_size)
    return None if core is None else (core, [name for name, _ in specials])


def _special_ids(special_tokens: Iterable[str] | Mapping[str, int] | None) -> SpecialIds | None:
    """`(name, id)` for a dict, `(name, None)` for a list (repeats dropped), or None when a type is unusual."""
    if special_tokens is None:
        return []
    if isinstance(special_tokens, Mapping):
        items = list(special_tokens.items())
        usable = all(type(name) is str and type(i) is int and 0 <= i < 2**32 for name, i in items)
        return items if usable else None
    if isinstance(special_tokens, (str, bytes)):
        return None
    names = list(special_tokens)
    return [(name, None) for name in dict.fromkeys(names)] if all(type(name) is str for name in names) else None
