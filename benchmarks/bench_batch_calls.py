"""Every call of bpeforge's ``encode_batch_to_numpy``, timed one by one, on 1 or 2 threads.

``bench_encode.py`` reports a batch's best of 3 after one untimed call; this shows how a process gets there:
a warm-up that takes several calls, or a call that stalls, is visible here and hidden there. Each run is a
fresh process pinned with ``taskset`` (core 0 for 1 thread, cores 0-1 for 2), on ``bench_encode``'s cut of the
text (``batch_pieces``), with the same tokenizers; a 1-thread process encodes the whole text once first, as
``bench_encode``'s 1-thread child does. Prints, per encoding, corpus and thread count, the median over
``--processes`` of the best of calls 2-4 (what ``bench_encode`` takes) and of the best of all calls, and the 2 / 1
ratios.

With ``--fresh`` each call gets new ``str`` objects with the same characters (copied before its timer starts),
as a user who encodes new texts every call has them: none carries the UTF-8 form CPython keeps inside a ``str``
once asked for it, so every call pays the conversion of the texts that are not ASCII, with the GIL held, on one
thread, whatever the thread count. The repeated batch of ``bench_encode`` pays it only in its first two calls.

With ``--pair`` each row also gives the workload's own 2-core ceiling: two 1-thread processes, one pinned to
each of cores 0 and 1, call the batch over and over at the same time, against one such process alone (medians
of the calls made while both ran). Nothing is shared between them, so what they lose is the machine's (a
shared cache, memory bandwidth, the host); what a 2-thread process loses beyond that is ours. ``bench_encode``'s
pure-compute loop gives the same kind of ceiling for arithmetic alone.

Usage::

    python benchmarks/bench_batch_calls.py [--encodings gpt2,cl100k,o200k] \\
        [--corpora gutenberg,multilingual,20news] [--calls 6] [--processes 3] [--mb 10] [--fresh] [--pair]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_encode
from _encode_peers import batch_pieces, read_text, timed_runs

# Room for a --pair child to start, build o200k's tokenizer and make its warm-up calls before the timed window.
SETUP_SECONDS = 4.0


def child(job: dict) -> None:
    """One process: build the tokenizer, cut the text, time each call, print the times as JSON."""
    # NumPy first, as bench_encode's children do: its import in the first call
    # starts OpenBLAS's threads, which spin for about 0.1 s on the second core
    # and made calls 2-4 of a 2-thread process 10-15 ms instead of 6-7.
    import numpy  # noqa: F401
    from _encode_peers import _load_bpeforge

    tok = _load_bpeforge(job["source"])
    text = read_text(job["path"])
    pieces, _ = batch_pieces(text)
    if job["threads"] == 1:
        tok.encode_to_numpy(text)
    if "window" in job:
        print(json.dumps(calls_in_window(lambda: tok.encode_batch_to_numpy(pieces, num_threads=1), *job["window"])))
        return
    if not job["fresh"]:
        times, _ = timed_runs(lambda: tok.encode_batch_to_numpy(pieces, num_threads=job["threads"]), job["calls"])
        print(json.dumps(times))
        return
    times = []
    for _ in range(job["calls"]):
        # New objects (a slice of a longer copy), made before the timer starts.
        texts = [(piece + " ")[:-1] for piece in pieces]
        encode = functools.partial(tok.encode_batch_to_numpy, texts, num_threads=job["threads"])
        times += timed_runs(encode, 1)[0]
    print(json.dumps(times))


def calls_in_window(encode, start: float, stop: float) -> list[float]:
    """The times of the calls made from wall-clock ``start`` to ``stop``, after three untimed ones."""
    for _ in range(3):
        encode()
    while time.time() < start:
        time.sleep(0.001)
    times = []
    while time.time() < stop:
        times += timed_runs(encode, 1)[0]
    return times


def pair_ceiling(job: dict, seconds: float = 2.0) -> float:
    """Two 1-thread processes at once (cores 0 and 1) against one alone: the work they do together per unit
    of time over one's, from each one's median call. Every process starts timing at the same moment, once all
    have built their tokenizer (``SETUP_SECONDS`` is room for that)."""

    def medians(cores: list[int]) -> list[float]:
        start = time.time() + SETUP_SECONDS
        child_job = {**job, "threads": 1, "window": [start, start + seconds]}
        env = {**os.environ, "RAYON_NUM_THREADS": "1"}
        procs = [
            subprocess.Popen(
                ["taskset", "-c", str(core), sys.executable, __file__, "--child", json.dumps(child_job)],
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            for core in cores
        ]
        outputs = [proc.communicate()[0] for proc in procs]
        if any(proc.returncode for proc in procs):
            sys.exit("a --pair child failed")
        return [statistics.median(json.loads(out.strip().splitlines()[-1])) for out in outputs]

    (alone,) = medians([0])
    return sum(alone / each for each in medians([0, 1]))


def run(job: dict) -> list[float]:
    cmd = bench_encode.pinned([sys.executable, __file__, "--child", json.dumps(job)], job["threads"], pin=True)
    env = {**os.environ, "RAYON_NUM_THREADS": str(job["threads"])}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encodings", default="gpt2,cl100k,o200k")
    parser.add_argument("--corpora", default=",".join(bench_encode.CORPORA))
    parser.add_argument("--calls", type=int, default=6)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--mb", type=float, default=10)
    parser.add_argument("--fresh", action="store_true", help="new str objects for every call (see above)")
    parser.add_argument("--pair", action="store_true", help="two 1-thread processes at once (see above)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    if args.calls < 4:
        parser.error("--calls must be at least 4 (the bench's untimed call and its three)")
    with tempfile.TemporaryDirectory() as tmp:
        sources_args = argparse.Namespace(
            encodings=args.encodings.split(","), gpt2_dir=bench_encode.GPT2_DIR, openai_dir=bench_encode.OPENAI_DIR
        )
        sources = bench_encode.prepare_sources(sources_args, Path(tmp))
        texts = bench_encode.prepare_texts(args.corpora.split(","), args.mb, Path(tmp))
        pair_cell = " two processes / one |" if args.pair else ""
        print(
            "| encoding | corpus | 1 thread, ms | 2 threads, ms | 2 / 1 |"
            + pair_cell
            + " each call, 2 threads (first process), ms |"
        )
        print("|---|---|--:|--:|--:|" + ("--:|" if args.pair else "") + "---|")
        for encoding, source in sources.items():
            for corpus, text in texts.items():
                runs = {}
                for threads in (1, 2):
                    job = {
                        "source": source,
                        "path": text["path"],
                        "threads": threads,
                        "calls": args.calls,
                        "fresh": args.fresh,
                    }
                    runs[threads] = [run(job) for _ in range(args.processes)]
                bench = {t: statistics.median(min(times[1:4]) for times in runs[t]) for t in runs}
                best = {t: statistics.median(min(times) for times in runs[t]) for t in runs}
                calls = " ".join(f"{x * 1e3:.1f}" for x in runs[2][0])
                pair = f" {pair_ceiling(job):.2f}x |" if args.pair else ""
                print(
                    f"| {encoding} | {corpus} | {bench[1] * 1e3:.2f} ({best[1] * 1e3:.2f}) | "
                    f"{bench[2] * 1e3:.2f} ({best[2] * 1e3:.2f}) | {bench[1] / bench[2]:.2f}x "
                    f"({best[1] / best[2]:.2f}x) |{pair} {calls} |",
                    flush=True,
                )
        texts_note = " Each call on new `str` objects (`--fresh`)." if args.fresh else ""
        if args.pair:
            texts_note += (
                " Two processes / one: two 1-thread processes at once on cores 0 and 1 against one alone"
                " (`--pair`), the workload's own 2-core ceiling."
            )
        print(
            f"\nMedians over {args.processes} processes of the best of calls 2-4 (in brackets: of all {args.calls})."
            + texts_note
        )


if __name__ == "__main__":
    main()
