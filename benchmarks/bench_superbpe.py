"""SuperBPE: `bpeforge.train_superbpe` against the reference fork, merges and time.

The fork (alisawuffles/tokenizers-superbpe, built from source into a virtual
environment of its own, see tests/data/superbpe/README.md) runs both stages in a
subprocess of that environment's Python; bpeforge runs here (its peak RSS is this process's, the interpreter's
included; the fork's is its subprocess's). Both read the
same slice of a shared corpus (its `<|endoftext|>` lines removed: the fork's
trainer would train through them as text, bpeforge splits them out).

    python benchmarks/bench_superbpe.py gutenberg_500MB.txt.xz --mb 3 --vocab-size 8000 --t 4001 \\
        --fork-python /tmp/venv-superbpe/bin/python
"""

from __future__ import annotations

import argparse
import lzma
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "data" / "superbpe"

# Run under the fork's Python: both stages as the reference's scripts run them.
FORK_SCRIPT = """
import sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[5])
from make_fixture import DIGIT_GROUPS, R1, train
corpus, vocab_size, t, out = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
start = time.perf_counter()
with tempfile.TemporaryDirectory() as stage1, tempfile.TemporaryDirectory() as stage2:
    merges = train(corpus, vocab_size, R1, Path(stage1))
    (Path(stage2) / "merges.txt").write_text("\\n".join(merges[:t]) + "\\n", encoding="utf-8")
    merges = train(corpus, vocab_size, DIGIT_GROUPS, Path(stage2))
out.write_text("\\n".join(merges[1:]) + "\\n", encoding="utf-8")
print(time.perf_counter() - start)
"""


def byte_chars() -> list[str]:
    printable = {*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)}
    chars, extra = [], 256
    for byte in range(256):
        chars.append(chr(byte) if byte in printable else chr(extra))
        extra += byte not in printable
    return chars


def corpus_slice(name: str, megabytes: float, directory: Path) -> Path:
    root = Path(os.environ.get("BPEFORGE_TEST_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    with lzma.open(root / "corpora" / name, "rb") as source:
        data = source.read(int(megabytes * 1e6))
    path = directory / "slice.txt"
    path.write_bytes(data[: data.rfind(b"\n") + 1].replace(b"<|endoftext|>\n", b""))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", help="a file of the shared corpora, e.g. gutenberg_500MB.txt.xz")
    parser.add_argument("--mb", type=float, default=3.0)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--t", type=int, default=4001, help="the reference's t: merges.txt lines kept")
    parser.add_argument("--fork-python", help="the fork's environment's python (omit to time bpeforge alone)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--tie-break",
        choices=("hf", "cs336"),
        default="hf",
        help="hf (the default here): the reference's conventions, so that the merges can be compared with the fork's",
    )
    parser.add_argument("--repeats", type=int, default=1, help="bpeforge runs, the best reported (the fork runs once)")
    args = parser.parse_args()

    import bpeforge

    with tempfile.TemporaryDirectory() as tmp:
        path = corpus_slice(args.corpus, args.mb, Path(tmp))
        ours_seconds = float("inf")
        for _ in range(args.repeats):
            start = time.perf_counter()
            result = bpeforge.train_superbpe(
                path, args.vocab_size, transition=args.t - 1, tie_break=args.tie_break, num_threads=args.threads
            )
            ours_seconds = min(ours_seconds, time.perf_counter() - start)
        chars = byte_chars()
        ours = [" ".join("".join(chars[b] for b in side) for side in merge) for merge in result.merges]
        ours_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"bpeforge: {ours_seconds:.2f} s, peak RSS {ours_rss:.0f} MiB, {len(ours)} stage-2 merges")
        if args.fork_python:
            out = Path(tmp) / "fork.txt"
            command = [args.fork_python, "-c", FORK_SCRIPT, str(path), str(args.vocab_size), str(args.t), str(out)]
            run = subprocess.run([*command, str(FIXTURES)], capture_output=True, text=True, check=True)
            fork_seconds = float(run.stdout.strip().splitlines()[-1])
            fork = out.read_text(encoding="utf-8").splitlines()
            speedup = fork_seconds / ours_seconds
            fork_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            print(f"fork: {fork_seconds:.1f} s, peak RSS {fork_rss:.0f} MiB; speedup {speedup:.1f}x")
            if args.tie_break != "hf":
                return
            print(f"merges equal: {ours == fork}")
            if ours != fork:
                sys.exit(1)


if __name__ == "__main__":
    main()
