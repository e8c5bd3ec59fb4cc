"""`bpeforge train`'s options for HF's trainer conventions and SuperBPE (docs/superbpe.md)."""

from __future__ import annotations

import argparse

from bpeforge.superbpe import RECIPES, train_superbpe
from bpeforge.train import TrainResult


def add_superbpe_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--tie-break",
        choices=("cs336", "hf"),
        default="cs336",
        help="hf: HF tokenizers' BpeTrainer ties (smallest pair of its ids) and vocab_size (its vocabulary); "
        "with --superbpe, the reference's trainer merge for merge",
    )
    cmd.add_argument(
        "--documents",
        choices=("files", "lines"),
        help="lines: each line of a text file is a document, as HF's train(files) reads them "
        "(default: files, and lines with --superbpe)",
    )
    cmd.add_argument(
        "--superbpe",
        type=int,
        nargs="?",
        const=0,
        metavar="T",
        help="train a SuperBPE tokenizer: keep stage 1's first T merges (default: the recipe's), then learn "
        "superword tokens on whole lines (the reference's t is T+1; add --tie-break hf for its merges). "
        "With --extend BASE, give no T: stage 2 runs on top of BASE, keeping its ids",
    )
    cmd.add_argument(
        "--recipe",
        choices=sorted(RECIPES),
        default="paper",
        help="with --superbpe: the recipe whose pre-tokenizers and T are the defaults (docs/superbpe.md)",
    )
    cmd.add_argument("--superword-pattern", help="with --superbpe: stage 2's pre-tokenizer (default: the recipe's)")
    cmd.add_argument(
        "--max-words", type=int, default=4, help="with --superbpe: at most this many words a token (0: no limit)"
    )


def hf_kwargs(args: argparse.Namespace) -> dict:
    """`train`'s conventions when they are not the default (so count files and extensions stay as they were)."""
    kwargs = {}
    if args.tie_break != "cs336":
        kwargs["tie_break"] = args.tie_break
    if args.documents not in (None, "files"):
        kwargs["documents"] = args.documents
    return kwargs


def run_superbpe(args: argparse.Namespace, inputs: list, vocab_size: int, specials: list[str]) -> TrainResult:
    return train_superbpe(
        inputs,
        vocab_size,
        specials,
        transition=args.superbpe or None,
        recipe=args.recipe,
        pattern=args.pattern,
        superword_pattern=args.superword_pattern,
        max_words=args.max_words,
        extend=args.extend,
        tie_break=args.tie_break,
        documents=args.documents or "lines",
        min_frequency=args.min_frequency,
        num_threads=args.threads,
        progress=not args.no_progress,
    )


def superword_count(result: TrainResult) -> int:
    """Tokens that span words: a space after the token's first byte, with a byte other than space on each side."""
    spanning = 0
    for left, right in result.merges:
        token = (left + right).strip(b" ")
        spanning += b" " in token
    return spanning


def summary_line(result: TrainResult) -> str:
    """How many tokens span words, and the training text's bytes/token before and after stage 2."""
    stats = result.stats
    line = f"superword tokens (spanning words): {superword_count(result):,}"
    if stats.tokens_before and stats.tokens_after:
        before, after = stats.bytes_read / stats.tokens_before, stats.bytes_read / stats.tokens_after
        line += f"; {before:.2f} -> {after:.2f} bytes/token on the training text in stage 2"
    return line
