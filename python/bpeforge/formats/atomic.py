"""Where an output may be written, and writing it so that nothing is lost.

Every file or directory bpeforge writes goes through here (docs/reliability.md):

- `check_output` decides before anything is opened. An output is never an
  input of the same command, never contains one, never lies inside an input
  directory, and is never the current directory or one of its parents. An
  existing output is replaced only when asked (`overwrite=True`, CLI `--force`),
  a file only with a file, and a directory only while it holds nothing but what
  bpeforge writes there (its `owned` names): a corpus beside a vocabulary is
  never deleted with it.
- The writers build the output under a temporary sibling name and rename it
  into place, so after any failure (a full disk, Ctrl-C, `kill -9`) the old
  output is byte-identical or the new one is complete. A temporary name holds
  the writer's process id; a later run for the same target removes the ones
  whose process is gone (`remove_stale_temporaries`), and nothing else.
- Errors name the user's path, never the temporary one.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import secrets
import shutil
import sys
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO

# `.NAME.tmp-PID-HEX` (being written) and `.NAME.old-PID-HEX` (a replaced
# directory on its way out): the only names `remove_stale_temporaries` touches.
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.(?:tmp|old)-(?P<pid>[0-9]+)-[0-9a-f]{12}")


class UnsafeOutputError(ValueError):
    """An output that would replace or write into something that is not bpeforge's to replace."""


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
    it holds only `owned` names; else it is a file.
    """
    path = check_apart_from_inputs(path, inputs)
    if not (path.exists() or path.is_symlink()):
        return path
    if not overwrite:
        raise FileExistsError(f"{path} already exists; pass --force (in Python: overwrite=True) to replace it")
    if directory:
        _refuse_a_foreign_directory(path, owned)
    elif path.is_dir():
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


def _refuse_a_foreign_directory(path: Path, owned: Collection[str]) -> None:
    if not path.is_dir() or path.is_symlink():
        raise UnsafeOutputError(
            f"{path} is a file, not a directory that bpeforge wrote; it is kept: give a new directory name"
        )
    foreign = sorted(entry.name for entry in path.iterdir() if entry.name not in owned)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise UnsafeOutputError(
            f"{path} holds files that bpeforge did not write ({shown}); --force / overwrite=True only "
            f"replaces a directory of bpeforge's own outputs: give a new directory name"
        )


def temporary_sibling(path: Path, kind: str = "tmp") -> Path:
    """The name `path` is built under: hidden, beside it, marked with this process."""
    return path.with_name(f".{path.name}.{kind}-{os.getpid()}-{secrets.token_hex(6)}")


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Remove what killed runs left while writing `path`: temporary siblings
    of bpeforge's own naming whose process no longer runs. Returns them."""
    removed = []
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        found = _TEMPORARY.fullmatch(entry.name)
        if not found or found["name"] != path.name or _process_alive(int(found["pid"])):
            continue
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed.append(entry)
        except OSError:
            pass  # another run is removing it, or it is not ours to remove: leave it
    return removed


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process (or no such pid): not ours to judge
    return True


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
    """The temporary sibling `path` is built under, created: (fd, its path).
    Leftovers of killed runs for `path` are removed first.

    `os.open` with 0o666, not `tempfile.mkstemp`: the file gets the umask
    permissions `open` would give, not mkstemp's private 0o600.
    """
    remove_stale_temporaries(path)
    staging = temporary_sibling(path)
    with _named_as(path, staging):
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), staging


@contextmanager
def open_atomically(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary file that becomes `path` (fsynced, renamed) when the block ends;
    if the block raises, `path` is untouched and the temporary is removed."""
    path = Path(path)
    fd, staging = _create_staging_file(path)
    try:
        with os.fdopen(fd, "wb") as f, _named_as(path, staging):
            yield f
            f.flush()
            os.fsync(f.fileno())
        with _named_as(path, staging):
            os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


@contextmanager
def replaced_atomically(path: Path) -> Iterator[Path]:
    """A temporary sibling path for a writer that takes a path (the Rust core,
    matplotlib): fsynced and renamed to `path` when the block ends, removed if
    it raises, so `path` is the old file or the complete new one."""
    path = Path(path)
    fd, staging = _create_staging_file(path)
    os.close(fd)
    try:
        with _named_as(path, staging):
            yield staging
            with open(staging, "rb") as f:
                os.fsync(f.fileno())
            os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


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
    directory = Path(directory)
    check_output(directory, inputs=inputs, overwrite=overwrite, directory=True, owned={*owned, *files})
    remove_stale_temporaries(directory)
    staging = temporary_sibling(directory)
    with _named_as(directory, staging):
        directory.parent.mkdir(parents=True, exist_ok=True)
        staging.mkdir()  # mode 0o777 less the umask, as mkdir gives
    try:
        with _named_as(directory, staging):
            for name, text in files.items():
                _write_synced(staging / name, text)
            _swap_into_place(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
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
        shutil.rmtree(staging, ignore_errors=True)
        return
    retired = temporary_sibling(directory, "old")
    os.rename(directory, retired)
    os.rename(staging, directory)
    shutil.rmtree(retired, ignore_errors=True)


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
