"""Megatron-LM's indexed dataset: `PREFIX.bin` (the ids) and `PREFIX.idx`, as
`megatron/core/datasets/indexed_dataset.py` writes them (`IndexedDatasetBuilder` + `_IndexWriter`) and
`IndexedDataset(PREFIX)` reads them.

`.idx`: magic `MMIDIDX\\x00\\x00`, u64 version 1, u8 dtype code (8 uint16, 4 int32), u64 sequence count N,
u64 document-index count D + 1, int32[N] sequence lengths, int64[N] byte offsets of the sequences in `.bin`,
int64[D + 1] document indices (0, then the sequence count at each document's end). As
`tools/preprocess_data.py` without sentence splitting, each document is one sequence, EOD (`--append-eod`,
here the separator) ends each document that has tokens, and an empty document adds no sequence but still
ends a document. The lengths and document ends are spilled to unnamed temporary files as they come, so the
index of any number of documents is written in bounded memory.
"""

from __future__ import annotations

import itertools
import os
import struct
import tempfile
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from bpeforge.formats.token_files.data_file import IdFile
from bpeforge.formats.token_files.documents import AFTER_NONEMPTY
from bpeforge.formats.token_files.staging import prefix_atomically
from bpeforge.formats.token_files.writer import IdFileWriter

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
DTYPE_CODES = {"uint16": 8, "int32": 4}  # megatron.core.datasets.indexed_dataset.DType
_BLOCK = 1 << 20  # entries copied at a time when the index is assembled


class MegatronWriter(IdFileWriter):
    placement = AFTER_NONEMPTY

    def __init__(
        self,
        prefix: str | os.PathLike[str],
        dtype: str,
        itemsize: int,
        separator: int | None,
        *,
        overwrite: bool,
        inputs: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        super().__init__(dtype, itemsize, separator, overwrite=overwrite, inputs=inputs)
        if dtype not in DTYPE_CODES:
            raise ValueError(f"Megatron's indexed dataset stores uint16 or int32 ids, not {dtype}")
        self.prefix = Path(prefix)
        self.sequences = 0
        self.documents = 0

    def __enter__(self) -> MegatronWriter:
        parent = self.prefix.parent
        self._writing = prefix_atomically(self.prefix, ".bin", ".idx", overwrite=self._overwrite, inputs=self._inputs)
        data, self._index = self._writing.__enter__()
        self._ids = IdFile(data, self.itemsize, name=Path(f"{self.prefix}.bin"))
        try:
            # Unnamed temporaries beside the output: nothing is left behind whatever happens.
            self._lengths = tempfile.TemporaryFile(dir=parent if parent.is_dir() else None)
            self._ends = tempfile.TemporaryFile(dir=parent if parent.is_dir() else None)
        except BaseException as failed:
            self._writing.__exit__(type(failed), failed, failed.__traceback__)
            raise
        return self

    def _end_document(self, length: int) -> None:
        self._check_length(length)
        if length:
            self._lengths.write(struct.pack("<i", length))
            self.sequences += 1
        self._ends.write(struct.pack("<q", self.sequences))
        self.documents += 1

    def _check_length(self, length: int) -> None:
        if length >= 1 << 31:
            raise ValueError(
                f"{self.prefix}.bin: a document of {length:,} ids; Megatron's int32 sequence lengths hold fewer "
                "than 2**31"
            )

    def _end_documents(self, lengths) -> None:
        import numpy as np

        lengths = np.asarray(lengths, dtype=np.int64)
        if lengths.size:
            self._check_length(int(lengths.max()))
        sequences = lengths[lengths > 0]
        self._lengths.write(sequences.astype("<i4").tobytes())
        self._ends.write((self.sequences + np.cumsum(lengths > 0, dtype=np.int64)).astype("<i8").tobytes())
        self.sequences += len(sequences)
        self.documents += len(lengths)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool | None:
        try:
            if kind is None:
                self._write_index(self._index)
        except BaseException as failed:
            kind, error, trace = type(failed), failed, failed.__traceback__
            raise
        finally:
            self._lengths.close()
            self._ends.close()
            self._writing.__exit__(kind, error, trace)
        return None

    def _write_index(self, out: BinaryIO) -> None:
        out.write(MAGIC + struct.pack("<Q", VERSION) + struct.pack("<B", DTYPE_CODES[self.dtype]))
        out.write(struct.pack("<Q", self.sequences) + struct.pack("<Q", self.documents + 1))
        self._copy(self._lengths, out)
        # Byte offsets: where each sequence starts in .bin, the running sum of the lengths before it.
        self._lengths.seek(0)
        start = 0
        while block := self._lengths.read(_BLOCK * 4):
            start = _write_offsets(block, self.itemsize, start, out)
        out.write(struct.pack("<q", 0))  # the document indices start at 0
        self._copy(self._ends, out)

    @staticmethod
    def _copy(spill: BinaryIO, out: BinaryIO) -> None:
        spill.flush()
        spill.seek(0)
        while block := spill.read(_BLOCK * 8):
            out.write(block)


def _write_offsets(block: bytes, itemsize: int, start: int, out: BinaryIO) -> int:
    """The byte offsets of the sequences whose int32 lengths are `block`, the first at `start`; returns where
    the next one starts. NumPy only for many: text files alone are a few sequences."""
    if len(block) <= 4 * 1024:
        lengths = struct.unpack(f"<{len(block) // 4}i", block)
        offsets = list(itertools.accumulate((length * itemsize for length in lengths[:-1]), initial=start))
        out.write(struct.pack(f"<{len(offsets)}q", *offsets))
        return offsets[-1] + lengths[-1] * itemsize
    import numpy as np

    sizes = np.frombuffer(block, dtype="<i4").astype(np.int64) * itemsize
    ends = np.cumsum(sizes) + start
    out.write((ends - sizes).astype("<i8").tobytes())
    return int(ends[-1])
