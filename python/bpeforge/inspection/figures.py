"""Measuring a tokenizer: the figures `bpeforge inspect` and `bpeforge compare` print.

CS336's questions, answered on the user's own files:
- the longest tokens and how token lengths are spread;
- the compression ratio (UTF-8 bytes per token) on samples, on whole files
  or on N documents drawn at random (`documents`);
- encoding throughput on this machine, and the time that projects to for the
  Pile's 825 GB;
- and, for two tokenizers, how much of their vocabularies they share.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from bpeforge.formats.whole_text import whole_text
from bpeforge.inspection.token_text import show_token
from bpeforge.tokenizer import Tokenizer

PILE_BYTES = 825 * 10**9  # The Pile, as CS336 sizes it
READ_BLOCK = 1 << 20
ID_BYTES = 4  # encode_files packs ids as uint32 for counting
MIN_TIMED_SECONDS = 0.3


@dataclass(frozen=True)
class SampleFigures:
    path: str
    documents: int | None  # documents drawn, or None for the whole file
    bytes: int
    tokens: int
    bytes_per_token: float
    encode_seconds: float  # the whole file, all threads
    mb_per_second: float
    pile_hours: float  # 825 GB at this throughput

    def to_json(self) -> dict:
        return asdict(self)


def vocabulary_figures(tokenizer: Tokenizer, longest: int = 10) -> dict:
    """Size, special tokens, the `longest` learned tokens and the token-length histogram."""
    specials = {token.encode() for token in tokenizer.special_tokens}
    learned = [(i, t) for i, t in tokenizer.vocab.items() if t not in specials]
    by_length = sorted(learned, key=lambda item: (-len(item[1]), item[0]))[:longest]
    histogram = Counter(len(token) for _, token in learned)
    return {
        "vocab_size": tokenizer.vocab_size,
        "merges": len(tokenizer.merges),
        "special_tokens": tokenizer.special_tokens,
        "pattern": tokenizer.pattern,
        "longest": [{"id": i, "bytes": len(t), "token": show_token(t)} for i, t in by_length],
        "length_histogram": {str(length): histogram[length] for length in sorted(histogram)},
    }


def sample_figures(
    tokenizer: Tokenizer,
    path: str | os.PathLike[str],
    *,
    documents: int | None = None,
    seed: int = 0,
    threads: int | None = None,
) -> SampleFigures:
    """Compression on `path` (or on `documents` drawn from it) and throughput on all of it."""
    file_bytes, file_tokens, seconds = _timed_encode(tokenizer, path, threads)
    if file_bytes == 0:
        raise ValueError(f"{os.fspath(path)}: the sample is empty; give a --sample file with text")
    size, tokens, drawn = file_bytes, file_tokens, None
    if documents is not None:
        drawn = draw_documents(path, _document_separator(tokenizer), documents, seed)
        size = sum(len(doc.encode()) for doc in drawn)
        tokens = sum(len(ids) for ids in tokenizer.encode_batch(drawn, threads))
    rate = file_bytes / max(seconds, 1e-9)
    return SampleFigures(
        path=os.fspath(path),
        documents=None if drawn is None else len(drawn),
        bytes=size,
        tokens=tokens,
        bytes_per_token=size / tokens if tokens else float("nan"),
        encode_seconds=seconds,
        mb_per_second=rate / 1e6,
        pile_hours=PILE_BYTES / rate / 3600,
    )


def _timed_encode(tokenizer: Tokenizer, path, threads: int | None) -> tuple[int, int, float]:
    """Encode the whole file as `bpeforge encode` does, counting the ids: (bytes, tokens, seconds).

    A small file is encoded again until `MIN_TIMED_SECONDS` have passed, and
    the seconds are those of one pass, so that its throughput is not mostly
    the cost of starting.
    """
    tokens = [0]

    def count(data: bytes) -> None:
        tokens[0] += len(data) // ID_BYTES

    def encode_once() -> int:
        if tokenizer.runs_pipeline:  # a tokenizer.json pipeline encodes the file whole
            text = whole_text(path)
            tokens[0] += len(tokenizer.encode_to_numpy(text, add_special_tokens=False))
            return len(text.encode("utf-8"))
        return tokenizer._core.encode_files([os.fspath(path)], ID_BYTES, count, threads)

    passes, started = 0, time.perf_counter()
    while passes == 0 or time.perf_counter() - started < MIN_TIMED_SECONDS:
        size = encode_once()
        passes += 1
    return size, tokens[0] // passes, (time.perf_counter() - started) / passes


def _document_separator(tokenizer: Tokenizer) -> str:
    if not tokenizer.special_tokens:
        raise ValueError("drawing documents needs a special token that separates them; this tokenizer has none")
    return tokenizer.special_tokens[0]


def draw_documents(path: str | os.PathLike[str], separator: str, count: int, seed: int = 0) -> list[str]:
    """`count` documents of `path` (split on `separator`) drawn uniformly, in file order.

    Reservoir sampling over a streamed read: memory holds `count` documents,
    not the file. Empty documents (two separators in a row) are skipped.
    """
    if count < 1:
        raise ValueError(f"the number of documents must be at least 1, got {count}")
    rng = random.Random(seed)
    reservoir: list[tuple[int, str]] = []
    for index, document in enumerate(_documents(Path(path), separator)):
        if len(reservoir) < count:
            reservoir.append((index, document))
        elif (slot := rng.randrange(index + 1)) < count:
            reservoir[slot] = (index, document)
    return [document for _, document in sorted(reservoir)]


def _documents(path: Path, separator: str) -> Iterator[str]:
    rest = ""
    with open(path, encoding="utf-8", newline="") as f:
        while block := f.read(READ_BLOCK):
            parts = (rest + block).split(separator)
            rest = parts.pop()
            yield from (part for part in parts if part)
    if rest:
        yield rest


def vocabulary_overlap(a: Tokenizer, b: Tokenizer, listed: int = 20) -> dict:
    """Tokens both have, and the first `listed` only one has (by id: earliest merges first)."""
    tokens_a, tokens_b = set(a.vocab.values()), set(b.vocab.values())
    shared = tokens_a & tokens_b
    return {
        "shared": len(shared),
        "jaccard": len(shared) / len(tokens_a | tokens_b),
        "only_a": _first_missing(a, tokens_b, listed),
        "only_b": _first_missing(b, tokens_a, listed),
        "only_a_count": len(tokens_a - tokens_b),
        "only_b_count": len(tokens_b - tokens_a),
    }


def _first_missing(tokenizer: Tokenizer, other: set[bytes], listed: int) -> list[dict]:
    missing = [(i, t) for i, t in sorted(tokenizer.vocab.items()) if t not in other][:listed]
    return [{"id": i, "token": show_token(t)} for i, t in missing]
