"""Encode the same texts with bpeforge and the field (tiktoken, HF tokenizers, gigatoken, fastokens,
quicktok) for GPT-2, cl100k_base and o200k_base, and compare.

Reports, per encoding: single-thread ``encode`` throughput, first call (in a fresh
process, the fastest of three) and best of ``--repeat``; ``encode_batch`` throughput on 1 and 2 threads;
whether every library produced the same ids; worst-case inputs at three sizes;
the time to build each tokenizer; and the whole-process file workload (``bpeforge
encode FILE`` against gigatoken's ``encode_files`` on the same file, 1 and 2 cores,
with peak RSS), on the first ``--file-mb`` MB of each of ``--file-corpora``.

    python benchmarks/bench_encode.py [--mb 10] [--repeat 3] [--encodings gpt2,cl100k,o200k] \\
        [--corpora gutenberg,multilingual,20news] [--peers bpeforge,tiktoken,...] [--file-mb 500] \\
        [--file-corpora gutenberg,multilingual,20news] [--simd auto|baseline|avx2|avx512[,...]] [--json PATH]

With several ``--simd`` levels, everything runs once per level (the peers too, so each level's ratios come from
the same stretch of the run); ``BPEFORGE_SIMD`` is set in bpeforge's children only (see ``_simd.py``).

Every peer runs in fresh processes (see ``_encode_peers.py``): one per corpus on
1 thread (so its first ``encode`` is a first call), one per encoding on 2 threads.
Each is pinned with ``taskset`` to the first core (1 thread) or the first two
(2 threads), and the rayon-based peers get their thread count from
``RAYON_NUM_THREADS``. Texts are the first ``--mb`` MB of each corpus, read from
/tmp/corpora or else stream-decompressed from the shared ``.xz`` file; rank files
come gunzipped from the shared ``openai/`` directory. Nothing uses the network.
"""

from __future__ import annotations

import argparse
import array
import datetime as dt
import gzip
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _encode_peers import IDS_TYPECODE, LOAD_REPEAT, PEERS, SPECIALS_BY_ENCODING, WORST_CASES, WORST_SIZES
from _peers import EXIT_NOT_INSTALLED
from _simd import child_env, parse_levels, probe_level, render_level_summary
from _spawn import MARK as SPAWN_MARK
from bench_train import _cpu_model, _git_revision, _parse_result, prepare_corpus

CHILD_SCRIPT = Path(__file__).with_name("_encode_peers.py")
# Fresh processes whose first `encode` of each text is timed (see `add_first_calls`).
FIRST_CALL_PROCESSES = 3
SPAWN_SCRIPT = Path(__file__).with_name("_spawn.py")
DATA_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
PLAIN_DIR = Path("/tmp/corpora")
XZ_DIR = DATA_DIR / "corpora"
GPT2_DIR = DATA_DIR / "cs336"
OPENAI_DIR = DATA_DIR / "openai"
ENCODINGS = ("gpt2", "cl100k", "o200k")
CORPORA = {"gutenberg": "gutenberg_500MB.txt", "multilingual": "multilingual.txt", "20news": "20news.txt"}
THREADS = (1, 2)
WORST_PEERS = ("bpeforge", "tiktoken", "gigatoken")
MB = 1_000_000

# peer -> batch threads -> child result (for one encoding); the 1-thread entry merges the per-corpus children.
Results = dict[str, dict[int, dict[str, Any]]]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The CLI; lists are split and checked here so that a typo fails before minutes of work."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=10, help="MB (10^6 bytes) of each corpus (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best counts")
    parser.add_argument("--corpora", default=",".join(CORPORA), help=f"from {','.join(CORPORA)}")
    parser.add_argument("--peers", default=",".join(PEERS), help=f"from {','.join(PEERS)}")
    parser.add_argument("--encodings", default=",".join(ENCODINGS), help=f"from {','.join(ENCODINGS)}")
    parser.add_argument("--gpt2-dir", type=Path, default=GPT2_DIR, help="gpt2_vocab.json and gpt2_merges.txt")
    parser.add_argument("--openai-dir", type=Path, default=OPENAI_DIR, help="cl100k/o200k .tiktoken(.gz) files")
    parser.add_argument(
        "--file-mb", type=float, default=500, help="MB of each corpus for the whole-process file workload (0: skip)"
    )
    parser.add_argument(
        "--file-corpora",
        default=",".join(CORPORA),
        help="corpora of the file workload, each its first --file-mb MB (the whole file if smaller)",
    )
    parser.add_argument("--no-pin", action="store_true", help="do not pin the children to cores with taskset")
    parser.add_argument(
        "--simd", default="auto", help="BPEFORGE_SIMD for bpeforge's children; a comma list runs each level in turn"
    )
    parser.add_argument("--json", type=Path, help="also write every run here")
    args = parser.parse_args(argv)
    args.corpora = args.corpora.split(",")
    args.peers = args.peers.split(",")
    args.encodings = args.encodings.split(",")
    known_lists = [
        (args.corpora, CORPORA, "corpora"),
        (args.peers, PEERS, "peers"),
        (args.encodings, ENCODINGS, "encodings"),
    ]
    for given, known, what in known_lists:
        unknown = [name for name in given if name not in known]
        if unknown:
            parser.error(f"unknown {what} {unknown}; choose from {list(known)}")
    try:
        args.simd = parse_levels(args.simd)
    except ValueError as exc:
        parser.error(str(exc))
    if args.repeat < 1 or args.mb <= 0:
        parser.error("--repeat must be at least 1 and --mb positive")
    return args


# --- inputs ------------------------------------------------------------------------


def locate_corpus(name: str) -> Path:
    """The decompressed copy if there is one (fast), else the shared ``.xz`` original."""
    for path in (PLAIN_DIR / CORPORA[name], XZ_DIR / f"{CORPORA[name]}.xz"):
        if path.exists():
            return path
    sys.exit(f"corpus {name!r}: neither {PLAIN_DIR / CORPORA[name]} nor {XZ_DIR / CORPORA[name]}.xz exists")


def prepare_texts(names: list[str], mb: float, tmpdir: Path) -> dict[str, dict[str, Any]]:
    """Each corpus's first ``mb`` MB (cut back to a whole character) as a plain file every child reads."""
    texts = {}
    for name in names:
        source = locate_corpus(name)
        path = prepare_corpus(source, int(mb * MB), tmpdir)
        texts[name] = {"source": str(source), "path": str(path), "bytes": path.stat().st_size}
    return texts


def prepare_sources(args: argparse.Namespace, tmpdir: Path) -> dict[str, dict[str, str]]:
    """Each encoding's files as every peer loads them: GPT-2's vocab/merges and a ``tokenizer.json``
    made from them (HF, gigatoken and fastokens read that), OpenAI's rank files gunzipped under
    their own names (gigatoken tells the encoding from the name)."""
    sources = {}
    for encoding in args.encodings:
        source = {"encoding": encoding}
        if encoding == "gpt2":
            source["vocab"] = str(args.gpt2_dir / "gpt2_vocab.json")
            source["merges"] = str(args.gpt2_dir / "gpt2_merges.txt")
            source["tokenizer_json"] = str(_gpt2_tokenizer_json(args.gpt2_dir, tmpdir))
        else:
            source["ranks"] = str(_gunzipped(args.openai_dir / f"{encoding}_base.tiktoken", tmpdir))
        sources[encoding] = source
    return sources


def _gpt2_tokenizer_json(gpt2_dir: Path, tmpdir: Path) -> Path:
    """GPT-2 as HF builds it from the two files: byte-level BPE, ByteLevel without prefix space."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE.from_file(str(gpt2_dir / "gpt2_vocab.json"), str(gpt2_dir / "gpt2_merges.txt")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(list(SPECIALS_BY_ENCODING["gpt2"]))
    path = tmpdir / "gpt2-tokenizer.json"
    tok.save(str(path))
    return path


def _gunzipped(path: Path, tmpdir: Path) -> Path:
    if path.exists():
        return path
    out = tmpdir / path.name
    with gzip.open(path.with_name(path.name + ".gz"), "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


# --- running the peers ---------------------------------------------------------------


def pinned(cmd: list[str], threads: int, pin: bool) -> list[str]:
    """``cmd`` under ``taskset`` on the first ``threads`` cores, so every peer gets the same ones."""
    if not pin or shutil.which("taskset") is None or (os.cpu_count() or 1) < threads:
        return cmd
    return ["taskset", "-c", ",".join(str(core) for core in range(threads)), *cmd]


def run_child(job: dict[str, Any], pin: bool = True) -> dict[str, Any]:
    """One peer at one batch thread count in a fresh interpreter; never raises for a peer's fault."""
    threads = str(job["threads"])
    base = {**os.environ, "RAYON_NUM_THREADS": threads, "TOKENIZERS_PARALLELISM": "true"}
    env = child_env(job["peer"], job.get("simd", "auto"), base)
    cmd = pinned([sys.executable, str(CHILD_SCRIPT), json.dumps(job)], job["threads"], pin)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    last_err = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
    if proc.returncode == EXIT_NOT_INSTALLED:
        return {"status": "not installed", "error": last_err}
    result = _parse_result(proc.stdout)
    if proc.returncode != 0 or result is None:
        return {"status": "failed", "error": last_err}
    return {"status": "ok", **result}


def run_all(args: argparse.Namespace, texts: dict[str, dict[str, Any]], source: dict, ids_dir: Path) -> Results:
    """Every peer of one encoding at every thread count.

    One child per corpus and thread count, so that each ``encode`` timed first
    is a first call in a fresh process, and the batches on 1 and 2 threads
    start from the same state (until the tenth session one 2-thread child ran
    every corpus, and 20news's batches met tables full of the other two
    corpora's pieces: 1.0-1.1x over 1 thread in the bench, 1.4x each in a
    fresh process). Worst cases ride with the last 1-thread child, after it.
    """
    peers = [peer for peer in args.peers if source["encoding"] in PEERS[peer].encodings]
    results: Results = {peer: {} for peer in peers}
    for peer in peers:
        for threads in THREADS:
            groups = [[name] for name in texts]
            runs = []
            for index, group in enumerate(groups):
                job = {
                    "peer": peer,
                    "threads": threads,
                    "texts": {name: texts[name]["path"] for name in group},
                    "source": source,
                    "repeat": args.repeat,
                    "single": threads == 1,
                    "worst": threads == 1 and index == len(groups) - 1 and peer in WORST_PEERS,
                    "ids_dir": str(ids_dir),
                    "simd": args.simd_level,
                }
                label = f"{source['encoding']}: {peer}, {threads} thread(s), {', '.join(group)}"
                print(f"{label} ...", file=sys.stderr, flush=True)
                start = time.perf_counter()
                runs.append(run_child(job, pin=not args.no_pin))
                if threads == 1 and runs[-1]["status"] == "ok":
                    add_first_calls(runs[-1], {**job, "first_only": True, "worst": False}, pin=not args.no_pin)
                print(f"    {runs[-1]['status']} in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
            results[peer][threads] = merge_runs(runs)
            if results[peer][threads]["status"] != "ok":
                break  # a missing or broken peer fails the same way on 2 threads
    return results


def add_first_calls(run: dict[str, Any], job: dict[str, Any], pin: bool) -> None:
    """Time the first call in ``FIRST_CALL_PROCESSES - 1`` more fresh processes, next to the main child's.

    One sample swung by a third between runs of the same build (gigatoken's GPT-2 Gutenberg first call
    157 and 216 MB/s on one day, bpeforge's 118 and 190-210): the machine's noise, not the library. The
    report takes the fastest of the samples for every peer alike."""
    for _ in range(FIRST_CALL_PROCESSES - 1):
        extra = run_child(job, pin)
        for name, seconds in extra.get("first", {}).items():
            cell = run["encode"].get(name, {})
            if _ok(cell):
                cell.setdefault("more_first_times", []).append(seconds)


def merge_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-corpus children of one peer and thread count as one result (the first failure wins)."""
    failed = next((run for run in runs if run["status"] != "ok"), None)
    if failed is not None:
        return failed
    merged: dict[str, Any] = {**runs[0], "encode": {}, "batch": {}}
    for run in runs:
        merged["encode"].update(run["encode"])
        merged["batch"].update(run["batch"])
        if "worst" in run:
            merged["worst"] = run["worst"]
    return merged


# --- checking the ids ------------------------------------------------------------------


def _read_ids(path: Path) -> array.array | None:
    """The ids a child wrote, or None if it wrote none (it failed or was not installed)."""
    if not path.exists():
        return None
    ids = array.array(IDS_TYPECODE)
    ids.frombytes(path.read_bytes())
    return ids


def compare_ids(ids_dir: Path, reference: str, other: str) -> str:
    """OK, or where the two id files first differ (a shorter one differs at its end)."""
    ref, ids = _read_ids(ids_dir / reference), _read_ids(ids_dir / other)
    if ref is None or ids is None:
        missing = reference if ref is None else other
        return f"n/a: no ids from {missing.split('.')[0]}"
    if ref == ids:
        return "OK"
    at = next((i for i, (a, b) in enumerate(zip(ref, ids)) if a != b), min(len(ref), len(ids)))
    mine = ref[at] if at < len(ref) else "end"
    theirs = ids[at] if at < len(ids) else "end"
    return f"**differs at token {at:,}**: {reference.split('.')[0]} {mine}, {other.split('.')[0]} {theirs}"


def check_corpus(ids_dir: Path, corpus: str, peers: list[str]) -> dict[str, dict[str, str]]:
    """Every peer's ids against the first peer's (bpeforge unless left out).

    ``encode`` ids are of the whole text; batch ids are the concatenated ids of
    the pieces, on 1 and 2 threads, against the reference's 1-thread batch.
    """
    ref = peers[0]
    checks = {}
    for peer in peers:
        row = {"encode": compare_ids(ids_dir, f"{ref}.{corpus}.encode.u32", f"{peer}.{corpus}.encode.u32")}
        for threads in THREADS:
            reference, mine = f"{ref}.{corpus}.batch{THREADS[0]}.u32", f"{peer}.{corpus}.batch{threads}.u32"
            row[f"batch{threads}"] = compare_ids(ids_dir, reference, mine)
        if peer == ref:
            row["encode"] = row[f"batch{THREADS[0]}"] = "reference"
        checks[peer] = row
    return checks


def check_all(ids_dir: Path, results: Results, corpora: list[str]) -> dict[str, Any]:
    """Id checks for every corpus and, between the worst-case peers, every worst case at its largest size."""
    peers = [peer for peer, runs in results.items() if runs.get(1, {}).get("status") == "ok"]
    checks: dict[str, Any] = {"reference": peers[0] if peers else None, "corpora": {}, "worst": {}}
    if not peers:
        return checks
    checks["corpora"] = {corpus: check_corpus(ids_dir, corpus, peers) for corpus in corpora}
    worst_peers = [peer for peer in peers if peer in WORST_PEERS]
    for kind in WORST_CASES:
        for other in worst_peers[1:]:
            same = compare_ids(ids_dir, f"{worst_peers[0]}.worst.{kind}.u32", f"{other}.worst.{kind}.u32")
            checks["worst"].setdefault(kind, {})[other] = same
    return checks


# --- summarising ------------------------------------------------------------------------


def _ok(measurement: dict[str, Any] | None) -> bool:
    return measurement is not None and "error" not in measurement


def _mbps(measurement: dict[str, Any] | None) -> float | None:
    """Throughput of the best run (noise only ever adds time), in MB of UTF-8 per second."""
    return measurement["bytes"] / min(measurement["times"]) / MB if _ok(measurement) else None


def _first_mbps(measurement: dict[str, Any] | None) -> float | None:
    """Throughput of the first call in a fresh process (cold caches, first allocations): the fastest of
    the main child's and the extra processes' (``FIRST_CALL_PROCESSES``)."""
    if not _ok(measurement):
        return None
    return measurement["bytes"] / min(measurement["times"][0], *measurement.get("more_first_times", [])) / MB


def _ratio(a: float | None, b: float | None) -> float | None:
    """a / b, or None when either is missing, so one failed peer blanks only its own cells."""
    return a / b if a is not None and b else None


def _measurement(results: Results, peer: str, threads: int, section: str, corpus: str) -> dict[str, Any] | None:
    """One child's result for one corpus, or None if that child did not run or failed."""
    run = results.get(peer, {}).get(threads, {})
    return run.get(section, {}).get(corpus) if run.get("status") == "ok" else None


def summarize_encode(results: Results, corpora: list[str]) -> dict[str, Any]:
    """Single-thread MB/s per corpus and peer, and bpeforge's speed-up over each peer."""
    summary = {}
    for corpus in corpora:
        cells = {peer: _measurement(results, peer, 1, "encode", corpus) for peer in results}
        mbps = {peer: _mbps(cell) for peer, cell in cells.items()}
        first = {peer: _first_mbps(cell) for peer, cell in cells.items()}
        ours, ours_first = mbps.get("bpeforge"), first.get("bpeforge")
        speedup = {peer: _ratio(ours, value) for peer, value in mbps.items() if peer != "bpeforge"}
        first_speedup = {peer: _ratio(ours_first, value) for peer, value in first.items() if peer != "bpeforge"}
        summary[corpus] = {"mbps": mbps, "first_mbps": first, "bpeforge_speedup": speedup,
                           "bpeforge_first_speedup": first_speedup}  # fmt: skip
    return summary


def summarize_batch(results: Results, corpora: list[str]) -> dict[str, Any]:
    """Batch MB/s on each thread count and each peer's own 2-thread/1-thread scaling."""
    summary = {}
    for corpus in corpora:
        per_peer = {}
        for peer in results:
            mbps = {threads: _mbps(_measurement(results, peer, threads, "batch", corpus)) for threads in THREADS}
            per_peer[peer] = {"mbps": mbps, "scaling": _ratio(mbps[THREADS[1]], mbps[THREADS[0]])}
        summary[corpus] = per_peer
    return summary


def summarize_worst(results: Results) -> dict[str, Any]:
    """Best time per size (each call on a new text), the growth from each size to the next (2 is linear, 4
    quadratic), and the best time of the largest text encoded again (a peer that keeps long pre-tokens copies)."""
    summary: dict[str, Any] = {}
    for kind in WORST_CASES:
        for peer in WORST_PEERS:
            run = results.get(peer, {}).get(1, {})
            if run.get("status") != "ok" or "worst" not in run:
                continue
            cells = run["worst"][kind]
            secs = {size: min(cells[str(size)]["times"]) if _ok(cells[str(size)]) else None for size in WORST_SIZES}
            errors = sorted({cells[str(size)]["error"] for size in WORST_SIZES if not _ok(cells[str(size)])})
            growth = [_ratio(secs[big], secs[small]) for small, big in zip(WORST_SIZES, WORST_SIZES[1:])]
            largest = cells[str(WORST_SIZES[-1])]
            again = min(largest["again"]) if _ok(largest) and largest.get("again") else None
            summary.setdefault(kind, {})[peer] = {"seconds": secs, "growth": growth, "again": again, "errors": errors}
    return summary


def summarize_load(results: Results) -> dict[str, Any]:
    """Version and best load time (from the 1-thread child) of every peer."""
    summary = {}
    for peer, runs in results.items():
        run = runs.get(1, {})
        if run.get("status") == "ok":
            version = run["version"] + (f" (SIMD {run['simd_level']})" if "simd_level" in run else "")
            summary[peer] = {"status": "ok", "version": version, "load_s": min(run["load_times"])}
        else:
            summary[peer] = {"status": run.get("status", "not run"), "error": run.get("error", "")}
    return summary


def metadata(args: argparse.Namespace, texts: dict[str, dict[str, Any]], pieces: dict[str, Any]) -> dict[str, Any]:
    """What a reader needs to reproduce or discount the run: inputs, command, machine, revision."""
    return {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": shlex.join(["python", "benchmarks/bench_encode.py", *sys.argv[1:]]),
        "texts": {name: {**text, **pieces.get(name, {})} for name, text in texts.items()},
        "gpt2_dir": str(args.gpt2_dir),
        "repeat": args.repeat,
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "git": _git_revision(),
    }


def batch_shapes(results: Results) -> dict[str, Any]:
    """How each corpus was cut for the batch runs, from the first peer that ran it."""
    shapes: dict[str, Any] = {}
    for runs in results.values():
        for corpus, cell in runs.get(1, {}).get("batch", {}).items():
            if _ok(cell) and corpus not in shapes:
                shapes[corpus] = {"pieces": cell["pieces"], "split": cell["split"]}
    return shapes


# --- rendering ----------------------------------------------------------------------------


def _f(value: float | None, spec: str = ".1f", suffix: str = "") -> str:
    """A number for a table cell, or a dash for a missing one."""
    return "—" if value is None else f"{value:{spec}}{suffix}"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def render_header(meta: dict[str, Any], load_before: float, load_after: float) -> list[str]:
    """Machine, revision and load average first: these numbers mean little without them."""
    texts = "; ".join(
        f"{name}: {text['bytes']:,} bytes of `{text['source']}`"
        + (f", batched as {text['pieces']:,} {text['split']}" if "pieces" in text else "")
        for name, text in meta["texts"].items()
    )
    return [
        (
            f"GPT-2 vocabulary from `{meta['gpt2_dir']}`; best of {meta['repeat']}; {meta['cores']} cores, "
            f"{meta['cpu']}, Python {meta['python']}, bpeforge repo at {meta['git']}, {meta['date']}; "
            f"load average {load_before:.2f} before, {load_after:.2f} after."
        ),
        f"Texts: {texts}.",
        f"Command: `{meta['command']}`",
        *(
            [
                f"Two cores here: a pure-compute loop on each of cores 0 and 1 at once did "
                f"{meta['two_core_scaling']:.2f}x the work of one alone (the ceiling of any 2 / 1 ratio below)."
            ]
            if meta.get("two_core_scaling")
            else []
        ),
    ]


def render_load(load: dict[str, Any]) -> list[str]:
    lines = [f"| library | version | build the tokenizer from its files, s (best of {LOAD_REPEAT}) |", "|---|---|--:|"]
    for peer, row in load.items():
        if row["status"] == "ok":
            lines.append(_row([peer, row["version"], f"{row['load_s']:.3f}"]))
        else:
            lines.append(_row([peer, f"{row['status']}: {row['error']}", "—"]))
    return lines


def render_encode(encode: dict[str, Any], peers: list[str]) -> list[str]:
    """MB/s as `best / first call` per peer, then bpeforge's ratio to each (best; first call)."""
    others = [peer for peer in peers if peer != "bpeforge"]
    head = ["corpus", *[f"{peer} best / first" for peer in peers], *[f"bpeforge / {peer}" for peer in others]]
    lines = [_row(head), "|---|" + "--:|" * (len(head) - 1)]
    for corpus, row in encode.items():
        cells = [f"{_f(row['mbps'][peer])} / {_f(row['first_mbps'][peer])}" for peer in peers]
        best, first = row["bpeforge_speedup"], row["bpeforge_first_speedup"]
        speedups = [f"{_f(best.get(peer), '.2f', 'x')}; {_f(first.get(peer), '.2f', 'x')}" for peer in others]
        lines.append(_row([corpus, *cells, *speedups]))
    return lines


def render_batch(batch: dict[str, Any], shapes: dict[str, Any]) -> list[str]:
    lines = [
        "| corpus | pieces | library | 1 thread MB/s | 2 threads MB/s | 2 threads / 1 thread |",
        "|---|--:|---|--:|--:|--:|",
    ]
    for corpus, per_peer in batch.items():
        pieces = f"{shapes[corpus]['pieces']:,}" if corpus in shapes else "—"
        for peer, row in per_peer.items():
            mbps = [_f(row["mbps"][threads]) for threads in THREADS]
            lines.append(_row([corpus, pieces, peer, *mbps, _f(row["scaling"], ".2f", "x")]))
    return lines


def render_ids(checks: dict[str, Any], encode_tokens: dict[str, int]) -> list[str]:
    """One row per corpus and peer: `encode`, and batch ids on each thread count."""
    lines = [
        "| corpus | tokens | library | `encode` | batch, 1 thread | batch, 2 threads |",
        "|---|--:|---|---|---|---|",
    ]
    for corpus, per_peer in checks["corpora"].items():
        tokens = f"{encode_tokens[corpus]:,}" if corpus in encode_tokens else "—"
        for peer, row in per_peer.items():
            lines.append(_row([corpus, tokens, peer, row["encode"], *[row[f"batch{t}"] for t in THREADS]]))
    return lines


def render_worst(worst: dict[str, Any], checks: dict[str, dict[str, str]]) -> list[str]:
    """Times per size and growth per doubling, so linear (2.0) and quadratic (4.0) read at a glance; then the
    largest text encoded again, apart (gigatoken copies the ids it kept)."""
    sizes = [f"{size / MB:g} MB ms" for size in WORST_SIZES]
    growth = [f"{big / MB:g} / {small / MB:g}" for small, big in zip(WORST_SIZES, WORST_SIZES[1:])]
    largest = f"{WORST_SIZES[-1] / MB:g} MB"
    lines = [
        _row(["input", "library", *sizes, *growth, f"{largest} again ms", f"same ids at {largest}"]),
        "|---|---|" + "--:|" * (len(sizes) + len(growth) + 1) + "---|",
    ]
    for kind, per_peer in worst.items():
        for peer, row in per_peer.items():
            secs = [_f(None if s is None else s * 1000) for s in row["seconds"].values()]
            ratios = [_f(g, ".2f") for g in row["growth"]]
            again = _f(None if row.get("again") is None else row["again"] * 1000)
            same = "reference" if peer == WORST_PEERS[0] else checks.get(kind, {}).get(peer, "n/a")
            lines.append(_row([kind, peer, *secs, *ratios, again, same]))
    return lines


def _worst_notes(worst: dict[str, Any]) -> list[str]:
    """Why a worst-case cell is empty (tiktoken's regex gives up on 1 MB of spaces)."""
    return [
        f"- {peer} on {kind}: {error}"
        for kind, per_peer in worst.items()
        for peer, row in per_peer.items()
        for error in row["errors"]
    ]


def _measurement_errors(results: Results) -> list[str]:
    """Per-corpus failures (a peer that raised on one text), which the tables show as —."""
    notes = []
    for peer, runs in results.items():
        for threads, run in runs.items():
            for section in ("encode", "batch"):
                for corpus, cell in run.get(section, {}).items():
                    if not _ok(cell):
                        notes.append(f"- {peer} {section} ({threads} thread) on {corpus}: {cell['error']}")
    return notes


def render_encoding(encoding: str, report: dict[str, Any], results: Results) -> list[str]:
    """One encoding's tables, in the order the issue lists the measurements."""
    peers = list(results)
    summary = report["summary"]
    ref = report["checks"]["reference"]
    encode_tokens = {
        corpus: cell["tokens"]
        for corpus in report["corpora"]
        if _ok(cell := _measurement(results, ref, 1, "encode", corpus))
    }
    sections = [
        f"### {encoding}",
        "\n".join(render_load(summary["load"])),
        "Single-thread `encode` (pinned to one core), MB of UTF-8 per second, best of the runs / the first call "
        f"in a fresh process (the fastest of {FIRST_CALL_PROCESSES} processes):\n\n"
        + "\n".join(render_encode(summary["encode"], peers)),
        "`encode_batch`:\n\n" + "\n".join(render_batch(summary["batch"], batch_shapes(results))),
        f"Same ids as {ref}:\n\n" + "\n".join(render_ids(report["checks"], encode_tokens)),
        "Worst cases (long runs of one kind of text), single-thread `encode`, each call on a text not encoded "
        "before; `again`: the largest text encoded a second time:\n\n"
        + "\n".join(render_worst(summary["worst"], report["checks"]["worst"])),
    ]
    notes = _worst_notes(summary["worst"]) + _measurement_errors(results)
    if notes:
        sections.append("Errors:\n\n" + "\n".join(notes))
    return sections


SPIN_SCRIPT = "x = 0\nfor i in range(8_000_000):\n    x += i * i\n"


def measure_core_scaling(repeat: int = 3) -> float | None:
    """What two cores give here: the work of two processes of a pure-compute loop, one pinned to each of
    the first two cores at once, against one such process alone (best of ``repeat``). A 2-thread / 1-thread
    ratio cannot go past this; on a VM whose two vCPUs share a physical core, it is well under 2. ``None``
    without ``taskset`` or a second core."""
    if shutil.which("taskset") is None or (os.cpu_count() or 1) < 2:
        return None

    def wall(cores: list[int]) -> float:
        start = time.perf_counter()
        procs = [subprocess.Popen(["taskset", "-c", str(core), sys.executable, "-c", SPIN_SCRIPT]) for core in cores]
        for proc in procs:
            proc.wait()
        return time.perf_counter() - start

    alone = min(wall([0]) for _ in range(repeat))
    both = min(wall([0, 1]) for _ in range(repeat))
    return 2 * alone / both


def compile_bpeforge_bytecode() -> None:
    """Write bpeforge's ``.pyc`` files if they are missing, as ``pip install`` does for the peers' wheels. An
    editable checkout has none, and where ``PYTHONDONTWRITEBYTECODE`` is set (this VM sets it) every child
    compiled bpeforge's modules again: 25 ms of each start-up, which the file workload counts."""
    import compileall

    import bpeforge

    compileall.compile_dir(Path(bpeforge.__file__).parent, quiet=1)


def main(argv: list[str] | None = None) -> None:
    """Prepare texts and sources, run every SIMD level in turn, report each level's tables after its summary."""
    args = parse_args(argv)
    compile_bpeforge_bytecode()
    load_before = os.getloadavg()[0]
    core_scaling = measure_core_scaling()
    levels_out, sections = {}, []
    with tempfile.TemporaryDirectory(prefix="bpeforge-bench-encode-") as tmp:
        texts = prepare_texts(args.corpora, args.mb, Path(tmp))
        sources = prepare_sources(args, Path(tmp))
        for level in args.simd:
            args.simd_level = level
            reports, all_results, level_sections = run_level(args, texts, sources, Path(tmp) / f"simd-{level}")
            files = measure_file_workload(args, sources, Path(tmp)) if args.file_mb and "gpt2" in sources else None
            if files is not None:
                level_sections += ["### File to ids, whole process (GPT-2)", *render_files(files)]
            ran = sorted({run.get("simd_level", "?") for run in _bpeforge_runs(all_results)}) or [probe_level(level)]
            summary = render_level_summary(level, ", ".join(ran), reports, files)
            sections += [f"## SIMD level `{level}`", "\n".join(summary), *level_sections]
            levels_out[level] = {"encodings": reports, "runs": all_results, "files": files, "ran": ran}
    meta = metadata(args, texts, batch_shapes(next(iter(next(iter(levels_out.values()))["runs"].values()), {})))
    meta["two_core_scaling"] = core_scaling
    header = render_header(meta, load_before, os.getloadavg()[0])
    print("\n\n".join([*header, *sections]))
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "levels": levels_out}, indent=2))


def run_level(args: argparse.Namespace, texts: dict, sources: dict, tmp: Path) -> tuple[dict, dict, list[str]]:
    """Every encoding's children at ``args.simd_level``; the id checks run while the id files exist."""
    reports, all_results, sections = {}, {}, []
    for encoding, source in sources.items():
        ids_dir = tmp / f"ids-{encoding}"
        ids_dir.mkdir(parents=True)
        results = run_all(args, texts, source, ids_dir)
        report = {
            "corpora": args.corpora,
            "summary": {
                "load": summarize_load(results),
                "encode": summarize_encode(results, args.corpora),
                "batch": summarize_batch(results, args.corpora),
                "worst": summarize_worst(results),
            },
            "checks": check_all(ids_dir, results, args.corpora),
        }
        reports[encoding], all_results[encoding] = report, results
        sections += render_encoding(encoding, report, results)
    return reports, all_results, sections


def _bpeforge_runs(all_results: dict[str, Results]) -> list[dict[str, Any]]:
    return [run for results in all_results.values() for run in results.get("bpeforge", {}).values()]


# --- the whole-process file workload -------------------------------------------------------

GIGATOKEN_FILE_SCRIPT = """
import sys, time, numpy as np, gigatoken
tok = gigatoken.Tokenizer(sys.argv[1])
rows = tok.encode_files(sys.argv[2])
np.save(sys.argv[3], np.asarray(rows[0], dtype=np.uint32))
"""


def measure_file_workload(args: argparse.Namespace, sources: dict, tmpdir: Path) -> dict[str, Any]:
    """``bpeforge encode FILE -o ids.npy`` against gigatoken's ``encode_files`` on the same file, for each
    corpus of ``--file-corpora``, each a whole process pinned to 1 and 2 cores: wall time (interpreter
    start to exit, tokenizer load and writing the ids included) and peak RSS, best of ``--repeat`` runs
    taken in turns (the VM drifts); the two id arrays are compared."""
    tokenizer_dir = tmpdir / "gpt2-bpeforge"
    if not tokenizer_dir.exists():  # saved by the first SIMD level's run
        _save_bpeforge_gpt2(sources["gpt2"], tokenizer_dir)
    results = {}
    for corpus in args.file_corpora.split(","):
        source = locate_corpus(corpus)
        path = prepare_corpus(source, int(args.file_mb * MB), tmpdir)
        results[corpus] = _measure_file(args, sources, tokenizer_dir, source, path, tmpdir)
    return results


def _measure_file(
    args: argparse.Namespace, sources: dict, tokenizer_dir: Path, source: Path, path: Path, tmpdir: Path
) -> dict[str, Any]:
    import numpy as np

    commands = {
        "bpeforge": lambda out, threads: [
            sys.executable, "-m", "bpeforge", "encode", str(path), "--tokenizer", str(tokenizer_dir),
            "-o", str(out), "--threads", str(threads), "--no-progress", "--dtype", "uint32",
        ],
        "gigatoken": lambda out, threads: [
            sys.executable, "-c", GIGATOKEN_FILE_SCRIPT, sources["gpt2"]["tokenizer_json"], str(path), str(out),
        ],
    }  # fmt: skip
    peers = [peer for peer in commands if peer in args.peers]
    rows: dict[str, Any] = {"bytes": path.stat().st_size, "source": str(source), "runs": {}}
    rows["bpeforge_simd"] = probe_level(args.simd_level)  # the CLI child reports ids only: a fresh probe
    for threads in THREADS:
        outputs = {peer: tmpdir / f"file-{peer}-{threads}.npy" for peer in peers}
        best: dict[str, dict[str, Any]] = {}
        for _ in range(args.repeat):
            for peer in peers:
                outputs[peer].unlink(missing_ok=True)
                cmd = pinned(commands[peer](outputs[peer], threads), threads, not args.no_pin)
                run = _timed_process(cmd, threads, child_env(peer, args.simd_level, dict(os.environ)))
                if "seconds" in run and run["seconds"] < best.get(peer, {}).get("seconds", float("inf")):
                    best[peer] = run
                best.setdefault(peer, run)
        for peer in peers:
            rows["runs"].setdefault(peer, {})[threads] = best[peer]
            print(f"file workload: {path.name}, {peer}, {threads} core(s): {best[peer]}", file=sys.stderr, flush=True)
        if len(outputs) == 2 and all(p.exists() for p in outputs.values()):
            a, b = (np.load(p) for p in outputs.values())
            rows.setdefault("same_ids", {})[threads] = bool(a.shape == b.shape and (a == b).all())
    return rows


def _save_bpeforge_gpt2(source: dict, directory: Path) -> None:
    import bpeforge

    specials = list(SPECIALS_BY_ENCODING["gpt2"])
    bpeforge.Tokenizer.from_files(source["vocab"], source["merges"], specials).save(directory)


def _timed_process(cmd: list[str], threads: int, base_env: dict[str, str]) -> dict[str, Any]:
    """Wall seconds and peak RSS (MiB) of one process, its RSS measured by ``_spawn.py`` (see there why a
    plain ``wait4`` here would add this parent's memory to it; it did, up to 1.2 GiB, before 2026-11-23)."""
    env = {**base_env, "RAYON_NUM_THREADS": str(threads)}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(SPAWN_SCRIPT), *cmd], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    seconds = time.perf_counter() - start
    lines = proc.stderr.decode(errors="replace").strip().splitlines()
    peaks = [int(line[len(SPAWN_MARK) :]) for line in lines if line.startswith(SPAWN_MARK)]
    errors = [line for line in lines if not line.startswith(SPAWN_MARK)]
    if proc.returncode != 0 or not peaks:
        return {"error": (errors or ["failed"])[-1]}
    return {"seconds": seconds, "peak_rss_mib": peaks[-1] / 1024}


def render_files(corpora: dict[str, Any]) -> list[str]:
    return [line for files in corpora.values() for line in _render_file(files)]


def _render_file(files: dict[str, Any]) -> list[str]:
    mb = files["bytes"] / MB
    lines = [
        f"{files['bytes']:,} bytes of `{files['source']}`; best of the runs; MB/s = file size / whole-process time.",
        "",
        "| library | cores | seconds | MB/s | peak RSS MiB | same ids |",
        "|---|--:|--:|--:|--:|---|",
    ]
    for peer, runs in files["runs"].items():
        for threads, run in runs.items():
            same = files.get("same_ids", {}).get(threads)
            same_cell = "—" if same is None else ("yes" if same else "**no**")
            if "error" in run:
                lines.append(_row([peer, str(threads), "—", "—", "—", f"error: {run['error']}"]))
                continue
            simd = files.get("bpeforge_simd") if peer == "bpeforge" else None
            label = f"{peer} (SIMD {simd})" if simd else peer
            lines.append(_row([label, str(threads), f"{run['seconds']:.2f}", f"{mb / run['seconds']:.1f}",
                               f"{run['peak_rss_mib']:.0f}", same_cell]))  # fmt: skip
    ratios = []
    for threads in THREADS:
        ours = files["runs"].get("bpeforge", {}).get(threads, {}).get("seconds")
        theirs = files["runs"].get("gigatoken", {}).get(threads, {}).get("seconds")
        if ours and theirs:
            ratios.append(f"{threads} core(s): bpeforge is {theirs / ours:.2f}x gigatoken's speed")
    return ["\n".join(lines), "; ".join(ratios)] if ratios else ["\n".join(lines)]


if __name__ == "__main__":
    main()
