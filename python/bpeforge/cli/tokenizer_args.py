"""The tokenizer argument of the commands that take one (`encode`, `decode`,
`inspect`, `compare`, `show`): anything `open_tokenizer` opens, with
`--pattern` and `--special-token` for a `.tiktoken` file, which records neither.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from bpeforge.open_tokenizer import is_tiktoken_file, open_tokenizer
from bpeforge.tiktoken import list_encoding_names
from bpeforge.tokenizer import DEFAULT_CACHE_SIZE, Tokenizer

SOURCES = (
    "a directory (written by `bpeforge train`, GPT-2's vocab.json + merges.txt, or holding a tokenizer.json), "
    f"a tokenizer.json, a .tiktoken file (with --pattern) or a bundled encoding ({', '.join(list_encoding_names())})"
)


def add_tokenizer_overrides(cmd: argparse.ArgumentParser) -> None:
    """`--pattern` and `--special-token`: what a `.tiktoken` file does not record."""
    cmd.add_argument(
        "--pattern",
        help="for a .tiktoken file: its pre-tokenizer (a preset such as o200k, cl100k, gpt2, or a regex); "
        "other tokenizers carry their own",
    )
    cmd.add_argument(
        "--special-token",
        action="append",
        dest="special_tokens",
        metavar="TOK",
        help="for a .tiktoken file: a special token, given ids after the largest rank in order (repeatable)",
    )


def open_from_args(source: str, args: argparse.Namespace, *, cache_size: int = DEFAULT_CACHE_SIZE) -> Tokenizer:
    return open_tokenizer(source, pattern=args.pattern, special_tokens=args.special_tokens, cache_size=cache_size)


def open_pair(sources: Sequence[str], args: argparse.Namespace) -> list[Tokenizer]:
    """Two tokenizers sharing one --pattern/--special-token: those go to the `.tiktoken` files among them
    (to both when neither is one, so that open_tokenizer says they do not apply)."""
    tiktoken = [is_tiktoken_file(source) for source in sources]
    return [
        open_from_args(source, args) if is_tiktoken or not any(tiktoken) else open_tokenizer(source)
        for source, is_tiktoken in zip(sources, tiktoken)
    ]


def tokenizer_paths(*sources: str | os.PathLike[str]) -> list[Path]:
    """The sources that are files or directories: inputs that an output must not replace."""
    return [Path(source) for source in sources if Path(source).exists()]
