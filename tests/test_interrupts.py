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
import threading
import time
from pathlib import Path

import bpeforge
import pytest

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


def stop_after(cmd: list[str], number: int, ready, **popen) -> tuple[int, str, float]:
    """Start `cmd`, send signal `number` once `ready(stderr so far)` is true (unless it ended first);
    (exit code, stderr, seconds from the signal to the exit)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **popen)
    stderr: list[bytes] = []
    reader = threading.Thread(target=lambda: stderr.extend(iter(lambda: proc.stderr.read1(1024), b"")), daemon=True)
    reader.start()
    deadline = time.monotonic() + 60
    while not ready(b"".join(stderr).decode(errors="replace")) and time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        time.sleep(0.005)
    sent = time.monotonic()
    proc.send_signal(number)
    try:
        proc.wait(timeout=10)
    finally:
        proc.kill()
    seconds = time.monotonic() - sent
    reader.join(timeout=10)
    return proc.returncode, b"".join(stderr).decode(errors="replace"), seconds


def started(seconds: float):
    """`ready` for a process that shows nothing while it waits: true `seconds` after the first call."""
    start = time.monotonic()
    return lambda stderr: time.monotonic() - start >= seconds


def shown(marker: str, then: float):
    """`ready` once `marker` is on stderr and `then` seconds more have passed."""
    seen_at: list[float] = []

    def ready(stderr: str) -> bool:
        if marker in stderr and not seen_at:
            seen_at.append(time.monotonic())
        return bool(seen_at) and time.monotonic() - seen_at[0] >= then

    return ready


@pytest.mark.parametrize(("number", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_a_read_of_a_pipe_that_sends_nothing(tmp_path, number, code):
    """`sleep 30 | bpeforge train -`: the read in the core never returns; the signal stops it at once."""
    silent = subprocess.Popen(["sleep", "60"], stdout=subprocess.PIPE)
    try:
        cmd = bpeforge_cmd("train", "-", "--vocab-size", "300", "-o", str(tmp_path / "out"), "--no-progress")
        exit_code, stderr, seconds = stop_after(cmd, number, started(1.5), stdin=silent.stdout)
    finally:
        silent.kill()
    assert exit_code == code, stderr
    assert "interrupted" in stderr if number == signal.SIGINT else "terminated" in stderr
    assert seconds < 1.0, f"took {seconds:.2f} s to stop"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("number", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_removes_the_temporary_output_of_a_blocked_encode(tmp_path, number, code):
    """`encode -` has its output's temporary file open while it waits for standard input."""
    text = corpus(tmp_path / "c.txt", 0.05)
    subprocess.run(bpeforge_cmd("train", str(text), "--vocab-size", "300", "-o", str(tmp_path / "tok")), check=True)
    before = sorted(p.name for p in tmp_path.iterdir())
    silent = subprocess.Popen(["sleep", "60"], stdout=subprocess.PIPE)
    temporaries = lambda: list(tmp_path.glob(".ids.npy.tmp-*"))  # noqa: E731
    try:
        cmd = bpeforge_cmd("encode", "-", "--tokenizer", str(tmp_path / "tok"), "-o", str(tmp_path / "ids.npy"))
        exit_code, stderr, seconds = stop_after(cmd, number, lambda _: temporaries(), stdin=silent.stdout)
    finally:
        silent.kill()
    assert exit_code == code, stderr
    assert seconds < 1.0, f"took {seconds:.2f} s to stop"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no output, no temporary


def varied_corpus(path: Path, lines: int, seed: int = 0) -> Path:
    """Random words, nearly all distinct: a merge loop of a few seconds for a vocabulary of 20,000."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(lines):
            f.write(
                " ".join("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 10))) for _ in range(5000))
            )
            f.write("\n")
    return path


def test_sigterm_at_any_moment_of_training_leaves_no_temporary(tmp_path):
    """SIGTERM (`timeout`, Slurm, `docker stop`) while reading, counting, merging and writing."""
    text = varied_corpus(tmp_path / "corpus.txt", 120)
    out = tmp_path / "out"
    subprocess.run(bpeforge_cmd("train", str(text), "--vocab-size", "300", "-o", str(out), "--no-progress"), check=True)
    old = snapshot(out)
    cmd = bpeforge_cmd("train", str(text), "--vocab-size", "20000", "-o", str(out), "--force")
    subprocess.run(cmd, check=True, capture_output=True)
    new = snapshot(out)
    rng = random.Random(2)
    # (what shows on stderr, the most seconds after it): reading and counting, merging, the last merges and writing
    moments = [("pre-tokenize", 0.4), ("merges", 0.4), ("merges:  9", 0.2), ("merges: 100%", 0.1)]
    codes = []
    for _ in range(8):
        shutil.rmtree(out)
        out.mkdir()
        for name, data in old.items():
            (out / name).write_bytes(data)
        marker, most = rng.choice(moments)
        code, stderr, seconds = stop_after(cmd, signal.SIGTERM, shown(marker, rng.uniform(0.0, most)))
        codes.append(code)
        assert seconds < 1.0, f"took {seconds:.2f} s to stop"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt", "out"], "a temporary was left"
        assert snapshot(out) in (old, new)
        if code == -signal.SIGTERM:  # after the command's work, while the interpreter ends: the default action
            assert snapshot(out) == new, stderr
        else:
            assert code in (0, 143), stderr
            assert code == 0 or "terminated" in stderr
    print(f"{len(codes)} runs: {codes.count(143)} stopped by SIGTERM, {codes.count(0)} finished first")
    assert codes.count(143) >= len(codes) // 4


def test_sighup_stops_and_an_ignored_signal_stays_ignored(tmp_path):
    """SIGHUP (the terminal closed) stops like SIGTERM, exit 129; under `nohup` (SIGHUP ignored from the
    start) it changes nothing, and SIGTERM still stops the run."""
    silent = subprocess.Popen(["sleep", "60"], stdout=subprocess.PIPE)
    cmd = bpeforge_cmd("train", "-", "--vocab-size", "300", "-o", str(tmp_path / "out"), "--no-progress")
    try:
        code, stderr, seconds = stop_after(cmd, signal.SIGHUP, started(1.5), stdin=silent.stdout)
        assert code == 129, stderr
        assert seconds < 1.0
        ignoring = subprocess.Popen(
            cmd,
            stdin=silent.stdout,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
        )
        time.sleep(1.5)
        ignoring.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        assert ignoring.poll() is None, "SIGHUP stopped a run that ignores it"
        ignoring.send_signal(signal.SIGTERM)
        assert ignoring.wait(timeout=5) == 143
    finally:
        silent.kill()
