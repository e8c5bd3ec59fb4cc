"""One way to name a tokenizer wherever bpeforge takes one: a `Tokenizer` (or a
`bpeforge.tiktoken.Encoding`), a `TrainResult` (what `bpeforge.train` returns), the name of an encoding bpeforge ships
(`gpt2`, `r50k_base`, `cl100k_base`, `o200k_base`: its ranks, pattern and
special tokens, offline), a directory (written by `bpeforge train`/`save`,
GPT-2's `vocab.json` + `merges.txt`, or one holding an HF `tokenizer.json`), a
`tokenizer.json` file, or a tiktoken `.tiktoken` ranks file, which records
neither its pattern nor its special tokens: give them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Union

from bpeforge.formats.gpt2 import MERGES_FILE, VOCAB_FILE
from bpeforge.formats.hf import HF_FILE
from bpeforge.tiktoken import Encoding, get_encoding, list_encoding_names
from bpeforge.tokenizer import DEFAULT_CACHE_SIZE, Tokenizer

if TYPE_CHECKING:
    from bpeforge.train import TrainResult

TokenizerSource = Union[Tokenizer, Encoding, "TrainResult", str, "os.PathLike[str]"]
# Rank files as they are often kept; the reader decompresses them as it does corpora.
_COMPRESSED_RANKS = (".tiktoken.gz", ".tiktoken.xz", ".tiktoken.zst")
# What a `TrainResult` holds (`bpeforge.train` imports this module, so it is known by its fields here).
_TRAINED_FIELDS = ("vocab", "merges", "special_tokens", "pattern", "stats")


def open_tokenizer(
    source: TokenizerSource,
    *,
    pattern: str | None = None,
    special_tokens: Iterable[str] | None = None,
    cache_size: int = DEFAULT_CACHE_SIZE,
) -> Tokenizer:
    """The tokenizer `source` names. `pattern` and `special_tokens` are needed
    for a `.tiktoken` file (which stores neither) and refused for the others,
    which carry their own, rather than silently changing how they encode.
    `cache_size` is that of a tokenizer built from files here (see `Tokenizer`);
    a `Tokenizer` given or a bundled encoding keeps its own."""
    if isinstance(source, Encoding):
        source = source._tokenizer
    if isinstance(source, Tokenizer):
        _refuse_overrides(source, pattern, special_tokens, "a Tokenizer")
        return source
    if all(hasattr(source, field) for field in _TRAINED_FIELDS):
        _refuse_overrides(None, pattern, special_tokens, "a TrainResult")
        return Tokenizer(
            source.vocab, source.merges, source.special_tokens, pattern=source.pattern, cache_size=cache_size
        )
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(
            "a tokenizer is a Tokenizer, a TrainResult, an encoding's name or a path (a directory, a "
            f"tokenizer.json or a .tiktoken file), got {type(source).__name__}"
        )
    if isinstance(source, str) and source in list_encoding_names() and not Path(source).exists():
        _refuse_overrides(None, pattern, special_tokens, f"the encoding {source!r}")
        return get_encoding(source)._tokenizer
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(
            f"{path} does not exist: give a tokenizer directory, a {HF_FILE}, a .tiktoken file or the name of an "
            f"encoding ({', '.join(list_encoding_names())})"
        )
    kind = tokenizer_kind(path)
    if kind == "tiktoken":
        if pattern is None:
            raise ValueError(
                f"{path}: a .tiktoken file does not record its pre-tokenizer; give its pattern "
                "(e.g. pattern='o200k' for o200k_base, 'cl100k' for cl100k_base)"
            )
        return Tokenizer.from_tiktoken(path, pattern, list(special_tokens or []), cache_size=cache_size)
    if kind is None:
        raise ValueError(
            f"cannot tell what tokenizer {path} is: give a directory written by `bpeforge train` (or with "
            f"{VOCAB_FILE} and {MERGES_FILE}), a {HF_FILE} (or a directory holding one), or a .tiktoken file"
        )
    what = f"{path} ({kind})"
    _refuse_overrides(None, pattern, special_tokens, what)
    if kind == "hf":
        return Tokenizer.from_hf(path / HF_FILE if path.is_dir() else path, cache_size=cache_size)
    return Tokenizer.load(path, cache_size=cache_size)


def is_tiktoken_file(source: object) -> bool:
    """Whether `source` names a `.tiktoken` file: the one kind that needs its pattern given."""
    return isinstance(source, (str, os.PathLike)) and tokenizer_kind(Path(source)) == "tiktoken"


def tokenizer_kind(path: Path) -> str | None:
    """ "gpt2" (a bpeforge or GPT-2 directory), "hf" or "tiktoken"; None if the name and contents do not tell."""
    if path.is_dir():
        if (path / VOCAB_FILE).is_file() and (path / MERGES_FILE).is_file():
            return "gpt2"
        return "hf" if (path / HF_FILE).is_file() else None
    if path.name.lower().endswith(_COMPRESSED_RANKS):
        return "tiktoken"
    return {".json": "hf", ".tiktoken": "tiktoken"}.get(path.suffix.lower())


def _refuse_overrides(
    tokenizer: Tokenizer | None, pattern: str | None, special_tokens: Iterable[str] | None, what: str
) -> None:
    if pattern is not None and (tokenizer is None or pattern != tokenizer.pattern):
        raise ValueError(f"{what} has its own pre-tokenizer; a pattern is only for .tiktoken files")
    if special_tokens:
        raise ValueError(f"{what} has its own special tokens; special tokens are only for .tiktoken files")
