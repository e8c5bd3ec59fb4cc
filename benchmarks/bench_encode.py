"""Encode the same texts with bpeforge, tiktoken and HF tokenizers (GPT-2 vocabulary) and compare.

Reports single-thread ``encode`` throughput, ``encode_batch`` throughput on 1 and
2 threads, whether the three libraries produced the same ids, worst-case inputs
(one huge pre-token) at three sizes, and the time to build the tokenizer from
GPT-2's files.

    python benchmarks/bench_encode.py [--mb 10] [--repeat 3] \\
        [--corpora gutenberg,multilingual,20news] [--peers bpeforge,tiktoken,hf] [--json PATH]

Every peer runs in fresh processes (see ``_encode_peers.py``), one per batch
thread count, so HF gets its thread count from ``RAYON_NUM_THREADS`` like the
others get theirs from an argument. Texts are the first ``--mb`` MB of each
corpus, read from /tmp/corpora or else stream-decompressed from the shared
``.xz`` file. Nothing uses the network.
"""

from __future__ import annotations

import argparse
import array
import datetime as dt
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _encode_peers import IDS_TYPECODE, LOAD_REPEAT, PEERS, WORST_CASES, WORST_SIZES
from _peers import EXIT_NOT_INSTALLED
from bench_train import _cpu_model, _git_revision, _parse_result, prepare_corpus

CHILD_SCRIPT = Path(__file__).with_name("_encode_peers.py")
DATA_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
PLAIN_DIR = Path("/tmp/corpora")
XZ_DIR = DATA_DIR / "corpora"
GPT2_DIR = DATA_DIR / "cs336"
CORPORA = {"gutenberg": "gutenberg_500MB.txt", "multilingual": "multilingual.txt", "20news": "20news.txt"}
THREADS = (1, 2)
WORST_PEERS = ("bpeforge", "tiktoken")  # HF is slow enough on ordinary text; the issue asks for these two
MB = 1_000_000

Results = dict[str, dict[int, dict[str, Any]]]  # peer -> batch threads -> child result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The CLI; lists are split and checked here so that a typo fails before minutes of work."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=10, help="MB (10^6 bytes) of each corpus (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best counts")
    parser.add_argument("--corpora", default=",".join(CORPORA), help=f"from {','.join(CORPORA)}")
    parser.add_argument("--peers", default=",".join(PEERS), help=f"from {','.join(PEERS)}")
    parser.add_argument("--gpt2-dir", type=Path, default=GPT2_DIR, help="gpt2_vocab.json and gpt2_merges.txt")
    parser.add_argument("--json", type=Path, help="also write every run here")
    args = parser.parse_args(argv)
    args.corpora = args.corpora.split(",")
    args.peers = args.peers.split(",")
    for given, known, what in [(args.corpora, CORPORA, "corpora"), (args.peers, PEERS, "peers")]:
        unknown = [name for name in given if name not in known]
        if unknown:
            parser.error(f"unknown {what} {unknown}; choose from {list(known)}")
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


# --- running the peers ---------------------------------------------------------------


def run_child(job: dict[str, Any]) -> dict[str, Any]:
    """One peer at one batch thread count in a fresh interpreter; never raises for a peer's fault."""
    threads = str(job["threads"])
    env = {**os.environ, "RAYON_NUM_THREADS": threads, "TOKENIZERS_PARALLELISM": "true"}
    cmd = [sys.executable, str(CHILD_SCRIPT), json.dumps(job)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    last_err = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
    if proc.returncode == EXIT_NOT_INSTALLED:
        return {"status": "not installed", "error": last_err}
    result = _parse_result(proc.stdout)
    if proc.returncode != 0 or result is None:
        return {"status": "failed", "error": last_err}
    return {"status": "ok", **result}


def run_all(args: argparse.Namespace, texts: dict[str, dict[str, Any]], ids_dir: Path) -> Results:
    """Every peer at every thread count; single-thread and worst-case runs ride with the 1-thread batch."""
    results: Results = {peer: {} for peer in args.peers}
    for peer in args.peers:
        for threads in THREADS:
            job = {
                "peer": peer,
                "threads": threads,
                "texts": {name: text["path"] for name, text in texts.items()},
                "vocab": str(args.gpt2_dir / "gpt2_vocab.json"),
                "merges": str(args.gpt2_dir / "gpt2_merges.txt"),
                "repeat": args.repeat,
                "single": threads == 1,
                "worst": threads == 1 and peer in WORST_PEERS,
                "ids_dir": str(ids_dir),
            }
            print(f"{peer}, batch on {threads} thread(s) ...", file=sys.stderr, flush=True)
            start = time.perf_counter()
            results[peer][threads] = run_child(job)
            status = results[peer][threads]["status"]
            print(f"    {status} in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
            if status != "ok":
                break  # a missing or broken peer fails the same way on 2 threads
    return results


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
    if len(worst_peers) == 2:
        first, second = worst_peers
        for kind in WORST_CASES:
            checks["worst"][kind] = compare_ids(ids_dir, f"{first}.worst.{kind}.u32", f"{second}.worst.{kind}.u32")
    return checks


# --- summarising ------------------------------------------------------------------------


def _ok(measurement: dict[str, Any] | None) -> bool:
    return measurement is not None and "error" not in measurement


def _mbps(measurement: dict[str, Any] | None) -> float | None:
    """Throughput of the best run (noise only ever adds time), in MB of UTF-8 per second."""
    return measurement["bytes"] / min(measurement["times"]) / MB if _ok(measurement) else None


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
        mbps = {peer: _mbps(_measurement(results, peer, 1, "encode", corpus)) for peer in results}
        ours = mbps.get("bpeforge")
        speedup = {peer: _ratio(ours, value) for peer, value in mbps.items() if peer != "bpeforge"}
        summary[corpus] = {"mbps": mbps, "bpeforge_speedup": speedup}
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
    """Best time per size, and the growth from each size to the next (2 is linear, 4 quadratic)."""
    summary: dict[str, Any] = {}
    for kind in WORST_CASES:
        for peer in WORST_PEERS:
            run = results.get(peer, {}).get(1, {})
            if run.get("status") != "ok":
                continue
            cells = run["worst"][kind]
            secs = {size: min(cells[str(size)]["times"]) if _ok(cells[str(size)]) else None for size in WORST_SIZES}
            errors = sorted({cells[str(size)]["error"] for size in WORST_SIZES if not _ok(cells[str(size)])})
            growth = [_ratio(secs[big], secs[small]) for small, big in zip(WORST_SIZES, WORST_SIZES[1:])]
            summary.setdefault(kind, {})[peer] = {"seconds": secs, "growth": growth, "errors": errors}
    return summary


def summarize_load(results: Results) -> dict[str, Any]:
    """Version and best load time (from the 1-thread child) of every peer."""
    summary = {}
    for peer, runs in results.items():
        run = runs.get(1, {})
        if run.get("status") == "ok":
            summary[peer] = {"status": "ok", "version": run["version"], "load_s": min(run["load_times"])}
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
    ]


def render_load(load: dict[str, Any]) -> list[str]:
    lines = [f"| library | version | build from GPT-2 files, s (best of {LOAD_REPEAT}) |", "|---|---|--:|"]
    for peer, row in load.items():
        if row["status"] == "ok":
            lines.append(_row([peer, row["version"], f"{row['load_s']:.3f}"]))
        else:
            lines.append(_row([peer, f"{row['status']}: {row['error']}", "—"]))
    return lines


def render_encode(encode: dict[str, Any], peers: list[str]) -> list[str]:
    others = [peer for peer in peers if peer != "bpeforge"]
    head = ["corpus", *[f"{peer} MB/s" for peer in peers], *[f"bpeforge / {peer}" for peer in others]]
    lines = [_row(head), "|---|" + "--:|" * (len(head) - 1)]
    for corpus, row in encode.items():
        speedups = [_f(row["bpeforge_speedup"].get(peer), ".2f", "x") for peer in others]
        lines.append(_row([corpus, *[_f(row["mbps"][peer]) for peer in peers], *speedups]))
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


def render_worst(worst: dict[str, Any], checks: dict[str, str]) -> list[str]:
    """Times per size and growth per doubling, so linear (2.0) and quadratic (4.0) read at a glance."""
    sizes = [f"{size / MB:g} MB ms" for size in WORST_SIZES]
    growth = [f"{big / MB:g} / {small / MB:g}" for small, big in zip(WORST_SIZES, WORST_SIZES[1:])]
    lines = [
        _row(["input", "library", *sizes, *growth, f"same ids at {WORST_SIZES[-1] / MB:g} MB"]),
        "|---|---|" + "--:|" * (len(sizes) + len(growth)) + "---|",
    ]
    for kind, per_peer in worst.items():
        for peer, row in per_peer.items():
            secs = [_f(None if s is None else s * 1000) for s in row["seconds"].values()]
            ratios = [_f(g, ".2f") for g in row["growth"]]
            lines.append(_row([kind, peer, *secs, *ratios, checks.get(kind, "n/a")]))
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


def render_markdown(report: dict[str, Any], results: Results) -> str:
    """The whole report, in the order the issue lists the measurements."""
    peers = list(results)
    summary = report["summary"]
    ref = report["checks"]["reference"]
    encode_tokens = {
        corpus: cell["tokens"]
        for corpus in report["corpora"]
        if _ok(cell := _measurement(results, ref, 1, "encode", corpus))
    }
    sections = [
        *render_header(report["meta"], *report["load_average"]),
        "\n".join(render_load(summary["load"])),
        "Single-thread `encode`, MB of UTF-8 per second:\n\n" + "\n".join(render_encode(summary["encode"], peers)),
        "`encode_batch`:\n\n" + "\n".join(render_batch(summary["batch"], batch_shapes(results))),
        f"Same ids as {ref}:\n\n" + "\n".join(render_ids(report["checks"], encode_tokens)),
        "Worst cases (one pre-token of the given size), single-thread `encode`:\n\n"
        + "\n".join(render_worst(summary["worst"], report["checks"]["worst"])),
    ]
    notes = _worst_notes(summary["worst"]) + _measurement_errors(results)
    if notes:
        sections.append("Errors:\n\n" + "\n".join(notes))
    return "\n\n".join(sections)


def main(argv: list[str] | None = None) -> None:
    """Prepare texts, run the children, check ids while their files exist, then report."""
    args = parse_args(argv)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bpeforge-bench-encode-") as tmp:
        texts = prepare_texts(args.corpora, args.mb, Path(tmp))
        ids_dir = Path(tmp) / "ids"
        ids_dir.mkdir()
        results = run_all(args, texts, ids_dir)
        checks = check_all(ids_dir, results, args.corpora)
    report = {
        "meta": metadata(args, texts, batch_shapes(results)),
        "load_average": [load_before, os.getloadavg()[0]],
        "corpora": args.corpora,
        "summary": {
            "load": summarize_load(results),
            "encode": summarize_encode(results, args.corpora),
            "batch": summarize_batch(results, args.corpora),
            "worst": summarize_worst(results),
        },
        "checks": checks,
    }
    print(render_markdown(report, results))
    if args.json:
        args.json.write_text(json.dumps({**report, "runs": results}, indent=2))


if __name__ == "__main__":
    main()
