"""`bpeforge encode` and `bpeforge decode` as a user runs them: real processes, real files.

A small tokenizer is trained with `bpeforge train`; the oracle for the CLI's
ids is `Tokenizer.load(dir).encode` of each file's text.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import bpeforge
import numpy as np
import pytest
from bpeforge import Tokenizer, _core

SPECIAL = "<|endoftext|>"
WORDS = ["low", "lower", "newest", "widest", "the", "cat", "don't", "1984", "naïve", "日本語", "😀", "Straße"]


def run_cli(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bpeforge", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def generated_text(seed: int, words: int) -> str:
    """Words, CRLF and LF lines, whitespace runs and documents separated by the special token."""
    rng = random.Random(seed)
    separators = [" "] * 20 + ["  ", "\n", "\r\n", "\n\n", " \t", "\u3000", f"\n{SPECIAL}\n"]
    return "".join(rng.choice(WORDS) + rng.choice(separators) for _ in range(words))


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tokenizer")
    corpus = root / "corpus.txt"
    corpus.write_bytes(generated_text(0, 20_000).encode("utf-8"))
    result = run_cli("train", corpus, "--vocab-size", "400", "-o", root / "tok", "--no-progress")
    assert result.returncode == 0, result.stderr
    return root / "tok"


@pytest.fixture(scope="module")
def tokenizer(tokenizer_dir) -> Tokenizer:
    return Tokenizer.load(tokenizer_dir)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> list[Path]:
    """Two files: the first larger than the encoder's 4 MiB read chunk, so it is cut and encoded in parallel."""
    root = tmp_path_factory.mktemp("inputs")
    big = root / "big.txt"
    text = generated_text(1, 700_000)
    big.write_bytes((text + "the end lo").encode("utf-8"))  # ends in half a word
    assert big.stat().st_size > _core.DEFAULT_CHUNK_SIZE
    small = root / "small.txt"
    # Starts with the rest of that word, ends without a newline.
    small.write_bytes(f"wer\n cat{SPECIAL}{SPECIAL} naïve\r\n\r\n  日本語 😀 don't{SPECIAL}\t".encode())
    return [big, small]


def expected_ids(tokenizer: Tokenizer, inputs: list[Path]) -> list[int]:
    """Each file encoded on its own (a file's end ends a pre-token), concatenated."""
    return [i for path in inputs for i in tokenizer.encode(path.read_bytes().decode("utf-8"))]


@pytest.fixture(scope="module")
def encoded(tokenizer_dir, inputs, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The default run, progress bar included."""
    out = tmp_path_factory.mktemp("encoded") / "ids.npy"
    result = run_cli("encode", *inputs, "--tokenizer", tokenizer_dir, "-o", out)
    assert result.returncode == 0, result.stderr
    return out, result


def test_encode_writes_uint16_ids_of_each_file(encoded, tokenizer, inputs):
    out, result = encoded
    ids = np.load(out)
    assert ids.dtype == np.uint16 and ids.ndim == 1
    expected = expected_ids(tokenizer, inputs)
    assert ids.tolist() == expected
    # The files are encoded apart: joined, " lo" + "wer" would be the one token " lower".
    joined = "".join(path.read_bytes().decode("utf-8") for path in inputs)
    assert tokenizer.encode(joined) != expected
    # The progress bar and the summary: throughput and compression.
    assert "tokens/s" in result.stderr and "B/s" in result.stderr
    assert f"{len(expected):,} tokens (uint16)" in result.stdout
    assert "bytes/token" in result.stdout


def test_threads_do_not_change_the_output(encoded, tokenizer_dir, inputs, tmp_path):
    outputs = []
    for threads in ("1", "2"):
        out = tmp_path / f"ids-{threads}.npy"
        result = run_cli(
            "encode", *inputs, "--tokenizer", tokenizer_dir, "-o", out, "--threads", threads, "--no-progress"
        )
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""  # --no-progress draws nothing
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] == encoded[0].read_bytes()


def test_threads_must_be_positive(tokenizer_dir, inputs, tmp_path):
    result = run_cli("encode", *inputs, "--tokenizer", tokenizer_dir, "-o", tmp_path / "ids.npy", "--threads", "0")
    assert result.returncode == 2 and "--threads" in result.stderr
    assert not (tmp_path / "ids.npy").exists()


def test_dtype_uint32(tokenizer_dir, tokenizer, inputs, tmp_path):
    out = tmp_path / "ids32.npy"
    result = run_cli("encode", *inputs, "--tokenizer", tokenizer_dir, "-o", out, "--dtype", "uint32", "--no-progress")
    assert result.returncode == 0, result.stderr
    ids = np.load(out)
    assert ids.dtype == np.uint32
    assert ids.tolist() == expected_ids(tokenizer, inputs)


def test_decode_writes_the_exact_bytes(encoded, tokenizer_dir, inputs, tmp_path):
    back = tmp_path / "back.txt"
    result = run_cli("decode", encoded[0], "--tokenizer", tokenizer_dir, "-o", back)
    assert result.returncode == 0, result.stderr
    original = b"".join(path.read_bytes() for path in inputs)
    assert back.read_bytes() == original  # CRLF, specials and all
    assert f"{len(original):,} bytes" in result.stdout


def test_existing_output_needs_force(tokenizer_dir, tokenizer, inputs, tmp_path):
    out = tmp_path / "ids.npy"
    out.write_bytes(b"keep me")
    refused = run_cli("encode", *inputs, "--tokenizer", tokenizer_dir, "-o", out, "--no-progress")
    assert refused.returncode == 2
    assert "--force" in refused.stderr and str(out) in refused.stderr
    assert out.read_bytes() == b"keep me"
    forced = run_cli("encode", *inputs, "--tokenizer", tokenizer_dir, "-o", out, "--no-progress", "--force")
    assert forced.returncode == 0, forced.stderr
    assert np.load(out).tolist() == expected_ids(tokenizer, inputs)


@pytest.fixture(scope="module")
def large_vocab_dir(tmp_path_factory) -> Path:
    """70,000 tokens: the bytes, all 65,536 byte pairs, then 4,208 byte triples."""
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(bytes([a]), bytes([b])) for a in range(256) for b in range(256)]
    merges += [(bytes([a, b]), bytes([c])) for a in range(2) for b in range(256) for c in range(256)][
        : 70_000 - 256 - 65_536
    ]
    for rank, (left, right) in enumerate(merges):
        vocab[256 + rank] = left + right
    assert len(vocab) == 70_000
    return bpeforge.save(vocab, merges, tmp_path_factory.mktemp("large") / "tok")


def test_uint16_is_refused_for_a_large_vocabulary(large_vocab_dir, tmp_path):
    text = tmp_path / "text.txt"
    # " \x00\x01\x02" is one pre-token: the pair (00, 01) merges first (rank 1, id 257),
    # then the triple (00 01, 02), triple number 1 * 256 + 2: id 256 + 65,536 + 258 = 66,050.
    text.write_bytes(b"hello \x00\x01\x02 world")
    out = tmp_path / "ids.npy"
    result = run_cli("encode", text, "--tokenizer", large_vocab_dir, "-o", out, "--dtype", "uint16")
    assert result.returncode == 2
    assert "uint32" in result.stderr and "70000" in result.stderr
    assert not out.exists()
    # Without --dtype, a vocabulary that does not fit uint16 gets uint32.
    result = run_cli("encode", text, "--tokenizer", large_vocab_dir, "-o", out, "--no-progress")
    assert result.returncode == 0, result.stderr
    ids = np.load(out)
    assert ids.dtype == np.uint32
    assert ids.tolist() == Tokenizer.load(large_vocab_dir).encode(text.read_text(encoding="utf-8"))
    assert 66_050 in ids.tolist()


@pytest.mark.parametrize("where", ["early", "past the first chunk"])
def test_invalid_utf8_names_the_file_and_offset(tokenizer_dir, inputs, tmp_path, where):
    head = b"hello world\n" if where == "early" else inputs[0].read_bytes()
    bad = tmp_path / "bad.txt"
    bad.write_bytes(head + b"\xff\xfe more text\n")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    result = run_cli("encode", inputs[1], bad, "--tokenizer", tokenizer_dir, "-o", out_dir / "ids.npy")
    assert result.returncode == 2
    assert str(bad) in result.stderr
    assert f"byte offset {len(head)}" in result.stderr
    assert list(out_dir.iterdir()) == []  # no output, no temporary file left behind


def test_missing_input_is_named(tokenizer_dir, inputs, tmp_path):
    missing = tmp_path / "nope.txt"
    out = tmp_path / "ids.npy"
    result = run_cli("encode", inputs[1], missing, "--tokenizer", tokenizer_dir, "-o", out, "--no-progress")
    assert result.returncode == 2
    assert "nope.txt" in result.stderr and "No such file" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
