"""An open file of little-endian ids that grows at its end: by bytes written here, or by the core.

The core appends a text file's ids straight into the open descriptor (`encode_files_to_fd`), past the page
cache where the offset is on a page boundary; Python writes the ids of records and separators. `header`
bytes at the start are left for a header written when the length is known.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

# The core appends ids from a given offset in the file: `append(fd, offset)` returns the bytes it appended.
CoreAppend = Callable[[int, int], int]


class IdFile:
    def __init__(self, file: BinaryIO, itemsize: int, header: int = 0, name: Path | None = None) -> None:
        self.file, self.itemsize, self.header = file, itemsize, header
        self.name = name  # the user's path, for errors
        self.tokens = 0
        if header:
            file.write(bytes(header))

    def write(self, data: bytes) -> None:
        """Append ids given as raw little-endian bytes."""
        self.file.write(data)
        self.tokens += len(data) // self.itemsize

    def append_from_core(self, append: CoreAppend) -> int:
        """Let the core append ids; returns how many it appended."""
        self.file.flush()
        offset = self.header + self.tokens * self.itemsize
        appended = append(self.file.fileno(), offset)
        if appended % self.itemsize:
            raise ValueError(f"{appended} bytes is not a whole number of {self.itemsize}-byte ids")
        self.file.seek(offset + appended)
        self.tokens += appended // self.itemsize
        return appended // self.itemsize

    def read_ids(self, start: int, count: int) -> bytes:
        """`count` ids from id `start` on, read back (to move the tail of a shard into the next)."""
        self.file.flush()
        return os.pread(self.file.fileno(), count * self.itemsize, self.header + start * self.itemsize)

    def truncate(self, tokens: int) -> None:
        """Keep only the first `tokens` ids."""
        self.file.flush()
        self.file.truncate(self.header + tokens * self.itemsize)
        self.file.seek(self.header + tokens * self.itemsize)
        self.tokens = tokens

    def write_header(self, header: bytes) -> None:
        if len(header) != self.header:
            raise ValueError(f"a header of {len(header)} bytes in room for {self.header}")
        self.file.flush()
        os.pwrite(self.file.fileno(), header, 0)

    def finish(self) -> None:
        """Flush and sync: the file is complete on disk before it is renamed into place."""
        self.file.flush()
        os.fsync(self.file.fileno())
