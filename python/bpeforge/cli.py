"""The `bpeforge` command line.

bpeforge train INPUT... --vocab-size N --special-token TOK -o DIR
bpeforge train --demo            # trains on the Python standard library's own source
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path

from bpeforge import __version__, counts, demo, encode_files, io, train_report
from bpeforge.convert import add_convert_command
from bpeforge.inputs import RecordOptions
from bpeforge.inspect_cli import add_inspect_commands
from bpeforge.outputs import check_output
from bpeforge.report import print_train_summary
from bpeforge.tokenizer import Tokenizer
from bpeforge.tokenizer_args import SOURCES, add_tokenizer_overrides, open_from_args, tokenizer_paths
from bpeforge.train import TrainingNote, train
from bpeforge.train import TrainResult as train_result

DEFAULT_SPECIAL = "<|endoftext|>"
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            # The summary prints these notes itself; other warnings get one line each.
            warnings.simplefilter("ignore", TrainingNote)
            warnings.showwarning = _show_warning
            return args.run(args, args.command_parser)
    except KeyboardInterrupt:
        print("\nbpeforge: interrupted; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:
        # Every error is one line that says what to fix; --debug shows where it came from.
        if args.debug:
            traceback.print_exc()
        print(f"bpeforge {args.command}: error: {describe_error(err)}", file=sys.stderr)
        return EXIT_USAGE


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
    print(f"bpeforge: warning: {message}", file=sys.stderr)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bpeforge", description="Byte-level BPE tokenizer training, fast and exact.")
    parser.add_argument("--debug", action="store_true", help="on an error, also print the Python traceback")
    parser.add_argument("--version", action="version", version=f"bpeforge {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_train(commands)
    _add_count(commands)
    _add_encode(commands)
    _add_decode(commands)
    add_convert_command(commands)
    add_inspect_commands(commands)
    for command in commands.choices.values():
        # Errors found after parsing print the subcommand's usage, not the top level's.
        command.set_defaults(command_parser=command)
    return parser


def _add_train(commands: argparse._SubParsersAction) -> None:
    train_cmd = commands.add_parser(
        "train",
        help="learn a vocabulary and merges from text files",
        description="Train a byte-level BPE tokenizer (CS336 semantics, GPT-2 pre-tokenizer). Writes "
        "DIR/vocab.json, DIR/merges.txt and DIR/bpeforge.json atomically.",
    )
    train_cmd.add_argument(
        "inputs", nargs="*", metavar="INPUT", help="files or directories: text (.gz/.xz/.zst too), .jsonl, .parquet"
    )
    train_cmd.add_argument("--demo", action="store_true", help="train on the Python standard library's source files")
    train_cmd.add_argument("--from-counts", type=Path, metavar="COUNTS", help="train from a `bpeforge count` file")
    train_cmd.add_argument(
        "--extend",
        metavar="BASE",
        help="continue training BASE (a tokenizer directory, a tokenizer.json, or a .tiktoken file with --pattern): "
        "its ids, merges and special tokens are kept and new merges follow; --vocab-size counts all tokens",
    )
    train_cmd.add_argument(
        "--min-frequency", type=int, help="stop when the best pair occurs fewer times (off by default, as in CS336)"
    )
    train_cmd.add_argument("--max-token-length", type=int, help="never make a token longer than this many bytes")
    train_cmd.add_argument(
        "--vocab-size",
        type=int,
        help="total vocabulary size, at least 256 + specials (default 10000; 4096 with --demo)",
    )
    _add_special_token_option(train_cmd)
    train_cmd.add_argument("-o", "--output", type=Path, help="output directory (default bpeforge-demo with --demo)")
    train_cmd.add_argument("--threads", type=int, default=None, help="worker threads (default: all cores)")
    train_cmd.add_argument("--force", action="store_true", help="replace the output directory if it exists")
    train_cmd.add_argument("--no-progress", action="store_true", help="do not draw progress bars")
    train_cmd.add_argument(
        "--profile",
        action="store_true",
        help=f"print the time of each phase (read, pre-tokenize, count, merge loop, write) and save it to "
        f"DIR/{train_report.REPORT_FILE}; counting runs somewhat slower to time its parts apart",
    )
    _add_input_options(train_cmd)
    train_cmd.set_defaults(run=_run_train)


def _add_special_token_option(cmd: argparse.ArgumentParser) -> None:
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


STDIN = "-"


def stdin_inputs(inputs: Sequence[str]) -> list[str]:
    """INPUT `-` is standard input (read through `/dev/stdin`, so the Rust reader streams it)."""
    if list(inputs).count(STDIN) > 1:
        raise ValueError("'-' (standard input) can be given once")
    return ["/dev/stdin" if path == STDIN else path for path in inputs]


def _special_tokens(args: argparse.Namespace) -> list[str]:
    if args.no_special_tokens:
        return []
    if getattr(args, "extend", None) is not None:
        return args.special_tokens or []  # the base's, plus any given
    return args.special_tokens if args.special_tokens is not None else [DEFAULT_SPECIAL]


def _add_input_options(cmd: argparse.ArgumentParser) -> None:
    """Where documents come from and how they are split: the same for `train` and `count`."""
    cmd.add_argument(
        "--pattern",
        help="pre-tokenizer: gpt2 (default, CS336; with --extend, the base's), cl100k, o200k, llama3, qwen2 or a "
        "custom regex (text no match covers is kept as pieces of its own)",
    )
    _add_record_options(cmd)


def _add_record_options(cmd: argparse.ArgumentParser) -> None:
    """Which files of a directory are read, and where the documents of record files are: `train`, `count`, `encode`."""
    cmd.add_argument("--glob", help="with directory inputs: only files whose names match, e.g. '*.jsonl.zst'")
    cmd.add_argument("--text-field", default="text", help="JSON Lines: the field holding each document (text)")
    cmd.add_argument("--text-column", default="text", help="Parquet: the column holding each document (text)")
    cmd.add_argument(
        "--skip-bad-records", action="store_true", help="JSON Lines: skip (and count) records that are not usable"
    )


def _add_ray_option(cmd: argparse.ArgumentParser, result: str) -> None:
    cmd.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help=f"run on the Ray cluster at ADDRESS (host:port, 'auto'), or on a local one without ADDRESS; {result}",
    )
    cmd.add_argument("--shard-mb", type=float, help="with --ray: MiB of text per task (default 64)")


def _check_ray_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.ray is None and args.shard_mb is not None:
        parser.error("--shard-mb applies only with --ray")
    if args.ray is not None and args.threads is not None:
        parser.error("--threads does not apply with --ray: each task uses one core, and Ray runs as many as fit")


def _input_kwargs(args: argparse.Namespace) -> dict:
    extending = getattr(args, "extend", None) is not None
    return {
        # With --extend, no --pattern means the base's (train resolves it).
        "pattern": args.pattern if extending else args.pattern or "gpt2",
        "glob": args.glob,
        "text_field": args.text_field,
        "text_column": args.text_column,
        "skip_bad_records": args.skip_bad_records,
    }


def _check_tokenizer_output(output: Path, inputs: Sequence, force: bool) -> None:
    """Refuse the output directory before any work, not after the training run."""
    check_output(output, inputs=inputs, overwrite=force, directory=True, owned=io.TOKENIZER_FILES)


def _run_train(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    started = time.perf_counter()
    if args.from_counts is not None:
        if args.output is not None:
            _check_tokenizer_output(args.output, [args.from_counts, *_base_paths(args)], args.force)
        result, output, files = _train_from_counts(args, parser), args.output, 1
        vocab_size = args.vocab_size
    else:
        inputs, output, vocab_size = _train_inputs(args, parser)
        inputs = stdin_inputs(inputs)
        _check_tokenizer_output(output, [*inputs, *_base_paths(args)], args.force)
        specials = _special_tokens(args)
        result = train(
            inputs,
            vocab_size,
            specials,
            num_threads=args.threads,
            progress=not args.no_progress,
            min_frequency=args.min_frequency,
            max_token_length=args.max_token_length,
            profile=args.profile,
            extend=args.extend,
            **_input_kwargs(args),
        )
        files = len(inputs)
    write_started = time.perf_counter()
    result.save(output, overwrite=args.force)
    finished = time.perf_counter()
    print_train_summary(
        result,
        output,
        requested_vocab_size=vocab_size,
        write_seconds=finished - write_started,
        total_seconds=finished - started,
        files=files,
    )
    if args.profile:
        report = train_report.build_report(
            result, write_seconds=finished - write_started, total_seconds=finished - started
        )
        print(train_report.format_report(report))
        print(f"wrote {train_report.save_report(output, report)}")
    return 0


def _base_paths(args: argparse.Namespace) -> list[Path]:
    """The --extend base when it is a file or directory: an input the output must not replace."""
    return [Path(args.extend)] if args.extend is not None and Path(args.extend).exists() else []


def _train_from_counts(args: argparse.Namespace, parser: argparse.ArgumentParser) -> train_result:
    if args.inputs or args.demo:
        parser.error("--from-counts trains from the count file alone; give no INPUT files and no --demo")
    if args.output is None or args.vocab_size is None:
        parser.error("--from-counts needs --vocab-size N and -o DIR")
    if args.special_tokens is not None or args.no_special_tokens:
        parser.error("--from-counts uses the special tokens the corpus was counted with; drop --special-token")
    return counts.train_from_counts(
        args.from_counts,
        args.vocab_size,
        min_frequency=args.min_frequency,
        max_token_length=args.max_token_length,
        progress=not args.no_progress,
        extend=args.extend,
        num_threads=args.threads,
    )


def _train_inputs(args: argparse.Namespace, parser: argparse.ArgumentParser) -> tuple[list[str], Path, int]:
    if args.demo:
        if args.inputs:
            parser.error("--demo trains on the standard library; give either --demo or INPUT files, not both")
        vocab_size = 4096 if args.vocab_size is None else args.vocab_size
        return demo.stdlib_sources(), args.output or Path("bpeforge-demo"), vocab_size
    if not args.inputs:
        parser.error("give the INPUT files to train on (or --demo)")
    if args.output is None:
        parser.error("give the output directory with -o DIR")
    return args.inputs, args.output, 10000 if args.vocab_size is None else args.vocab_size


def _add_encode(commands: argparse._SubParsersAction) -> None:
    cmd = commands.add_parser(
        "encode",
        help="encode text files and records into a NumPy array of token ids",
        description="Stream UTF-8 text files and the records of JSON Lines and Parquet files through a tokenizer "
        "into one .npy array: the ids of each file and each record, each encoded on its own, in input order (a "
        "directory's files in sorted order); in parallel, with output identical for any --threads.",
    )
    cmd.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="files or directories: text (.gz/.xz/.zst too), .jsonl, .parquet; - for standard input (text)",
    )
    cmd.add_argument("--tokenizer", required=True, help=f"the tokenizer: {SOURCES}")
    add_tokenizer_overrides(cmd)
    cmd.add_argument("-o", "--output", required=True, type=Path, help="output .npy file (with --ray: a directory)")
    cmd.add_argument(
        "--document-separator",
        metavar="TOK",
        help="append this special token (e.g. '<|endoftext|>') after each text file and each record; "
        "default: none, the ids of the documents follow each other",
    )
    cmd.add_argument("--dtype", choices=sorted(encode_files.DTYPES), help="default: uint16 when the vocab fits")
    cmd.add_argument("--threads", type=int, default=None, help="worker threads (default: all cores)")
    cmd.add_argument("--force", action="store_true", help="replace the output file if it exists")
    cmd.add_argument("--no-progress", action="store_true", help="do not draw a progress bar")
    _add_record_options(cmd)
    _add_ray_option(cmd, "token shards and an index.json in the -o directory, resumable")
    cmd.set_defaults(run=_run_encode)


def _run_encode(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")
    _check_ray_options(args, parser)
    if args.ray is not None:
        if args.document_separator is not None:
            parser.error("--document-separator does not apply with --ray: its shards record where documents start")
        from bpeforge.ray.cli import run_encode

        return run_encode(args)
    args.inputs = stdin_inputs(args.inputs)
    tokenizer = open_from_args(args.tokenizer, args)
    dtype = encode_files.choose_dtype(tokenizer, args.dtype)
    stats = encode_files.encode_files(
        tokenizer,
        args.inputs,
        args.output,
        dtype=dtype,
        threads=args.threads,
        progress=not args.no_progress,
        overwrite=args.force,
        tokenizer_path=next(iter(tokenizer_paths(args.tokenizer)), None),
        glob=args.glob,
        records=RecordOptions(
            text_field=args.text_field, text_column=args.text_column, skip_bad_records=args.skip_bad_records
        ),
        separator=_separator_id(tokenizer, args.document_separator),
    )
    seconds = max(stats.seconds, 1e-9)
    print(
        f"wrote {args.output}: {stats.tokens:,} tokens ({dtype}) from {stats.bytes_in / 2**20:,.1f} MiB in "
        f"{stats.files:,} file(s), {stats.bytes_per_token:.2f} bytes/token, "
        f"{stats.bytes_in / 2**20 / seconds:,.1f} MiB/s, {stats.tokens / seconds:,.0f} tokens/s, {stats.seconds:.2f} s"
    )
    return 0


def _separator_id(tokenizer: Tokenizer, token: str | None) -> int | None:
    """The id of --document-separator, which must be one of the tokenizer's special tokens."""
    if token is None:
        return None
    if token not in tokenizer.special_tokens:
        have = ", ".join(repr(t) for t in tokenizer.special_tokens) or "none"
        raise ValueError(
            f"--document-separator {token!r} is not a special token of the tokenizer (its special tokens: {have}; "
            "a .tiktoken file's are given with --special-token)"
        )
    return tokenizer.token_to_id(token)


def _add_decode(commands: argparse._SubParsersAction) -> None:
    cmd = commands.add_parser("decode", help="write the text of a .npy array of token ids")
    cmd.add_argument("source", type=Path, metavar="IN.npy")
    cmd.add_argument("--tokenizer", required=True, help=f"the tokenizer: {SOURCES}")
    add_tokenizer_overrides(cmd)
    cmd.add_argument("-o", "--output", required=True, help="output file (the exact bytes); - for standard output")
    cmd.add_argument("--force", action="store_true", help="replace the output file if it exists")
    cmd.set_defaults(run=_run_decode)


def _run_decode(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    tokenizer = open_from_args(args.tokenizer, args)
    if args.output == STDIN:
        encode_files.decode_to(tokenizer, args.source, sys.stdout.buffer)
        return 0
    args.output = Path(args.output)
    written = encode_files.decode_file(
        tokenizer,
        args.source,
        args.output,
        overwrite=args.force,
        tokenizer_path=next(iter(tokenizer_paths(args.tokenizer)), None),
    )
    print(f"wrote {args.output}: {written:,} bytes")
    return 0


def _add_count(commands: argparse._SubParsersAction) -> None:
    cmd = commands.add_parser(
        "count",
        help="count the pre-tokens of a corpus into a reusable file",
        description="Read a corpus once and save its pre-token counts (format in docs/format.md); "
        "`bpeforge train --from-counts FILE` then trains any vocabulary size without reading it again.",
    )
    cmd.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="files or directories: text (.gz/.xz/.zst too), .jsonl, .parquet"
    )
    cmd.add_argument("-o", "--output", required=True, type=Path, help="output count file")
    _add_special_token_option(cmd)
    cmd.add_argument("--threads", type=int, default=None, help="worker threads (default: all cores)")
    cmd.add_argument("--force", action="store_true", help="replace the output file if it exists")
    cmd.add_argument("--no-progress", action="store_true", help="do not draw a progress bar")
    _add_input_options(cmd)
    _add_ray_option(cmd, "the count file is the same as without --ray")
    cmd.set_defaults(run=_run_count)


def _run_count(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    args.inputs = stdin_inputs(args.inputs)
    check_output(args.output, inputs=args.inputs, overwrite=args.force)
    specials = _special_tokens(args)
    _check_ray_options(args, parser)
    if args.ray is not None:
        from bpeforge.ray.cli import run_count

        return run_count(args, specials, _input_kwargs(args))
    started = time.perf_counter()
    table = counts.count(
        args.inputs, specials, num_threads=args.threads, progress=not args.no_progress, **_input_kwargs(args)
    )
    counts.save_counts(table, args.output, overwrite=args.force, inputs=args.inputs)
    seconds = time.perf_counter() - started
    mib = table.bytes_counted / 2**20
    print(
        f"wrote {args.output}: {len(table):,} unique pre-tokens from {mib:,.1f} MiB "
        f"in {seconds:.2f} s ({mib / max(seconds, 1e-9):,.1f} MiB/s)"
    )
    return 0
