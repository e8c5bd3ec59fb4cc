"""The vocabulary and merges of a tokenizer whose core was built straight from its files (a tiktoken rank
file, `bpeforge.formats.rank_file`; GPT-2's `vocab.json` and `merges.txt`, `formats/gpt2_vocab.rs`): made as
Python objects from the core when first needed, not while loading.

o200k's vocabulary dict and 400 K merge sides took longer to make than the core's whole encoder, and an
encode needs neither: `encode` after `get_encoding("o200k_base")` or `Tokenizer.from_tiktoken` makes none.
`vocab`, `merges`, saving, pickling and comparing make them once (`functools.cached_property`, so a
tokenizer built with them, as every other loader does, just holds them); the sizes come from the core.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

from bpeforge import _core
from bpeforge.formats import gpt2, rank_file, tiktoken_ranks
from bpeforge.formats.parts import TokenizerParts
from bpeforge.patterns import normalize_pattern

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

    def _merge_count(self) -> int:
        return len(self._merges) if "_merges" in self.__dict__ else _core.encoder_sizes(self._core)[2]

    def _packed_reduce(self) -> tuple[Any, tuple[Any, ...]] | None:
        """`__reduce__` as the core's vocabulary packed as bytes (`formats/packed_vocab.rs`): unpickling (a Ray
        worker's load) then builds the encoder with no Python object per token (o200k: 0.36 -> 0.07 s). None
        when the merges hold a pair twice, which the core's table keeps once. Unpickled as a
        `bpeforge.Tokenizer`, as before (a subclass's own `__init__` would not run)."""
        if "_merges" in self.__dict__ and len(self._merges) != _core.encoder_sizes(self._core)[2]:
            return None
        tokenizer_class = next(cls for cls in type(self).__mro__ if CoreTables in cls.__bases__)
        packed = _core.encoder_pack(self._core)
        return _from_packed, (tokenizer_class, packed, list(self._special_tokens), self._core.pattern, self._cache_size)

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
        with _named(path):
            built = rank_file.rank_file_encoder(data, normalize_pattern(pattern), special_tokens, cache_size)
        if built is not None:
            return cls._from_core(*built, cache_size)
        parts = tiktoken_ranks.load_tiktoken_bytes(data, path, pattern, special_tokens)
        return cls._from_parts(parts, path, cache_size)

    @classmethod
    def _from_gpt2_files(
        cls: type[T],
        vocab_path: str | os.PathLike[str],
        merges_path: str | os.PathLike[str],
        special_tokens: Iterable[str] | None,
        pattern: str,
        cache_size: int,
        where: str | os.PathLike[str] | None = None,
    ) -> T:
        """`Tokenizer.from_files` and `load`: GPT-2's two files straight to the core
        (`formats/gpt2_vocab.rs`), or through Python objects for files or arguments that need a closer look.
        `where` names the files in errors."""
        where = where or f"{vocab_path}, {merges_path}"
        names = _special_names(special_tokens)
        if names is not None and type(cache_size) is int and 0 <= cache_size < 2**63:
            with open(vocab_path, "rb") as vocab_file, open(merges_path, "rb") as merges_file:
                vocab, merges = vocab_file.read(), merges_file.read()
            with _named(where):
                core = _core.encoder_from_gpt2_files(vocab, merges, names, normalize_pattern(pattern), cache_size)
            if core is not None:
                return cls._from_core(core, names, cache_size)
        parts = TokenizerParts(*gpt2.load_files(vocab_path, merges_path), special_tokens, pattern)
        return cls._from_parts(parts, where, cache_size)

    @classmethod
    def _from_parts(cls: type[T], parts: TokenizerParts, path: str | os.PathLike[str], cache_size: int) -> T:
        raise NotImplementedError  # bpeforge.Tokenizer's


def _from_packed(cls: type[T], packed: bytes, special_tokens: list[str], pattern: str, cache_size: int) -> T:
    """The tokenizer `CoreTables._packed_reduce` pickled."""
    core = _core.encoder_from_packed(packed, special_tokens, pattern, cache_size)
    if core is None:
        raise ValueError("this pickle holds a tokenizer of another bpeforge version; pickle it again with this one")
    return cls._from_core(core, special_tokens, cache_size)


def _special_names(special_tokens: Iterable[str] | None) -> list[str] | None:
    """The special tokens, repeats dropped, or None when any is not a non-empty str (the constructor says
    what is wrong)."""
    if special_tokens is None:
        return []
    if isinstance(special_tokens, (str, bytes)):
        return None
    names = list(special_tokens)
    return list(dict.fromkeys(names)) if all(type(name) is str and name for name in names) else None


@contextlib.contextmanager
def _named(path: str | os.PathLike[str]) -> Iterator[None]:
    """A ValueError (a bad pattern, say) names the file, as `Tokenizer._from_parts` does."""
    try:
        yield
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
