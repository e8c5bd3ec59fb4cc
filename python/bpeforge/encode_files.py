"""`bpeforge encode` / `bpeforge decode`: token files from text files and back.

The Rust core reads the files in safely cut chunks, encodes a batch of them in
parallel while reading the next, and hands back each batch's ids packed as
little-endian uint16/uint32, in input order; here they are appended to the
`.npy` file. The output is the same for any thread count. Each input file is
encoded on its own (a file's end ends a pre-token); their ids are concatenated.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from bpeforge.npy import NpyWriter
from bpeforge.outputs import check_output, open_atomically
from bpeforge.progress import progress_bars
from bpeforge.tokenizer import Tokenizer

DTYPES = {"uint16": 2, "uint32": 4}


@dataclass(frozen=True)
class EncodeStats:
    bytes_in: int
    tokens: int
    seconds: float

    @property
    def bytes_per_token(self) -> float:
        return self.bytes_in / self.tokens if self.tokens else float("nan")


def choose_dtype(tokenizer: Tokenizer, requested: str | None) -> str:
    """uint16 when every id fits (what CS336 asks for), else uint32."""
    fits_uint16 = tokenizer.vocab_size <= 1 << 16
    if requested is None:
        return "uint16" if fits_uint16 else "uint32"
    if requested == "uint16" and not fits_uint16:
        raise ValueError(f"the vocabulary has {tokenizer.vocab_size} tokens; uint16 holds ids up to 65535: use uint32")
    return requested


def encode_files(
    tokenizer: Tokenizer,
    inputs: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    dtype: str,
    threads: int | None = None,
    progress: bool = True,
    overwrite: bool = False,
    tokenizer_path: str | os.PathLike[str] | None = None,
) -> EncodeStats:
    """Encode `inputs` into one `.npy` array of `dtype`, atomically.

    `output` may not be one of the inputs (nor the tokenizer's files, when
    `tokenizer_path` is given): that is refused before anything is opened."""
    started = time.perf_counter()
    paths = [os.fspath(path) for path in inputs]
    guarded = [*paths, *([tokenizer_path] if tokenizer_path is not None else [])]
    with NpyWriter(output, dtype, overwrite=overwrite, inputs=guarded) as writer:
        rate = lambda elapsed: f"{writer.length / max(elapsed, 1e-9):,.0f} tokens/s"  # noqa: E731
        with progress_bars(progress, rate) as bars:
            bytes_in = tokenizer._core.encode_files(paths, DTYPES[dtype], writer.write, threads, None, bars)
        tokens = writer.length
    return EncodeStats(bytes_in, tokens, time.perf_counter() - started)


def decode_file(
    tokenizer: Tokenizer,
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    tokenizer_path: str | os.PathLike[str] | None = None,
) -> int:
    """Write the bytes of the ids in `source` (.npy) to `output`; returns bytes written.

    Bytes, not text: the exact inverse of `encode` even where a token boundary
    splits a character. Ids are read through a memory map, a block at a time.
    The output is written atomically: after a failure (an unknown id, a full
    disk) an existing `output` is unchanged.
    """
    guarded = [source, *([tokenizer_path] if tokenizer_path is not None else [])]
    output = check_output(output, inputs=guarded, overwrite=overwrite)
    ids = load_token_ids(source)
    with open_atomically(output) as out:
        return _decode_ids(tokenizer, ids, out)


def decode_to(tokenizer: Tokenizer, source: str | os.PathLike[str], out: BinaryIO) -> int:
    """Write the bytes of the ids in `source` to an open binary stream (standard output); returns bytes written."""
    return _decode_ids(tokenizer, load_token_ids(source), out)


def _decode_ids(tokenizer: Tokenizer, ids: np.ndarray, out: BinaryIO) -> int:
    """Ids decoded a block at a time (a memory map is never read whole)."""
    written = 0
    for start in range(0, len(ids), 1 << 20):
        data = tokenizer.decode_bytes(ids[start : start + (1 << 20)].tolist())
        out.write(data)
        written += len(data)
    return written


def load_token_ids(source: str | os.PathLike[str]) -> np.ndarray:
    """A `.npy` file of token ids, memory-mapped; every way it can be wrong is a ValueError naming it."""
    try:
        ids = np.load(source, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "no such file", os.fspath(source)) from None
    except IsADirectoryError:
        raise ValueError(f"{os.fspath(source)}: is a directory; give a .npy file of token ids") from None
    except (ValueError, OSError, EOFError) as err:
        detail = getattr(err, "strerror", None) or str(err)
        raise ValueError(f"{os.fspath(source)}: not a readable .npy array of token ids ({detail})") from None
    if not isinstance(ids, np.ndarray) or ids.ndim != 1 or ids.dtype.kind not in "ui":
        shape = f"{ids.dtype} {ids.shape}" if isinstance(ids, np.ndarray) else type(ids).__name__
        raise ValueError(f"{os.fspath(source)}: expected a 1-D integer array of token ids, got {shape}")
    return ids
