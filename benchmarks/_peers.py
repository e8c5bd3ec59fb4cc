"""The trainers compared by ``bench_train.py``, run one per fresh process.

The parent runs ``python _peers.py PEER CORPUS VOCAB_SIZE``. That process imports
the peer (untimed), times one training call, and prints a single result line
(prefix ``BENCH_RESULT``, then JSON). A new process per run isolates peak memory
and keeps allocator state and warm caches from one trainer out of the next.

Vocabulary sizes are given in bpeforge's accounting (256 bytes + specials +
merges) and converted per peer, so that every trainer learns the same number
of merges: ``vocab_size - 256 - len(SPECIALS)``.
"""

from __future__ import annotations

import codecs
import importlib
import importlib.metadata
import json
import resource
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

SPECIAL = "<|endoftext|>"
SPECIALS = [SPECIAL]
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# bpeasy drops pairs whose merged token would reach this many bytes; set far above
# any real token so that it never changes the result.
BPEASY_MAX_TOKEN_LENGTH = 1_000_000
READ_CHUNK = 1 << 20
RESULT_PREFIX = "BENCH_RESULT "
EXIT_NOT_INSTALLED = 3
STREAMED = (
    f"documents read and split on `{SPECIAL}` in Python (streaming, 1 MiB reads); that reading is inside *train s*"
)


def iter_documents(path: str, sep: str = SPECIAL, chunk: int = READ_CHUNK) -> Iterator[str]:
    """Yield the documents of ``path`` split on ``sep``, reading ``chunk`` bytes at a time.

    This is what a user of an iterator-based trainer writes, so its cost is part of
    those peers' training time. Streaming keeps their peak memory at one document
    rather than the whole corpus, which favours the peers. Bytes are decoded
    exactly (no newline translation), as bpeforge reads them.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    keep = len(sep) - 1  # a separator may straddle two chunks
    parts: list[str] = []
    tail = ""
    with open(path, "rb") as f:
        while block := f.read(chunk):
            pieces = (tail + decoder.decode(block)).split(sep)
            for piece in pieces[:-1]:
                parts.append(piece)
                yield "".join(parts)
                parts = []
            last = pieces[-1]
            tail = last[-keep:] if len(last) > keep else last
            parts.append(last[: len(last) - len(tail)])
    parts.append(tail + decoder.decode(b"", final=True))
    yield "".join(parts)


@dataclass(frozen=True)
class Peer:
    """How to train one library and read back what it learned.

    ``train`` is the timed call; ``sizes`` runs after the clock stops and returns
    (vocabulary entries, merges) so the report can show that all peers learned the
    same number of merges.
    """

    name: str
    module: str
    dist: str
    train: Callable[[ModuleType, str, int, str], Any]
    sizes: Callable[[Any], tuple[int, int]]
    note: str


def pattern_regex(pattern: str) -> str:
    """The regex of a bpeforge preset name (what the peers that take a regex are given), or the regex itself."""
    import bpeforge

    return dict(bpeforge.PATTERNS).get(pattern, pattern)


def _train_bpeforge(mod: ModuleType, path: str, vocab_size: int, pattern: str) -> Any:
    return mod.train_bpe(path, vocab_size, SPECIALS, pattern=pattern)


def _sizes_bpeforge(result: Any) -> tuple[int, int]:
    vocab, merges = result
    return len(vocab), len(merges)


def _train_rustbpe(mod: ModuleType, path: str, vocab_size: int, pattern: str) -> Any:
    # rustbpe has no special tokens: its vocab_size is 256 + merges.
    tok = mod.Tokenizer()
    tok.train_from_iterator(iter_documents(path), vocab_size - len(SPECIALS), pattern=pattern_regex(pattern))
    return tok


def _sizes_rustbpe(tok: Any) -> tuple[int, int]:
    return tok.vocab_size, tok.vocab_size - 256


def _train_bpeasy(mod: ModuleType, path: str, vocab_size: int, pattern: str) -> Any:
    # bpeasy has no special tokens either: its vocab_size is 256 + merges.
    return mod.train_bpe(
        iter_documents(path),
        pattern_regex(pattern),
        BPEASY_MAX_TOKEN_LENGTH,
        vocab_size - len(SPECIALS),
    )


def _sizes_bpeasy(vocab: dict[bytes, int]) -> tuple[int, int]:
    return len(vocab), len(vocab) - 256


def _hf_tokenizer_and_trainer(mod: ModuleType, vocab_size: int, pattern: str) -> tuple[Any, Any]:
    """GPT-2 setup: ByteLevel pre-tokenizer (GPT-2 regex) and all 256 bytes; another pattern is a
    `Split` on its regex before a ByteLevel without its own regex, as the Llama 3 and Qwen files do."""
    tok = mod.Tokenizer(mod.models.BPE())
    if pattern == "gpt2":
        tok.pre_tokenizer = mod.pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        split = mod.pre_tokenizers.Split(mod.Regex(pattern_regex(pattern)), behavior="isolated")
        byte_level = mod.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        tok.pre_tokenizer = mod.pre_tokenizers.Sequence([split, byte_level])
    trainer = mod.trainers.BpeTrainer(
        vocab_size=vocab_size,  # HF counts alphabet + specials + merges, like us
        special_tokens=SPECIALS,
        initial_alphabet=mod.pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    return tok, trainer


def _train_hf(mod: ModuleType, path: str, vocab_size: int, pattern: str) -> Any:
    tok, trainer = _hf_tokenizer_and_trainer(mod, vocab_size, pattern)
    tok.train_from_iterator(iter_documents(path), trainer=trainer)
    return tok


def _train_hf_files(mod: ModuleType, path: str, vocab_size: int, pattern: str) -> Any:
    tok, trainer = _hf_tokenizer_and_trainer(mod, vocab_size, pattern)
    tok.train([path], trainer=trainer)
    return tok


def _train_gigatoken(mod: ModuleType, path: str, vocab_size: int, pattern: str) -> Any:
    """gigatoken reads the file itself and has no pattern option: GPT-2's only (refused otherwise).

    ``tie_breaking="assembled_bytes"`` is its mode closest to CS336 (ties go to
    the greater pair of byte strings); it still differs from the reference from
    merge 31 of ``corpus.en`` on, so its merges are not CS336's.
    """
    if pattern_regex(pattern) != GPT2_PATTERN:
        raise ValueError("gigatoken's trainer has no pattern option (GPT-2's only)")
    from pathlib import Path

    return mod.train_bpe(Path(path), vocab_size, SPECIALS, tie_breaking="assembled_bytes")


def _sizes_hf(tok: Any) -> tuple[int, int]:
    merges = json.loads(tok.to_str())["model"]["merges"]
    return tok.get_vocab_size(), len(merges)


PEERS: dict[str, Peer] = {
    peer.name: peer
    for peer in [
        Peer(
            "bpeforge",
            "bpeforge",
            "bpeforge",
            _train_bpeforge,
            _sizes_bpeforge,
            "reads the file itself (streaming)",
        ),
        Peer(
            "rustbpe",
            "rustbpe",
            "rustbpe",
            _train_rustbpe,
            _sizes_rustbpe,
            STREAMED,
        ),
        Peer(
            "bpeasy",
            "bpeasy",
            "bpeasy",
            _train_bpeasy,
            _sizes_bpeasy,
            STREAMED,
        ),
        Peer(
            "hf",
            "tokenizers",
            "tokenizers",
            _train_hf,
            _sizes_hf,
            "train_from_iterator; " + STREAMED,
        ),
        Peer(
            "gigatoken",
            "gigatoken",
            "gigatoken",
            _train_gigatoken,
            _sizes_bpeforge,
            'reads the file itself; `tie_breaking="assembled_bytes"`, which differs from CS336\'s tie-break',
        ),
        Peer(
            "hf-files",
            "tokenizers",
            "tokenizers",
            _train_hf_files,
            _sizes_hf,
            (
                "train([path]): reads the file itself, line by line, and does not "
                f"split on `{SPECIAL}` while training (it learns from its text)"
            ),
        ),
    ]
}


def _version(peer: Peer, mod: ModuleType) -> str:
    """The installed distribution's version, else the module's ``__version__``."""
    try:
        return importlib.metadata.version(peer.dist)
    except importlib.metadata.PackageNotFoundError:
        return str(getattr(mod, "__version__", "unknown"))


def _peak_rss_mib() -> float:
    """Peak RSS of this process (Linux reports KiB), plus any child it spawned."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024


def run(name: str, path: str, vocab_size: int, pattern: str = "gpt2") -> dict[str, Any]:
    """Import, train once and measure; ImportError means "not installed"."""
    peer = PEERS[name]
    try:
        mod = importlib.import_module(peer.module)
    except ImportError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        sys.exit(EXIT_NOT_INSTALLED)
    start = time.perf_counter()
    result = peer.train(mod, path, vocab_size, pattern)
    train_s = time.perf_counter() - start
    vocab_len, n_merges = peer.sizes(result)
    return {
        "version": _version(peer, mod),
        "train_s": train_s,
        "peak_rss_mib": _peak_rss_mib(),
        "vocab_len": vocab_len,
        "merges": n_merges,
    }


def main(argv: list[str]) -> None:
    name, path, vocab_size, *pattern = argv
    result = run(name, path, int(vocab_size), *pattern)
    print(RESULT_PREFIX + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
