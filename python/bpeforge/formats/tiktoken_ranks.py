"""tiktoken ranks files (`save_tiktoken`, `load_tiktoken`): one `base64(token) rank` line per token.

One line per token, `base64(token bytes) rank`, in rank order, as
`tiktoken.load.load_tiktoken_bpe` reads. The rank is the bpeforge id. Special
tokens are not in the file (tiktoken keeps them apart): give them to
`tiktoken.Encoding(..., special_tokens={token: id})`, and to
`load_tiktoken(path, special_tokens=...)` to get them back; `tiktoken_special_tokens`
gives the dict, and refuses a special token that is a prefix of another:
tiktoken does not match special tokens longest first (it tries them in
hash-map order). Note that `tiktoken.load.load_tiktoken_bpe` caches files by path:
set `TIKTOKEN_CACHE_DIR=""` when a file is rewritten in place.

tiktoken has no merge list: it merges the adjacent pair whose concatenation has
the lowest rank. That matches bpeforge's merges only when ranks follow merge
order, so `save_tiktoken` requires: every ordinary token is one of the 256 bytes
or the result of a merge, no two ids share bytes, merge results have
increasing ids in merge order, and the merges recovered from the ranks (below)
are exactly the tokenizer's. GPT-2 passes, and so does training output (ids
`256 + rank`) unless two of its merges spell the same bytes. The tests compare
tiktoken's ids with bpeforge's on generated text for both.

`load_tiktoken` recovers the merges as tiktoken's own loaders do: for each token
of more than one byte, in rank order, BPE over its bytes using only tokens of
lower rank must leave exactly two parts; they are its merge.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import lzma
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from bpeforge import _core
from bpeforge.formats.atomic import check_output, open_atomically
from bpeforge.formats.parts import Merges, PathLike, TokenizerParts, check_unique_bytes, ordinary_tokens, special_ids
from bpeforge.formats.shipped_merges import shipped_merges, shipped_rank_file

if TYPE_CHECKING:
    from bpeforge.tokenizer import Tokenizer


def save_tiktoken(tokenizer: Tokenizer, path: PathLike, *, overwrite: bool = False) -> Path:
    """Write the ordinary tokens of `tokenizer` as a tiktoken ranks file (rank = id).

    Special tokens are not written (tiktoken keeps them apart: pass
    `special_tokens=tiktoken_special_tokens(tokenizer)` to `tiktoken.Encoding`,
    and `special_tokens=` to `load_tiktoken`). Raises ValueError when tiktoken, which merges by the
    rank of the merged token, would encode differently (see the module docstring).
    A name ending in `.gz`, `.xz` or `.zst` is written compressed so, as `load_tiktoken` reads it
    (tiktoken itself reads only plain files).
    """
    ranks = tiktoken_ranks(tokenizer)
    text = "".join(f"{base64.b64encode(token).decode('ascii')} {rank}\n" for token, rank in ranks.items())
    path = check_output(path, overwrite=overwrite)
    with open_atomically(path) as f:
        f.write(_compressed_as_named(path, text.encode("ascii")))
    return path


def _compressed_as_named(path: Path, data: bytes) -> bytes:
    """`data` compressed as the suffix of `path` says (no timestamp in a .gz: the same tokenizer gives the
    same bytes); plain for any other name. A `.tiktoken.gz` was written as plain text under that name."""
    suffix = path.suffix.lower()
    if suffix == ".gz":
        return gzip.compress(data, mtime=0)
    if suffix == ".xz":
        return lzma.compress(data)
    if suffix == ".zst":
        try:
            import zstandard
        except ImportError:
            raise ImportError(
                f"{path}: writing a .zst file needs the zstandard package (pip install zstandard); "
                "or give a .tiktoken, .gz or .xz name"
            ) from None
        return zstandard.ZstdCompressor().compress(data)
    return data


def tiktoken_ranks(tokenizer: Tokenizer) -> dict[bytes, int]:
    """The `mergeable_ranks` of a tiktoken encoding with the ids of `tokenizer`, in rank order.

    Raises ValueError if tiktoken would encode differently with them.
    """
    ordinary = ordinary_tokens(tokenizer)
    specials = set(special_ids(tokenizer).values())
    vocab = {i: token for i, token in tokenizer.vocab.items() if i not in specials or token in ordinary}
    check_unique_bytes(vocab, "tiktoken has one rank per token", "as tiktoken ranks")
    for token_id in sorted(vocab):
        if vocab[token_id] not in ordinary:
            raise ValueError(
                f"token {vocab[token_id]!r} (id {token_id}) is neither a byte nor made by a merge, so bpeforge never "
                "produces it, but tiktoken would; drop it from the vocab or make it a special token"
            )
    ranks = {vocab[i]: i for i in sorted(vocab)}
    _check_merge_order(tokenizer.merges, ranks)
    _check_recovered_merges(tokenizer.merges, merges_from_ranks(ranks))
    return ranks


def tiktoken_special_tokens(tokenizer: Tokenizer) -> dict[str, int]:
    """The `special_tokens` argument of `tiktoken.Encoding` for `tokenizer`.

    Raises ValueError when one special token is a prefix of another: tiktoken
    then matches whichever its hash map lists first, not the longest as
    bpeforge and HF do, so some texts would get other ids.
    """
    specials = special_ids(tokenizer)
    for short in specials:
        for long in specials:
            if short != long and long.startswith(short):
                raise ValueError(
                    f"special token {short!r} is a prefix of {long!r}; tiktoken does not match special tokens longest "
                    f"first, so it may encode {long!r} as {short!r} and text. Pass tiktoken only one of them"
                )
    return specials


def _check_merge_order(merges: Merges, ranks: dict[bytes, int]) -> None:
    made_by: dict[bytes, int] = {}
    previous = -1
    for rank, (left, right) in enumerate(merges):
        token_id = ranks[left + right]
        if left + right in made_by:
            raise ValueError(
                f"merges {made_by[left + right]} and {rank} both make {left + right!r}; tiktoken has one rank per "
                "token, so this tokenizer cannot be exported as tiktoken ranks"
            )
        made_by[left + right] = rank
        if token_id <= previous:
            raise ValueError(
                f"merge {rank} ({left!r} + {right!r}) makes id {token_id}, not above the id {previous} of the "
                "merge before it; tiktoken applies merges in the order of their ids, so renumber the merge results "
                "in merge order (as training does: 256 + rank)"
            )
        previous = token_id


def _check_recovered_merges(merges: Merges, recovered: Merges) -> None:
    for rank, (ours, theirs) in enumerate(zip(merges, recovered)):
        if ours != theirs:
            raise ValueError(
                f"merge {rank} is {ours[0]!r} + {ours[1]!r}, but tiktoken, which merges by the rank of the merged "
                f"token, would build {ours[0] + ours[1]!r} from {theirs[0]!r} + {theirs[1]!r}; this tokenizer cannot "
                "be exported as tiktoken ranks"
            )


def load_tiktoken(
    path: PathLike,
    pattern: str = "gpt2",
    special_tokens: Iterable[str] | Mapping[str, int] | None = None,
) -> TokenizerParts:
    """Load a tiktoken ranks file: ids are the ranks, merges are recovered from them.

    A ranks file holds no special tokens: pass them as a list (appended after
    the largest rank, in order) or as `{token: id}` (tiktoken's
    `special_tokens`, e.g. `{"<|endoftext|>": 50256}`). A ranks file holds
    no pattern either: `pattern` is a preset ("gpt2", "cl100k", "o200k", "llama3", "qwen2") or
    the encoding's regex.
    """
    return load_tiktoken_bytes(file_bytes(path), path, pattern, special_tokens)


def load_tiktoken_bytes(
    data: bytes, path: PathLike, pattern: str, special_tokens: Iterable[str] | Mapping[str, int] | None
) -> TokenizerParts:
    """`load_tiktoken` of the file's bytes, read once (`path` names it in errors)."""
    ranks = read_ranks_bytes(data, path)
    vocab = dict(zip(ranks.values(), ranks))  # in C: 4 ms for o200k, against 15 for a comprehension
    names = _place_specials(vocab, ranks, special_tokens, path)
    shipped = shipped_rank_file(data)  # 8 ms of hashing o200k's file, against 0.2 s of recovering its merges
    try:
        merges = shipped_merges(shipped, ranks) if shipped else merges_from_ranks(ranks)
    except ValueError as err:  # a token that no two lower ranks make
        raise ValueError(f"{path}: {err}") from None
    return TokenizerParts(vocab, merges, names, pattern)


def read_tiktoken_ranks(path: PathLike) -> dict[bytes, int]:
    """`{token bytes: rank}` from a `.tiktoken` file, in rank order, with line numbers in errors.

    The Rust core reads a well-formed file in one pass (`formats/tiktoken.rs`); anything unusual it
    defers to the reader below, which decides and names the line. A `.gz`, `.xz` or `.zst` file is
    read decompressed, as corpora are."""
    return read_ranks_bytes(file_bytes(path), path)


def read_ranks_bytes(data: bytes, path: PathLike) -> dict[bytes, int]:
    """`read_tiktoken_ranks` of the file's bytes, read once (`path` names it in errors)."""
    parsed = _core.parse_rank_file(data)
    return dict(parsed) if parsed is not None else _rank_lines(data, path)


_READ_BYTES = 1 << 20


def file_bytes(path: PathLike) -> bytes:
    """The file's bytes, decompressed by the core's reader when its name says so, as corpora are
    (`.tiktoken.gz` is how rank files are often kept: read as they are, one failed on its first line with
    gzip's header quoted as the token)."""
    reader = _core.InputReader(os.fspath(path))
    return b"".join(iter(lambda: reader.read(_READ_BYTES), b""))


def read_rank_lines(path: PathLike) -> dict[bytes, int]:
    """The reference reader of `.tiktoken` files, a line at a time: what it accepts is a rank file, and
    every way a file can be wrong is a ValueError naming the line."""
    return _rank_lines(file_bytes(path), path)


def _rank_lines(data: bytes, path: PathLike) -> dict[bytes, int]:
    """`read_rank_lines` on the file's bytes, read once (`path` names it in errors)."""
    ranks: dict[bytes, int] = {}
    seen_ranks: dict[int, int] = {}
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        token, rank = _parse_rank_line(line, f"{path}:{number}: ")
        if token in ranks or rank in seen_ranks:
            what = f"token {token!r}" if token in ranks else f"rank {rank}"
            raise ValueError(f"{path}:{number}: {what} was already given on an earlier line")
        ranks[token] = rank
        seen_ranks[rank] = number
    return dict(sorted(ranks.items(), key=lambda item: item[1]))


def _parse_rank_line(line: bytes, where: str) -> tuple[bytes, int]:
    fields = line.split()
    try:
        if len(fields) != 2:
            raise ValueError
        token, rank = base64.b64decode(fields[0], validate=True), int(fields[1])
    except (ValueError, binascii.Error):
        raise ValueError(f"{where}expected 'base64 rank', got {line.decode('utf-8', 'replace').strip()!r}") from None
    if rank < 0 or not token:
        raise ValueError(f"{where}expected a non-empty token and a rank >= 0, got {token!r} {rank}")
    return token, rank


def _place_specials(
    vocab: dict[int, bytes],
    ranks: Mapping[bytes, int],
    special_tokens: Iterable[str] | Mapping[str, int] | None,
    path: PathLike,
) -> list[str]:
    """Put special tokens given with ids into `vocab`; the names in order (a list is appended by Tokenizer)."""
    if not isinstance(special_tokens, Mapping):
        return list(special_tokens or [])
    for token, token_id in special_tokens.items():
        encoded = token.encode("utf-8")
        if token_id in vocab and vocab[token_id] != encoded:
            raise ValueError(
                f"special token {token!r} has id {token_id}, which {path} already gives to {vocab[token_id]!r}"
            )
        if ranks.get(encoded, token_id) != token_id:
            raise ValueError(
                f"special token {token!r} is also the token of rank {ranks[encoded]} in {path}, and bpeforge finds a "
                f"special token by its bytes; give it id {ranks[encoded]}, not {token_id}"
            )
        vocab[token_id] = encoded
    return list(special_tokens)


def merges_from_ranks(ranks: Mapping[bytes, int]) -> Merges:
    """The merges that tiktoken's ranks imply, in rank order.

    For each token of more than one byte, by rank, BPE over its bytes with only
    lower-ranked tokens must stop at exactly two parts: they are its merge.
    Recovered in the Rust core, in parallel (`formats/rank_merges.rs`).

    >>> ranks = {bytes([b]): b for b in range(256)} | {b"or": 256, b" w": 257, b" wor": 258}
    >>> merges_from_ranks(ranks)
    [(b'o', b'r'), (b' ', b'w'), (b' w', b'or')]
    """
    if ranks and not (min(ranks.values()) >= 0 and max(ranks.values()) < 2**32):
        # ids are 32-bit: the Rust core takes ranks as u32
        too_large = next(rank for rank in ranks.values() if not 0 <= rank < 2**32)
        raise ValueError(f"rank {too_large} is out of range: ranks are token ids, integers in 0..2**32")
    return _core.merges_from_ranks(list(ranks.items()))
