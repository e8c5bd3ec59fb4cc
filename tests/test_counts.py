"""Count files: train any vocabulary size from them, add them up, never lose a count."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import bpeforge
import pytest

SPECIAL = "<|endoftext|>"


def corpus(path: Path, seed: int, documents: int = 200) -> Path:
    rng = random.Random(seed)
    words = ["low", "lower", "newest", "widest", "the", " cat", "sat", "don't", "1984", "naïve", "日本語", "🙂"]
    docs = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 40))) for _ in range(documents)]
    path.write_bytes(f"\n{SPECIAL}\n".join(docs).encode("utf-8"))
    return path


def test_training_from_saved_counts_equals_training_from_the_corpus(tmp_path):
    text = corpus(tmp_path / "a.txt", 1)
    bpeforge.save_counts(bpeforge.count(text, [SPECIAL]), tmp_path / "c.bin")
    for vocab_size in (300, 500, 2000):  # any size from the one count file
        from_counts = bpeforge.train_from_counts(tmp_path / "c.bin", vocab_size)
        assert (from_counts.vocab, from_counts.merges) == bpeforge.train_bpe(text, vocab_size, [SPECIAL])


def test_merged_counts_equal_counting_the_files_together(tmp_path):
    a, b = corpus(tmp_path / "a.txt", 1), corpus(tmp_path / "b.txt", 2)
    bpeforge.save_counts(bpeforge.count(a, [SPECIAL]), tmp_path / "a.bin")
    bpeforge.save_counts(bpeforge.count(b, [SPECIAL]), tmp_path / "b.bin")
    total = bpeforge.merge_counts([tmp_path / "a.bin", tmp_path / "b.bin"], tmp_path / "ab.bin")
    together = bpeforge.count([a, b], [SPECIAL])
    assert total.items() == together.items()
    assert total.bytes_counted == together.bytes_counted == a.stat().st_size + b.stat().st_size
    # The saved sum is byte-identical to saving the joint count: files depend on counts alone.
    bpeforge.save_counts(together, tmp_path / "together.bin")
    assert (tmp_path / "ab.bin").read_bytes() == (tmp_path / "together.bin").read_bytes()


def test_counts_beyond_32_bits_stay_exact(tmp_path):
    text = corpus(tmp_path / "a.txt", 3)
    base = bpeforge.count(text, [SPECIAL])
    bpeforge.save_counts(base, tmp_path / "big.bin")
    # Doubling 33 times multiplies every count by 2**33: past u32 (and i32) for all of them.
    for _ in range(33):
        doubled = bpeforge.merge_counts([tmp_path / "big.bin", tmp_path / "big.bin"])
        bpeforge.save_counts(doubled, tmp_path / "big.bin", overwrite=True)
    big = bpeforge.load_counts(tmp_path / "big.bin")
    assert big.items() == [(token, n << 33) for token, n in base.items()]
    # Scaling every count by the same factor changes no ranking: the same merges.
    assert bpeforge.train_from_counts(big, 600).merges == bpeforge.train_from_counts(base, 600).merges


def test_bad_count_files_are_named(tmp_path):
    bpeforge.save_counts(bpeforge.count(corpus(tmp_path / "a.txt", 1), [SPECIAL]), tmp_path / "c.bin")
    data = (tmp_path / "c.bin").read_bytes()
    (tmp_path / "v9.bin").write_bytes(data[:8] + (9).to_bytes(4, "little") + data[12:])
    with pytest.raises(ValueError, match=r"v9\.bin: count file format version 9; this bpeforge reads version 2"):
        bpeforge.load_counts(tmp_path / "v9.bin")
    (tmp_path / "cut.bin").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"cut\.bin: the file is truncated"):
        bpeforge.load_counts(tmp_path / "cut.bin")
    (tmp_path / "text.bin").write_text("not counts")
    with pytest.raises(ValueError, match="not a bpeforge count file"):
        bpeforge.load_counts(tmp_path / "text.bin")
    bpeforge.save_counts(bpeforge.count(tmp_path / "a.txt", []), tmp_path / "nospecial.bin")
    with pytest.raises(ValueError, match="can only be added when both match"):
        bpeforge.merge_counts([tmp_path / "c.bin", tmp_path / "nospecial.bin"])


def test_min_frequency_stops_early_with_the_same_merges(tmp_path):
    text = corpus(tmp_path / "a.txt", 4)
    full = bpeforge.train(text, 800, [SPECIAL])
    floor = 50
    limited = bpeforge.train(text, 800, [SPECIAL], min_frequency=floor)
    assert 0 < len(limited.merges) < len(full.merges)
    assert limited.merges == full.merges[: len(limited.merges)]  # a prefix: same choices until the floor


def test_max_token_length_bounds_every_learned_token(tmp_path):
    text = corpus(tmp_path / "a.txt", 5)
    limited = bpeforge.train(text, 600, [SPECIAL], max_token_length=3)
    learned = [limited.vocab[256 + i] for i in range(len(limited.merges))]
    assert learned and max(map(len, learned)) <= 3
    # A limit no token reaches changes nothing.
    assert (
        bpeforge.train(text, 600, [SPECIAL], max_token_length=10_000).merges
        == bpeforge.train_bpe(text, 600, [SPECIAL])[1]
    )


def test_options_are_checked():
    with pytest.raises(ValueError, match="min_frequency must be a positive integer"):
        bpeforge.train_bpe("x.txt", 300, [], min_frequency=0)
    with pytest.raises(ValueError, match="max_token_length must be a positive integer"):
        bpeforge.train_bpe("x.txt", 300, [], max_token_length=-1)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bpeforge", *args], capture_output=True, text=True, timeout=120)


def test_cli_count_then_train_from_counts(tmp_path):
    text = corpus(tmp_path / "a.txt", 6)
    counted = run_cli("count", str(text), "-o", str(tmp_path / "c.bin"), "--no-progress")
    assert counted.returncode == 0, counted.stderr
    assert "unique pre-tokens" in counted.stdout
    trained = run_cli(
        "train", "--from-counts", str(tmp_path / "c.bin"), "--vocab-size", "500", "-o", str(tmp_path / "tok")
    )
    assert trained.returncode == 0, trained.stderr
    assert bpeforge.load(tmp_path / "tok") == bpeforge.train_bpe(text, 500, [SPECIAL])
    refused = run_cli("count", str(text), "-o", str(tmp_path / "c.bin"))
    assert refused.returncode == 2 and "--force" in refused.stderr
