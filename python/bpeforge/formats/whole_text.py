"""A text file as one document: what a tokenizer.json pipeline encodes (nothing says where it may cut one)."""

from __future__ import annotations

import os
from pathlib import Path

from bpeforge import _core

READ_BYTES = 1 << 20


def whole_text(path: Path) -> str:
    """A (possibly compressed) text file as one document, read through the core's decoders; invalid UTF-8 is
    refused naming the file and the byte offset."""
    reader = _core.InputReader(os.fspath(path))
    data = bytearray()
    while block := reader.read(READ_BYTES):
        data += block
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{path}: not UTF-8 at byte {err.start} (decompressed): a text file must be UTF-8; "
            "convert it (iconv -f ENCODING -t UTF-8) or fix the bytes there"
        ) from None
