"""A headerless little-endian array of ids: nanoGPT's `train.bin` (`data/openwebtext/prepare.py`: uint16,
`<|endoftext|>` after each document, read with `np.memmap(path, dtype=np.uint16, mode='r')`) and OLMo's
token files (a raw 1-D array named `.npy` without a NumPy header, EOS after each document, read with
`np.memmap`). Written atomically as one file; standard output takes it too."""

from __future__ import annotations

import os
from collections.abc import Iterable
from types import TracebackType

from bpeforge.formats.atomic import check_output, open_atomically
from bpeforge.formats.token_files.data_file import IdFile
from bpeforge.formats.token_files.documents import AFTER
from bpeforge.formats.token_files.writer import IdFileWriter


class FlatWriter(IdFileWriter):
    placement = AFTER

    def __init__(
        self,
        output: str | os.PathLike[str],
        dtype: str,
        itemsize: int,
        separator: int | None,
        *,
        overwrite: bool,
        inputs: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        super().__init__(dtype, itemsize, separator, overwrite=overwrite, inputs=inputs)
        self.path = check_output(output, inputs=self._inputs, overwrite=overwrite)

    def __enter__(self) -> FlatWriter:
        self._writing = open_atomically(self.path)
        self._ids = IdFile(self._writing.__enter__(), self.itemsize, name=self.path)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool | None:
        return self._writing.__exit__(kind, error, trace)
