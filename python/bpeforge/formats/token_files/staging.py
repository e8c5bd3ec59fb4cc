"""Token outputs that are more than one file, written so that a reader never sees a half-written one.

A folder of shards (datatrove, llm.c) is built under a temporary sibling name and swapped into place whole
(`atomic`'s rules: an existing folder is replaced only with `overwrite`, and only while it holds nothing but
files of the format). A prefix (Megatron's `PREFIX.bin` + `PREFIX.idx`) is two files, which no rename can
replace together: each is built under a temporary name, the old index is removed, the data renamed into
place, then the index. At every moment the prefix is the old pair, a data file without an index (which
Megatron refuses to read), or the new pair; never new data read through an old index.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import BinaryIO

from bpeforge.formats.atomic import (
    UnsafeOutputError,
    _named_as,
    _swap_into_place,
    check_output,
    open_atomically,
)
from bpeforge.formats.output_target import output_target
from bpeforge.formats.temporaries import (
    committing,
    create_registered,
    remove_stale_temporaries,
    temporary_sibling,
    unregister,
)


class _NamesMatching:
    """The names a format writes in its folder, as `check_output`'s `owned` asks (`name in owned`)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = re.compile(pattern)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.pattern.fullmatch(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


@contextmanager
def folder_atomically(
    directory: str | os.PathLike[str], *, names: str, overwrite: bool, inputs: Iterable[str | os.PathLike[str]] = ()
) -> Iterator[Path]:
    """A new empty folder to write into, which becomes `directory` when the block ends; if the block raises,
    `directory` is untouched. `names` (a regular expression) matches every name the format writes: an
    existing `directory` holding anything else is refused, never replaced."""
    directory = check_output(directory, inputs=inputs, overwrite=overwrite, directory=True, owned=_NamesMatching(names))
    real = output_target(directory).real
    remove_stale_temporaries(real)
    staging = temporary_sibling(real)
    with _named_as(directory, staging):
        real.parent.mkdir(parents=True, exist_ok=True)
        create_registered(staging, Path.mkdir)
    try:
        with _named_as(directory, staging):
            yield staging
            with committing():
                _swap_into_place(staging, real)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # after a swap: the old folder
        unregister(staging)


def prefix_paths(prefix: str | os.PathLike[str], suffixes: Iterable[str]) -> list[Path]:
    return [Path(os.fspath(prefix) + suffix) for suffix in suffixes]


@contextmanager
def prefix_atomically(
    prefix: str | os.PathLike[str],
    data_suffix: str,
    index_suffix: str,
    *,
    overwrite: bool,
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """(data file, index file), open for writing, that become `prefix + data_suffix` and `prefix +
    index_suffix` when the block ends, in the order the module's docstring gives."""
    data_path, index_path = prefix_paths(prefix, (data_suffix, index_suffix))
    for path in (data_path, index_path):
        if output_target(path).is_stream:
            raise UnsafeOutputError(f"{path} is not a regular file; give a path prefix for the {data_suffix} files")
        check_output(path, inputs=inputs, overwrite=overwrite)
    with ExitStack() as files:
        index = files.enter_context(open_atomically(index_path))  # entered first: renamed last
        data = files.enter_context(open_atomically(data_path))
        yield data, index
        # The block ended well: when `data` is renamed the old index must be gone.
        output_target(index_path).real.unlink(missing_ok=True)
