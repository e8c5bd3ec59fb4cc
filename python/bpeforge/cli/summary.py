"""The closing summary printed after training."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

from bpeforge.inspection.token_text import show_token
from bpeforge.train import TrainResult, training_notes


def peak_memory_mib() -> float:
    """Peak resident memory of this process (ru_maxrss: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def longest_tokens(result: TrainResult, count: int = 5) -> list[bytes]:
    specials = {token.encode("utf-8") for token in result.special_tokens}
    learned = [token for token_id, token in result.vocab.items() if token_id >= 256 and token not in specials]
    return sorted(learned, key=lambda token: (-len(token), token))[:count]


def print_train_summary(
    result: TrainResult,
    output: Path,
    *,
    requested_vocab_size: int,
    write_seconds: float,
    total_seconds: float,
    files: int | None,
) -> None:
    """`files`: how many files were read, or None for a run from a count file (`--from-counts`)."""
    stats = result.stats
    mib = stats.bytes_read / (1024 * 1024)
    learned = len(result.merges) if stats.merges_added is None else stats.merges_added
    merges_per_second = learned / stats.merge_seconds if stats.merge_seconds > 0 else float("inf")
    lines = [
        f"wrote {output}/ (vocab.json, merges.txt, bpeforge.json)",
        f"  corpus          {mib:,.1f} MiB {_where_counted(files)}, {stats.unique_pretokens:,} unique pre-tokens",
        f"  vocabulary      {len(result.vocab):,} tokens ({len(result.merges):,} merges, "
        f"{len(result.special_tokens)} special)",
        *_extension_lines(result),
        _pretokenize_line(result, mib),
        f"  merges          {stats.merge_seconds:.2f} s ({merges_per_second:,.0f} merges/s)",
        f"  write           {write_seconds:.2f} s",
        f"  total           {total_seconds:.2f} s, peak memory {peak_memory_mib():,.0f} MiB",
        "  longest tokens  " + ", ".join(show_token(t) for t in longest_tokens(result)),
    ]
    if stats.skipped_records:
        lines.append(f"  skipped         {len(stats.skipped_records):,} bad records, first: {stats.skipped_records[0]}")
    lines.extend(f"  note: {note}" for note in training_notes(result, requested_vocab_size))
    print("\n".join(lines))


def _where_counted(files: int | None) -> str:
    return "counted before (read from the count file)" if files is None else f"in {files:,} file(s)"


def _pretokenize_line(result: TrainResult, mib: float) -> str:
    """The time and rate of counting; a run from a count file counted nothing (no time, no threads)."""
    stats = result.stats
    if stats.threads == 0:
        return "  pre-tokenize    none (the count file holds the counts)"
    rate = f"{mib / stats.pretokenize_seconds:,.0f} MiB/s" if stats.pretokenize_seconds > 0 else "instant"
    return f"  pre-tokenize    {stats.pretokenize_seconds:.2f} s ({rate} on {stats.threads} threads)"


def _extension_lines(result: TrainResult) -> list[str]:
    """With extend=: the merges added and the compression of the training text before and after."""
    stats = result.stats
    if stats.merges_added is None:
        return []
    base_merges = len(result.merges) - stats.merges_added
    lines = [f"  extended        {base_merges:,} base merges kept, {stats.merges_added:,} added"]
    if stats.tokens_before and stats.tokens_after:
        before, after = stats.bytes_read / stats.tokens_before, stats.bytes_read / stats.tokens_after
        fewer = 1 - stats.tokens_after / stats.tokens_before
        lines.append(
            f"  compression     {before:.2f} -> {after:.2f} bytes/token on the training text ({fewer:.1%} fewer tokens)"
        )
    return lines
