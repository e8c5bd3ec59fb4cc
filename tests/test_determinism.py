"""The trained files are a function of the corpus, vocab_size and specials alone.

Thread count, read chunk size, hash seed, and splitting the corpus into
several files at document boundaries all give byte-identical vocab.json and
merges.txt.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import bpeforge

SPECIAL = "<|endoftext|>"
VOCAB = "800"


def documents(seed: int = 11, count: int = 400) -> list[str]:
    rng = random.Random(seed)
    words = ["ab", "ba", "aab", "the", " cat", "naïve", "日本", "🙂", "1984", "don't", "\r\n", "  ", "\t"]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 60))) for _ in range(count)]


def files_of(directory: Path) -> dict[str, bytes]:
    return {name: (directory / name).read_bytes() for name in ("vocab.json", "merges.txt", "bpeforge.json")}


def cli_train(inputs: list[Path], out: Path, *extra: str, hash_seed: str = "0") -> dict[str, bytes]:
    cmd = [sys.executable, "-m", "bpeforge", "train", *map(str, inputs), "--vocab-size", VOCAB, "-o", str(out)]
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    subprocess.run([*cmd, "--no-progress", *extra], check=True, env=env, capture_output=True)
    return files_of(out)


def test_byte_identical_outputs_across_threads_seeds_chunks_and_file_splits(tmp_path):
    docs = documents()
    whole = tmp_path / "whole.txt"
    whole.write_bytes(SPECIAL.join(docs).encode())
    reference = cli_train([whole], tmp_path / "reference")

    for threads in ("1", "2", "4"):
        assert cli_train([whole], tmp_path / f"t{threads}", "--threads", threads) == reference, threads
    for seed in ("1", "12345", "random"):
        assert cli_train([whole], tmp_path / f"seed-{seed}", hash_seed=seed) == reference, seed

    # Split at document boundaries: a file's end ends a document as the special token did.
    bounds = [0, 97, 250, len(docs)]
    parts = []
    for i, (start, end) in enumerate(zip(bounds, bounds[1:])):
        part = tmp_path / f"part{i}.txt"
        part.write_bytes(SPECIAL.join(docs[start:end]).encode())
        parts.append(part)
    assert cli_train(parts, tmp_path / "split") == reference

    for chunk_size in (1, 13, 4096, 1 << 20):
        result = bpeforge.train(whole, int(VOCAB), [SPECIAL], chunk_size=chunk_size, num_threads=2)
        out = tmp_path / f"chunk{chunk_size}"
        bpeforge.save(result.vocab, result.merges, out, special_tokens=[SPECIAL])
        assert files_of(out) == reference, chunk_size
