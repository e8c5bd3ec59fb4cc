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
import warnings
from pathlib import Path

import bpeforge
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


# One repeated byte is one pre-token (a letter run, a space run, a NUL run alike), whose merges double tokens
# up to its whole length: from 2 (a power of two) to about log2 times its size in tokens, which the result
# must hold (CS336's merges, kept). The command runs in the child as `bpeforge train` runs it.
REPEATED_CHILD = """
import json, re, sys
from bpeforge.cli.parser import main
def kib(field):
    return int(re.search(field + r":\\s+(\\d+) kB", open("/proc/self/status").read()).group(1))
before_kib = kib("VmRSS")
code = main(["train", sys.argv[1], "--vocab-size", "1000", "-o", sys.argv[2], "--no-progress"])
peak_kib = kib("VmHWM")
with open(sys.argv[2] + "/merges.txt", encoding="utf-8") as f:
    next(f)  # each line is a token's bytes as characters, a space and a newline
    token_bytes = sum(len(line) - 2 for line in f)
print(json.dumps({"code": code, "before_kib": before_kib, "peak_kib": peak_kib, "token_bytes": token_bytes}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads VmHWM from /proc")
@pytest.mark.parametrize("byte", [b"a", b" ", b"\0"], ids=["letter", "space", "nul"])
def test_one_repeated_byte_trains_in_its_tokens_and_a_few_times_its_size(tmp_path, byte):
    size = 4_000_000
    corpus = tmp_path / "repeated.txt"
    corpus.write_bytes(byte * size)
    out = subprocess.run(
        [sys.executable, "-c", REPEATED_CHILD, str(corpus), str(tmp_path / "tok")],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    report = json.loads(out.stdout.splitlines()[-1])
    assert report["code"] == 0
    assert "note: the longest pre-token is 4,000,000 bytes" in out.stdout
    grown = (report["peak_kib"] - report["before_kib"]) * 1024
    tokens = report["token_bytes"]
    assert 6 * size < tokens < 7 * size  # 27 merges; the 7 tokens over half the run are most of it
    # Over the interpreter: the result's tokens, each held once, plus the pre-token's symbols (4 bytes a byte,
    # shrinking as merges halve it), one token's text being written, and the allocator's slack. It was 90-200
    # times the run: each token held four times over, and each file built whole in several copies.
    assert grown < tokens + 8 * size, f"peak grew {grown / MIB:.0f} MiB for {tokens / MIB:.0f} MiB of tokens"
    assert grown < 20 * size


def test_a_pretoken_over_a_mebibyte_is_noted_with_max_token_length(tmp_path):
    from bpeforge.train import LONG_PRETOKEN_BYTES

    long_run = tmp_path / "padded.txt"
    long_run.write_bytes(b"some text\n" + b"\0" * (LONG_PRETOKEN_BYTES + 1) + b"\nmore text")
    with pytest.warns(bpeforge.TrainingNote, match=r"longest pre-token is 1,048,577 bytes.*max_token_length"):
        result = bpeforge.train(long_run, 300, [])
    assert result.stats.longest_pretoken == LONG_PRETOKEN_BYTES + 1
    # From documents and from counts alike (the note comes with the count table).
    with pytest.warns(bpeforge.TrainingNote, match="max_token_length"):
        bpeforge.train_from_iterator(["x" * (LONG_PRETOKEN_BYTES + 1)], 300)
    cli = subprocess.run(
        [sys.executable, "-m", "bpeforge", "train", str(long_run), "--vocab-size", "300", "-o", str(tmp_path / "t")],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert "note: the longest pre-token is 1,048,577 bytes" in cli.stdout
    assert "--max-token-length" in cli.stdout


def test_a_pretoken_of_a_mebibyte_is_not_noted(tmp_path):
    from bpeforge.train import LONG_PRETOKEN_BYTES

    corpus = tmp_path / "ok.txt"
    corpus.write_bytes(b"a" * LONG_PRETOKEN_BYTES + b" b")
    with warnings.catch_warnings():
        warnings.simplefilter("error", bpeforge.TrainingNote)
        result = bpeforge.train(corpus, 258, [])
    assert result.stats.longest_pretoken == LONG_PRETOKEN_BYTES
