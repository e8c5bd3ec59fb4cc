"""`Tokenizer`: encode text to ids and back, GPT-2-exact, over the Rust encoder.

>>> vocab = {i: bytes([i]) for i in range(256)} | {256: b" w", 257: b"or", 258: b" wor"}
>>> tok = Tokenizer(vocab, [(b" ", b"w"), (b"o", b"r"), (b" w", b"or")], ["<|endoftext|>"])
>>> tok.encode("hello world<|endoftext|>")
[104, 101, 108, 108, 111, 258, 108, 100, 259]
>>> tok.decode([258, 108, 100])
' world'
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence

from bpeforge import _core, io
from bpeforge.streaming import stable_chunks
from bpeforge.train import check_positive

# encode_iterable encodes once this many characters are buffered, up to the
# last point where more text cannot change the ids. Small enough that memory
# stays flat (the CS336 test allows a 1 MB rise); large enough that the
# per-call overhead vanishes.
STREAM_CHUNK_CHARS = 1 << 16


class Tokenizer:
    """A byte-level BPE tokenizer: a vocabulary, its merges and special tokens.

    Special tokens missing from `vocab` are appended with new ids. Special
    tokens in the text are matched longest first; inside each pre-token the
    merges apply by rank, as in GPT-2 and tiktoken.
    """

    def __init__(
        self,
        vocab: dict[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens: Iterable[str] | None = None,
        *,
        pattern: str = "gpt2",
    ) -> None:
        self._vocab = dict(vocab)
        _check_ids(self._vocab)
        self._merges = [(bytes(left), bytes(right)) for left, right in merges]
        self._special_tokens = _unique_specials(special_tokens)
        _append_missing_specials(self._vocab, self._special_tokens)
        self._core = _core.Encoder(list(self._vocab.items()), self._merges, self._special_tokens, pattern)

    @classmethod
    def from_files(
        cls,
        vocab_filepath: str | os.PathLike[str],
        merges_filepath: str | os.PathLike[str],
        special_tokens: Iterable[str] | None = None,
        *,
        pattern: str = "gpt2",
    ) -> Tokenizer:
        """Load GPT-2-style `vocab.json` and `merges.txt` (as `bpeforge.save` writes and GPT-2 ships)."""
        vocab, merges = io.load_vocab(vocab_filepath), io.load_merges(merges_filepath)
        try:
            return cls(vocab, merges, special_tokens, pattern=pattern)
        except ValueError as err:
            raise ValueError(f"{vocab_filepath}, {merges_filepath}: {err}") from None

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> Tokenizer:
        """Load a directory written by `bpeforge.save` / `bpeforge train`, special tokens included."""
        vocab, merges = io.load(directory)
        meta = io.load_meta(directory)
        try:
            return cls(vocab, merges, meta["special_tokens"], pattern=meta["pattern"])
        except ValueError as err:
            raise ValueError(f"{directory}: {err}") from None

    @classmethod
    def from_hf(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Load an HF `tokenizer.json` (byte-level BPE, GPT-2 pre-tokenizer); see `bpeforge.formats`."""
        from bpeforge.formats import load_hf

        return load_hf(path)

    @classmethod
    def from_tiktoken(
        cls,
        path: str | os.PathLike[str],
        pattern: str = "gpt2",
        special_tokens: Iterable[str] | dict[str, int] | None = None,
    ) -> Tokenizer:
        """Load a tiktoken ranks file (`base64 rank` lines); merges are recovered from the ranks."""
        from bpeforge.formats import load_tiktoken

        return load_tiktoken(path, pattern, special_tokens)

    def save_hf(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        """Write an HF `tokenizer.json` that `tokenizers` and `transformers` load with the same ids."""
        from bpeforge.formats import save_hf

        save_hf(self, path, overwrite=overwrite)

    def save_tiktoken(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        """Write a tiktoken ranks file (specials are not part of that format; tiktoken takes them apart)."""
        from bpeforge.formats import save_tiktoken

        save_tiktoken(self, path, overwrite=overwrite)

    def encode(self, text: str) -> list[int]:
        """The ids of `text`."""
        return self._core.encode(_check_str(text))

    def encode_batch(self, texts: Iterable[str], num_threads: int | None = None) -> list[list[int]]:
        """The ids of each text, encoded in parallel (all cores by default) without the GIL."""
        if num_threads is not None:
            check_positive("num_threads", num_threads)
        return self._core.encode_batch([_check_str(t) for t in texts], num_threads)

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """Lazily the ids of `"".join(iterable)`, in memory that does not grow with the input.

        Text is buffered to about `STREAM_CHUNK_CHARS`, then encoded up to the
        last point that more text cannot change (never inside a pre-token or a
        special token); the rest waits for the next round.
        """
        for chunk in stable_chunks(self._core, iterable, STREAM_CHUNK_CHARS):
            yield from self._core.encode(chunk)

    def decode(self, ids: Iterable[int]) -> str:
        """The text of `ids`; bytes that are not valid UTF-8 become U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The concatenated bytes of `ids`. An unknown id raises ValueError naming it."""
        ids = list(ids)
        try:
            return self._core.decode_bytes(ids)
        except OverflowError:  # an id beyond 64 bits never reaches the core's check
            unknown = next(i for i in ids if not -(2**63) <= i < 2**63)
            raise ValueError(f"unknown token id {unknown}") from None

    def token_to_id(self, token: str | bytes) -> int | None:
        """The id of a token given as text or bytes, or None."""
        return self._core.id(token.encode("utf-8") if isinstance(token, str) else bytes(token))

    def id_to_token(self, token_id: int) -> bytes | None:
        """The bytes of a token id, or None."""
        try:
            return self._core.token(token_id)
        except OverflowError:
            return None

    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    @property
    def special_tokens(self) -> list[str]:
        return list(self._special_tokens)

    @property
    def vocab(self) -> dict[int, bytes]:
        """A copy of the id -> bytes table (special tokens included)."""
        return dict(self._vocab)

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """A copy of the merges, in rank order."""
        return list(self._merges)

    @property
    def pattern(self) -> str:
        """The pre-tokenizer: "gpt2", "cl100k", "o200k", "llama3", "qwen2" or a custom regex."""
        return self._core.pattern

    def __repr__(self) -> str:
        return (
            f"Tokenizer(vocab_size={self.vocab_size}, merges={len(self._merges)}, "
            f"special_tokens={self._special_tokens!r}, pattern={self.pattern!r})"
        )

    def __reduce__(self):
        # Pickles as its vocabulary, merges and specials; the Rust tables are
        # rebuilt on load (tens of milliseconds for GPT-2's 50k tokens).
        return (_rebuild, (self._vocab, self._merges, self._special_tokens, self.pattern))


def _check_ids(vocab: dict[int, bytes]) -> None:
    for token_id, token in vocab.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool) or not 0 <= token_id < 2**32:
            raise ValueError(f"token id {token_id!r} (for {token!r}) must be an integer in 0..2**32")
        if not isinstance(token, bytes):
            raise TypeError(f"vocab values must be bytes; id {token_id} has {type(token).__name__}")


def _rebuild(vocab: dict[int, bytes], merges: list, special_tokens: list[str], pattern: str) -> Tokenizer:
    return Tokenizer(vocab, merges, special_tokens, pattern=pattern)


def _unique_specials(special_tokens: Iterable[str] | None) -> list[str]:
    if isinstance(special_tokens, str):
        raise TypeError(f"special_tokens must be a list of strings, not the string {special_tokens!r}")
    specials: list[str] = []
    for token in special_tokens or []:
        if not isinstance(token, str):
            raise TypeError(f"special tokens must be str, got {type(token).__name__}: {token!r}")
        if token not in specials:
            specials.append(token)
    return specials


def _append_missing_specials(vocab: dict[int, bytes], special_tokens: list[str]) -> None:
    present = set(vocab.values())
    next_id = max(vocab, default=-1) + 1
    for token in special_tokens:
        encoded = token.encode("utf-8")
        if encoded not in present:
            vocab[next_id] = encoded
            present.add(encoded)
            next_id += 1


def _check_str(text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}; decode bytes to str first")
    return text
