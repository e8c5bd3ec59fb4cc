"""Type stubs for the Rust extension (crates/bpeforge-py)."""

from collections.abc import Callable, Sequence
from os import PathLike
from typing import Any

DEFAULT_CHUNK_SIZE: int
PATTERNS: list[tuple[str, str]]

def train(
    paths: Sequence[str | PathLike[str]],
    vocab_size: int,
    special_tokens: Sequence[str],
    num_threads: int | None = None,
    chunk_size: int | None = None,
    progress: Callable[[str, int, int], Any] | None = None,
    min_frequency: int = 0,
    max_token_length: int | None = None,
    pattern: str = "gpt2",
    profile: bool = False,
) -> tuple[list[bytes], list[tuple[bytes, bytes]], dict[str, Any]]: ...
def extend(
    paths: Sequence[str | PathLike[str]],
    base: Encoder,
    vocab_size: int,
    special_tokens: Sequence[str],
    num_threads: int | None = None,
    chunk_size: int | None = None,
    progress: Callable[[str, int, int], Any] | None = None,
    min_frequency: int = 0,
    max_token_length: int | None = None,
    pattern: str = "gpt2",
) -> tuple[list[tuple[int, bytes]], list[tuple[bytes, bytes]], dict[str, Any]]: ...
def pretokenize(text: str, pattern: str = "gpt2") -> list[str]: ...
def plan_shards(
    path: str | PathLike[str], target: int, special_tokens: Sequence[str], pattern: str = "gpt2"
) -> list[tuple[int, int] | None]: ...

# A whole file, or `(path, start, end)`: a byte range planned by `plan_shards`.
Source = str | PathLike[str] | tuple[str | PathLike[str], int, int]
Progress = Callable[[str, int, int], Any]

class Counts:
    def __init__(self, special_tokens: list[str], pattern: str = "gpt2") -> None: ...
    @staticmethod
    def from_files(
        paths: Sequence[Source],
        special_tokens: list[str],
        num_threads: int | None = None,
        chunk_size: int | None = None,
        progress: Progress | None = None,
        pattern: str = "gpt2",
    ) -> Counts: ...
    def add_texts(self, texts: list[str], num_threads: int | None = None) -> None: ...
    def merge(self, other: Counts, what: str) -> None: ...
    def save(self, path: str | PathLike[str]) -> None: ...
    @staticmethod
    def load(path: str | PathLike[str]) -> Counts: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> Counts: ...
    def train(
        self,
        vocab_size: int,
        min_frequency: int = 0,
        max_token_length: int | None = None,
        progress: Progress | None = None,
    ) -> tuple[list[bytes], list[tuple[bytes, bytes]], dict[str, Any]]: ...
    def extend(
        self,
        base: Encoder,
        vocab_size: int,
        min_frequency: int = 0,
        max_token_length: int | None = None,
        num_threads: int | None = None,
        progress: Progress | None = None,
    ) -> tuple[list[tuple[int, bytes]], list[tuple[bytes, bytes]], dict[str, Any]]: ...
    @property
    def special_tokens(self) -> list[str]: ...
    @property
    def pattern(self) -> str: ...
    @property
    def bytes_counted(self) -> int: ...
    def __len__(self) -> int: ...
    def items(self) -> list[tuple[bytes, int]]: ...

class Encoder:
    def __init__(
        self,
        vocab: list[tuple[int, bytes]],
        merges: list[tuple[bytes, bytes]],
        special_tokens: list[str],
        pattern: str = "gpt2",
        cache_bytes: int = ...,
    ) -> None: ...
    def encode(self, text: str, fill_cache: bool = True) -> list[int]: ...
    def encode_to_buffer(self, text: str) -> bytearray: ...
    def encode_batch_to_buffers(
        self, texts: list[str], num_threads: int | None = None
    ) -> tuple[bytearray, bytearray]: ...
    def set_cache_bytes(self, bytes: int) -> None: ...
    def cache_info(self) -> dict[str, int]: ...
    def stable_prefix_len(self, text: str) -> int: ...
    def encode_batch(self, texts: list[str], num_threads: int | None = None) -> list[list[int]]: ...
    def encode_batch_packed(self, texts: list[str], width: int, num_threads: int | None = None) -> list[bytes]: ...
    def encode_files(
        self,
        paths: Sequence[Source],
        width: int,
        write: Callable[[bytes], Any],
        num_threads: int | None = None,
        chunk_size: int | None = None,
        progress: Callable[[str, int, int], Any] | None = None,
    ) -> int: ...
    # tiktoken's special-token policy: masks over the encoder's special tokens, in order.
    def encode_allowing(self, text: str, allowed: list[bool]) -> list[int]: ...
    def encode_allowing_to_buffer(self, text: str, allowed: list[bool]) -> bytearray: ...
    def encode_batch_allowing(
        self, texts: list[str], allowed: list[bool], num_threads: int | None = None
    ) -> list[list[int]]: ...
    def find_special(self, text: str, which: list[bool]) -> str | None: ...
    def encode_piece(self, piece: bytes) -> list[int]: ...
    def decode_bytes(self, ids: list[int]) -> bytes: ...
    def token(self, id: int) -> bytes | None: ...
    def id(self, token: bytes) -> int | None: ...
