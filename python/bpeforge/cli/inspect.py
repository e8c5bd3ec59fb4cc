"""`bpeforge inspect`, `bpeforge compare` and `bpeforge show`: looking at tokenizers.

bpeforge inspect TOKENIZER [--sample FILE ...] [--documents N] [--json] [--plot lengths.png]
bpeforge compare TOKENIZER_A TOKENIZER_B --sample FILE ... [--documents N] [--json]
bpeforge show TOKENIZER "some text" [--html out.html]

A TOKENIZER is a directory, a tokenizer.json, a .tiktoken file (with
--pattern) or a bundled encoding's name (`bpeforge.open_tokenizer`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bpeforge.cli.options import add_threads_option
from bpeforge.cli.tokenizer_args import SOURCES, add_tokenizer_overrides, open_from_args, open_pair, tokenizer_paths
from bpeforge.formats.atomic import check_output
from bpeforge.inspection import show
from bpeforge.inspection.figures import SampleFigures, sample_figures, vocabulary_figures, vocabulary_overlap
from bpeforge.inspection.terminal_text import terminal_safe
from bpeforge.tokenizer import Tokenizer

BAR_WIDTH = 40
HISTOGRAM_ROWS = 24  # longer tokens share the last row


def add_inspect_commands(commands: argparse._SubParsersAction) -> None:
    _add_inspect(commands)
    _add_compare(commands)
    _add_show(commands)


def _add_sample_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--sample", action="append", default=[], type=Path, metavar="FILE", help="a text file (repeatable)"
    )
    cmd.add_argument(
        "--documents",
        type=int,
        metavar="N",
        help="bytes/token over N documents drawn at random from each sample (split on the first special token); "
        "default: the whole file",
    )
    cmd.add_argument("--seed", type=int, default=0, help="seed for --documents (default 0)")
    add_threads_option(cmd, "encoding threads")
    cmd.add_argument("--json", action="store_true", help="print the figures as JSON")


def _add_inspect(commands: argparse._SubParsersAction) -> None:
    cmd = commands.add_parser(
        "inspect",
        help="vocabulary figures, and compression and throughput on sample files",
        description="Vocabulary size, special tokens, longest tokens and token lengths; with --sample, bytes/token, "
        "encoding throughput and the projected time to encode the Pile (825 GB) on this machine.",
    )
    cmd.add_argument("tokenizer", metavar="TOKENIZER", help=SOURCES)
    add_tokenizer_overrides(cmd)
    _add_sample_options(cmd)
    cmd.add_argument("--plot", type=Path, metavar="PNG", help="draw the token-length histogram (needs matplotlib)")
    cmd.add_argument("--force", action="store_true", help="replace the --plot file if it exists")
    cmd.set_defaults(run=_run_inspect)


def _run_inspect(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.plot is not None:
        check_output(args.plot, inputs=[*tokenizer_paths(args.tokenizer), *args.sample], overwrite=args.force)
    tokenizer = open_from_args(args.tokenizer, args)
    figures = vocabulary_figures(tokenizer)
    figures["samples"] = [sample.to_json() for sample in _samples(tokenizer, args)]
    figures["cache"] = tokenizer.cache_info()
    if args.plot is not None:
        from bpeforge.inspection.plots import plot_length_histogram

        title = f"{Path(args.tokenizer).name}: {figures['vocab_size']:,} tokens by length"
        figures["plot"] = str(plot_length_histogram(figures["length_histogram"], args.plot, title=title))
    print(json.dumps(figures, indent=2) if args.json else terminal_safe(_inspect_text(args.tokenizer, figures)))
    return 0


def _samples(tokenizer: Tokenizer, args: argparse.Namespace) -> list[SampleFigures]:
    return [
        sample_figures(tokenizer, path, documents=args.documents, seed=args.seed, threads=args.threads)
        for path in args.sample
    ]


def _inspect_text(source: str, figures: dict) -> str:
    lines = [f"tokenizer {source}"]
    size = f"{figures['vocab_size']:,} tokens ({figures['merges']:,} merges)"
    lines.append(f"  vocabulary   {size}, pattern {figures['pattern']}")
    lines.append("  special      " + (", ".join(repr(t) for t in figures["special_tokens"]) or "none"))
    for rank, token in enumerate(figures["longest"]):
        label = "longest" if rank == 0 else ""
        lines.append(f"  {label:<12} {token['bytes']:>3} bytes  id {token['id']:<7} {token['token']}")
    lines.append("token lengths (bytes: tokens)")
    lines.extend(_histogram_rows(figures["length_histogram"]))
    if figures["samples"]:
        lines.append(_samples_table(figures["samples"]))
    lines.append(_cache_line(figures["cache"]))
    if "plot" in figures:
        lines.append(f"wrote {figures['plot']}")
    return "\n".join(lines)


def _histogram_rows(histogram: dict[str, int]) -> list[str]:
    rows: dict[str, int] = {}
    for length, count in histogram.items():
        key = length if int(length) < HISTOGRAM_ROWS else f"{HISTOGRAM_ROWS}+"
        rows[key] = rows.get(key, 0) + count
    widest = max(rows.values(), default=1)
    return [f"  {key:>4} {count:>8,} {'█' * max(1, round(count / widest * BAR_WIDTH))}" for key, count in rows.items()]


def _samples_table(samples: list[dict]) -> str:
    lines = [f"  {'sample':<40}{'bytes/token':>12}{'MiB/s':>9}{'825 GB (Pile)':>15}"]
    for sample in samples:
        name = _sample_name(sample)
        mib_per_second = sample["mb_per_second"] * 1e6 / 2**20  # the JSON's figure is in MB (10^6 bytes)
        lines.append(
            f"  {name:<40}{sample['bytes_per_token']:>12.2f}{mib_per_second:>9.1f}{_hours(sample['pile_hours']):>15}"
        )
    return "samples (throughput: whole file, `bpeforge encode`'s path)\n" + "\n".join(lines)


def _cache_line(cache: dict[str, int]) -> str:
    """The encode cache after the samples: what it holds, its budget and how often it answered.

    It serves `encode`/`encode_batch` (here: the documents of --documents); the whole-file
    throughput runs `bpeforge encode`'s path, whose workers keep their own tables."""
    if "capacity" not in cache:  # a tokenizer.json pipeline reports its budget only
        return f"  cache        budget {cache.get('budget_bytes', 0) / 2**20:.1f} MiB"
    if cache["capacity"] == 0:
        return "  cache        off"
    lookups = cache["hits"] + cache["misses"]
    rate = f", {cache['hits'] / lookups:.0%} of {lookups:,} lookups hit" if lookups else ""
    return (
        f"  cache        {cache['entries']:,} pieces in {cache['bytes'] / 2**20:.1f} MiB "
        f"of {cache['capacity'] / 2**20:.1f} MiB{rate}"
    )


def _hours(hours: float) -> str:
    return f"{hours:,.1f} h" if hours < 48 else f"{hours / 24:,.1f} days"


def _add_compare(commands: argparse._SubParsersAction) -> None:
    cmd = commands.add_parser(
        "compare",
        help="two tokenizers side by side on the same samples",
        description="Compression of two tokenizers on the same samples, their shared tokens, and the tokens only "
        "one of them has (earliest merges first).",
    )
    cmd.add_argument("tokenizer_a", metavar="TOKENIZER_A", help=SOURCES)
    cmd.add_argument("tokenizer_b", metavar="TOKENIZER_B", help="the same choices")
    add_tokenizer_overrides(cmd)
    _add_sample_options(cmd)
    cmd.set_defaults(run=_run_compare)


def _run_compare(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if not args.sample:
        parser.error("compare needs at least one --sample FILE")
    a, b = open_pair([args.tokenizer_a, args.tokenizer_b], args)
    figures = {
        "a": {"tokenizer": str(args.tokenizer_a), "vocab_size": a.vocab_size},
        "b": {"tokenizer": str(args.tokenizer_b), "vocab_size": b.vocab_size},
        "overlap": vocabulary_overlap(a, b),
        "samples": [{"a": sa.to_json(), "b": sb.to_json()} for sa, sb in zip(_samples(a, args), _samples(b, args))],
    }
    print(json.dumps(figures, indent=2) if args.json else terminal_safe(_compare_text(figures)))
    return 0


def _compare_text(figures: dict) -> str:
    a, b, overlap = figures["a"], figures["b"], figures["overlap"]
    rows = [("", f"A: {a['tokenizer']}", f"B: {b['tokenizer']}")]
    rows.append(("vocabulary", f"{a['vocab_size']:,}", f"{b['vocab_size']:,}"))
    for sample in figures["samples"]:
        label = f"bytes/token, {_sample_name(sample['a'])}"
        rows.append((label, f"{sample['a']['bytes_per_token']:.2f}", f"{sample['b']['bytes_per_token']:.2f}"))
    widths = [max(len(row[column]) for row in rows) + 3 for column in range(2)]
    lines = [f"  {row[0]:<{widths[0]}}{row[1]:<{widths[1]}}{row[2]}" for row in rows]
    lines.append(f"  shared tokens: {overlap['shared']:,} (Jaccard {overlap['jaccard']:.3f})")
    for side in ("a", "b"):
        listed = ", ".join(token["token"] for token in overlap[f"only_{side}"][:12])
        lines.append(f"  only in {side.upper()} ({overlap[f'only_{side}_count']:,}, earliest first): {listed}")
    return "\n".join(lines)


def _sample_name(sample: dict) -> str:
    return Path(sample["path"]).name + (f" ({sample['documents']} docs)" if sample["documents"] else "")


def _add_show(commands: argparse._SubParsersAction) -> None:
    cmd = commands.add_parser(
        "show",
        help="a text with its token boundaries coloured (terminal or HTML)",
        description="Encode a text and show each token on its own colour with its ids; --html writes a "
        "self-contained page with the ids and bytes of each token on hover.",
    )
    cmd.add_argument("tokenizer", metavar="TOKENIZER", help=SOURCES)
    cmd.add_argument("text", nargs="?", help="the text (or use --file)")
    add_tokenizer_overrides(cmd)
    cmd.add_argument("--file", type=Path, help="read the text from this UTF-8 file")
    cmd.add_argument("--html", type=Path, metavar="OUT.html", help="write an HTML page instead of printing")
    cmd.add_argument("--force", action="store_true", help="replace OUT.html if it exists")
    cmd.set_defaults(run=_run_show)


def _run_show(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if (args.text is None) == (args.file is None):
        parser.error("give the text, or --file FILE (one of them)")
    text = args.text if args.file is None else args.file.read_text(encoding="utf-8")
    tokenizer = open_from_args(args.tokenizer, args)
    pieces = show.pieces(tokenizer, text)
    if args.html is None:
        print(show.terminal(pieces, color=sys.stdout.isatty()))
        return 0
    title = f"bpeforge show: {Path(args.tokenizer).name}"
    inputs = (*tokenizer_paths(args.tokenizer), *([args.file] if args.file is not None else []))
    path = show.save_html(pieces, args.html, title=title, overwrite=args.force, inputs=inputs)
    print(f"wrote {path}: {sum(len(p.ids) for p in pieces)} tokens")
    return 0
