"""Pre-token counts that outlive one training run.

`count()` reads a corpus once; the table can be saved (`bpeforge count -o
counts.bin`, format in docs/format.md), added to others counted elsewhere
(`merge_counts`, the reduce step of distributed counting) and trained from at
any vocabulary size (`train_from_counts`) without reading the corpus again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from bpeforge import _core
from bpeforge import extend as _extend
from bpeforge.formats.atomic import check_output, replaced_atomically
from bpeforge.inputs import RecordOptions, count_inputs, expand, warn_skipped
from bpeforge.open_tokenizer import TokenizerSource
from bpeforge.patterns import normalize_pattern
from bpeforge.progress import progress_bars
from bpeforge.train import (
    PathLike,
    TrainResult,
    check_limits,
    check_vocab_size,
    normalize_paths,
    normalize_specials,
    result_from_core,
    train_counts,
)

Counts = _core.Counts


def count(
    input_path: PathLike | Sequence[PathLike],
    special_tokens: Iterable[str] | None = None,
    *,
    num_threads: int | None = None,
    progress: bool = False,
    glob: str | None = None,
    text_field: str = "text",
    text_column: str = "text",
    skip_bad_records: bool = False,
    pattern: str = "gpt2",
) -> Counts:
    """The pre-token counts of a corpus: the inputs `bpeforge.train` takes (each file ends a document)."""
    files = expand(normalize_paths(input_path), glob)
    specials = normalize_specials(special_tokens)
    pattern = normalize_pattern(pattern)
    records = RecordOptions(text_field, text_column, skip_bad_records)
    with progress_bars(progress) as bars:
        counts = count_inputs(files, specials, records, num_threads=num_threads, progress=bars, pattern=pattern)
    warn_skipped(records.skipped)
    return counts


def save_counts(counts: Counts, path: PathLike, *, overwrite: bool = False, inputs: Iterable[PathLike] = ()) -> Path:
    """Write `counts` to `path` atomically (a temporary file renamed into place).

    `inputs`: paths the output must not be (the corpus it was counted from)."""
    path = check_output(path, inputs=inputs, overwrite=overwrite)
    with replaced_atomically(path) as staging:
        counts.save(staging)
    return path


def load_counts(path: PathLike) -> Counts:
    """Read a count file; a file of another format version is refused, naming its version."""
    return Counts.load(os.fspath(path))


def merge_counts(paths: Sequence[PathLike], output: PathLike | None = None, *, overwrite: bool = False) -> Counts:
    """Add count files made with the same special tokens; optionally save the sum."""
    if not paths:
        raise ValueError("merge_counts needs at least one count file")
    total = load_counts(paths[0])
    for path in paths[1:]:
        total.merge(load_counts(path), os.fspath(path))
    if output is not None:
        save_counts(total, output, overwrite=overwrite, inputs=paths)
    return total


def train_from_counts(
    counts: Counts | PathLike,
    vocab_size: int,
    *,
    min_frequency: int | None = None,
    max_token_length: int | None = None,
    progress: bool = False,
    extend: TokenizerSource | None = None,
    num_threads: int | None = None,
) -> TrainResult:
    """Learn merges from a count table (or count file), with the special tokens it was counted with.

    `extend` continues training a base tokenizer, as in `bpeforge.train`: the
    counts must have been made with a pattern that keeps the base's tokens
    whole and with the base's special tokens (`bpeforge.count(...,
    special_tokens=base.special_tokens, pattern=base.pattern)`)."""
    if not isinstance(counts, (Counts, str, os.PathLike)):
        raise TypeError(f"counts must be a Counts table or a count file's path, got {type(counts).__name__}")
    table = counts if isinstance(counts, Counts) else load_counts(counts)
    specials = table.special_tokens
    base = None
    if extend is not None:
        base = _extend.open_base(extend, table.pattern)
        _extend.extension_pattern(base, table.pattern)
        missing = [token for token in base.special_tokens if token not in specials]
        if missing:
            raise ValueError(
                f"the counts were made without the base's special tokens {missing}; count again with "
                f"special_tokens={base.special_tokens + [t for t in specials if t not in base.special_tokens]}"
            )
    check_vocab_size(vocab_size, len(specials))
    check_limits(min_frequency, max_token_length)
    with progress_bars(progress) as bars:
        core = train_counts(table, vocab_size, min_frequency, max_token_length, bars, base, num_threads)
    return result_from_core(core, specials, table.pattern, vocab_size, base)
