"""Memory grows with the distinct pre-tokens, not with the corpus.

Each run is a fresh process that reports its own peak RSS from VmHWM, the
high-water mark of its own address space (`ru_maxrss` would not do: Linux
carries it over from the parent through fork and exec).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

MIB = 1 << 20

CHILD = """
import json, re, sys, bpeforge
vocab, merges = bpeforge.train_bpe(sys.argv[1], int(sys.argv[2]), [], chunk_size=int(sys.argv[3]))
peak_kib = int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1))
print(json.dumps({"peak_kib": peak_kib, "merges": len(merges)}))
"""


def train_in_child(path: Path, vocab_size: int, chunk_size: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(vocab_size), str(chunk_size)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return json.loads(out.stdout)


def one_line_corpus(path: Path, mebibytes: int) -> Path:
    """`mebibytes` of words on a single line: no newline, no special token."""
    rng = random.Random(7)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(1, 9))) for _ in range(5000)]
    block = " ".join(rng.choices(words, k=200_000)).encode() + b" "
    with open(path, "wb") as f:
        for _ in range(mebibytes * MIB // len(block) + 1):
            f.write(block)
    return path


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads VmHWM from /proc")
def test_a_single_huge_line_trains_in_bounded_memory(tmp_path):
    corpus = one_line_corpus(tmp_path / "one_line.txt", 256)
    size = corpus.stat().st_size
    with open(corpus, "rb") as f:
        assert b"\n" not in f.read(4 * MIB)
    report = train_in_child(corpus, 1000, 1 * MIB)
    peak = report["peak_kib"] * 1024
    # The text is read in 1 MiB chunks, a few per thread at a time; holding
    # the line would need at least its size.
    assert peak < size / 4, f"peak RSS {peak / MIB:.0f} MiB for a {size / MIB:.0f} MiB line"
    assert report["merges"] == 1000 - 256
