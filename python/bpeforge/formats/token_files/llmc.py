"""llm.c's token shards, as `dev/data/data_common.py` (`write_datafile`) writes them and its loaders
(`llmc/dataloader.h`, modded-nanogpt's `_load_data_shard`) check them: a header of 256 little-endian int32
(magic 20240520 and version 1 for uint16 ids, magic 20240801 and version 7 for uint32, then the id count,
below 2**31), then the ids. As `fineweb.py` does, `<|endoftext|>` (the separator) starts each document, the
shards hold `shard_tokens` ids each (the last fewer), a document runs on into the next shard, and the first
shard is the validation split: `tokens_val_000000.bin`, `tokens_train_000001.bin`, ...
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from bpeforge.formats.token_files.data_file import CoreAppend, IdFile
from bpeforge.formats.token_files.documents import BEFORE
from bpeforge.formats.token_files.staging import folder_atomically
from bpeforge.formats.token_files.writer import TokenWriter

HEADER_INTS = 256
HEADER_BYTES = HEADER_INTS * 4
MAGIC_VERSION = {2: (20240520, 1), 4: (20240801, 7)}  # by id size: GPT-2 and Llama 3
DEFAULT_SHARD_TOKENS = 10**8
MAX_SHARD_TOKENS = (1 << 31) - 1
NAMES = r"tokens_(?:val|train)_[0-9]{6}\.bin"
_MOVE_IDS = 1 << 22  # ids moved at a time from a full shard into the next


def shard_name(index: int) -> str:
    return f"tokens_{'val' if index == 0 else 'train'}_{index:06d}.bin"


def header(itemsize: int, tokens: int) -> bytes:
    magic, version = MAGIC_VERSION[itemsize]
    return struct.pack("<3i", magic, version, tokens) + bytes(HEADER_BYTES - 12)


class LlmcWriter(TokenWriter):
    placement = BEFORE

    def __init__(
        self,
        directory: str | os.PathLike[str],
        dtype: str,
        itemsize: int,
        separator: int | None,
        *,
        shard_tokens: int | None = None,
        overwrite: bool,
        inputs: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        super().__init__(dtype, itemsize, separator, overwrite=overwrite, inputs=inputs)
        self.limit = DEFAULT_SHARD_TOKENS if shard_tokens is None else shard_tokens
        if not 0 < self.limit <= MAX_SHARD_TOKENS:
            raise ValueError(f"llm.c shards hold 1 to {MAX_SHARD_TOKENS:,} ids (an int32 count), not {self.limit:,}")
        self.directory = Path(directory)
        self.shards = 0
        self._shard: IdFile | None = None

    def __enter__(self) -> LlmcWriter:
        self._writing = folder_atomically(self.directory, names=NAMES, overwrite=self._overwrite, inputs=self._inputs)
        self._folder = self._writing.__enter__()
        return self

    def _open_shard(self) -> IdFile:
        name = shard_name(self.shards)
        self.shards += 1
        file = open(self._folder / name, "w+b")  # noqa: SIM115 (closed by _close; read back to move a tail)
        return IdFile(file, self.itemsize, header=HEADER_BYTES, name=self.directory / name)

    @staticmethod
    def _close(shard: IdFile) -> None:
        shard.write_header(header(shard.itemsize, shard.tokens))
        shard.finish()
        shard.file.close()

    def _shard_with_room(self) -> IdFile:
        if self._shard is not None and self._shard.tokens >= self.limit:
            self._close(self._shard)
            self._shard = None
        if self._shard is None:
            self._shard = self._open_shard()
        return self._shard

    def _write(self, data: bytes) -> None:
        while data:
            shard = self._shard_with_room()
            room = (self.limit - shard.tokens) * self.itemsize
            shard.write(data[:room])
            data = data[room:]

    def _append_from_core(self, append: CoreAppend) -> int:
        shard = self._shard_with_room()
        appended = shard.append_from_core(append)
        if shard.tokens > self.limit:  # the document runs on: its tail moves into the next shards
            tail_end = shard.tokens
            self._shard = None  # `_write` opens the next shard; this one is read from, then cut and closed
            for start in range(self.limit, tail_end, _MOVE_IDS):
                self._write(shard.read_ids(start, min(_MOVE_IDS, tail_end - start)))
            shard.truncate(self.limit)
            self._close(shard)
        return appended

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool | None:
        try:
            if kind is None and self._shard is not None:
                self._close(self._shard)
        except BaseException as failed:
            kind, error, trace = type(failed), failed, failed.__traceback__
            raise
        finally:
            if self._shard is not None:
                self._shard.file.close()
            self._writing.__exit__(kind, error, trace)
        return None
