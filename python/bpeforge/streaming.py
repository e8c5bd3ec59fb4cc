"""Cutting a stream of text into chunks that encode independently.

A chunk ends where more text cannot change the ids before it: after a special
token, or before whitespace that follows a non-space character, never inside
a pre-token or a special token (the Rust core decides, see docs/design.md).
`encode_iterable` streams through here, so its memory is bounded by the chunk
size, not by the input. (`bpeforge encode` cuts files the same way, in Rust.)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from bpeforge import _core


def stable_chunks(encoder: _core.Encoder, pieces: Iterable[str], min_chars: int) -> Iterator[str]:
    """Re-cut `pieces` into chunks of at least about `min_chars` (the last may be shorter)."""
    pending: list[str] = []
    pending_chars = 0
    threshold = min_chars
    for piece in pieces:
        if not isinstance(piece, str):
            raise TypeError(f"expected str pieces, got {type(piece).__name__}; decode bytes to str first")
        pending.append(piece)
        pending_chars += len(piece)
        if pending_chars < threshold:
            continue
        text = "".join(pending)
        cut = encoder.stable_prefix_len(text)
        if cut:
            yield text[:cut]
        rest = text[cut:]
        pending, pending_chars = [rest], len(rest)
        # With no stable point yet (one giant word), wait for twice as much
        # before looking again, so the scanning stays linear overall.
        threshold = min_chars if cut else 2 * pending_chars
    rest = "".join(pending)
    if rest:
        yield rest
