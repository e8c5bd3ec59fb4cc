"""Interrupted runs never leave a partial output.

SIGKILL at any moment of `bpeforge train -o DIR --force` leaves either the
previous DIR or the complete new one; Ctrl-C during counting and encoding stops
within a second with exit code 130 and writes nothing.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import bpeforge

KILLS = 30


def corpus(path: Path, megabytes: float, seed: int = 0) -> Path:
    rng = random.Random(seed)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(1, 9))) for _ in range(3000)]
    block = (" ".join(rng.choices(words, k=50_000)) + "\n<|endoftext|>\n").encode()
    with open(path, "wb") as f:
        for _ in range(max(1, int(megabytes * (1 << 20) / len(block)))):
            f.write(block)
    return path


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def bpeforge_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "bpeforge", *args]


def test_sigkill_at_any_moment_leaves_the_old_or_the_complete_new_directory(tmp_path):
    text = corpus(tmp_path / "corpus.txt", 0.3)
    old, new, out = tmp_path / "old", tmp_path / "new", tmp_path / "out"
    for target, size in ((old, "300"), (new, "700")):
        subprocess.run(
            bpeforge_cmd("train", str(text), "--vocab-size", size, "-o", str(target), "--no-progress"), check=True
        )
    old_files, new_files = snapshot(old), snapshot(new)
    rng = random.Random(1)
    outcomes = {"old": 0, "new": 0}
    for _ in range(KILLS):
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(old, out)
        cmd = bpeforge_cmd("train", str(text), "--vocab-size", "700", "-o", str(out), "--force", "--no-progress")
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, 0.6))  # interpreter start, training and writing all fall in this range
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        found = snapshot(out)
        assert found in (old_files, new_files), f"a partial directory: {sorted(found)}"
        outcomes["old" if found == old_files else "new"] += 1
        assert bpeforge.load(out)  # and it loads
    print(f"{KILLS} kills: {outcomes}")
    assert sum(outcomes.values()) == KILLS


def interrupt_when_started(cmd: list[str], marker: str) -> tuple[int, str, float]:
    """Start `cmd`, send SIGINT once `marker` shows on stderr; (exit code, stderr, seconds to stop)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    seen = ""
    while marker not in seen:
        char = proc.stderr.read(1)
        assert char, f"ended before {marker!r} showed: {seen}"
        seen += char
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    proc.wait(timeout=60)
    return proc.returncode, seen + rest, time.monotonic() - sent


def test_ctrl_c_stops_training_counting_and_encoding_cleanly(tmp_path):
    big = corpus(tmp_path / "big.txt", 150)
    small = corpus(tmp_path / "small.txt", 0.2)
    subprocess.run(bpeforge_cmd("train", str(small), "--vocab-size", "400", "-o", str(tmp_path / "tok")), check=True)
    before = sorted(p.name for p in tmp_path.iterdir())
    commands = {
        "train": (
            bpeforge_cmd("train", str(big), "--vocab-size", "60000", "-o", str(tmp_path / "out")),
            "pre-tokenize",
        ),
        "count": (bpeforge_cmd("count", str(big), "-o", str(tmp_path / "c.bin")), "pre-tokenize"),
        "encode": (
            bpeforge_cmd("encode", str(big), "--tokenizer", str(tmp_path / "tok"), "-o", str(tmp_path / "ids.npy")),
            "encode",
        ),
    }
    for name, (cmd, marker) in commands.items():
        code, stderr, seconds = interrupt_when_started(cmd, marker)
        assert code == 130, f"{name}: {stderr}"
        assert "interrupted" in stderr
        assert seconds < 3.0, f"{name} took {seconds:.1f} s to stop"  # the core checks after every batch
        assert sorted(p.name for p in tmp_path.iterdir()) == before, name  # no output, no temporary file
