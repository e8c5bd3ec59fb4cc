"""What an output path names, decided before anything is written (docs/reliability.md, "Outputs that are not
regular files").

- One of this process's open descriptors (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`; the CLI's `-o -`):
  written through the descriptor from where it stands, whatever it is: a pipe, a terminal, or the file a
  shell redirected it to (`>>` appends, as it should).
- A FIFO or a character device (`/dev/null`, a terminal): written through, never replaced.
- A socket or a block device: refused. A disk is never written to as a file.
- A symbolic link: what it resolves to, by these same rules; a file or directory it points to is replaced
  atomically where it is, and the link itself is never touched.
- Absent, a regular file or a directory: built under a temporary name and renamed into place (`atomic`).

The atomic rename replaces whatever has the name, so without this a `-o /dev/null --force` run as root
replaced the system's `/dev/null` with a regular file, and `-o link` replaced a link with a file.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

STANDARD_OUTPUT = "/dev/stdout"  # what the CLI's `-o -` means
_SYMLINK_HOPS = 40  # as the kernel's ELOOP


class UnsafeOutputError(ValueError):
    """An output that would replace or write into something that is not bpeforge's to replace."""


@dataclass(frozen=True)
class OutputTarget:
    """`path` as the user named it (and as messages name it), and what writing it means."""

    path: Path
    real: Path  # `path` with symbolic links resolved: where a file or directory is written
    kind: str  # "absent", "file", "directory" or "stream"
    descriptor: int | None = None  # for a stream that is one of this process's open descriptors

    @property
    def is_stream(self) -> bool:
        return self.kind == "stream"


def output_target(path: str | os.PathLike[str]) -> OutputTarget:
    """Classify `path` as an output; a socket or a block device is an UnsafeOutputError."""
    path = Path(path)
    real = Path(os.path.realpath(path))
    descriptor = open_descriptor(path)
    if descriptor is not None:
        return OutputTarget(path, real, "stream", descriptor)
    try:
        mode = os.stat(path).st_mode  # follows links: a link is what it points to
    except OSError as err:
        if err.errno == errno.ELOOP:  # resolving gives up and names the link itself, which would be replaced
            raise UnsafeOutputError(f"{path} is a loop of symbolic links; give the path of a file") from None
        return OutputTarget(path, real, "absent")  # a missing parent or no permission: the write says which
    if stat.S_ISREG(mode):
        return OutputTarget(path, real, "file")
    if stat.S_ISDIR(mode):
        return OutputTarget(path, real, "directory")
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return OutputTarget(path, real, "stream")
    what = "a socket" if stat.S_ISSOCK(mode) else "a block device (a disk)" if stat.S_ISBLK(mode) else "not a file"
    raise UnsafeOutputError(f"{path} is {what}; bpeforge writes only files, directories and streams: give a file path")


def describe_stream(path: Path) -> str:
    """What a stream output is, for messages: 'a FIFO', 'a character device', 'standard output'."""
    if open_descriptor(path) == 1:
        return "standard output"
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "a stream"
    return "a FIFO" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode) else "an open descriptor"


def writes_standard_output(path: str | os.PathLike[str] | None) -> bool:
    """Whether writing `path` writes this process's standard output (`-o -`, `-o /dev/stdout`)."""
    return path is not None and open_descriptor(Path(path)) == 1


def open_descriptor(path: Path) -> int | None:
    """N when `path` names this process's descriptor N (through links: `/dev/stdout` -> `/proc/self/fd/1`).

    Followed a link at a time: resolving `/proc/self/fd/1` itself would give what the descriptor is open on
    (a pipe's `pipe:[…]`, or the file a shell redirected to), which is not the descriptor."""
    own = {os.path.realpath("/dev/fd"), f"/proc/{os.getpid()}/fd"} if sys.platform != "win32" else set()
    current = os.path.abspath(path)
    for _ in range(_SYMLINK_HOPS):
        folder, name = os.path.split(current)
        if name.isdigit() and os.path.realpath(folder) in own:
            return int(name)
        if not os.path.islink(current):
            return None
        current = os.path.normpath(os.path.join(folder, os.readlink(current)))
    return None
