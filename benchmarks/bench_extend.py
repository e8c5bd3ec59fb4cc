"""Continue training an existing tokenizer: bpeforge `train(..., extend=BASE)` against `bpe-continue` (issue 15).

    python benchmarks/bench_extend.py --corpus /tmp/g100.txt --add 10000 --bases gpt2,o200k_base --cores 0

For each base (a bundled encoding: GPT-2's or OpenAI's o200k_base file), each library runs in a fresh process
pinned to the same cores (`taskset`) through `_spawn.py`, which reports the process's own peak RSS:

- `bpeforge`: `bpeforge.train(corpus, base_tokens + N, extend=BASE)`;
- `bpe-continue`: `continue_training(tokenizer.json, files=[corpus], vocab_size=base_tokens + N)` on the base's
  `tokenizer.json` (written beforehand by bpeforge's `save_hf`, so both start from the same tokenizer);
- for scale, `bpeforge` training N merges from scratch on the same corpus (`train(corpus, 256 + N + 1)`): the
  issue asks extending o200k to cost about that.

Each child reports its wall time (the whole process: loading the base included), whether every base id and
merge was kept, how many merges it added, and the bytes per token of a 1 MB sample with the extended tokenizer.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPAWN_MARK = "SPAWN_PEAK_RSS_KIB "
SAMPLE_BYTES = 1 << 20

CHILD = r"""
import json, sys, time
started = time.perf_counter()
kind, base_name, base_json, corpus, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
sample = open(corpus, encoding="utf-8", errors="ignore").read(SAMPLE_BYTES)
import bpeforge
from bpeforge import tiktoken as bt
base = bt.get_encoding(base_name)._tokenizer
base_tokens = len(base.vocab)
if kind == "bpeforge":
    result = bpeforge.train(corpus, base_tokens + n, extend=base_name)
    seconds = time.perf_counter() - started
    kept = all(result.vocab.get(i) == t for i, t in base.vocab.items())
    kept = kept and result.merges[: len(base.merges)] == base.merges
    tok = bpeforge.Tokenizer(result.vocab, result.merges, result.special_tokens, pattern=result.pattern)
    out = {"added": result.stats.merges_added, "kept": kept, "tokens": len(tok.encode_to_numpy(sample))}
elif kind == "scratch":
    result = bpeforge.train(corpus, 256 + n + 1, ["<|endoftext|>"])
    seconds = time.perf_counter() - started
    out = {"added": len(result.merges), "kept": None, "tokens": None}
else:
    from bpe_continue import continue_training
    from tokenizers import Tokenizer
    extended = continue_training(base_json, files=[corpus], vocab_size=base_tokens + n, show_progress=False)
    seconds = time.perf_counter() - started
    before, after = json.load(open(base_json)), json.loads(extended.to_str())
    vocab_kept = all(after["model"]["vocab"].get(t) == i for t, i in before["model"]["vocab"].items())
    merges = [m if isinstance(m, str) else " ".join(m) for m in after["model"]["merges"]]
    old = [m if isinstance(m, str) else " ".join(m) for m in before["model"]["merges"]]
    out = {"added": len(merges) - len(old), "kept": vocab_kept and merges[: len(old)] == old,
           "tokens": len(extended.encode(sample).ids)}
out["seconds"] = seconds
print(json.dumps(out))
""".replace("SAMPLE_BYTES", str(SAMPLE_BYTES))


def run_child(kind: str, base: str, base_json: Path, corpus: Path, add: int, cores: str) -> dict:
    command = [sys.executable, str(HERE / "_spawn.py"), sys.executable, "-c", CHILD, kind, base, str(base_json)]
    command += [str(corpus), str(add)]
    if cores:
        command = ["taskset", "-c", cores, *command]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    peak = next((int(line[len(SPAWN_MARK) :]) for line in done.stderr.splitlines() if line.startswith(SPAWN_MARK)), 0)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-2:], "peak_mib": peak / 1024}
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "peak_mib": peak / 1024}


def write_base_json(base: str, directory: Path) -> Path:
    sys.path.insert(0, str(HERE.parent / "python"))
    from bpeforge import tiktoken as bt

    path = directory / f"{base}.tokenizer.json"
    bt.get_encoding(base)._tokenizer.save_hf(path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/g100.txt"), help="UTF-8 text (default /tmp/g100.txt)")
    parser.add_argument("--add", type=int, default=10_000, help="merges to add (default 10,000)")
    parser.add_argument("--bases", default="gpt2,o200k_base", help="bundled encodings to extend")
    parser.add_argument("--peers", default="bpeforge,bpe-continue,scratch", help="bpeforge, bpe-continue, scratch")
    parser.add_argument("--cores", default="0", help="taskset core list for every child ('' for none)")
    args = parser.parse_args()
    mib = args.corpus.stat().st_size / 2**20
    print(f"corpus {args.corpus} ({mib:,.1f} MiB), {args.add:,} merges added, cores {args.cores or 'all'}")
    print("| base | library | time s | peak MiB | merges added | every base id and merge kept | bytes/token (1 MiB) |")
    print("|---|---|--:|--:|--:|---|--:|")
    with tempfile.TemporaryDirectory() as scratch_dir:
        for base in args.bases.split(","):
            base_json = write_base_json(base, Path(scratch_dir))
            for kind in args.peers.split(","):
                if kind == "scratch" and base != args.bases.split(",")[0]:
                    continue  # training from scratch does not depend on the base
                started = time.perf_counter()
                row = run_child(kind, base, base_json, args.corpus, args.add, args.cores)
                label = "bpeforge, from scratch" if kind == "scratch" else kind
                if "error" in row:
                    print(f"| {base} | {label} | failed after {time.perf_counter() - started:.0f} s: {row['error']} |")
                    continue
                tokens = f"{SAMPLE_BYTES / row['tokens']:.2f}" if row["tokens"] else "-"
                kept = "-" if row["kept"] is None else ("yes" if row["kept"] else "**no**")
                print(
                    f"| {base if kind != 'scratch' else '-'} | {label} | {row['seconds']:.2f} | {row['peak_mib']:.0f} "
                    f"| {row['added']:,} | {kept} | {tokens} |",
                    flush=True,
                )


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    main()
