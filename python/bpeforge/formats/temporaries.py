"""The temporary names outputs are built under, and removing them: after a killed run, and at a signal.

`.NAME.tmp-PID-HEX` is an output being written; `.NAME.old-PID-HEX` a replaced directory on its way out.
They are the only names `remove_stale_temporaries` touches. NAME is the output's name, cut and hashed when
the whole temporary name would pass the file system's limit of 255 bytes a name (an output named with 229
bytes or more failed with "File name too long" while its own name fitted).

Every temporary this process creates is registered until it is renamed into place or removed, so that the
CLI's signal handler can remove them (`remove_registered_temporaries`) before it ends the process: the
command's work may be inside the Rust core, where no Python `finally` runs until it returns. The handler
runs while the command's thread goes on, so the two are kept apart: a temporary is created, and renamed
into place, only under the registry's lock (`create_registered`, `committing`), which the handler takes and
keeps to the end; and the handler first renames each temporary away, so that a writer still writing into
one by its name (a file of a directory being built, a file the Rust core creates by name) finds nothing
there instead of making it again.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

NAME_MAX = 255  # bytes in one file name: Linux's ext4, XFS, Btrfs and tmpfs, and macOS's APFS
# The dot before NAME and ".tmp-PID-HEX" after it, with a process id of up to 10 digits.
_AROUND_NAME = len(".") + len(".tmp-") + 10 + len("-") + 12
_HASH_CHARS = 16
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.(?:tmp|old)-(?P<pid>[0-9]+)-[0-9a-f]{12}")
_HEX_END = re.compile(r"-[0-9a-f]{12}$")  # the random part that ends every temporary name

_registry_lock = threading.RLock()  # reentrant: `unregister` is called while committing
_registered: set[Path] = set()


def temporary_stem(name: str) -> str:
    """The part of a temporary name that stands for the output `name`: `name` itself when the temporary name
    fits NAME_MAX, else its start (whole characters) and a hash of all of it, distinct for distinct names."""
    encoded = os.fsencode(name)
    room = NAME_MAX - _AROUND_NAME
    if len(encoded) <= room:
        return name
    head = encoded[: room - _HASH_CHARS - 1]
    while head and head[-1] & 0xC0 == 0x80:  # a UTF-8 continuation byte: drop the cut character
        head = head[:-1]
    if head and head[-1] >= 0xC0:
        head = head[:-1]
    return os.fsdecode(head) + "~" + hashlib.sha256(encoded).hexdigest()[:_HASH_CHARS]


def temporary_sibling(path: Path, kind: str = "tmp") -> Path:
    """The name `path` is built under: hidden, beside it, marked with this process."""
    return path.with_name(f".{temporary_stem(path.name)}.{kind}-{os.getpid()}-{secrets.token_hex(6)}")


def create_registered(path: Path, create: Callable[[Path], T]) -> T:
    """`create(path)`, with `path` registered as a temporary of this process. Both happen under the registry's
    lock, so a signal's cleanup, which keeps the lock to the end, sees every temporary that exists."""
    with _registry_lock:
        made = create(path)
        _registered.add(path)
    return made


@contextmanager
def committing() -> Iterator[None]:
    """The block that renames a finished temporary into place: it runs whole before a signal's cleanup, or
    never (the cleanup keeps the lock until the process ends)."""
    with _registry_lock:
        yield


def register(path: Path) -> None:
    """Register a path about to become a temporary (a directory renamed aside); call it while committing."""
    with _registry_lock:
        _registered.add(path)


def unregister(path: Path) -> None:
    """`path` was renamed into place or removed: no longer this process's to clean up."""
    with _registry_lock:
        _registered.discard(path)


def remove_registered_temporaries() -> list[Path]:
    """Remove every registered temporary: the last step before a signal ends the process.

    The lock is kept (a worker thread creating a temporary waits on it until the process ends), so nothing
    is created after this. A second of patience for it: the thread holding it only creates a file."""
    if not _registry_lock.acquire(timeout=1.0):
        return []
    removed = []
    for path in sorted(_registered):
        doomed = path.with_name(_HEX_END.sub("-" + secrets.token_hex(6), path.name))
        try:
            os.rename(path, doomed)  # a writer that goes on by the old name finds nothing (see the docstring)
            if doomed.is_dir() and not doomed.is_symlink():
                shutil.rmtree(doomed)
            else:
                doomed.unlink()
            removed.append(path)
        except OSError:
            pass  # gone already, or not removable: the next run for this output removes what is left
    return removed


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Remove what killed runs left while writing `path`: temporary siblings
    of bpeforge's own naming whose process no longer runs. Returns them."""
    removed = []
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return removed
    stem = temporary_stem(path.name)
    for entry in entries:
        found = _TEMPORARY.fullmatch(entry.name)
        if not found or found["name"] != stem or _process_alive(int(found["pid"])):
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
