"""Writing a 1-D NumPy `.npy` file whose length is known only at the end.

The header is written first with room for any length, data is appended as it
comes, and the header is rewritten with the real shape at the end. The file is
built under a temporary name and renamed into place (`atomic.open_atomically`),
so a reader never sees a partial array and an interrupted run leaves nothing
behind. The format is
NumPy's own (version 1.0: magic, header length, a dict, space padding); we
write it by hand only because `numpy.lib.format` needs the shape up front.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from bpeforge.formats.atomic import check_output, open_atomically

if TYPE_CHECKING:
    import numpy as np

MAGIC = b"\x93NUMPY\x01\x00"
# Magic + length + dict + padding: a multiple of 64 as NumPy asks, and a whole page, so that the data starts
# on a page boundary, where the core can append it past the page cache (`append_from_core`).
HEADER_BYTES = 4096
# The element types written, as NumPy spells them little-endian, and their sizes. Written without NumPy:
# `bpeforge encode` would otherwise import it (35 ms of a run of about half a second on a 36 MB file).
DTYPES = {"uint16": ("<u2", 2), "uint32": ("<u4", 4), "uint64": ("<u8", 8)}


def _header(descr: str, length: int) -> bytes:
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({length},), }}"
    room = HEADER_BYTES - len(MAGIC) - 2
    body = text.ljust(room - 1) + "\n"
    if len(body) != room:
        raise ValueError(f"{length} elements do not fit the .npy header")
    return MAGIC + struct.pack("<H", room) + body.encode("latin1")


class NpyWriter:
    """Append raw little-endian elements of `dtype` inside a `with` block.

    The file is built by `atomic.open_atomically`: when the block ends the
    header is rewritten with the real length and the file renamed into place;
    if it raises, nothing is left and an old `path` is untouched.
    """

    def __init__(
        self, path: str | os.PathLike[str], dtype: str, *, overwrite: bool = False, inputs: Sequence = ()
    ) -> None:
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        self.path = check_output(path, inputs=inputs, overwrite=overwrite)
        self._descr, self.itemsize = DTYPES[dtype]
        self.length = 0

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the elements (little-endian)."""
        import numpy as np

        return np.dtype(self._descr)

    def __enter__(self) -> NpyWriter:
        self._writing = open_atomically(self.path)
        self._file = self._writing.__enter__()
        self._file.write(_header(self._descr, 0))
        return self

    def write(self, data: bytes) -> None:
        """Append elements given as raw little-endian bytes."""
        if len(data) % self.itemsize:
            raise ValueError(f"{len(data)} bytes is not a whole number of {self._descr} elements")
        self._file.write(data)
        self.length += len(data) // self.itemsize

    def append_from_core(self, append: Callable[[int, int], int]) -> None:
        """Let the core append raw elements: `append(fd, offset)` writes them into the open file `fd`
        from byte `offset` on and returns how many bytes it appended."""
        self._file.flush()
        offset = HEADER_BYTES + self.length * self.itemsize
        appended = append(self._file.fileno(), offset)
        if appended % self.itemsize:
            raise ValueError(f"{appended} bytes is not a whole number of {self._descr} elements")
        self._file.seek(offset + appended)
        self.length += appended // self.itemsize

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool | None:
        if kind is None:
            try:
                self._file.seek(0)
                self._file.write(_header(self._descr, self.length))
            except BaseException as failed:
                self._writing.__exit__(type(failed), failed, failed.__traceback__)
                raise
        return self._writing.__exit__(kind, error, trace)
