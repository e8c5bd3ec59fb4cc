"""A `ray.data.Dataset` as shards: one per block, in the dataset's order.

Each row's `text_column` is one document, as a JSON Lines record is. The
blocks are materialized in Ray's object store (spilled to disk when large),
never on the driver; `to_arrow_refs` hands back references to them in order.
"""

from __future__ import annotations

import ray

from bpeforge.ray.shards import Shard

TEXT_COLUMN = "text"


def is_dataset(inputs: object) -> bool:
    return isinstance(inputs, ray.data.Dataset)


def row_blocks(dataset: ray.data.Dataset, column: str) -> tuple[list[Shard], list[ray.ObjectRef]]:
    """One shard per block (row ranges in dataset order) and the block references."""
    if column not in dataset.schema().names:
        names = ", ".join(dataset.schema().names)
        raise ValueError(f"the dataset has no column {column!r} (columns: {names}); choose it with text_column")
    selected = dataset.select_columns([column])
    # Ray Data may reorder blocks for speed; shards must follow the dataset's order.
    selected.context.execution_options.preserve_order = True
    blocks = selected.to_arrow_refs()
    sizes = ray.get([_num_rows.remote(block) for block in blocks])
    shards, row = [], 0
    for index, size in enumerate(sizes):
        shards.append(Shard(index, "dataset", row, row + size, "rows"))
        row += size
    return shards, blocks


def block_texts(block, column: str) -> list[str]:
    """A block's documents: its `column`, null rows left out (as Parquet files' are)."""
    return [text for text in block.column(column).to_pylist() if text is not None]


@ray.remote(num_cpus=0)
def _num_rows(block) -> int:
    return block.num_rows
