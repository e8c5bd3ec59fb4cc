"""`bpeforge train` as a user runs it: real processes, real files."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from pathlib import Path

import bpeforge
from bpeforge import _core

SPECIAL = "<|endoftext|>"


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bpeforge", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def write_corpus(path: Path, documents: int = 50, seed: int = 0) -> Path:
    rng = random.Random(seed)
    words = ["low", "lower", "newest", "widest", "the", "cat", "sat", "on", "mat", "don't", "1984", "naïve"]
    docs = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 60))) for _ in range(documents)]
    path.write_bytes(f"\n{SPECIAL}\n".join(docs).encode("utf-8"))
    return path


def test_train_writes_what_the_api_returns(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.txt")
    result = run_cli("train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "out"), "--no-progress")
    assert result.returncode == 0, result.stderr
    assert "wrote" in result.stdout and "unique pre-tokens" in result.stdout
    assert bpeforge.load(tmp_path / "out") == bpeforge.train_bpe(corpus, 300, [SPECIAL])


def test_existing_output_needs_force(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.txt")
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    refused = run_cli("train", str(corpus), "--vocab-size", "300", "-o", str(out), "--no-progress")
    assert refused.returncode == 2
    assert "--force" in refused.stderr
    assert (out / "mine.txt").read_text() == "keep me"
    # --force replaces only a directory of bpeforge's own files: never the user's.
    forced = run_cli("train", str(corpus), "--vocab-size", "300", "-o", str(out), "--no-progress", "--force")
    assert forced.returncode == 2 and "mine.txt" in forced.stderr
    assert [p.name for p in out.iterdir()] == ["mine.txt"]
    (out / "mine.txt").unlink()
    for _ in range(2):
        forced = run_cli("train", str(corpus), "--vocab-size", "300", "-o", str(out), "--no-progress", "--force")
        assert forced.returncode == 0, forced.stderr
    assert sorted(p.name for p in out.iterdir()) == ["bpeforge.json", "merges.txt", "vocab.json"]


def test_missing_input_is_named_and_nothing_is_written(tmp_path):
    result = run_cli("train", str(tmp_path / "nope.txt"), "--vocab-size", "300", "-o", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "nope.txt" in result.stderr and "No such file" in result.stderr
    assert not (tmp_path / "out").exists()


def test_vocab_size_too_small_states_the_minimum(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.txt")
    result = run_cli("train", str(corpus), "--vocab-size", "100", "-o", str(tmp_path / "out"))
    assert result.returncode == 2 and "at least 257" in result.stderr


def test_demo_trains_on_the_standard_library(tmp_path):
    result = run_cli("train", "--demo", "--vocab-size", "600", "--no-progress", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    vocab, merges = bpeforge.load(tmp_path / "bpeforge-demo")
    assert len(vocab) == 600 and len(merges) == 600 - 257
    assert b"    " in vocab.values()  # Python source: indentation is learned early


def test_progress_bars_report_both_phases(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.txt")
    result = run_cli("train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert "pre-tokenize" in result.stderr and "merges" in result.stderr
    # Bytes in MiB and MiB/s, as in the summary (tqdm's own scaling would say "MB/s" for MB/s).
    assert "MiB/s" in result.stderr and "MB/s" not in result.stderr
    assert "MiB in 1 file(s)" in result.stdout and "MiB/s on" in result.stdout


def test_ctrl_c_in_the_core_raises_keyboard_interrupt(tmp_path):
    # The core reports progress from the calling thread, where the binding
    # checks for signals: a SIGINT raised during the run surfaces as
    # KeyboardInterrupt instead of a result.
    corpus = write_corpus(tmp_path / "corpus.txt", documents=2000)
    calls = []

    def progress(phase: str, done: int, total: int) -> None:
        calls.append(phase)
        if len(calls) == 1:
            signal.raise_signal(signal.SIGINT)

    try:
        _core.train([str(corpus)], 5000, [SPECIAL], 1, 4096, progress)
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("training finished despite SIGINT")
    assert calls == ["pretokenize"]  # stopped at the first report


def test_version_and_standard_input_and_output(tmp_path):
    assert subprocess.run(
        [sys.executable, "-m", "bpeforge", "--version"], capture_output=True, text=True
    ).stdout.startswith("bpeforge ")
    text = "hello world, hello there<|endoftext|>more text here\n" * 20
    from_stdin = subprocess.run(
        [sys.executable, "-m", "bpeforge", "train", "-", "--vocab-size", "280", "-o", str(tmp_path / "tok")],
        input=text, capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert from_stdin.returncode == 0, from_stdin.stderr
    (tmp_path / "c.txt").write_text(text)
    from_file = run_cli("train", str(tmp_path / "c.txt"), "--vocab-size", "280", "-o", str(tmp_path / "tok2"))
    assert from_file.returncode == 0
    assert bpeforge.load(tmp_path / "tok") == bpeforge.load(tmp_path / "tok2")
    encoded = subprocess.run(
        [sys.executable, "-m", "bpeforge", "encode", "-", "--tokenizer", str(tmp_path / "tok"), "-o",
         str(tmp_path / "ids.npy")],
        input=text, capture_output=True, text=True,
    )  # fmt: skip
    assert encoded.returncode == 0, encoded.stderr
    decoded = subprocess.run(
        [sys.executable, "-m", "bpeforge", "decode", str(tmp_path / "ids.npy"), "--tokenizer", str(tmp_path / "tok"),
         "-o", "-"],
        capture_output=True,
    )  # fmt: skip
    assert decoded.returncode == 0 and decoded.stdout == text.encode()
    counted = subprocess.run(
        [sys.executable, "-m", "bpeforge", "count", "-", "-o", str(tmp_path / "stdin.counts")],
        input=text, capture_output=True, text=True,
    )  # fmt: skip
    assert counted.returncode == 0, counted.stderr
    assert run_cli("count", str(tmp_path / "c.txt"), "-o", str(tmp_path / "file.counts")).returncode == 0
    assert (tmp_path / "stdin.counts").read_bytes() == (tmp_path / "file.counts").read_bytes()
    assert "MiB/s" in counted.stdout
