"""Running one Ray task per shard: progress, and failures that name the shard.

Ray retries a task whose worker process died, and one that raised OSError (a
read that failed: a shared filesystem's hiccup may pass), up to `MAX_RETRIES`
times. Other exceptions (invalid UTF-8, a bad record) are not retried: the
same bytes fail the same way. Once a shard has failed for good, the job stops
with that shard named: the other tasks are cancelled, and shards already
written stay as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ray
from tqdm.auto import tqdm

from bpeforge.ray.shards import Shard

# Attempts after the first, when a worker process dies (killed, out of memory,
# node lost) or a read fails.
MAX_RETRIES = 3
SHARD_TASK_OPTIONS = {"max_retries": MAX_RETRIES, "retry_exceptions": [OSError]}


class ShardFailed(RuntimeError):
    """A shard failed after its retries; the message names it and why."""

    def __init__(self, shard: Shard, cause: BaseException) -> None:
        super().__init__(f"{shard.describe()} failed: {_reason(cause)}")
        self.shard = shard


def wait_all(shards: Sequence[Shard], refs: Sequence[ray.ObjectRef], *, progress: bool) -> list[Any]:
    """Wait for every shard's task, in any order, and return their (small) results in shard order;
    raise `ShardFailed` on the first failure."""
    shard_of = dict(zip(refs, shards))
    results: dict[int, Any] = {}
    waiting = list(refs)
    with tqdm(total=len(refs), unit="shard", disable=not progress, desc="shards") as bar:
        while waiting:
            # All that finish within a second at once: one wait per second, not
            # one per shard, however many shards there are.
            done, waiting = ray.wait(waiting, num_returns=len(waiting), timeout=1.0, fetch_local=False)
            for ref in done:
                shard = shard_of[ref]
                try:
                    results[shard.index] = ray.get(ref)
                except Exception as err:
                    for other in waiting:
                        ray.cancel(other, force=True)
                    raise ShardFailed(shard, err) from err
                bar.update(1)
    return [results[shard.index] for shard in shards]


def _reason(err: BaseException) -> str:
    """The root cause, not Ray's wrapper with its remote traceback."""
    if isinstance(err, ray.exceptions.RayTaskError):
        inner = getattr(err, "cause", None)
        if isinstance(inner, OSError):
            return f"{MAX_RETRIES + 1} attempts failed; the last: {type(inner).__name__}: {inner}"
        if inner is not None:
            return f"{type(inner).__name__}: {inner}"
        return str(err).splitlines()[-1]
    if isinstance(err, (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError)):
        return f"its worker process died {MAX_RETRIES + 1} times ({type(err).__name__})"
    return f"{type(err).__name__}: {err}"
