"""The `bpeforge` command line: the parser of every subcommand, and one line per error.

bpeforge train INPUT... --vocab-size N --special-token TOK -o DIR
bpeforge train --demo            # trains on the Python standard library's own source
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path

from bpeforge.cli.convert import add_convert_command
from bpeforge.cli.encode import add_decode_command, add_encode_command
from bpeforge.cli.inspect import add_inspect_commands
from bpeforge.cli.interrupts import run_interruptibly
from bpeforge.cli.train import add_count_command, add_train_command
from bpeforge.formats.output_target import STANDARD_OUTPUT, writes_standard_output
from bpeforge.inspection.terminal_text import terminal_safe
from bpeforge.train import TrainingNote

EXIT_USAGE = 2


EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE


# The options that name a file a command writes: `-` there is standard output.
OUTPUT_OPTIONS = ("output", "html", "plot")


def main(argv: Sequence[str] | None = None) -> int:
    closed = _reserve_closed_standard_descriptors()
    parser = _build_parser()
    args = parser.parse_args(argv)
    writes_stdout = _standard_output_as_dash(args)
    if writes_stdout and 1 in closed:
        print(f"bpeforge {args.command}: error: standard output is closed; give a file with -o", file=sys.stderr)
        return EXIT_USAGE
    try:
        with warnings.catch_warnings(), _reports_on_stderr(writes_stdout):
            # The summary prints these notes itself; other warnings get one line each.
            warnings.simplefilter("ignore", TrainingNote)
            warnings.showwarning = _show_warning
            if getattr(args, "ray", None) is not None:
                return args.run(args, args.command_parser)  # Ray handles signals itself, in the main thread
            return run_interruptibly(lambda: args.run(args, args.command_parser))
    except KeyboardInterrupt:
        print("\nbpeforge: interrupted; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of a stream output went away (`bpeforge decode ... -o - | head`): end quietly, as a
        # command killed by SIGPIPE does (Python ignores SIGPIPE, so the write fails instead).
        return EXIT_BROKEN_PIPE
    except Exception as err:
        # Every error is one line that says what to fix; --debug shows where it came from.
        if args.debug:
            traceback.print_exc()
        print(f"bpeforge {args.command}: error: {terminal_safe(describe_error(err))}", file=sys.stderr)
        return EXIT_USAGE


def _reserve_closed_standard_descriptors() -> set[int]:
    """Open /dev/null on standard input, output or error where they are closed (`bpeforge ... >&-`); returns
    those that were. Else the next file opened takes the number, and data for standard output went into it."""
    closed = set()
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:
            closed.add(descriptor)
    for descriptor in sorted(closed):
        if os.open(os.devnull, os.O_RDWR) != descriptor:  # the lowest free number: this one
            raise OSError(f"could not reserve the closed descriptor {descriptor}")
    return closed


def _standard_output_as_dash(args: argparse.Namespace) -> bool:
    """`-o -` is standard output for every command that writes a file (`./-` names a file called `-`); whether
    a command writes its data there, so that its reports go to standard error instead."""
    writes_stdout = False
    for option in OUTPUT_OPTIONS:
        value = getattr(args, option, None)
        if value is not None and str(value) == "-":
            setattr(args, option, Path(STANDARD_OUTPUT) if isinstance(value, Path) else STANDARD_OUTPUT)
        writes_stdout = writes_stdout or writes_standard_output(getattr(args, option, None))
    return writes_stdout


def _reports_on_stderr(writes_stdout: bool) -> contextlib.AbstractContextManager:
    """The lines a command prints for people go to standard error while its data goes to standard output."""
    return contextlib.redirect_stdout(sys.stderr) if writes_stdout else contextlib.nullcontext()


def describe_error(err: BaseException) -> str:
    """The message of `err` for a person: the file and the reason, without
    errno prefixes (`[Errno 2] ...`) or exception class names."""
    if isinstance(err, OSError) and err.strerror:
        where = err.filename if err.filename is not None else ""
        reason = re.sub(r" \(os error \d+\)$", "", err.strerror)  # Rust's errno suffix
        return f"{where}: {reason}" if where and str(where) not in reason else reason
    message = str(err) or type(err).__name__
    if isinstance(err, (OSError, ValueError, TypeError, ImportError)):
        return message
    return f"{message} ({type(err).__name__}; run with --debug for the traceback)"


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"bpeforge: warning: {terminal_safe(str(message))}", file=sys.stderr)


class _ShowVersion(argparse.Action):
    """`--version`, which looks the version up only when asked (see `bpeforge.__getattr__`)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        import bpeforge

        print(f"bpeforge {bpeforge.__version__}")
        parser.exit()


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bpeforge", description="Byte-level BPE tokenizer training, fast and exact.")
    parser.add_argument("--debug", action="store_true", help="on an error, also print the Python traceback")
    parser.add_argument("--version", action=_ShowVersion)
    commands = parser.add_subparsers(dest="command", required=True)
    add_train_command(commands)
    add_count_command(commands)
    add_encode_command(commands)
    add_decode_command(commands)
    add_convert_command(commands)
    add_inspect_commands(commands)
    for command in commands.choices.values():
        # Errors found after parsing print the subcommand's usage, not the top level's.
        command.set_defaults(command_parser=command)
    return parser
