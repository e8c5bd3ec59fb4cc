"""Counting and encoding on a local Ray cluster with 1 and 2 workers, against one process.

    python benchmarks/bench_ray.py [--corpus /tmp/corpora/gutenberg_500MB.txt] \\
        [--shard-mb 64] [--workers 1,2] [--json PATH]

Each configuration runs in a fresh process: `single` is `bpeforge.count` and
`bpeforge encode`'s path with 1 and 2 threads; `ray-N` starts a local cluster
with N CPUs (`ray.init(num_cpus=N)`, so at most N tasks at once) and runs
`bpeforge.ray.count` / `bpeforge.ray.encode` on it. The cluster's start-up is
timed apart from the job. Encoding uses GPT-2's tokenizer from the shared
fixtures. The table it prints is what docs/scale-out.md quotes, with a
projection of the cost of 1 TB from the per-core rates measured here.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
GPT2_DIR = DATA_DIR / "cs336"
TB = 10**12

CHILD = r"""
import json, shutil, sys, time, resource
config, corpus, shard_mb, gpt2_dir, scratch = sys.argv[1:]
import bpeforge
from bpeforge.encode_files import encode_files
vocab, merges = f"{gpt2_dir}/gpt2_vocab.json", f"{gpt2_dir}/gpt2_merges.txt"
tokenizer = bpeforge.Tokenizer.from_files(vocab, merges, ["<|endoftext|>"])
result = {"config": config}
if config.startswith("single"):
    threads = int(config.split("-")[1])
    started = time.perf_counter()
    counts = bpeforge.count([corpus], ["<|endoftext|>"], num_threads=threads)
    result["count_s"] = time.perf_counter() - started
    started = time.perf_counter()
    encode_files(tokenizer, [corpus], f"{scratch}/single.npy", dtype="uint16", threads=threads, progress=False)
    result["encode_s"] = time.perf_counter() - started
else:
    import ray, bpeforge.ray as bray
    workers = int(config.split("-")[1])
    started = time.perf_counter()
    bray.connect(num_cpus=workers)
    result["startup_s"] = time.perf_counter() - started
    started = time.perf_counter()
    counts = bray.count([corpus], ["<|endoftext|>"], shard_bytes=int(float(shard_mb) * 2**20))
    result["count_s"] = time.perf_counter() - started
    started = time.perf_counter()
    bray.encode([corpus], tokenizer, f"{scratch}/ray", shard_bytes=int(float(shard_mb) * 2**20))
    result["encode_s"] = time.perf_counter() - started
    ray.shutdown()
result["unique_pretokens"] = len(counts)
result["driver_peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(result))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/corpora/gutenberg_500MB.txt"))
    parser.add_argument("--shard-mb", type=float, default=64, help="shard size in MiB (default 64)")
    parser.add_argument("--workers", default="1,2", help="Ray worker counts (default 1,2)")
    parser.add_argument("--gpt2-dir", type=Path, default=GPT2_DIR)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    size = args.corpus.stat().st_size
    configs = ["single-1", "single-2"] + [f"ray-{n}" for n in args.workers.split(",")]
    results = [_run(config, args) for config in configs]
    _print_table(results, size)
    _print_projection(results, size)
    if args.json:
        args.json.write_text(json.dumps({"corpus": str(args.corpus), "bytes": size, "results": results}, indent=1))
    return 0


def _run(config: str, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as scratch:
        arguments = [config, str(args.corpus), str(args.shard_mb), str(args.gpt2_dir), scratch]
        command = [sys.executable, "-c", CHILD, *arguments]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{config} failed:\n{done.stderr[-3000:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        result["process_s"] = time.perf_counter() - started
        print(f"{config}: {result}", file=sys.stderr)
        return result


def _print_table(results: list[dict], size: int) -> None:
    print(f"\ncorpus: {size / 1e6:,.0f} MB\n")
    print("| configuration | cluster start | count | count MB/s | encode | encode MB/s | driver peak |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for r in results:
        start = f"{r['startup_s']:.1f} s" if "startup_s" in r else "-"
        print(
            f"| {r['config']} | {start} | {r['count_s']:.2f} s | {size / 1e6 / r['count_s']:,.0f} "
            f"| {r['encode_s']:.2f} s | {size / 1e6 / r['encode_s']:,.0f} | {r['driver_peak_mib']:,.0f} MiB |"
        )


def _print_projection(results: list[dict], size: int) -> None:
    """1 TB at the per-worker rate of the largest Ray run, on 1, 16 and 64 such workers."""
    ray_runs = [r for r in results if r["config"].startswith("ray-")]
    if not ray_runs:
        return
    best = max(ray_runs, key=lambda r: int(r["config"].split("-")[1]))
    workers = int(best["config"].split("-")[1])
    print(f"\nprojection for 1 TB from {best['config']} (per worker: rate / {workers}):\n")
    print("| workers | count | encode |")
    print("|--:|--:|--:|")
    for n in (1, 16, 64, 256):
        count_s = TB / (size / best["count_s"] / workers * n)
        encode_s = TB / (size / best["encode_s"] / workers * n)
        print(f"| {n} | {_duration(count_s)} | {_duration(encode_s)} |")


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:,.1f} h" if seconds >= 3600 else f"{seconds / 60:,.1f} min"


if __name__ == "__main__":
    raise SystemExit(main())
