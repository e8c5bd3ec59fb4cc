"""Saving and loading vocabularies as GPT-2-style `vocab.json` + `merges.txt`.

Token bytes are written through GPT-2's byte-to-unicode table, so every byte
string round-trips exactly, including tokens that are not valid UTF-8 alone.
A directory is written atomically (`bpeforge.formats.atomic`): complete files go to a
temporary sibling directory, which is then renamed into place, so a crash
never leaves a half-written vocabulary behind. `bpeforge.json` beside them records the
special tokens and the format version (see docs/format.md).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from bpeforge import _core
from bpeforge.formats.atomic import write_directory_atomically

FORMAT_VERSION = 1
VOCAB_FILE = "vocab.json"
MERGES_FILE = "merges.txt"
META_FILE = "bpeforge.json"
REPORT_FILE = "train_report.json"  # written by `bpeforge train --profile`
# What bpeforge writes in a tokenizer directory: an existing directory is
# replaced (overwrite=True, --force) only while it holds nothing else.
TOKENIZER_FILES = (VOCAB_FILE, MERGES_FILE, META_FILE, REPORT_FILE)
MERGES_HEADER = "#version: 0.2"  # GPT-2's header; HF tokenizers expects and skips it

Vocab = dict[int, bytes]
Merges = list[tuple[bytes, bytes]]
T = TypeVar("T")


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from each byte to a printable character.

    >>> bytes_to_unicode()[ord(" ")], bytes_to_unicode()[ord("a")]
    ('Ġ', 'a')
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    mapping = {b: chr(b) for b in printable}
    shifted = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + shifted)
            shifted += 1
    return mapping


def encode_token(token: bytes) -> str:
    """The GPT-2 text of `token`: each byte's char, mapped at C speed by `str.translate`."""
    return token.decode("latin-1").translate(_encode_table())


@lru_cache(maxsize=1)
def _encode_table() -> dict[int, str]:
    """`str.translate` table from the char of each byte value (latin-1) to its GPT-2 character."""
    return {b: char for b, char in bytes_to_unicode().items()}


@lru_cache(maxsize=1)
def _decode_table() -> dict[int, str]:
    """`str.translate` table: each GPT-2 byte character to the char of its byte
    value, so that `.encode("latin-1")` yields the bytes at C speed. Other
    characters up to U+00FF are sent to U+FFFF, and anything above U+00FF stays,
    so a character outside the table always fails the latin-1 encoding."""
    table = {code: "\uffff" for code in range(256)}
    table.update({ord(char): chr(b) for b, char in bytes_to_unicode().items()})
    return table


def decode_token(text: str, *, where: str = "") -> bytes:
    try:
        return text.translate(_decode_table()).encode("latin-1")
    except UnicodeEncodeError as err:
        bad = text[err.start]
        raise ValueError(f"{where}token {text!r} has {bad!r}, which is not a GPT-2 byte character") from None


def write_tokenizer_directory(
    vocab: Vocab,
    merges: Merges,
    directory: str | os.PathLike[str],
    *,
    special_tokens: list[str],
    pattern: str,
    overwrite: bool,
) -> Path:
    """Write `vocab.json`, `merges.txt` and `bpeforge.json` as `directory`, atomically.

    No checks of the contents: `bpeforge.save` checks them first (what `load`
    would refuse is refused before anything is written).
    """
    files = {
        VOCAB_FILE: _vocab_json(vocab),
        MERGES_FILE: _merges_txt(merges),
        META_FILE: _meta_json(vocab, merges, special_tokens, pattern),
    }
    return write_directory_atomically(directory, files, overwrite=overwrite, owned=TOKENIZER_FILES)


def load(directory: str | os.PathLike[str]) -> tuple[Vocab, Merges]:
    """Read a directory written by `save` (or GPT-2's own two files)."""
    directory = Path(directory)
    return load_files(directory / VOCAB_FILE, directory / MERGES_FILE)


def load_files(vocab_path: str | os.PathLike[str], merges_path: str | os.PathLike[str]) -> tuple[Vocab, Merges]:
    """`vocab.json` and `merges.txt`: parsed by the Rust core in one pass (`formats/gpt2.rs`), which
    defers anything unusual to `load_vocab` and `load_merges` here, so that every error names the file and
    line and the two readers never disagree on what a file holds."""
    with open(vocab_path, "rb") as vocab_file, open(merges_path, "rb") as merges_file:
        parsed = _core.parse_gpt2_files(vocab_file.read(), merges_file.read())
    if parsed is None:
        return load_vocab(vocab_path), load_merges(merges_path)
    pairs, merges = parsed
    return dict(pairs), merges


def load_vocab(path: str | os.PathLike[str]) -> Vocab:
    """`{token: id}` JSON. Duplicate keys are kept: two ids may share bytes."""
    pairs = read_json(path, object_pairs_hook=_JsonObject)
    if not isinstance(pairs, _JsonObject):
        raise ValueError(f"{path}: expected a JSON object mapping tokens to ids, got {type(pairs).__name__}")
    vocab: Vocab = {}
    for text, token_id in pairs:
        if not isinstance(token_id, int) or isinstance(token_id, bool) or not 0 <= token_id < 2**32:
            raise ValueError(f"{path}: token {text!r} has id {token_id!r}; ids must be integers in 0..2**32")
        if token_id in vocab:
            raise ValueError(f"{path}: id {token_id} is given to two tokens")
        vocab[token_id] = decode_token(text, where=f"{path}: ")
    return vocab


class _JsonObject(list):
    """A JSON object read as its (key, value) pairs, told apart from a JSON array."""


def read_json(path: str | os.PathLike[str], **options):
    """Parse a JSON file; every way it can be malformed is a ValueError naming the file."""
    try:
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8"), **options)
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 (byte offset {err.start})") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}:{err.lineno}: not valid JSON ({err.msg})") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply") from None


def load_merges(path: str | os.PathLike[str]) -> Merges:
    """One merge per line, `left right`; a leading `#version` line is skipped."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ValueError(f"{path}:{line}: not UTF-8 (byte offset {err.start})") from None
    lines = text.split("\n")
    start = 1 if lines and lines[0].startswith("#version") else 0
    merges: Merges = []
    for number, line in enumerate(lines[start:], start=start + 1):
        line = line.rstrip("\r")
        if not line:
            continue
        left, space, right = line.partition(" ")
        if not space or not left or not right or " " in right:
            raise ValueError(f"{path}:{number}: expected two tokens separated by one space, got {line!r}")
        where = f"{path}:{number}: "
        merges.append((decode_token(left, where=where), decode_token(right, where=where)))
    return merges


def load_meta(directory: str | os.PathLike[str]) -> dict:
    """`bpeforge.json` of a directory written by `save`; GPT-2's defaults for a bare GPT-2 directory."""
    _check_tokenizer_directory(Path(directory))
    path = Path(directory) / META_FILE
    if not path.exists():
        warnings.warn(
            f"{directory} has no {META_FILE}: loading it with no special tokens and the gpt2 pattern; if it has "
            f"special tokens or another pattern, give them (--special-token, --pattern; special_tokens=, pattern= "
            f"of Tokenizer.from_files) or save it again with bpeforge.save(..., special_tokens=..., pattern=...)",
            stacklevel=3,
        )
        return {"special_tokens": [], "pattern": "gpt2"}
    meta = read_json(path)
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(meta).__name__}")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path}: format_version {meta.get('format_version')!r}; this bpeforge reads {FORMAT_VERSION}")
    specials = meta.get("special_tokens", [])
    if not isinstance(specials, list) or not all(isinstance(t, str) and t for t in specials):
        raise ValueError(f"{path}: special_tokens must be a list of non-empty strings, got {specials!r}")
    pattern = meta.get("pattern", "gpt2")
    if not isinstance(pattern, str):
        raise ValueError(f"{path}: pattern must be a string, got {pattern!r}")
    return {"special_tokens": specials, "pattern": pattern}


def _check_tokenizer_directory(directory: Path) -> None:
    """A missing path or one without the two files is named first: before this, `load("missing")` warned that
    it had no bpeforge.json before the error that it did not exist."""
    what = (
        f"give a tokenizer directory (written by `bpeforge train` or `save`, or GPT-2's {VOCAB_FILE} and {MERGES_FILE})"
    )
    if not directory.exists():
        raise FileNotFoundError(f"{directory} does not exist; {what}")
    if not directory.is_dir():
        raise NotADirectoryError(f"{directory} is a file, not a directory; {what}")
    missing = [str(directory / name) for name in (VOCAB_FILE, MERGES_FILE) if not (directory / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{' and '.join(missing)} not found; {what}")


def load_special_tokens(directory: str | os.PathLike[str]) -> list[str]:
    """The special tokens recorded by `save` (none for a bare GPT-2 directory)."""
    return load_meta(directory)["special_tokens"]


def check_types(vocab: Vocab, merges: Merges) -> None:
    for token_id, token in vocab.items():
        if not isinstance(token_id, int) or not isinstance(token, bytes):
            raise TypeError(f"vocab must map int ids to bytes; entry {token_id!r}: {token!r} is not")
    for rank, merge in enumerate(merges):
        if len(merge) != 2 or not all(isinstance(part, bytes) for part in merge):
            raise TypeError(f"merges must be (bytes, bytes) pairs; merge {rank} is {merge!r}")


# The files are written in parts of about this many token bytes, not as one
# string: trained on one long pre-token (a file of one letter), a vocabulary
# holds hundreds of MB of tokens, and the whole text of `vocab.json`, built
# in several copies, was several times that.
PART_BYTES = 1 << 20


def _vocab_json(vocab: Vocab) -> Iterator[str]:
    # Written by hand, not json.dumps(dict): ids in order, one per line, and a
    # token text that two ids share (same bytes from two merges) is kept twice.
    yield "{\n"
    separator = ""
    for ids in _parts(sorted(vocab), lambda i: len(vocab[i])):
        if len(vocab[ids[0]]) > PART_BYTES:  # alone in its part, and written a part at a time
            yield f'{separator}  "'
            # JSON escapes character by character: the parts' escapes, end to end, are the token's.
            yield from (json.dumps(text, ensure_ascii=False)[1:-1] for text in _token_texts(vocab[ids[0]]))
            yield f'": {ids[0]}'
        else:
            quoted = _json_strings([encode_token(vocab[i]) for i in ids])
            yield separator + ",\n".join(f"  {text}: {i}" for text, i in zip(quoted, ids))
        separator = ",\n"
    yield "\n}\n"


def _token_texts(token: bytes) -> Iterator[str]:
    """The GPT-2 text of `token`, `PART_BYTES` bytes of it at a time."""
    return (encode_token(token[start : start + PART_BYTES]) for start in range(0, len(token), PART_BYTES))


def _parts(items: list[T], size: Callable[[T], int]) -> Iterator[list[T]]:
    """`items` in consecutive runs of about `PART_BYTES` by `size`; an item over it is a run alone."""
    part: list[T] = []
    total = 0
    for item in items:
        if part and total + size(item) > PART_BYTES:
            yield part
            part, total = [], 0
        part.append(item)
        total += size(item)
    if part:
        yield part


def _json_strings(texts: list[str]) -> list[str]:
    """Each text as a JSON string literal, from one `json.dumps` call (one per
    text cost half the time of writing a 32k vocabulary). With indent=0 the
    items are separated by ",\n", which cannot occur inside an item: a newline
    in a string is escaped."""
    if not texts:
        return []
    return json.dumps(texts, ensure_ascii=False, indent=0)[2:-2].split(",\n")


def _merges_txt(merges: Merges) -> Iterator[str]:
    yield MERGES_HEADER + "\n"
    for part in _parts(merges, lambda merge: len(merge[0]) + len(merge[1])):
        if len(part) == 1:  # perhaps a merge of huge tokens: written a part at a time
            left, right = part[0]
            yield from _token_texts(left)
            yield " "
            yield from _token_texts(right)
            yield "\n"
        else:
            yield "".join(f"{encode_token(left)} {encode_token(right)}\n" for left, right in part)


def _meta_json(vocab: Vocab, merges: Merges, special_tokens: list[str], pattern: str) -> str:
    meta = {
        "format": "bpeforge-gpt2",
        "format_version": FORMAT_VERSION,
        "pattern": pattern,
        "vocab_size": len(vocab),
        "num_merges": len(merges),
        "special_tokens": special_tokens,
    }
    return json.dumps(meta, indent=2, ensure_ascii=False) + "\n"
