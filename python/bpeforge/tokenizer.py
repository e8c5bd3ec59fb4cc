"""`Tokenizer`: encode text to ids and back, GPT-2-exact, over the Rust encoder.

>>> vocab = {i: bytes([i]) for i in range(256)} | {256: b" w", 257: b"or", 258: b" wor"}
>>> tok = Tokenizer(vocab, [(b" ", b"w"), (b"o", b"r"), (b" w", b"or")], ["<|endoftext|>"])
>>> tok.encode("hello world<|endoftext|>")
[104, 101, 108, 108, 111, 258, 108, 100, 259]
>>> tok.decode([258, 108, 100])
' world'
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from bpeforge import _core, core_tables, hf_pipeline
from bpeforge.arguments import check_cache_size, check_str, check_texts, explain_type_errors
from bpeforge.formats import gpt2, hf, tiktoken_ranks
from bpeforge.formats.parts import TokenizerParts
from bpeforge.patterns import normalize_pattern
from bpeforge.special_policy import SpecialPolicy
from bpeforge.streaming import stable_chunks
from bpeforge.vocabulary import append_missing_specials, check_ids, refuse_specials_that_are_tokens, unique_specials

T = TypeVar("T")

if TYPE_CHECKING:
    import numpy as np


# encode_iterable encodes once this many characters are buffered, up to the
# last point where more text cannot change the ids. Small enough that memory
# stays flat (the CS336 test allows a 1 MB rise); large enough that the
# per-call overhead vanishes.
STREAM_CHUNK_CHARS = 1 << 16
END_OF_TEXT = "<|endoftext|>"

# The shared encode cache's default budget in bytes (see docs/encode-cache.md):
# 2 Mi short pre-tokens, more than a corpus's working set, and the tables
# grow with use, so a tokenizer that encodes little holds little.
DEFAULT_CACHE_SIZE = 64 << 20


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a tokenizer loads. Reading a vocabulary makes one tuple, one
    bytes and one int per token and merge (100-400 K objects), and the collector, which runs every 700 new
    container objects, scanned them again and again: 8 of the 55 ms of loading GPT-2. None of them can be part
    of a cycle, so pausing it frees nothing later. A `with` rather than a decorator: a wrapper's frame would
    move every warning a loader gives (`stacklevel`) off the caller's line."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class Tokenizer(core_tables.CoreTables):
    """A byte-level BPE tokenizer: a vocabulary, its merges and special tokens.

    Special tokens missing from `vocab` are appended with new ids. Special
    tokens in the text are matched longest first; inside each pre-token the
    merges apply by rank, as in GPT-2 and tiktoken.

    `cache_size` bounds, in bytes, the cache of pre-token ids that this
    tokenizer keeps across calls and shares between its threads (0: none);
    `set_cache_size` changes it later and `cache_info` reports it. The ids
    are the same whatever its size.
    """

    # True for a tokenizer.json pipeline (`from_hf`): files and Ray then encode each text file whole, as one
    # document, since no rule says where a pipeline's normalizer and pre-tokenizers allow a cut.
    runs_pipeline: bool = False

    def __init__(
        self,
        vocab: dict[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens: Iterable[str] | None = None,
        *,
        pattern: str = "gpt2",
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        if not isinstance(vocab, dict):
            raise TypeError(f"vocab must be a dict of int ids to bytes, got {type(vocab).__name__}")
        merges = [(bytes(left), bytes(right)) for left, right in merges]
        self._build(dict(vocab), merges, special_tokens, pattern, cache_size)

    def _build(
        self,
        vocab: dict[int, bytes],
        merges: list[tuple[bytes, bytes]],
        special_tokens: Iterable[str] | None,
        pattern: str,
        cache_size: int,
    ) -> None:
        """The constructor, for a `vocab` dict of its own and a list of `merges` that are pairs of bytes."""
        check_cache_size(cache_size)
        check_ids(vocab)
        self._vocab = vocab
        self._merges = merges
        self._special_tokens = unique_specials(special_tokens)
        tokens = set(vocab.values())  # one set for both checks, made in C
        refuse_specials_that_are_tokens(self._vocab, self._merges, self._special_tokens, tokens)
        append_missing_specials(self._vocab, self._special_tokens, tokens)
        pattern = normalize_pattern(pattern)
        self._core = _core.Encoder(list(self._vocab.items()), self._merges, self._special_tokens, pattern, cache_size)
        self._cache_size = cache_size

    @classmethod
    def from_files(
        cls,
        vocab_filepath: str | os.PathLike[str],
        merges_filepath: str | os.PathLike[str],
        special_tokens: Iterable[str] | None = None,
        *,
        pattern: str = "gpt2",
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> Tokenizer:
        """Load GPT-2-style `vocab.json` and `merges.txt` (as `bpeforge.save` writes and GPT-2 ships)."""
        with _gc_paused():
            return cls._from_gpt2_files(vocab_filepath, merges_filepath, special_tokens, pattern, cache_size)

    @classmethod
    def load(cls, directory: str | os.PathLike[str], *, cache_size: int = DEFAULT_CACHE_SIZE) -> Tokenizer:
        """Load a directory written by `bpeforge.save` / `bpeforge train`, special tokens included."""
        meta = gpt2.load_meta(directory)
        files = (Path(directory) / gpt2.VOCAB_FILE, Path(directory) / gpt2.MERGES_FILE)
        with _gc_paused():
            return cls._from_gpt2_files(*files, meta["special_tokens"], meta["pattern"], cache_size, directory)

    @classmethod
    def from_hf(cls, path: str | os.PathLike[str], *, cache_size: int = DEFAULT_CACHE_SIZE) -> Tokenizer:
        """Load an HF `tokenizer.json` of a byte-level BPE, its whole pipeline (see `bpeforge.hf_pipeline`)."""
        with _gc_paused():
            return hf_pipeline.load_file(cls, path, cache_size)

    from_pretrained = classmethod(hf_pipeline.load_directory)

    @classmethod
    def from_tiktoken(
        cls,
        path: str | os.PathLike[str],
        pattern: str = "gpt2",
        special_tokens: Iterable[str] | dict[str, int] | None = None,
        *,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> Tokenizer:
        """Load a tiktoken ranks file (`base64 rank` lines; plain, .gz, .xz or .zst); merges come from the ranks."""
        with _gc_paused():
            return cls._from_rank_file(path, pattern, special_tokens, cache_size)

    @classmethod
    def _from_parts(cls, parts: TokenizerParts, path: str | os.PathLike[str], cache_size: int) -> Tokenizer:
        """The tokenizer `path` holds; what the constructor refuses (a byte or a merge result missing from
        the vocab, say) is reported with the path."""
        # The readers give a dict and a list of pairs of bytes of their own: no copies (for o200k's 200k
        # tokens they took 0.05 s).
        tokenizer = cls.__new__(cls)
        try:
            tokenizer._build(parts.vocab, parts.merges, parts.special_tokens, parts.pattern, cache_size)
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None
        return tokenizer

    def save(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the directory `Tokenizer.load` reads back: `vocab.json`, `merges.txt`, `bpeforge.json`."""
        return gpt2.write_tokenizer_directory(
            self._vocab,
            self._merges,
            directory,
            special_tokens=self._special_tokens,
            pattern=self.pattern,
            overwrite=overwrite,
        )

    def save_hf(
        self,
        path: str | os.PathLike[str],
        *,
        overwrite: bool = False,
        eos_token: str | None = None,
        bos_token: str | None = None,
        pad_token: str | None = None,
    ) -> Path:
        """Write for HF with the same ids: `path` ending in `.json` is one `tokenizer.json`; any other path
        a directory for `transformers.AutoTokenizer.from_pretrained` (tokenizer.json, tokenizer_config.json,
        special_tokens_map.json; eos defaults to `<|endoftext|>` when special). See `bpeforge.formats.hf`."""
        roles = {"eos_token": eos_token, "bos_token": bos_token, "pad_token": pad_token}
        return hf.save_hf(self, path, overwrite=overwrite, **roles)

    def save_tiktoken(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        """Write a tiktoken ranks file (specials are not part of that format; tiktoken takes them apart)."""
        tiktoken_ranks.save_tiktoken(self, path, overwrite=overwrite)

    def encode(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | Collection[str] = "all",
        disallowed_special: Literal["all"] | Collection[str] = (),
        add_special_tokens: bool = True,
    ) -> list[int]:
        """The ids of `text`. By default every special token in it is a token (CS336).

        `add_special_tokens` is `tokenizers`' keyword, taken by every encode
        method so that code written for a tokenizer.json pipeline runs on any
        tokenizer: this one has no post-processor, so there is nothing to add.

        tiktoken's keywords, as an option: only `allowed_special` ("all" or a
        set) are tokens and the other special tokens plain text; those that
        `disallowed_special` lists ("all": every one not allowed) raise
        ValueError. `allowed_special=set(), disallowed_special="all"` is
        tiktoken's default (see `bpeforge.tiktoken`).
        """
        if allowed_special == "all" and not disallowed_special:
            try:  # no check before the call: a sentence's whole encoding is a microsecond
                return self._core.encode(text)
            except TypeError:
                check_str(text)  # the error that says what to pass
                raise
        text = check_str(text)
        allowed, disallowed = self._special_policy.resolve(allowed_special, disallowed_special)
        self._special_policy.check(self._core, text, disallowed)
        return self._core.encode_allowing(text, allowed)

    @functools.cached_property
    def _special_policy(self) -> SpecialPolicy:

        return SpecialPolicy(self._special_tokens)

    def encode_to_numpy(self, text: str, *, add_special_tokens: bool = True) -> np.ndarray:
        """The ids of `text` as a uint32 array, made without a Python int per id.

        When NumPy frees a large array (4 MiB of ids or more) from here or
        `encode_batch_to_numpy`, its memory is kept for the next call, which
        writes over it instead of faulting in fresh pages: at most two such
        buffers and 64 MiB in the process.
        """
        import numpy as np

        # The array is over the encoder's own buffer (`__array_interface__`): no copy.
        return np.asarray(self._core.encode_to_array(check_str(text)))

    def encode_batch(
        self, texts: Iterable[str], num_threads: int | None = None, *, add_special_tokens: bool = True
    ) -> list[list[int]]:
        """The ids of each text, encoded in parallel (all cores by default) without the GIL."""
        texts, threads = check_texts(texts, num_threads, "encode_batch")
        return explain_type_errors(texts, lambda: self._core.encode_batch(texts, threads))

    def encode_batch_to_numpy(
        self, texts: Iterable[str], num_threads: int | None = None, *, add_special_tokens: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """All the texts' ids in one uint32 array, and the int64 offsets of each text's ids in it.

        `ids[offsets[i]:offsets[i + 1]]` are the ids of `texts[i]`; `offsets`
        has `len(texts) + 1` entries. Encoded as `encode_batch` does.
        """
        import numpy as np

        texts, threads = check_texts(texts, num_threads, "encode_batch_to_numpy")
        ids, offsets = explain_type_errors(texts, lambda: self._core.encode_batch_to_arrays(texts, threads))
        return np.asarray(ids), np.frombuffer(offsets, dtype=np.dtype("<i8"))

    @property
    def cache_size(self) -> int:
        """The budget in bytes of the encode cache (0: off)."""
        return self._cache_size

    def set_cache_size(self, cache_size: int) -> None:
        """Replace the encode cache by an empty one of at most `cache_size` bytes (0 turns it off)."""
        check_cache_size(cache_size)
        self._core.set_cache_bytes(cache_size)
        self._cache_size = cache_size

    def cache_info(self) -> dict[str, int]:
        """The encode cache: `entries`, `bytes` (allocated, at most `capacity`), `capacity`, `hits`, `misses`,
        `thread_tables`, `thread_table_bytes`, `seeds`.

        The shared cache holds `entries` in `bytes` (pieces of more than 15
        bytes or more than 3 ids in an eighth of it, keyed by their bytes). Each thread that encodes
        looks in its own tables first (up to 18 MiB for pieces of 15 bytes or
        less, 32 MiB for longer ones, kept between calls while the cache is
        on: `thread_tables` of them are kept now, in `thread_table_bytes`).
        The shared cache fills only once two threads have encoded at the same
        time, or a stream (`encode_iterable`) has started: until then one
        thread's own tables hold all it would, and filling it would slow the
        first call for nothing.
        While the cache is on, every thread table starts with the
        vocabulary's tokens that are whole pre-tokens and encode to
        themselves (`seeds` of them are left in the kept tables: a text's piece
        found among them, or put in place of one, stops counting), so that a
        first call does not merge them. They are found and planted in the
        first table when the tokenizer is built and again by `set_cache_size`
        (GPT-2: 49 K tokens, 10-20 ms); another thread's table gets them when
        it first encodes.
        `hits` counts the pre-tokens of 2 bytes or more that a cache answered,
        `misses` those whose merges were applied; a long pre-token no table
        holds is cut where no token holds the byte pair, and its parts count
        as pre-tokens of their own.
        """
        return self._core.cache_info()

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """Lazily the ids of `"".join(iterable)`, in memory that does not grow with the input.

        Text is buffered to about `STREAM_CHUNK_CHARS`, then encoded up to the
        last point that more text cannot change (never inside a pre-token or a
        special token); the rest waits for the next round. The encode cache is
        read but not filled here, so that memory stays flat (CS336 allows a
        1 MB rise); what earlier calls cached still speeds it up.
        """
        if isinstance(iterable, (str, bytes)):
            raise TypeError("encode_iterable takes an iterable of str pieces (a file, a generator), not one string")
        for chunk in stable_chunks(self._core, iterable, STREAM_CHUNK_CHARS):
            yield from self._core.encode(chunk, False)

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
        return self._token_count()

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
            f"Tokenizer(vocab_size={self.vocab_size}, merges={self._merge_count()}, "
            f"special_tokens={self._special_tokens!r}, pattern={self.pattern!r})"
        )

    def __len__(self) -> int:
        """The number of tokens, special tokens included (as `len` of an HF tokenizer)."""
        return self._token_count()

    def __eq__(self, other: object) -> bool:
        """Same vocabulary, merges, special tokens and pattern: the same ids for every text."""
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return (self._vocab, self._merges, self._special_tokens, self.pattern) == (
            other._vocab,
            other._merges,
            other._special_tokens,
            other.pattern,
        )

    __hash__ = None  # mutable-looking value semantics: equal tokenizers need not share a hash

    def get_vocab(self) -> dict[bytes, int]:
        """`{token bytes: id}` (transformers' name; with two ids for one spelling, the lower id)."""
        vocab: dict[bytes, int] = {}
        for token_id, token in sorted(self._vocab.items()):
            vocab.setdefault(token, token_id)
        return vocab

    @property
    def n_vocab(self) -> int:
        """One more than the largest id (tiktoken's name)."""
        return self._id_count()

    @property
    def eot_token(self) -> int | None:
        """The id of `<|endoftext|>` when it is a special token, else None (tiktoken's name)."""
        return self.token_to_id(END_OF_TEXT) if END_OF_TEXT in self._special_tokens else None

    def __reduce__(self):
        # Pickles as the core's vocabulary as bytes (`core_tables.py`), or where that cannot hold it as its
        # vocabulary, merges and specials. The cache is not pickled; the copy gets an empty one of the same size.
        args = (self._vocab, self._merges, self._special_tokens, self.pattern, self._cache_size)
        return self._packed_reduce() or (_rebuild, args)


def _rebuild(
    vocab: dict[int, bytes],
    merges: list,
    special_tokens: list[str],
    pattern: str,
    cache_size: int = DEFAULT_CACHE_SIZE,
) -> Tokenizer:
    return Tokenizer(vocab, merges, special_tokens, pattern=pattern, cache_size=cache_size)
