"""Writing a 1-D NumPy `.npy` file whose length is known only at the end.

The header is written first with room for any length, data is appended as it
comes, and the header is rewritten with the real shape on close. The file is
built under a temporary name and renamed into place, so a reader never sees a
partial array and an interrupted run leaves nothing behind. The format is
NumPy's own (version 1.0: magic, header length, a dict, space padding); we
write it by hand only because `numpy.lib.format` needs the shape up front.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from types import TracebackType

import numpy as np

from bpeforge.outputs import check_output, remove_stale_temporaries, temporary_sibling

MAGIC = b"\x93NUMPY\x01\x00"
HEADER_BYTES = 128  # magic + length + dict + padding, a multiple of 64 as NumPy asks


def _header(dtype: np.dtype, length: int) -> bytes:
    text = f"{{'descr': '{dtype.str}', 'fortran_order': False, 'shape': ({length},), }}"
    room = HEADER_BYTES - len(MAGIC) - 2
    body = text.ljust(room - 1) + "\n"
    if len(body) != room:
        raise ValueError(f"{length} elements do not fit the .npy header")
    return MAGIC + struct.pack("<H", room) + body.encode("latin1")


class NpyWriter:
    """Append raw little-endian elements of `dtype`; `close()` commits the file."""

    def __init__(
        self, path: str | os.PathLike[str], dtype: str, *, overwrite: bool = False, inputs: Sequence = ()
    ) -> None:
        self.path = check_output(path, inputs=inputs, overwrite=overwrite)
        self.dtype = np.dtype(dtype).newbyteorder("<")
        remove_stale_temporaries(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._temp = temporary_sibling(self.path)
        try:
            fd = os.open(self._temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as err:
            raise OSError(err.errno, f"cannot write {self.path}: {err.strerror}", os.fspath(self.path)) from None
        self._file = os.fdopen(fd, "wb")
        self._file.write(_header(self.dtype, 0))
        self.length = 0

    def write(self, data: bytes) -> None:
        """Append elements given as raw little-endian bytes."""
        if len(data) % self.dtype.itemsize:
            raise ValueError(f"{len(data)} bytes is not a whole number of {self.dtype} elements")
        self._file.write(data)
        self.length += len(data) // self.dtype.itemsize

    def close(self) -> None:
        self._file.seek(0)
        self._file.write(_header(self.dtype, self.length))
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        os.replace(self._temp, self.path)

    def abort(self) -> None:
        self._file.close()
        self._temp.unlink(missing_ok=True)

    def __enter__(self) -> NpyWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()
