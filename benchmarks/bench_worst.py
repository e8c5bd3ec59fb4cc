"""The worst cases of ``bench_encode.py`` alone: one pre-token of 0.25, 0.5 and 1 MB (one letter, random digits,
spaces, one emoji, CJK without spaces, a run of one multi-byte char), bpeforge against gigatoken (and tiktoken).

    python benchmarks/bench_worst.py [--encodings gpt2,cl100k,o200k] [--peers bpeforge,gigatoken] [--repeat 5]

Each peer and encoding runs in a fresh process pinned with ``taskset`` to the first core, as in
``bench_encode.py`` (the same child, ``_encode_peers.py``, and the same inputs and files). Every timed call is
given a text no call had before (the input less a few chars at its end); ``again`` is the 1 MB text encoded a
second time: gigatoken keeps every pre-token it has encoded and copies the ids of a repeat. One table per
encoding, with the time ratio of each peer to bpeforge (over 1: bpeforge is faster) and whether the ids at 1 MB
are bpeforge's. A run takes about a minute; the corpora are not needed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from _encode_peers import WORST_CASES, WORST_SIZES
from bench_encode import ENCODINGS, GPT2_DIR, MB, OPENAI_DIR, WORST_PEERS, compare_ids, prepare_sources, run_child


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encodings", default=",".join(ENCODINGS), help=f"from {','.join(ENCODINGS)}")
    parser.add_argument("--peers", default="bpeforge,gigatoken", help=f"bpeforge first, then from {WORST_PEERS}")
    parser.add_argument("--repeat", type=int, default=5, help="calls per size at least; the best counts")
    parser.add_argument("--gpt2-dir", type=Path, default=GPT2_DIR, help="gpt2_vocab.json and gpt2_merges.txt")
    parser.add_argument("--openai-dir", type=Path, default=OPENAI_DIR, help="cl100k/o200k .tiktoken(.gz) files")
    args = parser.parse_args(argv)
    args.encodings, args.peers = args.encodings.split(","), args.peers.split(",")
    if [e for e in args.encodings if e not in ENCODINGS] or args.peers[0] != "bpeforge":
        parser.error(f"encodings from {ENCODINGS}; peers: bpeforge first, then any of {WORST_PEERS}")
    if [p for p in args.peers if p not in WORST_PEERS] or args.repeat < 1:
        parser.error(f"peers from {WORST_PEERS}; --repeat at least 1")
    return args


def measure(peer: str, source: dict[str, str], repeat: int, ids_dir: Path) -> dict[str, Any]:
    """The worst cases of one peer and encoding, in a fresh process pinned to core 0."""
    job = {"peer": peer, "threads": 1, "texts": {}, "source": source, "repeat": repeat, "single": False}
    run = run_child({**job, "worst": True, "ids_dir": str(ids_dir)})
    if run["status"] != "ok":
        sys.exit(f"{peer}, {source['encoding']}: {run['status']}: {run['error']}")
    return run["worst"]


def best_ms(cell: dict[str, Any], key: str = "times") -> float | None:
    return min(cell[key]) * 1e3 if "error" not in cell else None


def render(encoding: str, results: dict[str, dict[str, Any]], ids_dir: Path) -> list[str]:
    """One row per input and size: each peer's best ms, its ratio to bpeforge's, and bpeforge's growth."""
    peers = list(results)
    head = ["input", "MB", *[f"{p} ms" for p in peers], *[f"{p} / bpeforge" for p in peers[1:]], "bpeforge growth"]
    lines = [f"### {encoding}", "", "| " + " | ".join(head) + " |", "|---|--:|" + "--:|" * (len(head) - 2)]
    for kind in WORST_CASES:
        for size in WORST_SIZES:
            ms = [best_ms(results[p][kind][str(size)]) for p in peers]
            ratios = [_cell(None if m is None or ms[0] is None else m / ms[0], ".2f", "x") for m in ms[1:]]
            smallest = best_ms(results[peers[0]][kind][str(WORST_SIZES[0])])
            growth = ms[0] / smallest if size != WORST_SIZES[0] and ms[0] and smallest else None
            cells = [*map(_cell, ms), *ratios, _cell(growth, ".2f", "x")]
            lines.append(f"| {kind} | {size / MB:g} | " + " | ".join(cells) + " |")
    lines += ["", f"The {WORST_SIZES[-1] / MB:g} MB text encoded again, ms (best of the calls):", ""]
    for kind in WORST_CASES:
        again = [best_ms(results[p][kind][str(WORST_SIZES[-1])], "again") for p in peers]
        same = [compare_ids(ids_dir, f"bpeforge.worst.{kind}.u32", f"{p}.worst.{kind}.u32") for p in peers[1:]]
        cells = [f"{p} {_cell(a)}" for p, a in zip(peers, again)] + [
            f"ids of {p}: {s}" for p, s in zip(peers[1:], same)
        ]
        lines.append(f"- {kind}: " + ", ".join(cells))
    return lines


def _cell(value: float | None, spec: str = ".2f", suffix: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{suffix}"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sections = []
    with tempfile.TemporaryDirectory(prefix="bpeforge-bench-worst-") as tmp:
        sources = prepare_sources(args, Path(tmp))
        for encoding, source in sources.items():
            ids_dir = Path(tmp) / f"ids-{encoding}"
            ids_dir.mkdir()
            results = {}
            for peer in args.peers:
                print(f"{encoding}: {peer} ...", file=sys.stderr, flush=True)
                results[peer] = measure(peer, source, args.repeat, ids_dir)
            sections.append("\n".join(render(encoding, results, ids_dir)))
    print("\n\n".join(sections))


if __name__ == "__main__":
    main()
