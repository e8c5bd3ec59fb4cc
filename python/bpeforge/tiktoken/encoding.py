"""`Encoding`: tiktoken's `Encoding` class over bpeforge's Rust encoder, same arguments, methods and ids.

>>> enc = Encoding("tiny", pat_str="gpt2", mergeable_ranks=RANKS, special_tokens={"<|endoftext|>": 259})
>>> enc.encode("hello world")
[104, 101, 108, 108, 111, 258, 108, 100]
>>> enc.encode("<|endoftext|>", allowed_special="all")
[259]
>>> enc.decode_tokens_bytes([258, 108, 100])
[b' wor', b'l', b'd']
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Literal

from bpeforge.arguments import max_threads, thread_count
from bpeforge.formats import rank_file, tiktoken_ranks
from bpeforge.formats.parts import Merges
from bpeforge.formats.tiktoken_ranks import merges_from_ranks
from bpeforge.special_policy import SpecialPolicy
from bpeforge.tiktoken.encode_bytes import encode_bytes
from bpeforge.tiktoken.patterns import pattern_for
from bpeforge.tokenizer import DEFAULT_CACHE_SIZE, Tokenizer, _gc_paused

if TYPE_CHECKING:
    import numpy as np

# The doctest's vocabulary: the 256 bytes, then " w", "or", " wor".
RANKS = {bytes([b]): b for b in range(256)} | {b" w": 256, b"or": 257, b" wor": 258}

# tiktoken's default `num_threads`. A batch runs on at most the cores, as every bpeforge call does; an ask up to
# this default is bounded quietly (tiktoken's own default on a smaller machine is nothing the caller asked for).
TIKTOKEN_DEFAULT_THREADS = 8

Allowed = Literal["all"] | Collection[str]


class Encoding:
    """A BPE encoding as tiktoken defines one: ranks (merge priority = id), a split pattern, special tokens.

    `pat_str` is a regex; tiktoken's gpt2/r50k, cl100k and o200k patterns (or
    a bpeforge preset name) run on bpeforge's scanners, any other on
    fancy-regex. Special tokens in text raise ValueError unless allowed (see
    `encode`).
    """

    def __init__(
        self,
        name: str,
        *,
        pat_str: str,
        mergeable_ranks: dict[bytes, int],
        special_tokens: dict[str, int],
        explicit_n_vocab: int | None = None,
        _merges: Merges | None = None,
    ) -> None:
        """As tiktoken's `Encoding`; `_merges`: those the ranks imply, when known (`get_encoding` ships them)."""
        self.name = name
        self._pat_str = pat_str
        self._mergeable_ranks = mergeable_ranks
        self._special_tokens = special_tokens
        self.max_token_value = max(max(mergeable_ranks.values()), max(special_tokens.values(), default=0))
        _check_n_vocab(name, len(mergeable_ranks), special_tokens, self.max_token_value, explicit_n_vocab)
        self._special_token_values = set(special_tokens.values())
        self._policy = SpecialPolicy(special_tokens)
        self._tokenizer = _tokenizer_of(mergeable_ranks, special_tokens, pattern_for(pat_str), _merges)
        self._core = self._tokenizer._core

    @classmethod
    def _from_rank_file(
        cls,
        name: str,
        contents: bytes,
        *,
        pat_str: str,
        special_tokens: dict[str, int],
        explicit_n_vocab: int | None = None,
    ) -> Encoding:
        """The encoding of the rank file whose bytes are `contents`, built straight by the core
        (`formats/rank_file.py`): `_mergeable_ranks` is made when first asked for (`get_encoding`)."""
        built = rank_file.rank_file_encoder(contents, pattern_for(pat_str), special_tokens, DEFAULT_CACHE_SIZE)
        if built is None:  # what the core leaves to Python, which names the problem
            ranks = tiktoken_ranks.read_ranks_bytes(contents, name)
            definition = {"pat_str": pat_str, "special_tokens": special_tokens, "explicit_n_vocab": explicit_n_vocab}
            return cls(name, mergeable_ranks=ranks, **definition)
        encoding = cls.__new__(cls)
        encoding.name, encoding._pat_str, encoding._special_tokens = name, pat_str, special_tokens
        encoding._tokenizer = Tokenizer._from_core(*built, DEFAULT_CACHE_SIZE)
        encoding._core = encoding._tokenizer._core
        encoding.max_token_value = encoding._tokenizer.n_vocab - 1
        mergeable = encoding._tokenizer.vocab_size - len(special_tokens)
        _check_n_vocab(name, mergeable, special_tokens, encoding.max_token_value, explicit_n_vocab)
        encoding._special_token_values = set(special_tokens.values())
        encoding._policy = SpecialPolicy(special_tokens)
        return encoding

    @functools.cached_property
    def _mergeable_ranks(self) -> dict[bytes, int]:
        """`{token: rank}`, in rank order: given to the constructor, or made from the core's vocabulary."""
        specials = self._special_token_values
        return {token: i for i, token in self._tokenizer._vocab.items() if i not in specials}

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    # Encoding. Each method resolves the special-token policy in Python (a
    # mask per call, no copies) and makes one call into the core; a str that
    # is not valid Unicode (lone surrogates) is fixed and retried, as tiktoken does.

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of `text`, special tokens encoded as plain text (`encode(text, disallowed_special=())`)."""
        try:
            return self._core.encode_allowing(text, self._policy.none)
        except UnicodeEncodeError:
            return self._core.encode_allowing(fix_surrogates(text), self._policy.none)

    def encode(
        self,
        text: str,
        *,
        allowed_special: Allowed = set(),  # noqa: B006 (tiktoken's signature; never mutated)
        disallowed_special: Allowed = "all",
    ) -> list[int]:
        """The ids of `text`. A special token in it raises ValueError unless allowed:

        `allowed_special` ("all" or a set) are encoded as special tokens; the
        others, if `disallowed_special` lists them ("all" does), raise, else
        are encoded as plain text (`disallowed_special=()`).
        """
        allowed, disallowed = self._policy.resolve(allowed_special, disallowed_special)
        try:
            self._policy.check(self._core, text, disallowed)
            return self._core.encode_allowing(text, allowed)
        except UnicodeEncodeError:
            text = fix_surrogates(text)
            self._policy.check(self._core, text, disallowed)
            return self._core.encode_allowing(text, allowed)

    def encode_to_numpy(
        self,
        text: str,
        *,
        allowed_special: Allowed = set(),  # noqa: B006
        disallowed_special: Allowed = "all",
    ) -> np.ndarray:
        """`encode` as a uint32 array, made without a Python int per id."""
        import numpy as np

        allowed, disallowed = self._policy.resolve(allowed_special, disallowed_special)
        try:
            self._policy.check(self._core, text, disallowed)
            ids = self._core.encode_allowing_to_array(text, allowed)
        except UnicodeEncodeError:
            text = fix_surrogates(text)
            self._policy.check(self._core, text, disallowed)
            ids = self._core.encode_allowing_to_array(text, allowed)
        return np.asarray(ids)

    def encode_ordinary_batch(self, text: Sequence[str], *, num_threads: int = 8) -> list[list[int]]:
        """`encode_ordinary` of each text, in parallel without the GIL."""
        return self._encode_batch(list(text), self._policy.none, (), num_threads)

    def encode_batch(
        self,
        text: Sequence[str],
        *,
        num_threads: int = 8,
        allowed_special: Allowed = set(),  # noqa: B006
        disallowed_special: Allowed = "all",
    ) -> list[list[int]]:
        """`encode` of each text, in parallel without the GIL; the first text with a disallowed special raises."""
        allowed, disallowed = self._policy.resolve(allowed_special, disallowed_special)
        return self._encode_batch(list(text), allowed, disallowed, num_threads)

    def _encode_batch(
        self, texts: list[str], allowed: list[bool], disallowed: Any, num_threads: int
    ) -> list[list[int]]:
        threads = tiktoken_threads(num_threads)
        try:
            for text in texts:
                self._policy.check(self._core, text, disallowed)
            return self._core.encode_batch_allowing(texts, allowed, threads)
        except UnicodeEncodeError:
            texts = [fix_surrogates(text) for text in texts]
            for text in texts:
                self._policy.check(self._core, text, disallowed)
            return self._core.encode_batch_allowing(texts, allowed, threads)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of the one token spelled `text_or_bytes` (special tokens included); KeyError if none is."""
        token = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else bytes(text_or_bytes)
        token_id = self._core.id(token)
        if token_id is None:
            raise KeyError(token)
        return token_id

    # Decoding.

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The concatenated bytes of `tokens`; KeyError for an id that is not a token."""
        try:
            return self._core.decode_bytes(tokens if isinstance(tokens, list) else list(tokens))
        except (ValueError, OverflowError) as err:
            raise KeyError(f"Invalid token for decoding: {_unknown_id(self._core, tokens, err)}") from None

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text of `tokens`; bytes that are not UTF-8 become U+FFFD (`errors="strict"` raises instead)."""
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one id (special tokens included); KeyError if it is not a token."""
        try:
            token_bytes = self._core.token(token)
        except OverflowError:
            token_bytes = None
        if token_bytes is None:
            raise KeyError(token)
        return token_bytes

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        """The bytes of each id."""
        return [self.decode_single_token_bytes(token) for token in tokens]

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """The text of `tokens` (strict UTF-8) and the index in it of each token's first char.

        A token that starts inside a char (a UTF-8 continuation byte) gets that char's index.
        """
        token_bytes = self.decode_tokens_bytes(tokens)
        offsets, chars = [], 0
        for token in token_bytes:
            starts_inside_a_char = bool(token) and 0x80 <= token[0] < 0xC0
            offsets.append(max(0, chars - starts_inside_a_char))
            chars += sum(not 0x80 <= byte < 0xC0 for byte in token)
        return b"".join(token_bytes).decode("utf-8", errors="strict"), offsets

    def decode_batch(
        self, batch: Sequence[Sequence[int]], *, errors: str = "replace", num_threads: int = 8
    ) -> list[str]:
        """`decode` of each list of ids (`num_threads` is accepted for tiktoken's signature)."""
        return [self.decode(tokens, errors=errors) for tokens in batch]

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *, num_threads: int = 8) -> list[bytes]:
        """`decode_bytes` of each list of ids."""
        return [self.decode_bytes(tokens) for tokens in batch]

    # Vocabulary.

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every ordinary (mergeable) token, sorted."""
        return list(self._sorted_token_bytes)

    @functools.cached_property
    def _sorted_token_bytes(self) -> list[bytes]:
        return sorted(self._mergeable_ranks)

    @property
    def eot_token(self) -> int:
        """The id of `<|endoftext|>` (KeyError if the encoding has none)."""
        return self._special_tokens["<|endoftext|>"]

    @functools.cached_property
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens)

    def is_special_token(self, token: int) -> bool:
        return token in self._special_token_values

    @property
    def n_vocab(self) -> int:
        """One more than the largest id (tiktoken's name; `max_token_value + 1`)."""
        return self.max_token_value + 1

    # tiktoken's private helpers that its tests use.

    def _encode_single_piece(self, text_or_bytes: str | bytes) -> list[int]:
        """The ids of one piece by merges alone, no split (a whole token is its id)."""
        piece = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else bytes(text_or_bytes)
        if piece in self._mergeable_ranks:
            return [self._mergeable_ranks[piece]]
        return self._core.encode_piece(piece)

    def _encode_bytes(self, text: bytes) -> list[int]:
        """The ids of bytes that may not be UTF-8, as tiktoken gives them: see `encode_bytes.py`."""
        return encode_bytes(self, text)

    # Pickling: an encoding from `get_encoding` pickles as that call (the registry sets `_pickled_as`, so
    # this module never imports the registry), any other as its definition; the Rust tables are rebuilt
    # on load.
    _pickled_as: tuple[Any, tuple[str]] | None = None

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        if self._pickled_as is not None:
            return self._pickled_as
        definition = {
            "name": self.name,
            "pat_str": self._pat_str,
            "mergeable_ranks": self._mergeable_ranks,
            "special_tokens": self._special_tokens,
        }
        return _from_definition, (definition,)


def _from_definition(definition: dict[str, Any]) -> Encoding:
    return Encoding(**definition)


def _tokenizer_of(
    ranks: dict[bytes, int], special_tokens: dict[str, int], pattern: str, merges: Merges | None
) -> Tokenizer:
    """The bpeforge tokenizer with these ids: merges recovered from the ranks (unless given), specials at
    their ids."""
    vocab = dict(zip(ranks.values(), ranks))  # in C: 4 ms for o200k, against 36 for a comprehension
    if len(vocab) != len(ranks):
        raise ValueError("mergeable_ranks gives one rank to two tokens; each token needs a rank of its own")
    for token, token_id in special_tokens.items():
        if token_id in vocab:
            raise ValueError(
                f"special token {token!r} has id {token_id}, which is the rank of {vocab[token_id]!r}; "
                "give special tokens ids that no mergeable token has"
            )
        vocab[token_id] = token.encode("utf-8")
    # Not `Tokenizer(...)`: its copies of the dict and of every merge (o200k: 400 K `bytes`) took 0.1 s of
    # `get_encoding("o200k_base")`; the vocabulary and the merges here are new objects of this call's own.
    tokenizer = Tokenizer.__new__(Tokenizer)
    with _gc_paused():
        merges = merges_from_ranks(ranks) if merges is None else merges
        tokenizer._build(vocab, merges, list(special_tokens), pattern, DEFAULT_CACHE_SIZE)
    return tokenizer


def _check_n_vocab(name: str, ranks: int, specials: dict, max_token_value: int, explicit_n_vocab: int | None) -> None:
    """`ranks`: how many mergeable tokens there are."""
    if not explicit_n_vocab:
        return
    if ranks + len(specials) != explicit_n_vocab or max_token_value != explicit_n_vocab - 1:
        raise ValueError(
            f"encoding {name!r}: explicit_n_vocab={explicit_n_vocab}, but it has {ranks} mergeable and "
            f"{len(specials)} special tokens with ids up to {max_token_value}; "
            f"the ids must be 0..{explicit_n_vocab - 1}"
        )


def _unknown_id(core: Any, tokens: Sequence[int], err: Exception) -> object:
    """The first id of `tokens` that is not a token (for the error message)."""
    for token in tokens:
        try:
            if core.token(token) is None:
                return token
        except (OverflowError, TypeError):
            return token
    return err


def fix_surrogates(text: str) -> str:
    """`text` with surrogate pairs joined and lone surrogates replaced by U+FFFD, as tiktoken does
    before encoding a str that is not valid Unicode (the core takes UTF-8)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def tiktoken_threads(num_threads: int) -> int:
    """The threads a batch of the drop-in runs on: `num_threads` (0 or less: one, as the drop-in always took
    them) bounded by the cores, with a `TrainingNote` when an ask above tiktoken's default was bounded."""
    threads = max(1, num_threads)
    return thread_count(threads) if threads > TIKTOKEN_DEFAULT_THREADS else min(threads, max_threads())
