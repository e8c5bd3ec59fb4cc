"""Ctrl-C (SIGINT) and SIGTERM stop a command within a second, in any state, and leave no temporary file.

The work runs in the Rust core with the GIL released, and a read of a pipe or FIFO that sends nothing does
not return at all: a Python signal handler runs only in the main thread and only between its bytecodes, so
while the main thread itself ran the command, Ctrl-C waited for the read (`sleep 30 | bpeforge train -`
stopped after 30 s) and SIGTERM killed the process with its temporaries left behind. So the command runs in
a worker thread while the main thread waits on it in short steps; a signal's handler runs on the main thread
within a step, removes the temporaries the writers registered (`formats.temporaries`) and ends the process
with `os._exit`, which stops the worker wherever it is. The exit code is 128 + the signal, what shells report:
130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP (the terminal closed). A signal the process was started
ignoring stays ignored: `nohup` ignores SIGHUP, and a shell script's background jobs ignore SIGINT.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

from bpeforge.formats.temporaries import remove_registered_temporaries

WAIT_STEP_SECONDS = 0.05  # the main thread's wait between looks at pending signals
STOPPING = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}
if hasattr(signal, "SIGHUP"):
    STOPPING[signal.SIGHUP] = "hung up"


def run_interruptibly(command: Callable[[], int]) -> int:
    """`command()`'s result (or its exception), stopping the process at SIGINT, SIGTERM or SIGHUP."""
    if threading.current_thread() is not threading.main_thread():
        return command()  # only the main thread can take signals: a caller that embeds the CLI keeps its own
    outcome: dict[str, object] = {}

    def work() -> None:
        try:
            outcome["result"] = command()
        except BaseException as err:  # handed to the main thread, which raises it as before
            outcome["error"] = err

    previous = {number: signal.getsignal(number) for number in STOPPING}
    for number, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(number, _stop)
    try:
        worker = threading.Thread(target=work, name="bpeforge-command", daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(WAIT_STEP_SECONDS)
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)  # None: not set from Python
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["result"]  # type: ignore[return-value]


def _stop(number: int, frame: FrameType | None) -> None:
    """Remove this process's temporaries and end it now (the worker thread with it)."""
    remove_registered_temporaries()
    # os.write, not print: the buffers of sys.stderr and sys.stdout are not flushed by os._exit, and flushing
    # standard output could wait forever on a pipe nobody reads.
    os.write(2, f"\nbpeforge: {STOPPING[signal.Signals(number)]}; nothing was written\n".encode())
    os._exit(128 + number)
