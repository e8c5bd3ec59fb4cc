"""Checks of arguments that several entry points share (training, the tokenizer, the tiktoken drop-in), and the
note they give when they bound one."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterable
from typing import TypeVar

from bpeforge import _core

T = TypeVar("T")


class TrainingNote(UserWarning):
    """Something a run did that the caller did not ask for: fewer tokens than `vocab_size` (the corpus ran out
    of pairs), text that a custom pattern did not match, or fewer threads than `num_threads` (a call runs on at
    most the cores this process may use). The CLI prints these in its summary."""


def check_positive(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def max_threads() -> int:
    """The most threads any call runs on: the cores this process may use (CPU affinity and cgroup quota, as
    Rust's `available_parallelism` reads them). The Rust core bounds every thread count by it itself."""
    return _core.max_threads()


def thread_count(num_threads: int | None, name: str = "num_threads", *, note: bool = True) -> int | None:
    """`num_threads` checked (a positive int, or None for all cores) and bounded by `max_threads()`, with a
    `TrainingNote` saying so when it was more (`note=False`: quietly). The core applies the same bound; this
    is where the caller hears of it."""
    if num_threads is None:
        return None
    check_positive(name, num_threads)
    cores = max_threads()
    if num_threads <= cores:
        return num_threads
    if note:
        warnings.warn(capped_threads_note(name, num_threads, cores), TrainingNote, stacklevel=caller_stacklevel())
    return cores


def capped_threads_note(name: str, asked: int, cores: int) -> str:
    return f"{name}={asked:,} is more than the {cores} cores this process may use; running on {cores} threads"


def caller_stacklevel() -> int:
    """The `stacklevel` for a warning raised by the caller of this function that names the first frame outside
    bpeforge: the user's line that made the call, however deep inside bpeforge the warning is raised."""
    frame, level = sys._getframe(2), 2
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("bpeforge"):
        frame, level = frame.f_back, level + 1
    return level


def check_cache_size(cache_size: object) -> None:
    if not isinstance(cache_size, int) or isinstance(cache_size, bool):
        raise TypeError(f"cache_size must be an int number of bytes, got {type(cache_size).__name__}")
    if not 0 <= cache_size < 2**63:
        raise ValueError(f"cache_size must be 0 (off) or a positive number of bytes, got {cache_size}")


def check_texts(texts: Iterable[str], num_threads: int | None, method: str) -> tuple[list[str], int | None]:
    """The texts as a list, and the threads to encode them on (`thread_count`: at most the cores, with a note)."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{method} takes a list of texts, not one string; use encode(text), or [text]")
    threads = thread_count(num_threads)
    # Each text's type is checked by the core as it takes the list (in C);
    # a loop over them here was 0.2 ms of every 2-thread batch of 6,000
    # texts, a part that does not shrink with more threads.
    return (texts if type(texts) is list else list(texts)), threads


def explain_type_errors(texts: list, call: Callable[[], T]) -> T:
    """`call()`; where the core refused a text that is not a `str`, the
    error names the first such text's type and what to do instead."""
    try:
        return call()
    except TypeError:
        for text in texts:
            check_str(text)
        raise


def check_str(text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}; decode bytes to str first")
    return text
