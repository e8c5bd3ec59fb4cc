"""`bpeforge convert`: a tokenizer from one file format to another, with the same ids.

bpeforge convert SRC --to hf|tiktoken|gpt2 -o DEST [--force] [--special-token TOK]...

SRC is a directory with `vocab.json` + `merges.txt` (written by bpeforge, or
GPT-2's own), an HF `tokenizer.json` (or a directory holding one), or a tiktoken
`.tiktoken` ranks file; `--from` names the format when the name does not tell.
`.tiktoken` files and bare GPT-2 directories cannot record special tokens:
`--special-token` adds them (after the largest id, in the order given).
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from pathlib import Path

from bpeforge import formats, io
from bpeforge.outputs import check_output
from bpeforge.tokenizer import Tokenizer

HF_FILE = "tokenizer.json"


def _load_gpt2(path: Path) -> Tokenizer:
    return Tokenizer.load(path)


def _load_hf(path: Path) -> Tokenizer:
    return formats.load_hf(path / HF_FILE if path.is_dir() else path)


def _save_gpt2(tokenizer: Tokenizer, path: Path, overwrite: bool) -> None:
    tokenizer.save(path, overwrite=overwrite)


def _save_hf(tokenizer: Tokenizer, path: Path, overwrite: bool) -> None:
    formats.save_hf(tokenizer, path, overwrite=overwrite)


def _save_tiktoken(tokenizer: Tokenizer, path: Path, overwrite: bool) -> None:
    formats.save_tiktoken(tokenizer, path, overwrite=overwrite)


LOADERS: dict[str, Callable[[Path], Tokenizer]] = {
    "hf": _load_hf,
    "tiktoken": formats.load_tiktoken,
    "gpt2": _load_gpt2,
}
SAVERS: dict[str, Callable[[Tokenizer, Path, bool], None]] = {
    "hf": _save_hf,
    "tiktoken": _save_tiktoken,
    "gpt2": _save_gpt2,
}
DESCRIPTIONS = {
    "hf": f"HF {HF_FILE} (tokenizers, transformers)",
    "tiktoken": ".tiktoken ranks file (tiktoken; special tokens are not stored)",
    "gpt2": f"directory with {io.VOCAB_FILE}, {io.MERGES_FILE} and {io.META_FILE} (bpeforge, GPT-2)",
}


def add_convert_command(commands: argparse._SubParsersAction) -> None:
    """Register `convert` on the `bpeforge` command line."""
    cmd = commands.add_parser(
        "convert",
        help="convert a tokenizer between bpeforge/GPT-2, HF tokenizer.json and tiktoken files",
        description="Convert a tokenizer to another file format with the same ids; refuses, explaining why, a "
        "tokenizer the target format would encode differently. Formats: "
        + "; ".join(f"{name}: {text}" for name, text in DESCRIPTIONS.items()),
    )
    cmd.add_argument(
        "source",
        type=Path,
        metavar="SRC",
        help=f"a directory with {io.VOCAB_FILE} + {io.MERGES_FILE}, a {HF_FILE} file, or a .tiktoken file",
    )
    cmd.add_argument("--to", required=True, choices=list(SAVERS), dest="target_format", help="output format")
    cmd.add_argument("--from", choices=list(LOADERS), dest="source_format", help="format of SRC (default: from SRC)")
    cmd.add_argument("-o", "--output", required=True, type=Path, metavar="DEST", help="output file or directory")
    cmd.add_argument(
        "--special-token",
        action="append",
        dest="special_tokens",
        metavar="TOK",
        help="add a special token (repeatable); needed for .tiktoken files and bare GPT-2 directories, which do "
        "not record them",
    )
    cmd.add_argument("--force", action="store_true", help="replace DEST if it exists")
    cmd.set_defaults(run=run_convert)


def run_convert(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    source: Path = args.source
    if not source.exists():
        parser.error(f"{source} does not exist")
    source_format = args.source_format or detect_format(source)
    if source_format is None:
        parser.error(
            f"cannot tell the format of {source}: give a directory with {io.VOCAB_FILE} and {io.MERGES_FILE} "
            f"(gpt2), a .json file (hf) or a .tiktoken file (tiktoken), or name it with --from {'|'.join(LOADERS)}"
        )
    directory = args.target_format == "gpt2"
    check_output(args.output, inputs=[source], overwrite=args.force, directory=directory, owned=io.TOKENIZER_FILES)
    tokenizer = _with_specials(LOADERS[source_format](source), args.special_tokens or [])
    SAVERS[args.target_format](tokenizer, args.output, args.force)
    _print_summary(tokenizer, args.output, args.target_format)
    return 0


def detect_format(source: Path) -> str | None:
    """The format of `source` from its name and contents, or None if they do not tell."""
    if source.is_dir():
        if (source / io.VOCAB_FILE).is_file() and (source / io.MERGES_FILE).is_file():
            return "gpt2"
        return "hf" if (source / HF_FILE).is_file() else None
    return {".json": "hf", ".tiktoken": "tiktoken"}.get(source.suffix.lower())


def _with_specials(tokenizer: Tokenizer, extra: list[str]) -> Tokenizer:
    if all(token in tokenizer.special_tokens for token in extra):
        return tokenizer
    return Tokenizer(tokenizer.vocab, tokenizer.merges, tokenizer.special_tokens + extra, pattern=tokenizer.pattern)


def _print_summary(tokenizer: Tokenizer, output: Path, target_format: str) -> None:
    print(
        f"wrote {output} ({target_format}): {tokenizer.vocab_size:,} tokens, {len(tokenizer.merges):,} merges, "
        f"special tokens {tokenizer.special_tokens}"
    )
    if target_format == "tiktoken" and tokenizer.special_tokens:
        flags = " ".join(f"--special-token {shlex.quote(token)}" for token in tokenizer.special_tokens)
        print(f"note: .tiktoken files hold no special tokens; read them back with `bpeforge convert {output} {flags}`")
        try:
            print(f"note: give tiktoken.Encoding special_tokens={formats.tiktoken_special_tokens(tokenizer)}")
        except ValueError as err:
            print(f"warning: {err}")
