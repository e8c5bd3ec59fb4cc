"""`bpeforge encode` / `bpeforge decode`: token files from text files and back.

The Rust core reads text files (compressed too) in safely cut chunks, hands
each to the first free worker while it reads on, and hands back the chunks'
ids packed as little-endian uint16/uint32, in input order; here they are
appended to the `.npy` file. JSON Lines records are read and encoded by the
core a block at a time (`jsonl_records.py`), Parquet records in batches in
parallel (`encode_batch_to_numpy`); their ids are appended to the same
array, in input order. The output is the same for any thread count. Each
input file and each record is encoded on its own (a file's end ends a
pre-token); their ids are concatenated, with an optional separator token
after each.
"""

from __future__ import annotations

import errno
import itertools
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from bpeforge.arguments import thread_count
from bpeforge.formats import npy, token_files
from bpeforge.formats.atomic import check_output, open_atomically
from bpeforge.formats.npy import NpyWriter
from bpeforge.formats.whole_text import whole_text
from bpeforge.inputs import (
    BATCH_CHARS,
    COMPRESSIONS,
    RecordOptions,
    expand,
    jsonl_texts,
    kind,
    parquet_texts,
    prefetched_batches,
    warn_skipped,
)
from bpeforge.jsonl_records import core_reads_jsonl, jsonl_batches
from bpeforge.progress import ProgressBars, progress_bars
from bpeforge.tokenizer import Tokenizer

if TYPE_CHECKING:
    import numpy as np

# The id types a token file may have, and their sizes. NumPy is imported only where an array is made: the
# text path of `bpeforge encode` writes bytes the core packed.
DTYPES = {name: npy.DTYPES[name][1] for name in ("uint16", "uint32")}


@dataclass(frozen=True)
class EncodeStats:
    bytes_in: int  # of text: a record's text, not its JSON or Parquet bytes
    tokens: int
    seconds: float
    files: int = 0
    skipped_records: int = 0

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
    glob: str | None = None,
    records: RecordOptions | None = None,
    separator: int | None = None,
    files: Sequence[Path] | None = None,
    format: str = "npy",
    shard_tokens: int | None = None,
) -> EncodeStats:
    """Encode `inputs` into one `.npy` array of `dtype`, atomically, or into the token files of another
    `format` (`token_files.FORMATS`, docs/token-files.md; `dtype` from `token_files.choose_dtype`).

    `inputs` are what training takes: text files (plain, .gz, .xz, .zst),
    directories (searched recursively, `glob` filtering names), JSON Lines and
    Parquet files, whose records (`records` says where their text is) are
    documents. The ids are those of each text file and each record encoded
    on its own, in input order, with `separator` (a token id) after each one
    when given. `output` may not be one of the inputs (nor the tokenizer's
    files, when `tokenizer_path` is given): that is refused before anything
    is read. `files` are `inputs` as `list_inputs(inputs, glob)` listed them,
    when the caller did so already."""
    started = time.perf_counter()
    threads = thread_count(threads, "threads")
    records = records if records is not None else RecordOptions()
    guarded = [*inputs, *([tokenizer_path] if tokenizer_path is not None else [])]
    if format != "npy":
        separator = stack_separator(tokenizer, format, separator)
        token_writer = token_files.open_writer(
            format, output, dtype, separator, shard_tokens=shard_tokens, overwrite=overwrite, inputs=guarded
        )
        files = list(files) if files is not None else expand(inputs, glob)
        rate = lambda elapsed: f"{token_writer.tokens / max(elapsed, 1e-9):,.0f} tokens/s"  # noqa: E731
        with token_writer, progress_bars(progress, rate) as bars:
            counter = _ByteCounter(bars, _plain_size(files))
            encode_documents(tokenizer, files, token_writer, os.fspath(output), threads, counter, records)
        warn_skipped(records.skipped)
        elapsed = time.perf_counter() - started
        return EncodeStats(counter.done, token_writer.tokens, elapsed, len(files), len(records.skipped))
    writer = NpyWriter(output, dtype, overwrite=overwrite, inputs=guarded)
    files = list(files) if files is not None else expand(inputs, glob)
    pipeline = tokenizer.runs_pipeline
    segments = list(_segments(files, one_per_text_file=separator is not None or pipeline))
    with writer:
        rate = lambda elapsed: f"{writer.length / max(elapsed, 1e-9):,.0f} tokens/s"  # noqa: E731
        with progress_bars(progress, rate) as bars:
            counter = _ByteCounter(bars, _plain_size(files))
            for source_kind, paths in segments:
                if source_kind == "text" and not pipeline:
                    sources = [os.fspath(path) for path in paths]

                    def append(fd: int, offset: int, sources: list[str] = sources) -> int:
                        read, appended = tokenizer._core.encode_files_to_fd(
                            sources, DTYPES[dtype], fd, offset, os.fspath(writer.path), threads, None, counter.core
                        )
                        counter.done += read
                        return appended

                    writer.append_from_core(append)
                    if separator is not None:
                        writer.write(separator.to_bytes(writer.itemsize, "little"))
                else:
                    batches = _record_batches(tokenizer, paths[0], source_kind, records, threads)
                    _encode_records(batches, writer, counter, separator)
        tokens = writer.length
    warn_skipped(records.skipped)
    return EncodeStats(counter.done, tokens, time.perf_counter() - started, len(files), len(records.skipped))


def stack_separator(tokenizer: Tokenizer, format: str, separator: int | None) -> int | None:
    """The separator given, else `<|endoftext|>` where the stack's own preprocessing always puts one in."""
    if separator is not None or not token_files.needs_separator(format):
        return separator
    if "<|endoftext|>" in tokenizer.special_tokens:
        return tokenizer.token_to_id("<|endoftext|>")
    raise ValueError(
        f"--format {format} puts a document separator (EOT/EOS) in as its stack does, and the tokenizer has no "
        "<|endoftext|>: name one of its special tokens with --document-separator (in Python: separator=ID)"
    )


def list_inputs(inputs: Sequence[str | os.PathLike[str]], glob: str | None = None) -> list[Path] | None:
    """`expand(inputs, glob)` for a caller that wants the files before `encode_files` (and hands them to it, so
    that a directory is walked once), or None where listing fails: `encode_files` then lists them again and
    raises the error in its turn."""
    try:
        return expand(inputs, glob)
    except (OSError, ValueError):
        return None


RECORDS_CACHE_SIZE = 4 << 20


def cache_size_for(files: Sequence[Path] | None) -> int:
    """The encode cache a tokenizer needs for `encode_files` of `files` (as `list_inputs` gives them): none when
    every one is a text file.

    Text files are encoded by workers that keep tables of their own for the run (`encode/files.rs`); the shared
    cache and the seeded table a tokenizer keeps for later calls serve only the records' batches. Building them was
    25-40 ms of `bpeforge encode`'s start, on one core (loading GPT-2's files: 80-97 against 57-59 ms). Records
    get `RECORDS_CACHE_SIZE`: the workers' own tables answer nearly every piece, and the default 64 MiB budget
    only raised the peak memory (500 MB of Gutenberg as JSON Lines: 236 -> 163 MiB with 4 MiB, no slower).
    Inputs that could not be listed (None) get it too.
    """
    try:
        return 0 if files and all(kind(path) == "text" for path in files) else RECORDS_CACHE_SIZE
    except ValueError:  # a compressed Parquet file: `encode_files` names it
        return RECORDS_CACHE_SIZE


def encode_documents(
    tokenizer: Tokenizer,
    files: Sequence[Path],
    writer: token_files.TokenWriter,
    output: str,
    threads: int,
    counter: _ByteCounter,
    records: RecordOptions,
) -> None:
    """Every document (a text file, a record) handed to `writer` with its ids, in input order: the core
    appends a text file's ids into the writer's file (`output` names it in errors); records come a batch at
    a time."""
    for source_kind, paths in _segments(files, one_per_text_file=True):
        if source_kind == "text" and not tokenizer.runs_pipeline:
            source = [os.fspath(paths[0])]

            def append(fd: int, offset: int, source: list[str] = source) -> int:
                read, appended = tokenizer._core.encode_files_to_fd(
                    source, writer.itemsize, fd, offset, output, threads, None, counter.core
                )
                counter.done += read
                return appended

            writer.add_document_from_core(append)
        else:
            for ids, offsets, text_bytes in _record_batches(tokenizer, paths[0], source_kind, records, threads):
                if len(offsets) > 1:
                    writer.add_documents(ids, offsets)
                counter.add(text_bytes)


def _segments(files: Sequence[Path], *, one_per_text_file: bool) -> Iterator[tuple[str, list[Path]]]:
    """Runs of text files (one core call each, in parallel across files) and record files one by one."""
    for source_kind, group in itertools.groupby(files, key=kind):
        paths = list(group)
        if source_kind == "text" and not one_per_text_file:
            yield source_kind, paths
        else:
            yield from ((source_kind, [path]) for path in paths)


def _record_batches(
    tokenizer: Tokenizer, path: Path, source_kind: str, records: RecordOptions, threads: int | None
) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """`(ids, offsets, text_bytes)` of the documents of a record file (or of a text file whole, for a pipeline), a
    batch at a time, in order: JSON Lines read and encoded by the core (`jsonl_records.py`), anything else read
    here a batch ahead and encoded in parallel."""
    if source_kind == "jsonl" and core_reads_jsonl(tokenizer, records):
        yield from jsonl_batches(tokenizer, path, records, threads)
        return
    for batch in prefetched_batches(_documents(path, source_kind, records), BATCH_CHARS):
        ids, offsets = tokenizer.encode_batch_to_numpy(batch, threads)
        yield ids, offsets, sum(len(document.encode("utf-8")) for document in batch)


def _documents(path: Path, source_kind: str, records: RecordOptions) -> Iterator[str]:
    if source_kind == "text":
        return iter([whole_text(path)])
    return jsonl_texts(path, records) if source_kind == "jsonl" else parquet_texts(path, records.text_column)


def _encode_records(
    batches: Iterator[tuple[np.ndarray, np.ndarray, int]],
    writer: NpyWriter,
    counter: _ByteCounter,
    separator: int | None,
) -> None:
    """Each document's ids (`_record_batches`) appended in order, with `separator` after each."""
    import numpy as np

    for ids, offsets, text_bytes in batches:
        if separator is not None:
            ids = np.insert(ids, offsets[1:], separator)
        writer.write(ids.astype(writer.dtype, copy=False).tobytes())
        counter.add(text_bytes)


class _ByteCounter:
    """Text bytes encoded over all the core's calls and record batches, reported to one progress bar."""

    def __init__(self, bars: ProgressBars | None, total: int) -> None:
        self.bars, self.total, self.done = bars, total, 0

    def core(self, phase: str, done: int, total: int) -> None:
        self._report(self.done + done)

    def add(self, count: int) -> None:
        self.done += count
        self._report(self.done)

    def _report(self, done: int) -> None:
        if self.bars is not None:
            self.bars("encode", done, max(self.total, done) if self.total else 0)


def _plain_size(files: Sequence[Path]) -> int:
    """The bytes to encode when every file is an uncompressed regular text file; else 0 (unknown)."""
    plain = all(kind(path) == "text" and not path.name.lower().endswith(COMPRESSIONS) for path in files)
    if not plain or not all(path.is_file() for path in files):  # records, compressed, standard input, missing
        return 0
    return sum(path.stat().st_size for path in files)


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
    import numpy as np

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
