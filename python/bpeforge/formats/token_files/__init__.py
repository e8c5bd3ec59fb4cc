"""Token files that LM training stacks read, one module per stack's format (docs/token-files.md).

`open_writer` gives the writer of a format; `bpeforge.encode_files` feeds it the ids of each document (a text
file, a record) as the core encodes them. `.npy` is `formats/npy.py`'s, outside this package.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from bpeforge.formats.token_files.datatrove import DatatroveWriter
from bpeforge.formats.token_files.dtypes import ITEMSIZE, choose_dtype
from bpeforge.formats.token_files.flat import FlatWriter
from bpeforge.formats.token_files.llmc import LlmcWriter
from bpeforge.formats.token_files.megatron import MegatronWriter
from bpeforge.formats.token_files.writer import TokenWriter

__all__ = ["FORMATS", "ITEMSIZE", "SHARDED", "TokenWriter", "choose_dtype", "needs_separator", "open_writer"]

FORMATS = ("npy", "megatron", "datatrove", "llmc", "nanogpt", "olmo")
SHARDED = ("datatrove", "llmc")  # the formats `shard_tokens` applies to
# The stacks whose own preprocessing always puts a document separator in (EOT / EOS); Megatron's EOD is
# optional (`--append-eod`), and so it is here.
_WITH_SEPARATOR = ("datatrove", "llmc", "nanogpt", "olmo")


def needs_separator(format: str) -> bool:
    return format in _WITH_SEPARATOR


def open_writer(
    format: str,
    output: str | os.PathLike[str],
    dtype: str,
    separator: int | None,
    *,
    shard_tokens: int | None = None,
    overwrite: bool = False,
    inputs: Iterable[str | os.PathLike[str]] = (),
    tokenizer_name: str = "bpeforge",
) -> TokenWriter:
    """The writer of `format` (not npy) to `output`: a file, a path prefix (megatron) or a folder (datatrove,
    llmc); use it in a `with` block, which makes the output appear whole when it ends."""
    if format not in FORMATS or format == "npy":
        raise ValueError(f"format must be one of {', '.join(FORMATS[1:])} here, got {format!r}")
    if shard_tokens is not None and format not in SHARDED:
        raise ValueError(f"--shard-tokens applies to {' and '.join(SHARDED)}; {format} is one file")
    if shard_tokens is not None and shard_tokens < 1:
        raise ValueError(f"--shard-tokens must be at least 1, got {shard_tokens}")
    itemsize = ITEMSIZE[dtype]
    common = {"overwrite": overwrite, "inputs": inputs}
    if format == "megatron":
        return MegatronWriter(output, dtype, itemsize, separator, **common)
    if format == "datatrove":
        return DatatroveWriter(
            output, dtype, itemsize, separator, shard_tokens=shard_tokens, tokenizer_name=tokenizer_name, **common
        )
    if format == "llmc":
        return LlmcWriter(output, dtype, itemsize, separator, shard_tokens=shard_tokens, **common)
    return FlatWriter(output, dtype, itemsize, separator, **common)
