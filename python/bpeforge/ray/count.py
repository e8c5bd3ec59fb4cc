"""`bpeforge.ray.count`: pre-token counts of a corpus, counted on a Ray cluster.

Each shard is counted by the Rust core in a task (one core each); the tables
are added up in a tree of `merge` tasks, `FANOUT` at a time, as the shards
finish. Only the root table comes back to the driver. The table equals
`bpeforge.count` on the same inputs, so training from it gives the same merges.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import ray

from bpeforge import _core
from bpeforge.inputs import RecordOptions, add_documents, count_inputs, warn_skipped
from bpeforge.patterns import normalize_pattern
from bpeforge.ray import cluster
from bpeforge.ray.dataset import TEXT_COLUMN, block_texts, is_dataset, row_blocks
from bpeforge.ray.jobs import MAX_RETRIES, SHARD_TASK_OPTIONS, wait_all
from bpeforge.ray.shards import DEFAULT_SHARD_BYTES, Shard, plan_files
from bpeforge.train import normalize_paths, normalize_specials

# Tables added per merge task: a tree of depth log_4(shards); each merge holds
# at most FANOUT tables in memory.
FANOUT = 4


def count(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | ray.data.Dataset,
    special_tokens: Iterable[str] | None = None,
    *,
    pattern: str = "gpt2",
    address: str | None = cluster.LOCAL,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    glob: str | None = None,
    text_field: str = "text",
    text_column: str = TEXT_COLUMN,
    skip_bad_records: bool = False,
    progress: bool = False,
) -> _core.Counts:
    """The pre-token counts of `inputs` (files, directories, or a Dataset with a
    `text_column`), counted in Ray tasks on the cluster at `address`."""
    specials = normalize_specials(special_tokens)
    pattern = normalize_pattern(pattern)
    _core.Counts(specials, pattern)  # check the specials and pattern before any task starts
    cluster.connect(address)
    records = RecordOptions(text_field, text_column, skip_bad_records)
    if is_dataset(inputs):
        shards, refs = _count_dataset(inputs, specials, pattern, text_column)
    else:
        shards = plan_files(normalize_paths(inputs), specials, pattern, shard_bytes, glob)
        task = _count_shard.options(**SHARD_TASK_OPTIONS, num_returns=2)
        refs = [task.remote(shard, specials, pattern, records) for shard in shards]
    # Each task returns (skipped records, table): the driver waits on the small
    # first value and never fetches a shard's table, which goes to the tree.
    root = _reduce_tree([table for _, table in refs])
    skipped = wait_all(shards, [done for done, _ in refs], progress=progress)
    warn_skipped([record for shard_skipped in skipped for record in shard_skipped])
    return ray.get(root)


def _count_dataset(dataset, specials: list[str], pattern: str, column: str) -> tuple[list[Shard], list]:
    shards, blocks = row_blocks(dataset, column)
    task = _count_block.options(**SHARD_TASK_OPTIONS, num_returns=2)
    return shards, [task.remote(block, column, specials, pattern) for block in blocks]


@ray.remote(num_cpus=1)
def _count_shard(
    shard: Shard, specials: list[str], pattern: str, records: RecordOptions
) -> tuple[list[str], _core.Counts]:
    if shard.kind == "text":
        return [], _core.Counts.from_files([shard.core_source()], specials, 1, None, None, pattern)
    counts = count_inputs([Path(shard.source)], specials, records, num_threads=1, progress=None, pattern=pattern)
    return records.skipped, counts


@ray.remote(num_cpus=1)
def _count_block(block, column: str, specials: list[str], pattern: str) -> tuple[list[str], _core.Counts]:
    counts = _core.Counts(specials, pattern)
    add_documents(counts, block_texts(block, column), 1)
    return [], counts


@ray.remote(num_cpus=1)
def _merge(*tables: _core.Counts) -> _core.Counts:
    total = tables[0]
    for table in tables[1:]:
        total.merge(table, "a shard's counts")
    return total


def _reduce_tree(refs: list) -> ray.ObjectRef:
    """The root of a tree of merge tasks over `refs`; each runs once its inputs exist."""
    if not refs:
        raise ValueError("no shards to count: the inputs are empty")
    level = list(refs)
    while len(level) > 1:
        merge = _merge.options(max_retries=MAX_RETRIES)
        level = [merge.remote(*level[i : i + FANOUT]) for i in range(0, len(level), FANOUT)]
    return level[0]
