"""Options that several commands share: special tokens, inputs and records, standard input, Ray."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bpeforge.arguments import capped_threads_note, max_threads

DEFAULT_SPECIAL = "<|endoftext|>"


STDIN = "-"


def stdin_inputs(inputs: Sequence[str]) -> list[str]:
    """INPUT `-` is standard input (read through `/dev/stdin`, so the Rust reader streams it)."""
    if list(inputs).count(STDIN) > 1:
        raise ValueError("'-' (standard input) can be given once")
    return ["/dev/stdin" if path == STDIN else path for path in inputs]


def add_special_token_option(cmd: argparse.ArgumentParser) -> None:
    group = cmd.add_mutually_exclusive_group()
    group.add_argument(
        "--special-token",
        action="append",
        dest="special_tokens",
        metavar="TOK",
        help=f"a special token that separates documents (repeatable). Default: {DEFAULT_SPECIAL}; giving any "
        f"replaces the default, so add --special-token '{DEFAULT_SPECIAL}' to keep it",
    )
    group.add_argument("--no-special-tokens", action="store_true", help="no special tokens (not even the default)")


def special_tokens_of(args: argparse.Namespace) -> list[str]:
    if args.no_special_tokens:
        return []
    if getattr(args, "extend", None) is not None:
        return args.special_tokens or []  # the base's, plus any given
    return args.special_tokens if args.special_tokens is not None else [DEFAULT_SPECIAL]


def add_threads_option(cmd: argparse.ArgumentParser, what: str = "worker threads") -> None:
    cmd.add_argument(
        "--threads",
        type=threads_arg,
        default=None,
        metavar="N",
        help=f"{what} (default: all cores; at most the cores this process may use)",
    )


def threads_arg(text: str) -> int:
    """--threads N: a whole number of at least 1, bounded by the cores (`bpeforge.arguments.thread_count`'s
    rule), with a note on standard error when it was more."""
    try:
        threads = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of threads, got {text!r}") from None
    if threads < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {threads}")
    cores = max_threads()
    if threads > cores:
        print(f"bpeforge: note: {capped_threads_note('--threads', threads, cores)}", file=sys.stderr)
        return cores
    return threads


def add_input_options(cmd: argparse.ArgumentParser) -> None:
    """Where documents come from and how they are split: the same for `train` and `count`."""
    cmd.add_argument(
        "--pattern",
        help="pre-tokenizer: gpt2 (default, CS336; with --extend, the base's), cl100k, o200k, llama3, qwen2 or a "
        "custom regex (text no match covers is kept as pieces of its own)",
    )
    add_record_options(cmd)


def add_record_options(cmd: argparse.ArgumentParser) -> None:
    """Which files of a directory are read, and where the documents of record files are: `train`, `count`, `encode`."""
    cmd.add_argument("--glob", help="with directory inputs: only files whose names match, e.g. '*.jsonl.zst'")
    cmd.add_argument(
        "--text-field", default="text", action=_Given, help="JSON Lines: the field holding each document (text)"
    )
    cmd.add_argument(
        "--text-column", default="text", action=_Given, help="Parquet: the column holding each document (text)"
    )
    cmd.add_argument(
        "--skip-bad-records", action="store_true", help="JSON Lines: skip (and count) records that are not usable"
    )


class _Given(argparse.Action):
    """Stores the value and remembers the option was given, so that one given where it cannot apply is refused
    even when it repeats the default (`given_options`)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, self.dest, values)
        namespace.given = [*getattr(namespace, "given", []), option_string]


def given_options(args: argparse.Namespace, *options: str) -> list[str]:
    """Which of `options` (the option strings, e.g. "--glob") the command line gave."""
    values = {
        "--pattern": getattr(args, "pattern", None) is not None,
        "--glob": getattr(args, "glob", None) is not None,
        "--skip-bad-records": getattr(args, "skip_bad_records", False),
    }
    given = set(getattr(args, "given", []))
    return [option for option in options if values.get(option) or option in given]


def add_ray_option(cmd: argparse.ArgumentParser, result: str) -> None:
    cmd.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help=f"run on the Ray cluster at ADDRESS (host:port, 'auto'), or on a local one without ADDRESS; {result}",
    )
    cmd.add_argument("--shard-mb", type=float, help="with --ray: MiB of text per task (default 64)")


def check_ray_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.ray is None and args.shard_mb is not None:
        parser.error("--shard-mb applies only with --ray")
    if args.ray is not None and args.threads is not None:
        parser.error("--threads does not apply with --ray: each task uses one core, and Ray runs as many as fit")


def input_kwargs(args: argparse.Namespace) -> dict:
    extending = getattr(args, "extend", None) is not None
    return {
        # With --extend, no --pattern means the base's (train resolves it).
        "pattern": args.pattern if extending else args.pattern or "gpt2",
        "glob": args.glob,
        "text_field": args.text_field,
        "text_column": args.text_column,
        "skip_bad_records": args.skip_bad_records,
    }
