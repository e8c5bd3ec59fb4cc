"""Checks of arguments that several entry points share (training, the tokenizer, the tiktoken drop-in), and the
note they give when they bound one."""

from __future__ import annotations

import sys
import warnings

from bpeforge import _core


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
