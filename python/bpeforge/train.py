"""Training: argument policy and progress display over the Rust trainer."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Union

from bpeforge import _core
from bpeforge.inputs import RecordOptions, add_documents, count_inputs, expand, kind
from bpeforge.progress import progress_bars

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class TrainStats:
    """Figures from one training run, for summaries and reports."""

    bytes_read: int
    unique_pretokens: int
    pretokenize_seconds: float
    merge_seconds: float
    threads: int
    skipped_records: list[str] = field(default_factory=list)  # with skip_bad_records: "file:line: why"
    # Seconds spent counting text files: "read" (overlaps the rest), "batches", "fold", and with
    # profile=True "pretokenize_cpu"/"count_cpu" (all threads). Empty for other inputs.
    count_profile: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class TrainResult:
    """A trained vocabulary: ids 0-255 are bytes, then one per merge, then specials."""

    vocab: dict[int, bytes]
    merges: list[tuple[bytes, bytes]]
    special_tokens: list[str]
    stats: TrainStats
    pattern: str = "gpt2"


def train_bpe(
    input_path: PathLike | Sequence[PathLike],
    vocab_size: int,
    special_tokens: Iterable[str] = (),
    *,
    num_threads: int | None = None,
    progress: bool = False,
    chunk_size: int | None = None,
    min_frequency: int | None = None,
    max_token_length: int | None = None,
    pattern: str = "gpt2",
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train a byte-level BPE vocabulary with the exact CS336 semantics.

    `input_path` is a file or a list of files read as one corpus (each file
    ends a document). Returns `(vocab, merges)`: ids 0-255 are the single
    bytes, 256 + i is the i-th merge, and the special tokens come last.
    `num_threads` defaults to all cores; `chunk_size` (bytes per read) is a
    tuning knob. Neither changes the result. `min_frequency` (stop when the
    best pair occurs fewer times) and `max_token_length` (bytes) are off by
    default, which is the exact CS336 semantics. `pattern` is the
    pre-tokenizer: "gpt2" (CS336's), "cl100k", "o200k", "llama3", "qwen2" or a regex.
    """
    result = train(
        input_path,
        vocab_size,
        special_tokens,
        num_threads=num_threads,
        progress=progress,
        chunk_size=chunk_size,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        pattern=pattern,
    )
    return result.vocab, result.merges


def train(
    input_path: PathLike | Sequence[PathLike],
    vocab_size: int,
    special_tokens: Iterable[str] = (),
    *,
    num_threads: int | None = None,
    progress: bool = False,
    chunk_size: int | None = None,
    min_frequency: int | None = None,
    max_token_length: int | None = None,
    glob: str | None = None,
    text_field: str = "text",
    text_column: str = "text",
    skip_bad_records: bool = False,
    pattern: str = "gpt2",
    profile: bool = False,
) -> TrainResult:
    """Like `train_bpe`, with the special tokens and run figures kept.

    Inputs may also be directories (searched recursively, `glob` filters
    names), `.gz`/`.xz`/`.zst` text, JSON Lines (`text_field` of each record)
    and Parquet (`text_column` of each row); each record is a document. See
    `bpeforge.inputs`. `profile` times pre-tokenizing and counting apart
    (`stats.count_profile`), which makes counting somewhat slower.
    """
    files = expand(normalize_paths(input_path), glob)
    specials = normalize_specials(special_tokens)
    check_vocab_size(vocab_size, len(specials))
    check_limits(min_frequency, max_token_length)
    if num_threads is not None:
        check_positive("num_threads", num_threads)
    if chunk_size is not None:
        check_positive("chunk_size", chunk_size)
    paths = [os.fspath(p) for p in files]
    records = RecordOptions(text_field, text_column, skip_bad_records)
    with progress_bars(progress) as bars:
        if all(kind(p) == "text" for p in files):
            core = _core.train(
                paths,
                vocab_size,
                specials,
                num_threads,
                chunk_size,
                bars,
                min_frequency or 0,
                max_token_length,
                pattern,
                profile,
            )
        else:
            counts = count_inputs(files, specials, records, num_threads=num_threads, progress=bars, pattern=pattern)
            core = counts.train(vocab_size, min_frequency or 0, max_token_length, bars)
    result = result_from_core(core, specials, pattern)
    return replace(result, stats=replace(result.stats, skipped_records=records.skipped))


def train_from_iterator(
    iterator: Iterable[str],
    vocab_size: int,
    special_tokens: Iterable[str] = (),
    *,
    num_threads: int | None = None,
    progress: bool = False,
    min_frequency: int | None = None,
    max_token_length: int | None = None,
    pattern: str = "gpt2",
) -> TrainResult:
    """Train on documents from any iterator of strings (each string is a document).

    Strings are counted in batches, in parallel, with the GIL released, so the
    iterator can be a generator over a data loader of any size.
    """
    specials = normalize_specials(special_tokens)
    check_vocab_size(vocab_size, len(specials))
    check_limits(min_frequency, max_token_length)
    counts = _core.Counts(specials, pattern)
    add_documents(counts, iterator, num_threads)
    with progress_bars(progress) as bars:
        core = counts.train(vocab_size, min_frequency or 0, max_token_length, bars)
    return result_from_core(core, specials, pattern)


def result_from_core(
    core: tuple[list[bytes], list[tuple[bytes, bytes]], dict], specials: list[str], pattern: str
) -> TrainResult:
    vocab_list, merges, stats = core
    return TrainResult(dict(enumerate(vocab_list)), merges, specials, TrainStats(**stats), pattern)


def normalize_paths(input_path: PathLike | Sequence[PathLike]) -> list[str]:
    if isinstance(input_path, (str, os.PathLike)):
        return [os.fspath(input_path)]
    if isinstance(input_path, bytes):
        raise TypeError("input_path must be a str or os.PathLike path (or a list of them), not bytes")
    paths = [os.fspath(p) for p in input_path]
    if not paths:
        raise ValueError("input_path is an empty list: give at least one file to train on")
    return paths


def normalize_specials(special_tokens: Iterable[str]) -> list[str]:
    if isinstance(special_tokens, str):
        raise TypeError(f"special_tokens must be a list of strings, not the string {special_tokens!r}")
    specials = list(special_tokens)
    for token in specials:
        if not isinstance(token, str):
            raise TypeError(f"special tokens must be str, got {type(token).__name__}: {token!r}")
    return specials


def check_vocab_size(vocab_size: object, num_specials: int) -> None:
    minimum = 256 + num_specials
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    if vocab_size < minimum:
        raise ValueError(
            f"vocab_size {vocab_size} is too small: it must be at least {minimum} "
            f"(256 byte tokens + {num_specials} special tokens)"
        )


def check_limits(min_frequency: object, max_token_length: object) -> None:
    if min_frequency is not None:
        check_positive("min_frequency", min_frequency)
    if max_token_length is not None:
        check_positive("max_token_length", max_token_length)


def check_positive(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
