"""`bpeforge count|encode ... --ray [ADDRESS]`: the same commands, run on a Ray cluster.

Imported only when `--ray` is given, so the CLI works without Ray installed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bpeforge import counts
from bpeforge.cli.tokenizer_args import open_from_args
from bpeforge.ray import cluster
from bpeforge.ray.count import count
from bpeforge.ray.encode import encode
from bpeforge.ray.jobs import ShardFailed
from bpeforge.ray.shards import DEFAULT_SHARD_BYTES
from bpeforge.tokenizer import Tokenizer

EXIT_JOB_FAILED = 1


def run_count(args: argparse.Namespace, specials: list[str], input_kwargs: dict) -> int:
    started = time.perf_counter()
    with _job_errors():
        table = count(
            args.inputs,
            specials,
            address=args.ray,
            shard_bytes=_shard_bytes(args),
            progress=not args.no_progress,
            **input_kwargs,
        )
    counts.save_counts(table, args.output, overwrite=args.force)
    print(
        f"wrote {args.output}: {len(table):,} unique pre-tokens from {table.bytes_counted / 2**20:,.1f} MiB "
        f"in {time.perf_counter() - started:.2f} s on Ray ({_where(args.ray)})"
    )
    return 0


def run_encode(args: argparse.Namespace, separator_id: Callable[[Tokenizer, str | None], int | None]) -> int:
    """`separator_id`: the id of --document-separator, as the command finds it without --ray."""
    started = time.perf_counter()
    # Any tokenizer source: the tokenizer itself is shipped to the tasks (ray.put), not its files.
    tokenizer = open_from_args(args.tokenizer, args)
    shards_dir, stack = _shard_and_stack_paths(args)
    separator = separator_id(tokenizer, args.document_separator)
    with _job_errors():
        result = encode(
            args.inputs,
            tokenizer,
            shards_dir,
            dtype=args.dtype,
            address=args.ray,
            shard_bytes=_shard_bytes(args),
            glob=args.glob,
            overwrite=args.force,
            progress=not args.no_progress,
            format=args.format,
            output=stack,
            separator=separator,
            shard_tokens=args.shard_tokens,
        )
    resumed = f", {result.resumed} already done" if result.resumed else ""
    written = f"{result.output} ({args.format}) from " if result.output is not None else ""
    print(
        f"wrote {written}{result.out_dir}/index.json: {result.tokens:,} tokens in {result.shards} shards{resumed}, "
        f"{time.perf_counter() - started:.2f} s on Ray ({_where(args.ray)})"
    )
    if result.changed_inputs:
        print(
            f"note: {len(result.changed_inputs)} input(s) changed since the earlier run (size or modification time), "
            f"their shards encoded again: {', '.join(result.changed_inputs)}"
        )
    return 0


def _shard_and_stack_paths(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """Where the job's .npy shards go, and the stack's files written from them (None for npy: -o is the shards'
    directory). The shards stay beside the stack's files so that a re-run resumes from them."""
    if args.format == "npy":
        return args.output, None
    return args.shards_dir or args.output.with_name(args.output.name + ".shards"), args.output


@contextmanager
def _job_errors() -> Iterator[None]:
    """A failed shard ends the command with its name, not a traceback."""
    try:
        yield
    except ShardFailed as error:
        print(f"bpeforge: error: {error}; finished shards are kept", file=sys.stderr)
        raise SystemExit(EXIT_JOB_FAILED) from None


def _shard_bytes(args: argparse.Namespace) -> int:
    if args.shard_mb is None:
        return DEFAULT_SHARD_BYTES
    if args.shard_mb <= 0:
        raise ValueError(f"--shard-mb must be positive, got {args.shard_mb}")
    return max(1, int(args.shard_mb * 2**20))


def _where(address: str) -> str:
    return "a local cluster" if address == cluster.LOCAL else address
