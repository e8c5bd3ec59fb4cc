"""`bpeforge encode` and `bpeforge decode` as a user runs them: real processes, real files.

A small tokenizer is trained with `bpeforge train`; the oracle for the CLI's
ids is `Tokenizer.load(dir).encode` of each file's text.
"""

from __future__ import annotations

import gzip
import json
import lzma
import random
import subprocess
from pathlib import Path

import bpeforge
import numpy as np
import pytest
from bpeforge import Tokenizer, _core
from bpeforge.open_tokenizer import open_tokenizer
from cli_runs import run_cli, train_with_cli

SPECIAL = "<|endoftext|>"
WORDS = ["low", "lower", "newest", "widest", "the", "cat", "don't", "1984", "naïve", "日本語", "😀", "Straße"]


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
    return train_with_cli(root, corpus, "--vocab-size", "400")


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
    # The progress bar and the summary: throughput and compression, bytes in MiB in both.
    assert "tokens/s" in result.stderr and "MiB/s" in result.stderr and "MB/s" not in result.stderr
    assert "MiB/s" in result.stdout
    assert f"{len(expected):,} tokens (uint16)" in result.stdout
    assert "bytes/token" in result.stdout


@pytest.mark.parametrize("words", [0, 1, 700, 2_000, 300_000])
@pytest.mark.parametrize("dtype", ["uint16", "uint32"])
def test_ids_appended_past_the_page_cache_are_the_ids(tokenizer, tmp_path, words, dtype):
    """The core appends a text file's ids itself, with O_DIRECT where it can, a page at a time and the
    last partial page plainly (`io/append_file.rs`): every size around a page must come out whole."""
    from bpeforge.encode_files import encode_files

    path = tmp_path / "text.txt"
    path.write_bytes(generated_text(words, words).encode("utf-8"))
    out = tmp_path / "ids.npy"
    encode_files(tokenizer, [path], out, dtype=dtype, progress=False, separator=7 if words == 700 else None)
    expected = tokenizer.encode(path.read_bytes().decode("utf-8")) + ([7] if words == 700 else [])
    assert np.load(out).tolist() == expected


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


# Inputs as training takes them: directories, compressed text, JSON Lines, Parquet.


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory) -> tuple[Path, list[str]]:
    """A directory of text (plain, .gz, .xz), JSON Lines and Parquet files, and its documents in the order
    `encode` reads them: files by sorted path, a text file whole, each record (rows of null text skipped)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("corpus") / "data"
    (root / "sub").mkdir(parents=True)
    texts = [generated_text(seed, 300) + "lo" for seed in range(10, 13)]
    records = [generated_text(seed, rng_words) for seed, rng_words in zip(range(20, 26), (0, 1, 5, 40, 3, 80))]
    (root / "a.txt").write_bytes(texts[0].encode("utf-8"))
    (root / "b.txt.gz").write_bytes(gzip.compress(texts[1].encode("utf-8")))
    (root / "c.txt.xz").write_bytes(lzma.compress(texts[2].encode("utf-8")))
    lines = [json.dumps({"text": text, "id": i}) for i, text in enumerate(records[:3])]
    (root / "sub" / "d.jsonl").write_text("\n".join(lines[:2]) + "\n\n" + lines[2] + "\n", encoding="utf-8")
    table = pa.table({"body": [records[3], None, records[4], records[5]], "n": [1, 2, 3, 4]})
    pq.write_table(table, root / "sub" / "e.parquet", row_group_size=2)
    (root / ".hidden.txt").write_text("left out", encoding="utf-8")
    return root, [*texts, *records]


def test_encode_takes_what_train_takes(tokenizer_dir, tokenizer, corpus_dir, tmp_path):
    root, documents = corpus_dir
    out = tmp_path / "ids.npy"
    result = run_cli("encode", root, "--tokenizer", tokenizer_dir, "-o", out, "--text-column", "body")
    assert result.returncode == 0, result.stderr
    # Each file and record encoded alone, in order: " ...lo" ends each text file, which would merge with a
    # following "wer" were they joined.
    assert np.load(out).tolist() == [i for document in documents for i in tokenizer.encode(document)]
    assert "in 5 file(s)" in result.stdout and "MiB/s" in result.stderr
    # Threads do not change the output, nor --glob the order of what it keeps.
    texts_only = tmp_path / "texts.npy"
    result = run_cli(
        "encode", root, "--tokenizer", tokenizer_dir, "-o", texts_only, "--glob", "*.txt*", "--threads", "1",
        "--no-progress",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert np.load(texts_only).tolist() == [i for document in documents[:3] for i in tokenizer.encode(document)]


def test_a_tokenizer_for_text_files_alone_is_built_without_the_encode_cache(corpus_dir, tmp_path):
    """Text files are encoded by workers with tables of their own (encode/files.rs), so `bpeforge encode` builds
    its tokenizer without the cache and the seeded table a tokenizer keeps for later calls (25-40 ms of its start);
    records are encoded in batches that use a small one (the workers' tables answer nearly every piece), and a
    directory that cannot be listed gets it too."""
    from bpeforge.encode_files import RECORDS_CACHE_SIZE, cache_size_for, list_inputs

    root, _ = corpus_dir
    assert cache_size_for(list_inputs([root], "*.txt*")) == 0
    assert cache_size_for(list_inputs([root / "a.txt", root / "c.txt.xz"])) == 0
    assert cache_size_for(list_inputs([root])) == RECORDS_CACHE_SIZE  # a .jsonl and a .parquet among them
    assert cache_size_for(list_inputs([root / "a.txt", root / "sub" / "d.jsonl"])) == RECORDS_CACHE_SIZE
    (tmp_path / "empty").mkdir()
    assert cache_size_for(list_inputs([tmp_path / "empty"])) == RECORDS_CACHE_SIZE  # its error comes from encode_files


def test_document_separator_follows_each_file_and_record(tokenizer_dir, tokenizer, corpus_dir, tmp_path):
    root, documents = corpus_dir
    out = tmp_path / "ids.npy"
    args = ("encode", root, "--tokenizer", tokenizer_dir, "-o", out, "--text-column", "body", "--no-progress")
    result = run_cli(*args, "--document-separator", SPECIAL)
    assert result.returncode == 0, result.stderr
    eot = tokenizer.token_to_id(SPECIAL)
    assert np.load(out).tolist() == [i for document in documents for i in [*tokenizer.encode(document), eot]]
    refused = run_cli(*args, "--force", "--document-separator", "<|eot|>")
    assert refused.returncode == 2
    assert refused.stderr.startswith("bpeforge encode: error: --document-separator '<|eot|>' is not a special token")


def test_bad_records_are_named_or_skipped(tokenizer_dir, tokenizer, tmp_path):
    records = tmp_path / "records.jsonl.gz"
    records.write_bytes(
        gzip.compress(b'{"text": "the cat"}\n{"text": 3}\n{"body": "low"}\nnot json\n{"text": "lower"}\n')
    )
    out = tmp_path / "ids.npy"
    refused = run_cli("encode", records, "--tokenizer", tokenizer_dir, "-o", out, "--no-progress")
    assert refused.returncode == 2 and f"{records}:2:" in refused.stderr and "--skip-bad-records" in refused.stderr
    assert not out.exists()
    skipped = run_cli("encode", records, "--tokenizer", tokenizer_dir, "-o", out, "--skip-bad-records", "--no-progress")
    assert skipped.returncode == 0, skipped.stderr
    assert "skipped 3 bad records" in skipped.stderr
    assert np.load(out).tolist() == tokenizer.encode("the cat") + tokenizer.encode("lower")


# --tokenizer: a directory, a tokenizer.json, a .tiktoken file with --pattern, a bundled encoding.


@pytest.fixture(scope="module")
def tokenizer_files(tokenizer, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("formats")
    tokenizer.save_hf(root / "tokenizer.json")
    tokenizer.save_tiktoken(root / "tok.tiktoken")
    return {"hf": root / "tokenizer.json", "tiktoken": root / "tok.tiktoken"}


@pytest.mark.parametrize("source", ["hf", "tiktoken", "gpt2"])
def test_tokenizer_sources(source, tokenizer_files, tokenizer, inputs, tmp_path):
    """encode and decode take a tokenizer.json, a .tiktoken file with its pattern and specials, a bundled name."""
    name = str(tokenizer_files.get(source, source))
    options = ("--pattern", "gpt2", "--special-token", SPECIAL) if source == "tiktoken" else ()
    oracle = open_tokenizer(name, pattern="gpt2", special_tokens=[SPECIAL]) if options else open_tokenizer(name)
    if source == "hf":
        assert oracle == tokenizer  # the same tokenizer as its directory
    out, back = tmp_path / "ids.npy", tmp_path / "back.txt"
    result = run_cli("encode", *inputs, "--tokenizer", name, *options, "-o", out, "--no-progress")
    assert result.returncode == 0, result.stderr
    assert np.load(out).tolist() == expected_ids(oracle, inputs)
    result = run_cli("decode", out, "--tokenizer", name, *options, "-o", back)
    assert result.returncode == 0, result.stderr
    assert back.read_bytes() == b"".join(path.read_bytes() for path in inputs)


def test_tokenizer_errors_are_one_clean_line(tokenizer_dir, tokenizer_files, inputs, tmp_path):
    out = tmp_path / "ids.npy"
    cases = {
        ("--tokenizer", tokenizer_files["tiktoken"]): "does not record its pre-tokenizer; give its pattern",
        ("--tokenizer", tokenizer_dir, "--pattern", "o200k"): "has its own pre-tokenizer",
        ("--tokenizer", tmp_path / "missing"): "does not exist: give a tokenizer directory, a tokenizer.json",
    }
    for options, message in cases.items():
        result = run_cli("encode", inputs[1], *options, "-o", out, "--no-progress")
        assert result.returncode == 2
        assert result.stderr.startswith("bpeforge encode: error: ") and message in result.stderr
        assert result.stderr.count("\n") == 1  # one line, no traceback
    assert not out.exists()


def test_output_may_not_replace_the_tokenizer(tokenizer_files, inputs):
    target = tokenizer_files["hf"]
    before = target.read_bytes()
    result = run_cli("encode", inputs[1], "--tokenizer", target, "-o", target, "--force", "--no-progress")
    assert result.returncode == 2 and "is the input" in result.stderr
    assert target.read_bytes() == before
