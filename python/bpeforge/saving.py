"""`save`: a trained vocabulary and its merges written as a tokenizer directory (`vocab.json`, `merges.txt`,
`bpeforge.json`), after the checks `load` would make. It builds the `Tokenizer` that `load` would build, so it
sits above `tokenizer`; the files themselves are written by `formats.gpt2`, beside the other writers."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from bpeforge.formats import gpt2
from bpeforge.patterns import normalize_pattern
from bpeforge.tokenizer import Tokenizer
from bpeforge.vocabulary import unique_specials


def save(
    vocab: dict[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    directory: str | os.PathLike[str],
    *,
    special_tokens: Iterable[str] | None = None,
    overwrite: bool = False,
    pattern: str | None = None,
) -> Path:
    """Write `vocab.json`, `merges.txt` and `bpeforge.json` into `directory`, atomically.

    What `load` would refuse is refused here, before anything is written.
    `special_tokens` and `pattern` default to what the vocab was trained with
    (a vocab from `train_bpe`/`train` remembers them); for a plain dict, the
    special tokens default to its tokens that are neither bytes nor merges,
    and the pattern to "gpt2". An existing directory is replaced only with
    `overwrite=True`, and only while it holds nothing but bpeforge's files.
    """
    if isinstance(vocab, tuple) and len(vocab) == 2:
        raise TypeError("save takes vocab and merges as two arguments: save(vocab, merges, directory)")
    if not isinstance(vocab, dict):
        raise TypeError(f"vocab must be a dict of int ids to bytes, got {type(vocab).__name__}")
    merges = list(merges)
    gpt2.check_types(vocab, merges)
    specials = _specials_to_save(vocab, merges, special_tokens)
    pattern = _pattern_to_save(vocab, pattern)
    tokenizer = Tokenizer(vocab, merges, specials, pattern=pattern)  # what load will build: checks it all
    return gpt2.write_tokenizer_directory(
        vocab, tokenizer.merges, directory, special_tokens=specials, pattern=tokenizer.pattern, overwrite=overwrite
    )


def _specials_to_save(vocab: dict, merges: list, special_tokens: Iterable[str] | None) -> list[str]:
    if special_tokens is not None:
        return unique_specials(special_tokens)
    recorded = getattr(vocab, "special_tokens", None)
    if recorded is not None:
        return list(recorded)
    produced = {bytes([b]) for b in range(256)} | {bytes(left) + bytes(right) for left, right in merges}
    extra = [token for _, token in sorted(vocab.items()) if token not in produced]
    try:
        return [token.decode("utf-8") for token in extra]
    except (UnicodeDecodeError, AttributeError):
        raise ValueError(
            f"vocab has {len(extra)} tokens that are neither bytes nor merges, and not all are UTF-8 text, so "
            f"they cannot be special tokens: pass special_tokens=[...] (or [] for none) to say which are"
        ) from None


def _pattern_to_save(vocab: dict, pattern: str | None) -> str:
    recorded = getattr(vocab, "pattern", None)
    if pattern is None:
        return recorded or "gpt2"
    pattern = normalize_pattern(pattern)
    if recorded is not None and pattern != recorded:
        raise ValueError(
            f"the vocab was trained with pattern {recorded!r}, not {pattern!r}: saving it with another pattern "
            f"would encode differently from how it was trained; leave pattern out"
        )
    return pattern
