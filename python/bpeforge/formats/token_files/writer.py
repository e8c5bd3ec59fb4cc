"""What every token-file writer does with documents: the separator where its stack puts it, then its own
format's bookkeeping (a document index, shards). Fed the ids of one document at a time by the core (a text
file) or of a batch of documents (records), so that no writer ever holds more than a batch of ids."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from bpeforge.formats.token_files.data_file import CoreAppend, IdFile
from bpeforge.formats.token_files.documents import AFTER, AFTER_NONEMPTY, BEFORE, with_separators

if TYPE_CHECKING:
    import numpy as np


class TokenWriter:
    """Subclasses write the ids (`_write`, `_append_from_core`) and record where documents end
    (`_end_documents`); this class puts the separators in."""

    placement = AFTER

    def __init__(
        self,
        dtype: str,
        itemsize: int,
        separator: int | None,
        *,
        overwrite: bool,
        inputs: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        self.dtype, self.itemsize, self.separator = dtype, itemsize, separator
        # What the output may replace, and the inputs it must not be: checked when the writer opens its output.
        self._overwrite, self._inputs = overwrite, list(inputs)
        self.tokens = 0
        self._separator_bytes = b"" if separator is None else separator.to_bytes(itemsize, "little")

    def add_document_from_core(self, append: CoreAppend) -> None:
        """One document whose ids the core appends (`append(fd, offset)` returns the bytes appended)."""
        length = 0
        if self._separator_bytes and self.placement == BEFORE:
            length += self._write_counted(self._separator_bytes)
        length += self._append_from_core(append)
        if self._separator_bytes and (self.placement == AFTER or (self.placement == AFTER_NONEMPTY and length)):
            length += self._write_counted(self._separator_bytes)
        self.tokens += length
        self._end_document(length)

    def add_documents(self, ids: np.ndarray, offsets: np.ndarray) -> None:
        """A batch of documents: `ids[offsets[i]:offsets[i + 1]]` are document i's ids."""
        import numpy as np

        ids, lengths = with_separators(ids, offsets, self.separator, self.placement)
        self._write(ids.astype(f"<u{self.itemsize}", copy=False).tobytes())
        self.tokens += len(ids)
        self._end_documents(np.asarray(lengths, dtype=np.int64))

    def _write_counted(self, data: bytes) -> int:
        self._write(data)
        return len(data) // self.itemsize

    def _write(self, data: bytes) -> None:
        raise NotImplementedError

    def _append_from_core(self, append: CoreAppend) -> int:
        raise NotImplementedError

    def _end_documents(self, lengths) -> None:
        """Documents of these lengths (in ids, separators included) were just written."""

    def _end_document(self, length: int) -> None:
        """One document of `length` ids was just written. Without NumPy: a run on text files alone never
        imports it (a tenth of a second of `bpeforge encode` on a small corpus)."""
        self._end_documents([length])


class IdFileWriter(TokenWriter):
    """A writer whose ids go to one `IdFile` at a time, `self._ids` (set when it opens the file)."""

    _ids: IdFile

    def _write(self, data: bytes) -> None:
        self._ids.write(data)

    def _append_from_core(self, append: CoreAppend) -> int:
        return self._ids.append_from_core(append)
