"""`bpeforge convert`: a tokenizer from one file format to another, with the same ids.

bpeforge convert SRC --to hf|tiktoken|gpt2 -o DEST [--force] [--special-token TOK]... [--pattern P]

SRC is a directory with `vocab.json` + `merges.txt` (written by bpeforge, or
GPT-2's own), an HF `tokenizer.json` (or a directory holding one), or a tiktoken
`.tiktoken` ranks file; `--from` names the format when the name does not tell.
`.tiktoken` files and bare GPT-2 directories cannot record special tokens:
`--special-token` adds them (after the largest id, in the order given). Nor can
they record their pattern: `--pattern` gives it, and a `.tiktoken` file needs it
unless it is a rank file bpeforge ships, recognised by its hash.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from pathlib import Path

from bpeforge.formats import gpt2, hf, tiktoken_ranks
from bpeforge.formats.atomic import check_output
from bpeforge.open_tokenizer import is_bare_gpt2_directory, open_tokenizer, rank_file_pattern, tokenizer_kind
from bpeforge.tiktoken import list_encoding_names
from bpeforge.tokenizer import Tokenizer

HF_FILE = hf.HF_FILE


def _load_gpt2(path: Path, pattern: str | None) -> Tokenizer:
    if is_bare_gpt2_directory(path):
        # It records no pattern (nor special tokens, which `_with_specials` adds): GPT-2's unless given.
        return Tokenizer.from_files(path / gpt2.VOCAB_FILE, path / gpt2.MERGES_FILE, pattern=pattern or "gpt2")
    _refuse_pattern(path, pattern)
    return Tokenizer.load(path)


def _load_hf(path: Path, pattern: str | None) -> Tokenizer:
    _refuse_pattern(path, pattern)
    return Tokenizer.from_hf(path / HF_FILE if path.is_dir() else path)


def _load_tiktoken(path: Path, pattern: str | None) -> Tokenizer:
    """A rank file records no pattern: --pattern, or the pattern of a rank file bpeforge ships, recognised."""
    return Tokenizer.from_tiktoken(path, pattern if pattern is not None else rank_file_pattern(path))


def _refuse_pattern(path: Path, pattern: str | None) -> None:
    if pattern is not None:
        raise ValueError(
            f"{path} has its own pre-tokenizer; --pattern is only for .tiktoken files and GPT-2 directories "
            "without bpeforge.json"
        )


def _save_gpt2(tokenizer: Tokenizer, path: Path, overwrite: bool) -> None:
    tokenizer.save(path, overwrite=overwrite)


def _save_hf(tokenizer: Tokenizer, path: Path, overwrite: bool) -> None:
    hf.save_hf(tokenizer, path, overwrite=overwrite)


def _save_tiktoken(tokenizer: Tokenizer, path: Path, overwrite: bool) -> None:
    tiktoken_ranks.save_tiktoken(tokenizer, path, overwrite=overwrite)


LOADERS: dict[str, Callable[[Path, str | None], Tokenizer]] = {
    "hf": _load_hf,
    "tiktoken": _load_tiktoken,
    "gpt2": _load_gpt2,
}
SAVERS: dict[str, Callable[[Tokenizer, Path, bool], None]] = {
    "hf": _save_hf,
    "tiktoken": _save_tiktoken,
    "gpt2": _save_gpt2,
}
DESCRIPTIONS = {
    "hf": f"HF {HF_FILE}, or a directory with it and transformers' config files when DEST is not a .json",
    "tiktoken": ".tiktoken ranks file (tiktoken; special tokens are not stored)",
    "gpt2": f"directory with {gpt2.VOCAB_FILE}, {gpt2.MERGES_FILE} and {gpt2.META_FILE} (bpeforge, GPT-2)",
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
        help=f"a directory with {gpt2.VOCAB_FILE} + {gpt2.MERGES_FILE}, a {HF_FILE} file, a .tiktoken file, or a "
        f"bundled encoding ({', '.join(list_encoding_names())})",
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
    cmd.add_argument(
        "--pattern",
        help="the pre-tokenizer of a .tiktoken file (o200k, cl100k, gpt2 or a regex), which does not record it; "
        "needed unless the file is one bpeforge ships (recognised by its hash); also for a GPT-2 directory "
        "without bpeforge.json (default gpt2)",
    )
    cmd.add_argument("--force", action="store_true", help="replace DEST if it exists")
    cmd.set_defaults(run=run_convert)


def run_convert(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    source: Path = args.source
    bundled = not source.exists() and str(source) in list_encoding_names()
    if not bundled:
        _check_source(args, parser)
    inputs = [] if bundled else [source]
    check_output(args.output, inputs=inputs, overwrite=args.force, directory=_directory_output(args), owned=_OWNED)
    if bundled:
        loaded = open_tokenizer(str(source), pattern=args.pattern)
    else:
        loaded = LOADERS[args.source_format](source, args.pattern)
    tokenizer = _with_specials(loaded, args.special_tokens or [])
    SAVERS[args.target_format](tokenizer, args.output, args.force)
    _print_summary(tokenizer, args.output, args.target_format)
    return 0


def _check_source(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """SRC exists and its format is known (set on `args.source_format`), or a usage error."""
    source: Path = args.source
    if not source.exists():
        parser.error(f"{source} does not exist")
    args.source_format = args.source_format or tokenizer_kind(source)
    if args.source_format is None:
        parser.error(
            f"cannot tell the format of {source}: give a directory with {gpt2.VOCAB_FILE} and {gpt2.MERGES_FILE} "
            f"(gpt2), a .json file (hf) or a .tiktoken file (tiktoken), or name it with --from {'|'.join(LOADERS)}"
        )


_OWNED = (*gpt2.TOKENIZER_FILES, *hf.HF_FILES)


def _directory_output(args: argparse.Namespace) -> bool:
    """gpt2 writes a directory; hf one tokenizer.json when DEST ends in .json, else a directory for AutoTokenizer."""
    return args.target_format == "gpt2" or (args.target_format == "hf" and not hf.is_hf_file_output(args.output))


def _with_specials(tokenizer: Tokenizer, extra: list[str]) -> Tokenizer:
    if all(token in tokenizer.special_tokens for token in extra):
        return tokenizer
    return Tokenizer(tokenizer.vocab, tokenizer.merges, tokenizer.special_tokens + extra, pattern=tokenizer.pattern)


def _shown_pattern(pattern: str) -> str:
    return pattern if len(pattern) <= 40 else f"{pattern[:40]!r}... (a regex)"


def _print_summary(tokenizer: Tokenizer, output: Path, target_format: str) -> None:
    print(
        f"wrote {output} ({target_format}): {tokenizer.vocab_size:,} tokens, {len(tokenizer.merges):,} merges, "
        f"special tokens {tokenizer.special_tokens}, pattern {_shown_pattern(tokenizer.pattern)}"
    )
    if target_format == "tiktoken" and tokenizer.special_tokens:
        flags = " ".join(f"--special-token {shlex.quote(token)}" for token in tokenizer.special_tokens)
        print(f"note: .tiktoken files hold no special tokens; read them back with `bpeforge convert {output} {flags}`")
        try:
            print(f"note: give tiktoken.Encoding special_tokens={tiktoken_ranks.tiktoken_special_tokens(tokenizer)}")
        except ValueError as err:
            print(f"warning: {err}")
