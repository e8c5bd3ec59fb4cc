"""datatrove's tokenized files, as `pipeline/tokens/tokenizer.py` (`TokenizedFile`) writes them and
`DatatroveFolderDataset(folder)` reads them: in a folder, `00000_unshuffled.ds` (little-endian uint16 ids,
uint32 with `token_size=4`), `.ds.index` (uint64: each document's end, counted in ids from the file's start)
and `.ds.metadata` (`tokenizer|token_size`, the id count, the count in short). The EOS token (the separator)
follows each document, an empty one too, as its post-processor adds it.

With `shard_tokens` a new file starts once one holds more than that many ids, at a document's end, as
datatrove's `max_tokens_per_file` splits: `00000_00000_unshuffled.ds`, `00000_00001_unshuffled.ds`, ...
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from bpeforge.formats.token_files.data_file import CoreAppend, IdFile
from bpeforge.formats.token_files.documents import AFTER
from bpeforge.formats.token_files.staging import folder_atomically
from bpeforge.formats.token_files.writer import IdFileWriter

NAMES = r"00000_(?:[0-9]{5}_)?unshuffled\.ds(?:\.index|\.metadata)?"


def shard_name(shard: int | None) -> str:
    return "00000_unshuffled.ds" if shard is None else f"00000_{shard:05d}_unshuffled.ds"


class DatatroveWriter(IdFileWriter):
    placement = AFTER

    def __init__(
        self,
        directory: str | os.PathLike[str],
        dtype: str,
        itemsize: int,
        separator: int | None,
        *,
        shard_tokens: int | None = None,
        tokenizer_name: str = "bpeforge",
        overwrite: bool,
        inputs: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        super().__init__(dtype, itemsize, separator, overwrite=overwrite, inputs=inputs)
        self.directory, self.limit, self.tokenizer_name = Path(directory), shard_tokens, tokenizer_name
        self.shards = 0

    def __enter__(self) -> DatatroveWriter:
        self._writing = folder_atomically(self.directory, names=NAMES, overwrite=self._overwrite, inputs=self._inputs)
        self._folder = self._writing.__enter__()
        self._open_shard()
        return self

    def _open_shard(self) -> None:
        name = shard_name(None if self.limit is None else self.shards)
        self._name = name
        self._ids = IdFile(open(self._folder / name, "wb"), self.itemsize, name=self.directory / name)  # noqa: SIM115
        self._index: BinaryIO = open(self._folder / f"{name}.index", "wb")  # noqa: SIM115
        self.shards += 1

    def _close_shard(self) -> None:
        self._ids.finish()
        self._ids.file.close()
        self._index.flush()
        os.fsync(self._index.fileno())
        self._index.close()
        tokens = self._ids.tokens
        metadata = f"{self.tokenizer_name}|{self.itemsize}\n{tokens}\n{_short_count(tokens)}T"
        with open(self._folder / f"{self._name}.metadata", "w", encoding="utf-8") as f:
            f.write(metadata)
            f.flush()
            os.fsync(f.fileno())

    def _roll_over_when_full(self) -> None:
        if self.limit is not None and self._ids.tokens > self.limit:
            self._close_shard()
            self._open_shard()

    def add_document_from_core(self, append: CoreAppend) -> None:
        self._roll_over_when_full()
        super().add_document_from_core(append)

    def add_documents(self, ids, offsets) -> None:
        """A batch split where a shard fills: each part goes to the shard it belongs to."""
        import numpy as np

        first = 0
        while first < len(offsets) - 1:
            self._roll_over_when_full()
            last = len(offsets) - 1
            if self.limit is not None:
                room = self.limit - self._ids.tokens  # documents go in until the file holds more than the limit
                ends = offsets[first + 1 :] - offsets[first] + self._separated_lengths_before(first, offsets)
                last = min(first + 1 + int(np.searchsorted(ends, room, side="right")), last)
            part = offsets[first : last + 1]
            super().add_documents(ids[part[0] : part[-1]], part - part[0])
            first = last

    def _separated_lengths_before(self, first: int, offsets):
        """How many separators the documents from `first` on carry up to each one's end."""
        import numpy as np

        count = np.arange(1, len(offsets) - first)
        return count if self.separator is not None else 0

    def _end_document(self, length: int) -> None:
        self._index.write(struct.pack("<Q", self._ids.tokens))

    def _end_documents(self, lengths) -> None:
        import numpy as np

        ends = self._ids.tokens - int(np.sum(lengths)) + np.cumsum(lengths, dtype=np.int64)
        self._index.write(np.asarray(ends, dtype="<u8").tobytes())

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool | None:
        try:
            if kind is None:
                self._close_shard()
        except BaseException as failed:
            kind, error, trace = type(failed), failed, failed.__traceback__
            raise
        finally:
            for f in (self._ids.file, self._index):
                f.close()
            self._writing.__exit__(kind, error, trace)
        return None


def _short_count(count: int) -> str:
    """The count as humanize.metric writes it in the metadata's last line (e.g. '1.23 M')."""
    for value, prefix in ((10**12, " T"), (10**9, " G"), (10**6, " M"), (10**3, " k")):
        if count >= value:
            return f"{count / value:.3g}{prefix}"
    return f"{count} "
