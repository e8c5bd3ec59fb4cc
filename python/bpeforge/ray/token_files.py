"""A finished Ray encode job's shards written as a training stack's token files (docs/token-files.md).

The shards are read in index order by the driver and handed to the format's writer, a bounded block at a
time: the same documents as `bpeforge encode --format` on one machine (a text file is one document, though
the job cut it into several shards; a Dataset row is one document), so the same files. The shards stay: a
re-run resumes from them and writes the token files again.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from bpeforge.formats import token_files

_BLOCK_IDS = 1 << 22  # ids read from a shard at a time


def write_from_shards(
    out_dir: Path,
    index: dict,
    format: str,
    output: str | os.PathLike[str],
    *,
    dtype: str,
    separator: int | None,
    shard_tokens: int | None,
    overwrite: bool,
    inputs: list[str | os.PathLike[str]],
) -> int:
    """Write `format`'s files at `output` from the shards `index` lists; returns the ids written."""
    writer = token_files.open_writer(
        format, output, dtype, separator, shard_tokens=shard_tokens, overwrite=overwrite, inputs=[*inputs, out_dir]
    )
    with writer:
        text_parts: list[np.ndarray] = []  # the shards of the text file being read: one document
        for entry in index["shards"]:
            ids = np.load(out_dir / entry["tokens"], mmap_mode="r", allow_pickle=False)
            if entry["kind"] == "text":
                if entry["start"] in (None, 0) and text_parts:
                    _add_text_document(writer, text_parts)
                text_parts.append(ids)
                continue
            if text_parts:
                _add_text_document(writer, text_parts)
            starts = np.load(out_dir / entry["documents"], allow_pickle=False).astype(np.int64)
            for batch_ids, offsets in _row_batches(ids, starts):
                writer.add_documents(batch_ids, offsets)
        if text_parts:
            _add_text_document(writer, text_parts)
    return writer.tokens


def _add_text_document(writer: token_files.TokenWriter, parts: list[np.ndarray]) -> None:
    """One document from the ids of several shards, copied into the writer's file a block at a time, as the
    core appends a text file's ids."""

    def append(fd: int, offset: int) -> int:
        written = 0
        for part in parts:
            for start in range(0, len(part), _BLOCK_IDS):
                data = np.ascontiguousarray(part[start : start + _BLOCK_IDS]).astype(f"<u{writer.itemsize}").tobytes()
                written += os.pwrite(fd, data, offset + written)
        return written

    writer.add_document_from_core(append)
    parts.clear()


def _row_batches(ids: np.ndarray, starts: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """A rows shard's documents in batches of about `_BLOCK_IDS` ids (a longer document alone)."""
    bounds = np.append(starts, len(ids))
    first = 0
    while first < len(starts):
        last = max(first + 1, int(np.searchsorted(bounds, bounds[first] + _BLOCK_IDS, side="right")) - 1)
        last = min(last, len(starts))
        yield np.asarray(ids[bounds[first] : bounds[last]]), bounds[first : last + 1] - bounds[first]
        first = last
