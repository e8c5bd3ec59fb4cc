"""How ``bpeforge encode FILE`` scales from 1 to 2 threads, against what two cores give this workload.

``bench_encode``'s file workload times the whole process against gigatoken's. This separates what the ratio from 1
to 2 threads is made of, on each corpus: the whole process (interpreter start to exit) and the encoding alone (the
seconds ``bpeforge encode`` reports, from its first chunk read to its last id written), on one core (``taskset -c
0``, 1 thread) and on two (cores 0-1, 2 threads); and two 1-thread processes at once, one pinned to each core, each
encoding the whole file, against one alone: the work two cores do together on this workload, reading and writing
included, with nothing shared between the processes. A 2-thread encoding can pass that only by sharing work between
its threads (one reader, one writer); what it loses below it is the process's. Runs are taken in turns (the VM
drifts), every output is removed before its run (replacing a 500 MB file made ``rename`` take 0.08 s), and the
figures are medians.

Usage::

    python benchmarks/bench_file_scaling.py [--corpora gutenberg,multilingual,20news] [--mb 500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_encode

# The CLI's summary line ends with the encoding's seconds: "wrote ...: N tokens ..., 0.66 s".
SECONDS = re.compile(r"([0-9.]+) s$")


def encode(path: Path, tokenizer: Path, out: Path, threads: int, cores: str) -> subprocess.Popen:
    """Start one pinned ``bpeforge encode`` of ``path`` on ``threads`` threads (``out`` must not exist)."""
    cmd = [sys.executable, "-m", "bpeforge", "encode", str(path), "--tokenizer", str(tokenizer), "-o", str(out)]
    cmd += ["--threads", str(threads), "--dtype", "uint32", "--no-progress"]
    env = {**os.environ, "RAYON_NUM_THREADS": str(threads)}
    return subprocess.Popen(["taskset", "-c", cores, *cmd], env=env, stdout=subprocess.PIPE, text=True)


def finished(proc: subprocess.Popen, started: float) -> tuple[float, float]:
    """Wall seconds since ``started`` and the encoding's own seconds, once ``proc`` ends."""
    out, _ = proc.communicate()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"bpeforge encode failed (exit code {proc.returncode})")
    match = SECONDS.search(out.strip().splitlines()[-1])
    if match is None:
        sys.exit(f"no encoding time in bpeforge encode's output: {out!r}")
    return wall, float(match.group(1))


def one_round(path: Path, tokenizer: Path, tmp: Path) -> dict[str, list[tuple[float, float]]]:
    """One process on 1 thread, one on 2, then two 1-thread processes at once; each (wall, encoding) seconds."""
    runs: dict[str, list[tuple[float, float]]] = {}
    outputs = [tmp / "out0.npy", tmp / "out1.npy"]
    for name, threads, cores in (("1 thread", 1, "0"), ("2 threads", 2, "0,1")):
        started = time.perf_counter()
        runs[name] = [finished(encode(path, tokenizer, outputs[0], threads, cores), started)]
        remove(outputs)
    started = time.perf_counter()
    procs = [encode(path, tokenizer, out, 1, str(core)) for core, out in enumerate(outputs)]
    runs["pair"] = [finished(proc, started) for proc in procs]
    remove(outputs)
    return runs


def remove(outputs: list[Path]) -> None:
    """Off the clock: removing a 500 MB file takes the file system 0.08 s here."""
    for out in outputs:
        out.unlink(missing_ok=True)


def median_of(rounds: list[dict[str, list[tuple[float, float]]]], name: str, field: int) -> float:
    """The median of field ``field`` (0: wall, 1: encoding) of the ``name`` runs of all rounds."""
    return statistics.median(run[field] for runs in rounds for run in runs[name])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", default=",".join(bench_encode.CORPORA))
    parser.add_argument("--mb", type=float, default=500, help="the first MB of each corpus")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("| corpus | MB | whole process: 1 / 2 threads, s | 2 / 1 | encoding: 1 / 2 threads, s | 2 / 1 |", end="")
    print(" two processes / one (encoding) |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    with tempfile.TemporaryDirectory(prefix="bpeforge-file-scaling-") as tmp_name:
        tmp = Path(tmp_name)
        sources = bench_encode.prepare_sources(
            argparse.Namespace(encodings=["gpt2"], gpt2_dir=bench_encode.GPT2_DIR, openai_dir=bench_encode.OPENAI_DIR),
            tmp,
        )
        tokenizer = tmp / "gpt2-bpeforge"
        bench_encode._save_bpeforge_gpt2(sources["gpt2"], tokenizer)
        for corpus in args.corpora.split(","):
            path = bench_encode.prepare_corpus(bench_encode.locate_corpus(corpus), int(args.mb * bench_encode.MB), tmp)
            path_mb = path.stat().st_size / bench_encode.MB
            rounds = [one_round(path, tokenizer, tmp) for _ in range(args.rounds)]
            if path.parent == tmp:
                # A copy made for this run; `prepare_corpus` hands back a plain corpus used whole as it is, the
                # user's own file, which an unconditional unlink here deleted once (/tmp/corpora, 2026-11-27).
                path.unlink()
            wall = {t: median_of(rounds, t, 0) for t in ("1 thread", "2 threads")}
            enc = {t: median_of(rounds, t, 1) for t in ("1 thread", "2 threads")}
            # The two processes' work together over one's: each did the whole file in its own time.
            pair = statistics.median(sum(enc["1 thread"] / run[1] for run in r["pair"]) for r in rounds)
            print(
                f"| {corpus} | {path_mb:.0f} | {wall['1 thread']:.2f} / {wall['2 threads']:.2f} | "
                f"{wall['1 thread'] / wall['2 threads']:.2f}x | {enc['1 thread']:.2f} / {enc['2 threads']:.2f} | "
                f"{enc['1 thread'] / enc['2 threads']:.2f}x | {pair:.2f}x |",
                flush=True,
            )
    print(f"\nMedians of {args.rounds} rounds; GPT-2 from {bench_encode.GPT2_DIR}; uint32 ids.")


if __name__ == "__main__":
    main()
