"""The encoders compared by ``bench_encode.py``, run one per fresh process.

The parent runs ``python _encode_peers.py JOB_JSON``. That process imports the
peer (untimed), builds its GPT-2 tokenizer from the local files (timed), runs the
measurements the job asks for, writes every id it produced to ``ids_dir`` (raw
uint32, so the parent can check the three libraries against each other without
holding them all in one process) and prints one result line (prefix
``BENCH_RESULT``, then JSON).

A fresh process per peer and thread count keeps one library's allocator state
and thread pools out of the next, and is the only fair way to give HF
``tokenizers`` a thread count: its rayon pool reads ``RAYON_NUM_THREADS`` once,
when it starts, so the parent sets it in the child's environment.
"""

from __future__ import annotations

import array
import functools
import gc
import importlib
import importlib.metadata
import json
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _peers import EXIT_NOT_INSTALLED, GPT2_PATTERN, RESULT_PREFIX, SPECIAL

EOT_ID = 50256  # GPT-2's id for <|endoftext|>
DOC_SEP = f"\n{SPECIAL}\n"
# Below this many documents a corpus is cut into pieces of about PIECE_CHARS
# characters instead, at line breaks: with a handful of book-sized documents,
# 2 threads would mostly measure how unevenly the books divide.
MIN_DOCS = 64
PIECE_CHARS = 1 << 16
LOAD_REPEAT = 5
WORST_SIZES = (250_000, 500_000, 1_000_000)  # bytes of UTF-8
IDS_TYPECODE = "I"  # 4-byte unsigned on every platform this runs on


# --- the peers -------------------------------------------------------------------


@dataclass(frozen=True)
class Peer:
    """How to build one library's GPT-2 tokenizer and call it.

    ``modules`` are imported before the clock starts (an ImportError means the
    peer is not installed); ``load`` is timed and returns the tokenizer that
    ``encode`` and ``encode_batch`` are given.
    """

    name: str
    modules: tuple[str, ...]
    dist: str
    load: Callable[[Path, Path], Any]
    encode: Callable[[Any, str], list[int]]
    encode_batch: Callable[[Any, list[str], int], list[list[int]]]


def _load_bpeforge(vocab: Path, merges: Path) -> Any:
    """The API the issue specifies: GPT-2's two files and the special token."""
    import bpeforge

    return bpeforge.Tokenizer.from_files(vocab, merges, [SPECIAL])


def _load_tiktoken(vocab: Path, merges: Path) -> Any:
    """tiktoken takes ranks, not merges: GPT-2's ids are its ranks, so the vocabulary alone defines it."""
    import tiktoken
    from bpeforge.io import load_vocab

    ranks = {token: token_id for token_id, token in load_vocab(vocab).items() if token_id != EOT_ID}
    return tiktoken.Encoding(
        name="gpt2-local",
        pat_str=GPT2_PATTERN,
        mergeable_ranks=ranks,
        special_tokens={SPECIAL: EOT_ID},
    )


def _load_hf(vocab: Path, merges: Path) -> Any:
    """GPT-2 as HF builds it: byte-level BPE, the GPT-2 regex in ByteLevel, no prefix space."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE.from_file(str(vocab), str(merges)))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([SPECIAL])
    return tok


def _hf_encode_batch(tok: Any, texts: list[str], threads: int) -> list[list[int]]:
    """HF sizes its pool from RAYON_NUM_THREADS at start-up; refuse to report a wrong thread count.

    Reading ``.ids`` is timed: the other two return lists of ints, and so must a
    fair HF call.
    """
    if os.environ.get("RAYON_NUM_THREADS") != str(threads):
        raise RuntimeError(f"HF needs RAYON_NUM_THREADS={threads} in its environment")
    return [encoding.ids for encoding in tok.encode_batch(texts)]


PEERS: dict[str, Peer] = {
    peer.name: peer
    for peer in [
        Peer(
            "bpeforge",
            ("bpeforge",),
            "bpeforge",
            _load_bpeforge,
            lambda tok, text: tok.encode(text),
            lambda tok, texts, threads: tok.encode_batch(texts, num_threads=threads),
        ),
        Peer(
            "tiktoken",
            ("tiktoken", "bpeforge.io"),
            "tiktoken",
            _load_tiktoken,
            lambda tok, text: tok.encode(text, allowed_special="all"),
            lambda tok, texts, threads: tok.encode_batch(texts, num_threads=threads, allowed_special="all"),
        ),
        Peer(
            "hf",
            ("tokenizers",),
            "tokenizers",
            _load_hf,
            lambda tok, text: tok.encode(text).ids,
            _hf_encode_batch,
        ),
    ]
}


# --- inputs ------------------------------------------------------------------------


def read_text(path: str | Path) -> str:
    """The file's exact text: no newline translation, as every library would be given it."""
    return Path(path).read_bytes().decode("utf-8")


def line_pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    """Cut ``text`` after the first line break at or past every ``size`` characters.

    The pieces join back to ``text``; a ``<|endoftext|>`` on its own line is never cut.
    """
    pieces: list[str] = []
    start = 0
    while start < len(text):
        cut = text.find("\n", start + size)
        end = len(text) if cut < 0 else cut + 1
        pieces.append(text[start:end])
        start = end
    return pieces


def batch_pieces(text: str) -> tuple[list[str], str]:
    """The texts handed to ``encode_batch``, and how they were cut.

    Documents (separator dropped) are what a user batches; a corpus of a few
    huge documents is cut at line breaks instead (see ``MIN_DOCS``). The rule is
    deterministic, so every child cuts the same pieces.
    """
    docs = text.split(DOC_SEP)
    if len(docs) >= MIN_DOCS:
        return docs, "documents"
    return line_pieces(text), f"~{PIECE_CHARS // 1024}K-character pieces at line breaks"


def _random_digits(n: int) -> str:
    """Seeded random digits: one long number whose merges vary, unlike a single repeated digit."""
    return "".join(random.Random(0).choices("0123456789", k=n))


# Each makes a text of n bytes of UTF-8 that the GPT-2 pattern keeps as one pre-token.
WORST_CASES: dict[str, Callable[[int], str]] = {
    "letter": lambda n: "a" * n,
    "digits": _random_digits,
    "spaces": lambda n: " " * n,
    "emoji": lambda n: "\U0001f642" * (n // 4),
}


# --- measuring -------------------------------------------------------------------------


def timed_runs(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    """Every run's wall time and the last result.

    The garbage collector is off while timing (as in ``timeit``), so a collection
    triggered by millions of new ints is not charged to whichever call was
    unlucky; the previous result is dropped first, so each run starts from the
    same heap.
    """
    times: list[float] = []
    result = None
    for _ in range(repeat):
        result = None
        gc.disable()
        try:
            start = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return times, result


def attempt(measure: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """A peer failing on one input is a result to report, not a reason to lose the others."""
    try:
        return measure()
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}


def write_ids(path: Path, id_lists: list[list[int]]) -> None:
    """Concatenated ids as raw uint32, for the parent's cross-library check."""
    ids = array.array(IDS_TYPECODE)
    for part in id_lists:
        ids.extend(part)
    with open(path, "wb") as f:
        ids.tofile(f)


def measure_encode(peer: Peer, tok: Any, text_path: str, repeat: int, ids_path: Path) -> dict[str, Any]:
    """Single-thread ``encode`` of the whole text."""
    text = read_text(text_path)
    times, ids = timed_runs(lambda: peer.encode(tok, text), repeat)
    write_ids(ids_path, [ids])
    return {"bytes": len(text.encode("utf-8")), "tokens": len(ids), "times": times}


def measure_batch(peer: Peer, tok: Any, text_path: str, threads: int, repeat: int, ids_path: Path) -> dict[str, Any]:
    """``encode_batch`` over the text's documents (or pieces) on ``threads`` threads."""
    pieces, split = batch_pieces(read_text(text_path))
    times, id_lists = timed_runs(lambda: peer.encode_batch(tok, pieces, threads), repeat)
    write_ids(ids_path, id_lists)
    return {
        "bytes": sum(len(piece.encode("utf-8")) for piece in pieces),
        "pieces": len(pieces),
        "split": split,
        "tokens": sum(len(ids) for ids in id_lists),
        "times": times,
    }


def measure_worst(peer: Peer, tok: Any, repeat: int, ids_dir: Path) -> dict[str, dict[str, Any]]:
    """Each worst case at every size in ``WORST_SIZES``; ids are kept for the largest."""
    results: dict[str, dict[str, Any]] = {}
    for kind, make in WORST_CASES.items():
        results[kind] = {}
        for size in WORST_SIZES:
            text = make(size)
            ids_path = ids_dir / f"{peer.name}.worst.{kind}.u32" if size == WORST_SIZES[-1] else None
            results[kind][str(size)] = attempt(functools.partial(_measure_one, peer, tok, text, repeat, ids_path))
    return results


def _measure_one(peer: Peer, tok: Any, text: str, repeat: int, ids_path: Path | None) -> dict[str, Any]:
    """One worst-case input at one size; ids are written only when a path is given."""
    times, ids = timed_runs(lambda: peer.encode(tok, text), repeat)
    if ids_path is not None:
        write_ids(ids_path, [ids])
    return {"bytes": len(text.encode("utf-8")), "tokens": len(ids), "times": times}


def _version(peer: Peer) -> str:
    """The installed distribution's version, as the report records it."""
    try:
        return importlib.metadata.version(peer.dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def run(job: dict[str, Any]) -> dict[str, Any]:
    """Import, load, measure; ImportError means "not installed" (exit code ``EXIT_NOT_INSTALLED``)."""
    peer = PEERS[job["peer"]]
    try:
        for module in peer.modules:
            importlib.import_module(module)
    except ImportError as exc:
        print(f"{peer.name}: {exc}", file=sys.stderr)
        sys.exit(EXIT_NOT_INSTALLED)
    vocab, merges = Path(job["vocab"]), Path(job["merges"])
    load_times, tok = timed_runs(lambda: peer.load(vocab, merges), LOAD_REPEAT)
    ids_dir, threads, repeat = Path(job["ids_dir"]), job["threads"], job["repeat"]
    result: dict[str, Any] = {"version": _version(peer), "load_times": load_times, "encode": {}, "batch": {}}
    for name, path in job["texts"].items():
        stem = ids_dir / f"{peer.name}.{name}"
        if job["single"]:
            measure = functools.partial(measure_encode, peer, tok, path, repeat, Path(f"{stem}.encode.u32"))
            result["encode"][name] = attempt(measure)
        measure = functools.partial(measure_batch, peer, tok, path, threads, repeat, Path(f"{stem}.batch{threads}.u32"))
        result["batch"][name] = attempt(measure)
    if job["worst"]:
        result["worst"] = measure_worst(peer, tok, repeat, ids_dir)
    return result


def main(argv: list[str]) -> None:
    (job,) = argv
    result = run(json.loads(job))
    print(RESULT_PREFIX + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
