"""Cutting an input into shards: the units of work of a Ray job.

A shard is a byte range of a big plain-text file (cut where counting and
encoding give the results of the whole file: `_core.plan_shards`), a whole
compressed or record file, or one block of a `ray.data.Dataset`. Shards are
numbered in input order; results are combined in that order.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bpeforge import _core
from bpeforge.inputs import expand, kind

# A shard's share of work: big enough that a task's start-up (tens of ms)
# vanishes, small enough that a 2-core machine gets several per file.
DEFAULT_SHARD_BYTES = 64 << 20


@dataclass(frozen=True)
class Shard:
    index: int
    source: str  # a file path, or "dataset" for a Dataset block
    start: int | None = None  # byte range in a text file, or row range in a Dataset
    end: int | None = None
    kind: str = "text"  # "text", "jsonl", "parquet" or "rows"
    # The source file's size and modification time when the plan was made: a shard done for other ones is stale.
    size: int | None = None
    mtime_ns: int | None = None

    def core_source(self) -> str | tuple[str, int, int]:
        """What `_core` takes: the path, or `(path, start, end)` for a byte range."""
        if self.start is None or self.end is None:
            return self.source
        return (self.source, self.start, self.end)

    def describe(self) -> str:
        unit = "rows" if self.kind == "rows" else "bytes"
        where = "" if self.start is None else f" {unit} {self.start}..{self.end}"
        return f"shard {self.index} ({self.source}{where})"

    def to_json(self) -> dict:
        stamp = {} if self.size is None else {"size": self.size, "mtime_ns": self.mtime_ns}
        return {"source": self.source, "start": self.start, "end": self.end, "kind": self.kind, **stamp}


def plan_files(
    paths: Sequence[str | os.PathLike[str]],
    special_tokens: list[str],
    pattern: str,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    glob: str | None = None,
    *,
    whole_files: bool = False,
) -> list[Shard]:
    """Shards of `paths` (directories searched as `bpeforge train` does), in order; with `whole_files`, a
    text file is one shard (a tokenizer.json pipeline says nowhere where a file may be cut)."""
    if shard_bytes < 1:
        raise ValueError(f"shard_bytes must be at least 1, got {shard_bytes}")
    shards: list[Shard] = []
    for path in expand(paths, glob):
        # Stamped before it is read: a file that changes while it is planned or read is seen as changed next time.
        stat = os.stat(path)
        sources = [(os.fspath(path), None, None, kind(path))] if whole_files else None
        for source in sources or _file_shards(path, special_tokens, pattern, shard_bytes):
            shards.append(Shard(len(shards), *source, size=stat.st_size, mtime_ns=stat.st_mtime_ns))
    return shards


def input_stamps(shards: Sequence[Shard]) -> dict[str, dict[str, int]]:
    """Each input file's size and modification time as the plan saw them, in input order."""
    return {
        shard.source: {"size": shard.size, "mtime_ns": shard.mtime_ns} for shard in shards if shard.size is not None
    }


def _file_shards(path: Path, special_tokens: list[str], pattern: str, shard_bytes: int) -> list[tuple]:
    file_kind = kind(path)
    if file_kind != "text":
        return [(os.fspath(path), None, None, file_kind)]
    ranges = _core.plan_shards(os.fspath(path), shard_bytes, special_tokens, pattern)
    return [(os.fspath(path), *(r or (None, None)), "text") for r in ranges]
