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
import math
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _peers import EXIT_NOT_INSTALLED, RESULT_PREFIX, SPECIAL
from _simd import running_level

EOT_ID = 50256  # GPT-2's id for <|endoftext|>
DOC_SEP = f"\n{SPECIAL}\n"
# Below this many documents a corpus is cut into pieces of about PIECE_CHARS
# characters instead, at line breaks: with a handful of book-sized documents,
# 2 threads would mostly measure how unevenly the books divide.
MIN_DOCS = 64
PIECE_CHARS = 1 << 16
LOAD_REPEAT = 5
WORST_SIZES = (250_000, 500_000, 1_000_000)  # bytes of UTF-8
# A worst-case size is timed until its runs add up to this, within ``WORST_RUNS_MAX`` runs
# and at least ``--repeat`` (see ``_measure_one``).
WORST_MIN_SECONDS = 0.1
WORST_RUNS_MAX = 30
IDS_TYPECODE = "I"  # 4-byte unsigned on every platform this runs on


# --- the peers -------------------------------------------------------------------

# The encodings measured: GPT-2 from the CS336 fixture files, cl100k_base and
# o200k_base from OpenAI's rank files. Each maps to tiktoken's special tokens.
SPECIALS_BY_ENCODING = {
    "gpt2": {SPECIAL: EOT_ID},
    "cl100k": {SPECIAL: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
               "<|endofprompt|>": 100276},
    "o200k": {SPECIAL: 199999, "<|endofprompt|>": 200018},
}  # fmt: skip


@dataclass(frozen=True)
class Peer:
    """How to build one library's tokenizer for an encoding and call it.

    ``modules`` are imported before the clock starts (an ImportError means the
    peer is not installed); ``load`` is timed and returns the tokenizer that
    ``encode`` and ``encode_batch`` are given. ``source`` (see ``bench_encode.py``)
    holds the encoding's name and its files: ``vocab``/``merges`` and
    ``tokenizer_json`` for GPT-2, ``ranks`` (a ``.tiktoken`` file) for the others.
    ``encode`` returns what the library's own fast call returns (a list, a NumPy
    array); ids are compared after the clock stops.
    """

    name: str
    modules: tuple[str, ...]
    dist: str
    encodings: tuple[str, ...]
    load: Callable[[dict], Any]
    encode: Callable[[Any, str], Any]
    encode_batch: Callable[[Any, list[str], int], Any]


def _load_bpeforge(source: dict) -> Any:
    import bpeforge

    specials = SPECIALS_BY_ENCODING[source["encoding"]]
    if source["encoding"] == "gpt2":
        return bpeforge.Tokenizer.from_files(source["vocab"], source["merges"], list(specials))
    return bpeforge.Tokenizer.from_tiktoken(source["ranks"], source["encoding"], specials)


def _load_tiktoken(source: dict) -> Any:
    """tiktoken's ``Encoding`` from local files, as ``tiktoken_ext/openai_public.py`` builds it."""
    import tiktoken
    from bpeforge import PATTERNS
    from tiktoken.load import load_tiktoken_bpe

    if source["encoding"] == "gpt2":  # GPT-2's ids are its ranks
        from bpeforge.formats.gpt2 import load_vocab

        ranks = {token: token_id for token_id, token in load_vocab(source["vocab"]).items() if token_id != EOT_ID}
    else:
        ranks = load_tiktoken_bpe(source["ranks"])
    return tiktoken.Encoding(
        name=f"{source['encoding']}-local",
        pat_str=dict(PATTERNS)[source["encoding"]],
        mergeable_ranks=ranks,
        special_tokens=SPECIALS_BY_ENCODING[source["encoding"]],
    )


def _load_hf(source: dict) -> Any:
    """GPT-2 as HF builds it: byte-level BPE, the GPT-2 regex in ByteLevel, no prefix space."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(source["tokenizer_json"])


def _hf_encode_batch(tok: Any, texts: list[str], threads: int) -> list[list[int]]:
    """HF sizes its pool from RAYON_NUM_THREADS at start-up; refuse to report a wrong thread count.

    Reading ``.ids`` is timed: the other two return lists of ints, and so must a
    fair HF call.
    """
    _check_rayon_threads(threads)
    return [encoding.ids for encoding in tok.encode_batch(texts)]


def _check_rayon_threads(threads: int) -> None:
    if os.environ.get("RAYON_NUM_THREADS") != str(threads):
        raise RuntimeError(f"this peer needs RAYON_NUM_THREADS={threads} in its environment")


def _load_gigatoken(source: dict) -> Any:
    import gigatoken

    if source["encoding"] == "gpt2":
        return gigatoken.Tokenizer(source["tokenizer_json"])
    return gigatoken.Tokenizer.from_tiktoken(source["ranks"], special_tokens=SPECIALS_BY_ENCODING[source["encoding"]])


def _gigatoken_batch(tok: Any, texts: list[str], threads: int) -> Any:
    """Its bulk path: an awkward Array (flat ids and offsets; `encode_batch_list` makes lists)."""
    _check_rayon_threads(threads)
    return tok.encode_batch(texts)


def _load_fastokens(source: dict) -> Any:
    import fastokens
    from bpeforge import PATTERNS

    if source["encoding"] == "gpt2":
        return fastokens.Tokenizer.from_file(source["tokenizer_json"])
    pattern = dict(PATTERNS)[source["encoding"]]
    return fastokens.Tokenizer.from_tiktoken(
        source["ranks"], pattern=pattern, special_tokens=SPECIALS_BY_ENCODING[source["encoding"]]
    )


def _fastokens_batch(tok: Any, texts: list[str], threads: int) -> Any:
    """Its bulk path: two little-endian buffers, ids (uint32) and offsets (uint64)."""
    import numpy as np

    _check_rayon_threads(threads)
    ids, offsets = tok.encode_batch_flat(texts)
    return np.frombuffer(ids, np.uint32), np.frombuffer(offsets, np.uint64)


def _load_quicktok(source: dict) -> Any:
    """quicktok ships its own copies of OpenAI's ranks (the ids are checked against tiktoken's)."""
    import quicktok

    return quicktok.get_encoding(f"{source['encoding']}_base")


def _quicktok_batch(tok: Any, texts: list[str], threads: int) -> Any:
    if threads != 1:
        raise RuntimeError("quicktok has no thread-count option: measured on 1 thread only")
    return [tok.encode(text, allowed_special="all") for text in texts]


PEERS: dict[str, Peer] = {
    peer.name: peer
    for peer in [
        Peer(
            "bpeforge",
            ("bpeforge",),
            "bpeforge",
            ("gpt2", "cl100k", "o200k"),
            _load_bpeforge,
            # NumPy out, as gigatoken's `encode`: no Python int per token (the list that
            # `encode` returns was timed until the fifth session).
            lambda tok, text: tok.encode_to_numpy(text),
            # Its bulk path, a flat array and offsets, as fastokens' and gigatoken's (until the eleventh
            # session the list form was timed: a Python int per token, made under the GIL).
            lambda tok, texts, threads: tok.encode_batch_to_numpy(texts, num_threads=threads),
        ),
        Peer(
            "tiktoken",
            ("tiktoken", "bpeforge.formats.gpt2"),
            "tiktoken",
            ("gpt2", "cl100k", "o200k"),
            _load_tiktoken,
            lambda tok, text: tok.encode(text, allowed_special="all"),
            lambda tok, texts, threads: tok.encode_batch(texts, num_threads=threads, allowed_special="all"),
        ),
        Peer("hf", ("tokenizers",), "tokenizers", ("gpt2",), _load_hf, lambda t, x: t.encode(x).ids, _hf_encode_batch),
        Peer(
            "gigatoken",
            ("gigatoken",),
            "gigatoken",
            ("gpt2", "cl100k", "o200k"),
            _load_gigatoken,
            lambda tok, text: tok.encode(text),
            _gigatoken_batch,
        ),
        Peer(
            "fastokens",
            ("fastokens",),
            "fastokens",
            ("gpt2", "cl100k", "o200k"),
            _load_fastokens,
            lambda tok, text: tok.encode(text).ids,
            _fastokens_batch,
        ),
        Peer(
            "quicktok",
            ("quicktok",),
            "quicktok-v1",
            ("cl100k", "o200k"),
            _load_quicktok,
            lambda tok, text: tok.encode(text, allowed_special="all"),
            _quicktok_batch,
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


# Each makes a text of about n bytes of UTF-8 that the patterns keep as one or a few long pre-tokens
# (o200k and cl100k cut digits in threes: many short pieces, still a worst case for the scanner).
WORST_CASES: dict[str, Callable[[int], str]] = {
    "letter": lambda n: "a" * n,
    "digits": _random_digits,
    "spaces": lambda n: " " * n,
    "emoji": lambda n: "\U0001f642" * (n // 4),
    "cjk": lambda n: "".join(random.Random(0).choices("的一是不了人我在有他这为之大来以个中上们", k=n // 3)),
    "one multi-byte char": lambda n: "é" * (n // 2),
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


def id_sequences(result: Any) -> list[Any]:
    """The id sequences of a batch call, whatever shape the library returns them in."""
    if hasattr(result, "layout"):  # an awkward Array (gigatoken): its flat ids and offsets
        import awkward
        import numpy as np

        result = (awkward.to_numpy(awkward.flatten(result)), np.asarray(result.layout.offsets.data))
    if isinstance(result, tuple) and len(result) == 2:  # a flat array and offsets
        flat, offsets = result
        return [flat[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]
    return list(result)


def write_ids(path: Path, id_lists: list[Any]) -> None:
    """Concatenated ids as raw uint32, for the parent's cross-library check (after the clock stops)."""
    ids = array.array(IDS_TYPECODE)
    for part in id_lists:
        if hasattr(part, "tobytes"):  # a NumPy array
            import numpy as np

            ids.frombytes(np.asarray(part, dtype=np.uint32).tobytes())
        else:
            ids.extend(part)
    with open(path, "wb") as f:
        ids.tofile(f)


def measure_encode(peer: Peer, tok: Any, text_path: str, repeat: int, ids_path: Path) -> dict[str, Any]:
    """Single-thread ``encode`` of the whole text."""
    text = read_text(text_path)
    times, ids = timed_runs(lambda: peer.encode(tok, text), repeat)
    write_ids(ids_path, [ids])
    return {"bytes": len(text.encode("utf-8")), "tokens": len(ids), "times": times}


def first_call(peer: Peer, tok: Any, text_path: str) -> float:
    """Seconds of one ``encode`` of the text, the process's first: for the parent's extra first-call
    samples (``FIRST_CALL_PROCESSES``), measured as ``measure_encode`` times its first run."""
    text = read_text(text_path)
    times, _ = timed_runs(lambda: peer.encode(tok, text), 1)
    return times[0]


def measure_batch(peer: Peer, tok: Any, text_path: str, threads: int, repeat: int, ids_path: Path) -> dict[str, Any]:
    """``encode_batch`` over the text's documents (or pieces) on ``threads`` threads.

    One untimed call first: the 1-thread child has just run ``encode`` on the
    same text (warming every cache a library keeps), the 2-thread child has
    not, and without it a library with per-thread caches measured its 2-thread
    batch half cold.
    """
    pieces, split = batch_pieces(read_text(text_path))
    peer.encode_batch(tok, pieces, threads)
    times, result = timed_runs(lambda: peer.encode_batch(tok, pieces, threads), repeat)
    id_lists = id_sequences(result)
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
    """One worst-case input at one size: each timed call on a text no call had before, then ``again``, the same
    text encoded again; ids (of ``text`` itself) are written only when a path is given.

    The i-th call gets ``text`` less its last i chars: still a run, still one pre-token, but new. gigatoken keeps
    every pre-token it has encoded, whatever its length, and answers a repeat of a 1 MB pre-token by copying its ids
    (0.3-1.3 ms, where its first call on the text took 22-540 ms); timing the same text again measured that copy, so
    it is kept apart. Runs ``repeat`` times, or more where that is under ``WORST_MIN_SECONDS`` (up to
    ``WORST_RUNS_MAX``): cl100k's 0.25 MB of digits takes 0.4 ms, and the best of
    3 calls of 0.4-2 ms put the same build's 1 MB / 0.25 MB ratio anywhere from 4.0x to 5.3x.
    """
    first, ids = timed_runs(lambda: peer.encode(tok, text), 1)
    runs = min(WORST_RUNS_MAX, max(repeat, math.ceil(WORST_MIN_SECONDS / max(first[0], 1e-9))))
    times = first + [
        timed_runs(functools.partial(peer.encode, tok, text[: len(text) - i]), 1)[0][0] for i in range(1, runs)
    ]
    again, _ = timed_runs(lambda: peer.encode(tok, text), repeat)
    if ids_path is not None:
        write_ids(ids_path, [ids])
    return {"bytes": len(text.encode("utf-8")), "tokens": len(ids), "times": times, "again": again}


def _version(peer: Peer) -> str:
    """The installed distribution's version, as the report records it."""
    try:
        return importlib.metadata.version(peer.dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def run(job: dict[str, Any]) -> dict[str, Any]:
    """Import, load, measure; ImportError means "not installed" (exit code ``EXIT_NOT_INSTALLED``)."""
    peer = PEERS[job["peer"]]
    # NumPy first, in every child: bpeforge and gigatoken both import it on
    # their first NumPy-returning call, and its 90 ms import was charged to
    # that call's "first call" figure (bpeforge's since the fifth session).
    importlib.import_module("numpy")
    try:
        for module in peer.modules:
            importlib.import_module(module)
    except ImportError as exc:
        print(f"{peer.name}: {exc}", file=sys.stderr)
        sys.exit(EXIT_NOT_INSTALLED)
    load_times, tok = timed_runs(lambda: peer.load(job["source"]), LOAD_REPEAT)
    if job.get("first_only"):
        return {"first": {name: first_call(peer, tok, path) for name, path in job["texts"].items()}}
    ids_dir, threads, repeat = Path(job["ids_dir"]), job["threads"], job["repeat"]
    result: dict[str, Any] = {"version": _version(peer), "load_times": load_times, "encode": {}, "batch": {}}
    if peer.name == "bpeforge":
        result["simd_level"] = running_level()  # what BPEFORGE_SIMD gave on this CPU, not what was asked
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
