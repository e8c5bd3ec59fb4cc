"""`bpeforge train` and `bpeforge count`: a tokenizer, or reusable pre-token counts, from a corpus."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

from bpeforge import counts
from bpeforge.cli import demo, superbpe_options, train_profile
from bpeforge.cli.options import (
    add_input_options,
    add_ray_option,
    add_special_token_option,
    add_threads_option,
    check_ray_options,
    given_options,
    input_kwargs,
    special_tokens_of,
    stdin_inputs,
)
from bpeforge.cli.summary import print_train_summary
from bpeforge.formats.atomic import check_output
from bpeforge.formats.gpt2 import TOKENIZER_FILES
from bpeforge.train import TrainResult, train


def add_train_command(commands: argparse._SubParsersAction) -> None:
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
    add_special_token_option(train_cmd)
    train_cmd.add_argument("-o", "--output", type=Path, help="output directory (default bpeforge-demo with --demo)")
    add_threads_option(train_cmd)
    train_cmd.add_argument("--force", action="store_true", help="replace the output directory if it exists")
    train_cmd.add_argument("--no-progress", action="store_true", help="do not draw progress bars")
    train_cmd.add_argument(
        "--profile",
        action="store_true",
        help=f"print the time of each phase (read, pre-tokenize, count, merge loop, write) and save it to "
        f"DIR/{train_profile.REPORT_FILE}; counting runs somewhat slower to time its parts apart",
    )
    add_input_options(train_cmd)
    superbpe_options.add_superbpe_options(train_cmd)
    train_cmd.set_defaults(run=_run_train)


def _check_tokenizer_output(output: Path, inputs: Sequence, force: bool) -> None:
    """Refuse the output directory before any work, not after the training run."""
    check_output(output, inputs=inputs, overwrite=force, directory=True, owned=TOKENIZER_FILES)


def _run_train(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    started = time.perf_counter()
    if args.from_counts is not None:
        if args.output is not None:
            _check_tokenizer_output(args.output, [args.from_counts, *_base_paths(args)], args.force)
        result, output, files = _train_from_counts(args, parser), args.output, None
        vocab_size = args.vocab_size
    else:
        inputs, output, vocab_size = _train_inputs(args, parser)
        inputs = stdin_inputs(inputs)
        _check_tokenizer_output(output, [*inputs, *_base_paths(args)], args.force)
        specials = special_tokens_of(args)
        if args.superbpe is not None:
            result = superbpe_options.run_superbpe(args, inputs, vocab_size, specials)
        else:
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
                **input_kwargs(args),
                **superbpe_options.hf_kwargs(args),
            )
        files = result.stats.files
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
    if getattr(args, "superbpe", None) is not None:
        print(superbpe_options.summary_line(result))
    if args.profile:
        report = train_profile.build_report(
            result, write_seconds=finished - write_started, total_seconds=finished - started
        )
        print(train_profile.format_report(report))
        print(f"wrote {train_profile.save_report(output, report)}")
    return 0


def _base_paths(args: argparse.Namespace) -> list[Path]:
    """The --extend base when it is a file or directory: an input the output must not replace."""
    return [Path(args.extend)] if args.extend is not None and Path(args.extend).exists() else []


def _train_from_counts(args: argparse.Namespace, parser: argparse.ArgumentParser) -> TrainResult:
    if args.inputs or args.demo:
        parser.error("--from-counts trains from the count file alone; give no INPUT files and no --demo")
    if args.output is None or args.vocab_size is None:
        parser.error("--from-counts needs --vocab-size N and -o DIR")
    if args.special_tokens is not None or args.no_special_tokens:
        parser.error("--from-counts uses the special tokens the corpus was counted with; drop --special-token")
    counting = given_options(args, "--pattern", "--glob", "--text-field", "--text-column", "--skip-bad-records")
    if counting:
        them = "them" if len(counting) > 1 else "it"
        parser.error(
            f"{', '.join(counting)} cannot apply with --from-counts: the count file holds counts made already, "
            f"with its own pattern and inputs; drop {them}, or count the corpus again with {them}"
        )
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


def add_count_command(commands: argparse._SubParsersAction) -> None:
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
    add_special_token_option(cmd)
    add_threads_option(cmd)
    cmd.add_argument("--force", action="store_true", help="replace the output file if it exists")
    cmd.add_argument("--no-progress", action="store_true", help="do not draw a progress bar")
    add_input_options(cmd)
    add_ray_option(cmd, "the count file is the same as without --ray")
    cmd.set_defaults(run=_run_count)


def _run_count(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    args.inputs = stdin_inputs(args.inputs)
    check_output(args.output, inputs=args.inputs, overwrite=args.force)
    specials = special_tokens_of(args)
    check_ray_options(args, parser)
    if args.ray is not None:
        from bpeforge.cli.on_ray import run_count

        return run_count(args, specials, input_kwargs(args))
    started = time.perf_counter()
    table = counts.count(
        args.inputs, specials, num_threads=args.threads, progress=not args.no_progress, **input_kwargs(args)
    )
    counts.save_counts(table, args.output, overwrite=args.force, inputs=args.inputs)
    seconds = time.perf_counter() - started
    mib = table.bytes_counted / 2**20
    print(
        f"wrote {args.output}: {len(table):,} unique pre-tokens from {mib:,.1f} MiB "
        f"in {seconds:.2f} s ({mib / max(seconds, 1e-9):,.1f} MiB/s)"
    )
    return 0
