"""Type stubs for the Rust extension (crates/bpeforge-py)."""

from collections.abc import Callable, Sequence
from os import PathLike
from typing import Any, Optional, Union

DEFAULT_CHUNK_SIZE: int

def train(
    paths: Sequence[Union[str, PathLike[str]]],
    vocab_size: int,
    special_tokens: Sequence[str],
    num_threads: Optional[int] = None,
    chunk_size: Optional[int] = None,
    progress: Optional[Callable[[str, int, int], Any]] = None,
) -> tuple[list[bytes], list[tuple[bytes, bytes]], dict[str, Any]]: ...
def pretokenize(text: str) -> list[str]: ...
