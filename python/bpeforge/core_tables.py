"""The vocabulary and merges of a tokenizer whose core was built straight from its file (a tiktoken rank
file, `bpeforge.formats.rank_file`): made as Python objects from the core when first needed, not while
loading.

o200k's vocabulary dict and 400 K merge sides took longer to make than the core's whole encoder, and an
encode needs neither: `encode` after `get_encoding("o200k_base")` or `Tokenizer.from_tiktoken` makes none.
`vocab`, `merges`, saving, pickling and comparing make them once (`functools.cached_property`, so a
tokenizer built with them, as every other loader does, just holds them); the sizes come from the core.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from bpeforge import _core
from bpeforge.formats import rank_file, tiktoken_ranks
from bpeforge.patterns import normalize_pattern

if TYPE_CHECKING:
    from bpeforge.formats.parts import TokenizerParts

T = TypeVar("T", bound="CoreTables")


class CoreTables:
    """What `bpeforge.Tokenizer` gets from its core when it was loaded without its tables (see the top)."""

    _core: Any
    _special_tokens: list[str]
    _cache_size: int

    @functools.cached_property
    def _vocab(self) -> dict[int, bytes]:
        return dict(_core.encoder_vocab(self._core))

    @functools.cached_property
    def _merges(self) -> list[tuple[bytes, bytes]]:
        return _core.encoder_merges(self._core)

    def _token_count(self) -> int:
        """The number of tokens, special tokens included."""
        return len(self._vocab) if "_vocab" in self.__dict__ else _core.encoder_sizes(self._core)[1]

    def _id_count(self) -> int:
        """One more than the largest id."""
        if "_vocab" in self.__dict__:
            return max(self._vocab, default=-1) + 1
        return _core.encoder_sizes(self._core)[0]

    @classmethod
    def _from_core(cls: type[T], core: Any, special_tokens: list[str], cache_size: int) -> T:
        """The tokenizer of `core` (built with `special_tokens`), its tables left to be made when asked for."""
        tokenizer = cls.__new__(cls)
        tokenizer._core, tokenizer._special_tokens, tokenizer._cache_size = core, special_tokens, cache_size
        return tokenizer

    @classmethod
    def _from_rank_file(
        cls: type[T],
        path: str | os.PathLike[str],
        pattern: str,
        special_tokens: Iterable[str] | Mapping[str, int] | None,
        cache_size: int,
    ) -> T:
        """`Tokenizer.from_tiktoken`: straight to the core (`formats/rank_file.py`), or through Python objects
        for a file or arguments that need a closer look."""
        data = tiktoken_ranks.file_bytes(path)
        built = rank_file.rank_file_encoder(data, normalize_pattern(pattern), special_tokens, cache_size)
        if built is not None:
            return cls._from_core(*built, cache_size)
        parts = tiktoken_ranks.load_tiktoken_bytes(data, path, pattern, special_tokens)
        return cls._from_parts(parts, path, cache_size)

    @classmethod
    def _from_parts(cls: type[T], parts: TokenizerParts, path: str | os.PathLike[str], cache_size: int) -> T:
        raise NotImplementedError  # bpeforge.Tokenizer's
