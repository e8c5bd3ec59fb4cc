"""Type stubs for the Rust extension (crates/bpeforge-py)."""

from collections.abc import Callable, Sequence
from os import PathLike
from typing import Any

DEFAULT_CHUNK_SIZE: int

def train(
    paths: Sequence[str | PathLike[str]],
    vocab_size: int,
    special_tokens: Sequence[str],
    num_threads: int | None = None,
    chunk_size: int | None = None,
    progress: Callable[[str, int, int], Any] | None = None,
) -> tuple[list[bytes], list[tuple[bytes, bytes]], dict[str, Any]]: ...
def pretokenize(text: str) -> list[str]: ...
