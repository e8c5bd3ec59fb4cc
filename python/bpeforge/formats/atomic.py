"""Where an output may be written, and writing it so that nothing is lost.

Every file or directory bpeforge writes goes through here (docs/reliability.md):

- `check_output` decides before anything is opened. An output is never an
  input of the same command, never contains one, never lies inside an input
  directory, and is never the current directory or one of its parents. An
  existing output is replaced only when asked (`overwrite=True`, CLI `--force`),
  a file only with a file, and a directory only while it holds nothing but what
  bpeforge writes there (its `owned` names): a corpus beside a vocabulary is
  never deleted with it.
- What the path names decides how it is written (`output_target`): a file or
  directory, or a symbolic link to one, is replaced where it is (the link is
  kept); a stream (standard output, a FIFO, a character device such as
  `/dev/null`) is written through, never replaced; a socket or a disk is refused.
- The writers build a file or directory under a temporary sibling name and
  rename it into place, so after any failure (a full disk, Ctrl-C, `kill -9`)
  the old output is byte-identical or the new one is complete. A temporary
  name holds the writer's process id; a later run for the same target removes
  the ones whose process is gone (`remove_stale_temporaries`), and nothing
  else; a signal's handler removes this process's own (`temporaries`).
- Errors name the user's path, never the temporary one.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import sys
import tempfile
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO

from bpeforge.formats.output_target import (
    UnsafeOutputError,
    describe_stream,
    output_target,
)
from bpeforge.formats.temporaries import (
    committing,
    create_registered,
    register,
    remove_stale_temporaries,
    temporary_sibling,
    unregister,
)

__all__ = [
    "UnsafeOutputError",
    "check_apart_from_inputs",
    "check_output",
    "open_atomically",
    "open_stream",
    "remove_stale_temporaries",
    "replaced_atomically",
    "temporary_sibling",
    "write_directory_atomically",
    "write_text_atomically",
]


def check_output(
    path: str | os.PathLike[str],
    *,
    inputs: Iterable[str | os.PathLike[str]] = (),
    overwrite: bool,
    directory: bool = False,
    owned: Collection[str] = (),
) -> Path:
    """Refuse an output path that could lose a user's data; return it as a Path.

    `directory`: the output is a directory that may be replaced whole while
    it holds only `owned` names; else it is a file. A file output may be a
    stream (standard output, a FIFO, `/dev/null`): it is written through,
    which replaces nothing, so it needs no `overwrite`.
    """
    target = output_target(path)
    if target.is_stream:
        if directory:
            what = describe_stream(target.path)
            raise UnsafeOutputError(f"{target.path} is {what}, not a directory; give a directory path for the output")
        if target.real.is_file():  # standard output redirected to a file: never one of the inputs
            check_apart_from_inputs(path, inputs)
        return target.path
    path = check_apart_from_inputs(path, inputs)
    if target.kind == "absent":
        return path
    if not overwrite:
        raise FileExistsError(f"{path} already exists; pass --force (in Python: overwrite=True) to replace it")
    if directory:
        _refuse_a_foreign_directory(path, target.real, owned)
    elif target.kind == "directory":
        raise UnsafeOutputError(f"{path} is a directory; give the path of a file to write (a new name, or a file)")
    return path


def check_apart_from_inputs(path: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]] = ()) -> Path:
    """Refuse an output that is, contains or lies inside an input, or is the
    current directory or a parent of it (symlinks and hard links included)."""
    path = Path(path)
    target = Path(os.path.realpath(path))
    _refuse_the_working_directory(path, target)
    for source in inputs:
        _refuse_an_input(path, target, Path(source))
    return path


def _refuse_the_working_directory(path: Path, target: Path) -> None:
    cwd = Path(os.path.realpath(os.getcwd()))
    if target == cwd or target in cwd.parents:
        what = "the current directory" if target == cwd else "a parent of the current directory"
        raise UnsafeOutputError(f"{path} is {what}; give a new directory for the output, e.g. -o {path / 'out'}")


def _refuse_an_input(path: Path, target: Path, source: Path) -> None:
    real = Path(os.path.realpath(source))
    if real == target or (source.exists() and path.exists() and os.path.samefile(source, path)):
        raise UnsafeOutputError(f"{path} is the input {source}; give another output path")
    if target in real.parents:
        raise UnsafeOutputError(f"{path} contains the input {source}; give an output path outside the inputs")
    if real.is_dir() and real in target.parents:
        raise UnsafeOutputError(f"{path} is inside the input directory {source}; give an output path outside it")


def _refuse_a_foreign_directory(path: Path, real: Path, owned: Collection[str]) -> None:
    if not real.is_dir():
        raise UnsafeOutputError(
            f"{path} is a file, not a directory that bpeforge wrote; it is kept: give a new directory name"
        )
    foreign = sorted(entry.name for entry in real.iterdir() if entry.name not in owned)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise UnsafeOutputError(
            f"{path} holds files that bpeforge did not write ({shown}); --force / overwrite=True only "
            f"replaces a directory of bpeforge's own outputs: give a new directory name"
        )


@contextmanager
def _named_as(path: Path, staging: Path) -> Iterator[None]:
    """Report an OSError on the temporary `staging` as one on the user's `path`."""
    try:
        yield
    except OSError as err:
        if err.filename is None or os.fspath(err.filename) == os.fspath(staging):
            raise OSError(err.errno, f"cannot write {path}: {err.strerror or err}", os.fspath(path)) from None
        raise


def _create_staging_file(path: Path) -> tuple[int, Path]:
    """The temporary sibling `path` is built under, created and registered: (fd, its path).
    Leftovers of killed runs for `path` are removed first.

    `os.open` with 0o666, not `tempfile.mkstemp`: the file gets the umask
    permissions `open` would give, not mkstemp's private 0o600.
    """
    remove_stale_temporaries(path)
    staging = temporary_sibling(path)
    with _named_as(path, staging):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = create_registered(staging, lambda name: os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    return fd, staging


def _discard(staging: Path) -> None:
    staging.unlink(missing_ok=True)
    unregister(staging)


@contextmanager
def open_atomically(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary file that becomes `path` (fsynced, renamed) when the block ends;
    if the block raises, `path` is untouched and the temporary is removed.

    A symbolic link's target is what is replaced. A stream (`output_target`)
    is never replaced: the file is built in the system's temporary directory
    (the writer may seek, as the `.npy` writer does to write its header last)
    and copied to the stream when the block ends."""
    target = output_target(path)
    if target.is_stream:
        with tempfile.TemporaryFile(prefix="bpeforge-") as f:  # no name: nothing to leave behind
            yield f
            f.seek(0)
            with open_stream(target.path) as stream:
                shutil.copyfileobj(f, stream, _COPY_BYTES)
        return
    fd, staging = _create_staging_file(target.real)
    try:
        with os.fdopen(fd, "wb") as f, _named_as(target.path, staging):
            yield f
            f.flush()
            os.fsync(f.fileno())
        with _named_as(target.path, staging), committing():
            os.replace(staging, target.real)
            unregister(staging)
    except BaseException:
        _discard(staging)
        raise


_COPY_BYTES = 1 << 20


@contextmanager
def open_stream(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A stream output opened for writing: one of this process's descriptors
    (duplicated, so closing it leaves standard output open), or a FIFO or a
    character device opened by name. Errors name `path`."""
    target = output_target(path)
    if not target.is_stream:
        raise UnsafeOutputError(f"{target.path} is not a stream (standard output, a FIFO or a device)")
    try:
        if target.descriptor is not None:
            stream = os.fdopen(os.dup(target.descriptor), "wb")
        else:
            stream = open(target.path, "wb")  # noqa: SIM115 (closed below; a FIFO's open waits for a reader)
    except OSError as err:
        raise OSError(err.errno, f"cannot write {target.path}: {err.strerror or err}", os.fspath(target.path)) from None
    with stream, _named_as(target.path, target.path):
        yield stream


@contextmanager
def replaced_atomically(path: Path) -> Iterator[Path]:
    """A temporary path for a writer that takes a path (the Rust core,
    matplotlib): fsynced and renamed to `path` when the block ends, removed if
    it raises, so `path` is the old file or the complete new one. A symbolic
    link's target is what is replaced; a stream gets the written file's bytes.

    The path is inside a temporary folder beside `path` (in the system's
    temporary directory for a stream): a signal's cleanup renames the folder
    away, so a writer that creates the file by name after it cannot leave one."""
    target = output_target(path)
    if target.is_stream:
        folder = _create_staging_folder(Path(tempfile.gettempdir()) / "bpeforge")
    else:
        folder = _create_staging_folder(target.real)
    staging = folder / ("output" if target.is_stream else target.real.name)
    try:
        with _named_as(target.path, staging):
            yield staging
            if target.is_stream:
                with open(staging, "rb") as f, open_stream(target.path) as stream:
                    shutil.copyfileobj(f, stream, _COPY_BYTES)
                return
            with open(staging, "rb") as f:
                os.fsync(f.fileno())
            with committing():
                os.replace(staging, target.real)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        unregister(folder)


def _create_staging_folder(path: Path) -> Path:
    """The temporary folder beside `path`, created (0o700: its file is the user's until renamed) and
    registered. Leftovers of killed runs for `path` are removed first."""
    remove_stale_temporaries(path)
    folder = temporary_sibling(path)
    with _named_as(path, folder):
        path.parent.mkdir(parents=True, exist_ok=True)
        create_registered(folder, lambda name: name.mkdir(mode=0o700))
    return folder


def write_text_atomically(
    path: str | os.PathLike[str], text: str, *, overwrite: bool, inputs: Iterable[str | os.PathLike[str]] = ()
) -> Path:
    """Write `text` as UTF-8 to `path`, all or nothing."""
    path = check_output(path, inputs=inputs, overwrite=overwrite)
    with open_atomically(path) as f:
        f.write(text.encode("utf-8"))
    return path


def write_directory_atomically(
    directory: str | os.PathLike[str],
    files: dict[str, str | Iterable[str]],
    *,
    overwrite: bool,
    inputs: Iterable[str | os.PathLike[str]] = (),
    owned: Collection[str] = (),
) -> Path:
    """Write `files` (name -> text, or an iterable of its parts) as `directory`, all or nothing.

    An existing directory is replaced only with `overwrite` and only while it
    holds nothing but `owned` names and the names in `files`.
    """
    directory = check_output(directory, inputs=inputs, overwrite=overwrite, directory=True, owned={*owned, *files})
    real = output_target(directory).real  # a symbolic link's target is replaced; the link is kept
    remove_stale_temporaries(real)
    staging = temporary_sibling(real)
    with _named_as(directory, staging):
        real.parent.mkdir(parents=True, exist_ok=True)
        create_registered(staging, Path.mkdir)  # mode 0o777 less the umask, as mkdir gives
    try:
        with _named_as(directory, staging):
            for name, text in files.items():
                _write_synced(staging / name, text)
            with committing():
                _swap_into_place(staging, real)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # after a swap: the old directory
        unregister(staging)
    return directory


def _write_synced(path: Path, text: str | Iterable[str]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        if isinstance(text, str):
            f.write(text)
        else:
            f.writelines(text)  # parts written as they are made: a vocabulary of huge tokens is never one string
        f.flush()
        os.fsync(f.fileno())


def _swap_into_place(staging: Path, directory: Path) -> None:
    """Make `staging` be `directory`, atomically where the OS allows.

    A new directory is one rename. An existing one is exchanged with the
    staging directory in one step (Linux `renameat2(RENAME_EXCHANGE)`), so a
    kill at any moment leaves either the old directory or the complete new one
    under the name; the old one, now under the staging name, is removed after.
    Where the exchange is unavailable, two renames (old aside, new in) leave a
    moment in which the name is missing, never one in which it is half-written.
    """
    if not directory.exists():
        os.rename(staging, directory)
        return
    if _exchange(staging, directory):
        return  # the old directory is now under the staging name, removed by the caller
    retired = temporary_sibling(directory, "old")
    register(retired)
    os.rename(directory, retired)
    os.rename(staging, directory)
    shutil.rmtree(retired, ignore_errors=True)
    unregister(retired)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths; False where the system cannot (not Linux, old glibc, some filesystems)."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.EINVAL, errno.ENOSYS, errno.EXDEV, errno.ENOTSUP):
        return False
    raise OSError(error, os.strerror(error), os.fspath(b))


@lru_cache(maxsize=1)
def _renameat2():
    # ctypes rather than a dependency: the one syscall Python's os module lacks.
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function
