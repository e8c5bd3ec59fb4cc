"""`bpeforge encode` and `bpeforge decode`: token files (.npy) from text and records, and back."""

from __future__ import annotations

import argparse
import gc
from pathlib import Path

from bpeforge import encode_files
from bpeforge.cli.options import add_ray_option, add_record_options, add_threads_option, check_ray_options, stdin_inputs
from bpeforge.cli.tokenizer_args import SOURCES, add_tokenizer_overrides, open_from_args, tokenizer_paths
from bpeforge.formats import token_files
from bpeforge.formats.atomic import check_output, open_stream
from bpeforge.formats.output_target import output_target
from bpeforge.inputs import RecordOptions
from bpeforge.tokenizer import Tokenizer


def add_encode_command(commands: argparse._SubParsersAction) -> None:
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
    cmd.add_argument(
        "-o",
        "--output",
        required=True,
        type=Path,
        help="output .npy file, - for standard output (with --ray and npy: a directory); with --format: megatron a "
        "path prefix (PREFIX.bin, PREFIX.idx), datatrove and llmc a directory, nanogpt and olmo a file",
    )
    cmd.add_argument(
        "--format",
        choices=token_files.FORMATS,
        default="npy",
        help="the token files of a training stack (docs/token-files.md): npy (default), megatron, datatrove, "
        "llmc, nanogpt, olmo; each with the separator, id type and shards its own preprocessing uses",
    )
    cmd.add_argument(
        "--shard-tokens",
        type=int,
        metavar="N",
        help="datatrove and llmc: ids per shard (llmc's default: 100,000,000; datatrove: one file)",
    )
    cmd.add_argument(
        "--document-separator",
        metavar="TOK",
        help="append this special token (e.g. '<|endoftext|>') after each text file and each record; "
        "default: none, the ids of the documents follow each other",
    )
    cmd.add_argument(
        "--dtype",
        choices=sorted({*encode_files.DTYPES, "int32"}),
        help="default: uint16 when the vocab fits, else uint32 (megatron: as preprocess_data.py, int32)",
    )
    add_threads_option(cmd)
    cmd.add_argument("--force", action="store_true", help="replace the output file if it exists")
    cmd.add_argument("--no-progress", action="store_true", help="do not draw a progress bar")
    add_record_options(cmd)
    add_ray_option(cmd, "token shards and an index.json in the -o directory, resumable")
    cmd.add_argument(
        "--shards-dir",
        type=Path,
        metavar="DIR",
        help="with --ray and --format: the resumable .npy shards the stack's files are written from "
        "(default: OUTPUT.shards, next to -o; on a cluster, storage every node shares)",
    )
    cmd.set_defaults(run=_run_encode)


def _run_encode(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    check_ray_options(args, parser)
    if args.shards_dir is not None and (args.ray is None or args.format == "npy"):
        parser.error("--shards-dir applies only with --ray and a --format other than npy")
    if args.ray is not None:
        if args.format == "npy" and args.document_separator is not None:
            parser.error("--document-separator does not apply with --ray: its shards record where documents start")
        from bpeforge.cli.on_ray import run_encode

        return run_encode(args, _separator_id)
    args.inputs = stdin_inputs(args.inputs)
    files = encode_files.list_inputs(args.inputs, args.glob)
    cache_size = encode_files.cache_size_for(files)
    tokenizer = open_from_args(args.tokenizer, args, cache_size=cache_size)
    if tokenizer.cache_size > cache_size:  # a bundled encoding keeps its own budget; this process is the run's
        tokenizer.set_cache_size(cache_size)
    # The tokenizer lives until the process ends: frozen, its objects (a tuple, a bytes and an int a token and a
    # merge) are not walked again by the collection at exit, 7 of the 125 ms of encoding a small file with GPT-2.
    gc.freeze()
    if args.format == "npy":
        dtype = encode_files.choose_dtype(tokenizer, args.dtype)
    else:
        dtype = token_files.choose_dtype(args.format, tokenizer.vocab_size, args.dtype)
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
        files=files,
        format=args.format,
        shard_tokens=args.shard_tokens,
    )
    print(_encode_summary(args.output, dtype, stats))
    return 0


def _encode_summary(output: Path, dtype: str, stats: encode_files.EncodeStats) -> str:
    mib = stats.bytes_in / 2**20
    where = f"wrote {output}: {stats.tokens:,} tokens ({dtype}) from {mib:,.1f} MiB in {stats.files:,} file(s)"
    if not stats.tokens:  # no ratio or rate to give (it printed "nan bytes/token")
        return f"{where}: the inputs hold no text, {stats.seconds:.2f} s"
    seconds = max(stats.seconds, 1e-9)
    return (
        f"{where}, {stats.bytes_per_token:.2f} bytes/token, {mib / seconds:,.1f} MiB/s, "
        f"{stats.tokens / seconds:,.0f} tokens/s, {stats.seconds:.2f} s"
    )


def _separator_id(tokenizer: Tokenizer, token: str | None) -> int | None:
    """The id of --document-separator, which must be one of the tokenizer's special tokens."""
    if token is None:
        return None
    if token not in tokenizer.special_tokens:
        have = ", ".join(repr(t) for t in tokenizer.special_tokens) or "none"
        raise ValueError(
            f"--document-separator {token!r} is not a special token of the tokenizer (its special tokens: {have}; "
            "those of a .tiktoken file or a GPT-2 directory without bpeforge.json are given with --special-token)"
        )
    return tokenizer.token_to_id(token)


def add_decode_command(commands: argparse._SubParsersAction) -> None:
    cmd = commands.add_parser("decode", help="write the text of a .npy array of token ids")
    cmd.add_argument("source", type=Path, metavar="IN.npy")
    cmd.add_argument("--tokenizer", required=True, help=f"the tokenizer: {SOURCES}")
    add_tokenizer_overrides(cmd)
    cmd.add_argument("-o", "--output", required=True, help="output file (the exact bytes); - for standard output")
    cmd.add_argument("--force", action="store_true", help="replace the output file if it exists")
    cmd.set_defaults(run=_run_decode)


def _run_decode(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    tokenizer = open_from_args(args.tokenizer, args)
    args.output = Path(args.output)
    tokenizer_path = next(iter(tokenizer_paths(args.tokenizer)), None)
    if output_target(args.output).is_stream:  # standard output (`-o -`), a FIFO, /dev/null: written as decoded
        check_output(args.output, inputs=[args.source, *([tokenizer_path] if tokenizer_path else [])], overwrite=True)
        with open_stream(args.output) as out:
            written = encode_files.decode_to(tokenizer, args.source, out)
    else:
        written = encode_files.decode_file(
            tokenizer, args.source, args.output, overwrite=args.force, tokenizer_path=tokenizer_path
        )
    print(f"wrote {args.output}: {written:,} bytes")
    return 0
