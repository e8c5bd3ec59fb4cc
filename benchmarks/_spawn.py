"""Run a command as a grandchild and report its own peak RSS: ``python _spawn.py CMD...``.

Why not ``wait4`` on the child directly: Python starts children with ``vfork``, and at ``exec`` Linux keeps the
high-water RSS of the memory the process had until then, which for a vforked child is the parent's. A benchmark
parent that holds corpora or id arrays then inflates every child's ``ru_maxrss`` (measured: a parent holding
500 MB made ``python -c pass`` report 490 MiB). This process is small; its forked child starts from its few MiB,
so the peak reported is the command's own.

The command's stdout and stderr pass through; the last stderr line is ``SPAWN_PEAK_RSS_KIB N``, and the exit code
is the command's (128 + the signal number if a signal ended it).
"""

from __future__ import annotations

import os
import sys

MARK = "SPAWN_PEAK_RSS_KIB "


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: _spawn.py CMD [ARG...]", file=sys.stderr)
        return 2
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    print(MARK + str(usage.ru_maxrss), file=sys.stderr, flush=True)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
