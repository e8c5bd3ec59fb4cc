"""Train bpeforge and its peers on the same corpus and compare time and memory.

Each run is a fresh process (see ``_peers.py``), so peak RSS belongs to one trainer
alone and no trainer profits from another's warm caches. Peers are run round-robin
when ``--repeat`` is above 1, so slow drifts in machine load hit all of them alike.

    python benchmarks/bench_train.py --corpus /tmp/corpora/gutenberg_10MB.txt \\
        --vocab-size 10000 [--bytes N] [--peers bpeforge,gigatoken,rustbpe,bpeasy,hf] \\
        [--repeat K] [--json results.json]

A ``.xz`` corpus is decompressed (streaming) once into a temporary directory; with
``--bytes`` only that prefix is written, cut back to a whole UTF-8 character.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import lzma
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from _peers import EXIT_NOT_INSTALLED, PEERS, RESULT_PREFIX, SPECIALS
from _spawn import MARK as SPAWN_MARK

PEERS_SCRIPT = Path(__file__).with_name("_peers.py")
SPAWN_SCRIPT = Path(__file__).with_name("_spawn.py")
DEFAULT_PEERS = "bpeforge,gigatoken,rustbpe,bpeasy,hf"
COPY_CHUNK = 1 << 20


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, type=Path, help=".txt or .txt.xz")
    parser.add_argument("--vocab-size", required=True, type=int)
    parser.add_argument("--bytes", type=int, help="train on this prefix only")
    parser.add_argument(
        "--peers",
        default=DEFAULT_PEERS,
        help=f"comma-separated, from {','.join(PEERS)} (default: {DEFAULT_PEERS})",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per peer")
    parser.add_argument(
        "--pattern",
        default="gpt2",
        help="pre-tokenizer for every peer that takes one: a bpeforge preset (gpt2, cl100k, o200k, llama3, qwen2; "
        "the others get its regex) or a regex",
    )
    parser.add_argument("--json", type=Path, help="also write results here")
    args = parser.parse_args(argv)
    args.peers = args.peers.split(",")
    unknown = [p for p in args.peers if p not in PEERS]
    if unknown:
        parser.error(f"unknown peers {unknown}; choose from {list(PEERS)}")
    if args.vocab_size <= 256 + len(SPECIALS):
        parser.error(f"--vocab-size must exceed {256 + len(SPECIALS)}")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


# --- corpus preparation -------------------------------------------------------


def _open_corpus(path: Path) -> IO[bytes]:
    return lzma.open(path, "rb") if path.suffix == ".xz" else open(path, "rb")


def _copy_prefix(src: IO[bytes], dst: IO[bytes], limit: int | None) -> None:
    """Copy at most ``limit`` bytes (all if None) in bounded memory."""
    left = limit
    while left is None or left > 0:
        block = src.read(COPY_CHUNK if left is None else min(COPY_CHUNK, left))
        if not block:
            return
        dst.write(block)
        if left is not None:
            left -= len(block)


def _partial_char_len(tail: bytes) -> int:
    """How many trailing bytes form an incomplete UTF-8 character (0 if none).

    A byte prefix can end inside a multi-byte character; trainers that decode
    strictly would reject the file, so the cut moves back to a character start.
    """
    for back in range(1, len(tail) + 1):
        byte = tail[-back]
        if byte < 0x80:
            return 0
        if byte >= 0xC0:
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return 0 if need <= back else back
    return 0


def _trim_partial_char(path: Path) -> None:
    with open(path, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - 4))
        f.truncate(size - _partial_char_len(f.read()))


def prepare_corpus(path: Path, limit: int | None, tmpdir: Path) -> Path:
    """Return a plain-text file holding the corpus, or its first ``limit`` bytes.

    A plain file used whole is returned as is; otherwise the (decompressed) bytes
    go to ``tmpdir``, so every trainer reads the same uncompressed file.
    """
    if path.suffix != ".xz" and (limit is None or limit >= path.stat().st_size):
        return path
    out = tmpdir / (path.name.removesuffix(".xz") + (f".{limit}B" if limit else ""))
    with _open_corpus(path) as src, open(out, "wb") as dst:
        _copy_prefix(src, dst, limit)
    if limit is not None:
        _trim_partial_char(out)
    return out


# --- running the peers ----------------------------------------------------------


def _parse_result(stdout: str) -> dict[str, Any] | None:
    """The child's result line; peers may print their own chatter around it."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX) :])
    return None


def run_child(
    peer: str, corpus: Path, vocab_size: int, timeout: float | None = None, pattern: str = "gpt2"
) -> dict[str, Any]:
    """Train ``peer`` once in a fresh interpreter; never raises for a peer's fault.

    A run longer than ``timeout`` seconds is killed and reported as ``timeout``.
    """
    # Through `_spawn.py`, so that the child's own peak RSS (which it reports) does not start from this
    # process's (see there).
    cmd = [sys.executable, str(SPAWN_SCRIPT), sys.executable, str(PEERS_SCRIPT), peer, str(corpus), str(vocab_size)]
    cmd.append(pattern)
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "error": f"killed after {timeout:g} s"}
    total_s = time.perf_counter() - start
    if proc.returncode == EXIT_NOT_INSTALLED:
        return {"status": "not installed"}
    result = _parse_result(proc.stdout)
    if proc.returncode != 0 or result is None:
        lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith(SPAWN_MARK)]
        lines = lines or [f"exit code {proc.returncode}"]
        return {"status": "failed", "error": lines[-1]}
    return {"status": "ok", "total_s": total_s, **result}


def run_all(
    peers: list[str], corpus: Path, vocab_size: int, repeat: int, pattern: str = "gpt2"
) -> dict[str, list[dict[str, Any]]]:
    """Round-robin over peers; a peer that is missing or fails is not retried."""
    runs: dict[str, list[dict[str, Any]]] = {peer: [] for peer in peers}
    for round_no in range(1, repeat + 1):
        for peer in peers:
            if runs[peer] and runs[peer][-1]["status"] != "ok":
                continue
            print(f"[{round_no}/{repeat}] {peer} ...", file=sys.stderr, flush=True)
            runs[peer].append(run_child(peer, corpus, vocab_size, pattern=pattern))
            print(f"    {_describe(runs[peer][-1])}", file=sys.stderr, flush=True)
    return runs


def _describe(run: dict[str, Any]) -> str:
    if run["status"] != "ok":
        return run.get("error", run["status"])
    return (
        f"train {run['train_s']:.2f} s, total {run['total_s']:.2f} s, "
        f"peak RSS {run['peak_rss_mib']:.0f} MiB, {run['merges']} merges"
    )


# --- summarising ------------------------------------------------------------------


def summarize(peer: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Best (minimum) times, as timeit does: noise only ever adds time."""
    ok = [r for r in runs if r["status"] == "ok"]
    if not ok:
        return {"peer": peer, **runs[-1]}
    train = [r["train_s"] for r in ok]
    return {
        "peer": peer,
        "status": "ok",
        "version": ok[0]["version"],
        "train_s": min(train),
        "train_s_median": statistics.median(train),
        "total_s": min(r["total_s"] for r in ok),
        "peak_rss_mib": max(r["peak_rss_mib"] for r in ok),
        "vocab_len": ok[0]["vocab_len"],
        "merges": ok[0]["merges"],
        "runs": runs,
    }


def add_ratios(rows: list[dict[str, Any]]) -> None:
    """bpeforge's speed-up (peer time / ours) and memory ratio (peer RSS / ours)."""
    ours = next((r for r in rows if r["peer"] == "bpeforge"), None)
    if ours is None or ours["status"] != "ok":
        return
    for row in rows:
        if row["status"] == "ok" and row is not ours:
            row["speedup"] = row["train_s"] / ours["train_s"]
            row["rss_ratio"] = row["peak_rss_mib"] / ours["peak_rss_mib"]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_revision() -> str:
    """The repository's commit (``+dirty`` with local edits): which bpeforge was measured."""
    repo = Path(__file__).resolve().parent.parent
    try:
        rev = subprocess.run(
            ["git", "-C", str(repo), "describe", "--always", "--dirty=+dirty"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev.stdout.strip()


def metadata(args: argparse.Namespace, corpus: Path) -> dict[str, Any]:
    return {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": shlex.join(["python", "benchmarks/bench_train.py", *sys.argv[1:]]),
        "corpus": str(args.corpus),
        "corpus_bytes": corpus.stat().st_size,
        "vocab_size": args.vocab_size,
        "pattern": args.pattern,
        "merges_target": args.vocab_size - 256 - len(SPECIALS),
        "repeat": args.repeat,
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "git": _git_revision(),
    }


# --- rendering -------------------------------------------------------------------


def _fmt_ratio(row: dict[str, Any], key: str) -> str:
    if row["peer"] == "bpeforge":
        return "1.00x" if row["status"] == "ok" else "—"
    return f"{row[key]:.2f}x" if key in row else "n/a"


def _table_row(row: dict[str, Any]) -> str:
    if row["status"] != "ok":
        cells = [row["peer"], row["status"], *["—"] * 7]
        return "| " + " | ".join(cells) + " |"
    cells = [
        row["peer"],
        row["version"],
        f"{row['train_s']:.2f}",
        f"{row['total_s']:.2f}",
        f"{row['peak_rss_mib']:,.0f}",
        f"{row['vocab_len']:,}",
        f"{row['merges']:,}",
        _fmt_ratio(row, "speedup"),
        _fmt_ratio(row, "rss_ratio"),
    ]
    return "| " + " | ".join(cells) + " |"


TABLE_HEAD = [
    (
        "| peer | version | train s | total s | peak RSS MiB | vocab | merges "
        "| bpeforge speed-up | peer RSS / bpeforge |"
    ),
    "|---|---|--:|--:|--:|--:|--:|--:|--:|",
]
LEGEND = [
    (
        "- *train s*: the training call, timed inside the child (imports excluded); "
        "*total s*: the whole child process, interpreter start included; "
        "*peak RSS*: the child's ru_maxrss."
    ),
    (
        "- *vocab*: entries returned. rustbpe and bpeasy have no special tokens, so "
        "they are asked for one entry less per special: every peer learns the same "
        "number of merges."
    ),
]


def _notes(meta: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """What each peer was fed, and anything that makes a row not comparable."""
    notes = list(LEGEND)
    for row in rows:
        peer = row["peer"]
        if row["status"] == "failed":
            notes.append(f"- {peer}: failed: {row['error']}")
        elif row["status"] == "ok":
            notes.append(f"- {peer}: {PEERS[peer].note}.")
            if row["merges"] != meta["merges_target"]:
                notes.append(
                    f"- **{peer} learned {row['merges']:,} merges, not "
                    f"{meta['merges_target']:,}** (ran out of pairs or stopped early)."
                )
    return notes


def render_markdown(meta: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    head = [
        (
            f"Corpus `{meta['corpus']}` ({meta['corpus_bytes']:,} bytes), "
            f"vocab {meta['vocab_size']:,} ({meta['merges_target']:,} merges), "
            f"best of {meta['repeat']}; {meta['cores']} cores, {meta['cpu']}, "
            f"Python {meta['python']}, bpeforge repo at {meta['git']}, {meta['date']}."
        ),
        f"Command: `{meta['command']}`",
    ]
    table = TABLE_HEAD + [_table_row(row) for row in rows]
    return "\n\n".join([*head, "\n".join(table), "\n".join(_notes(meta, rows))])


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bpeforge-bench-") as tmp:
        corpus = prepare_corpus(args.corpus, args.bytes, Path(tmp))
        meta = metadata(args, corpus)
        runs = run_all(args.peers, corpus, args.vocab_size, args.repeat, args.pattern)
    rows = [summarize(peer, peer_runs) for peer, peer_runs in runs.items()]
    add_ratios(rows)
    print(render_markdown(meta, rows))
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
