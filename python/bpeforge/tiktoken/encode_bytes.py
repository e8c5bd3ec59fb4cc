"""tiktoken's `Encoding._encode_bytes`: ids for bytes that may not be UTF-8.

The pre-tokenizer works on text, so only the valid UTF-8 prefix is split and
encoded. The bytes after it are joined to the tokens of the prefix's last piece
(and of the whitespace-only tokens just before it, whose split may change once
more text follows: cl100k's `\\s*[\\r\\n]+` turns "\\n" + " " into "\\n \\n"), and that
tail is encoded by merges alone: as a model would see truncated UTF-8.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bpeforge import _core

if TYPE_CHECKING:
    from bpeforge.tiktoken.encoding import Encoding

_SPACE = frozenset(b" \n\t")


def encode_bytes(enc: Encoding, data: bytes) -> list[int]:
    try:
        return enc.encode_ordinary(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        valid = err.start
    prefix = data[:valid].decode("utf-8")
    tokens = enc.encode_ordinary(prefix)
    unstable = _unstable_token_count(enc, prefix, tokens)
    tail = enc.decode_bytes(tokens[len(tokens) - unstable :]) + data[valid:]
    del tokens[len(tokens) - unstable :]
    if tail in enc._mergeable_ranks:
        tokens.append(enc._mergeable_ranks[tail])
    else:
        tokens.extend(enc._core.encode_piece(tail))
    return tokens


def _unstable_token_count(enc: Encoding, prefix: str, tokens: list[int]) -> int:
    """The tokens of the last piece of `prefix`, and of the all-whitespace tokens before it when it is one."""
    if not prefix:
        return 0
    last_piece = _core.pretokenize(prefix, enc._core.pattern)[-1]
    count = len(enc._core.encode_piece(last_piece.encode("utf-8")))

    def all_space(token: int) -> bool:
        return all(byte in _SPACE for byte in enc.decode_single_token_bytes(token))

    if count and all_space(tokens[-count]):
        while count < len(tokens) and all_space(tokens[-count - 1]):
            count += 1
    return count
