"""bpeforge on a Ray cluster: count and encode corpora larger than one machine.

    import bpeforge, bpeforge.ray
    counts = bpeforge.ray.count(["corpus/"], ["<|endoftext|>"], address="auto")
    result = bpeforge.train_from_counts(counts, 32000)      # on the driver
    bpeforge.ray.encode(["corpus/"], tokenizer, "tokens/", address="auto")

The input is cut into shards (byte ranges of big text files, whole compressed
or record files, or the blocks of a `ray.data.Dataset`); each shard is counted
or encoded by the Rust core inside a Ray task. Count tables are added up in a
tree of tasks, so the driver only ever holds the final table, never text.
Results equal those of one machine; docs/scale-out.md has the details.
Needs `pip install 'bpeforge[ray]'`.
"""

from bpeforge.ray.cluster import ClusterUnreachable, connect
from bpeforge.ray.count import count
from bpeforge.ray.encode import EncodeResult, encode, read_index
from bpeforge.ray.jobs import ShardFailed

__all__ = ["ClusterUnreachable", "EncodeResult", "ShardFailed", "connect", "count", "encode", "read_index"]
