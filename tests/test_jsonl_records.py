"""JSON Lines read and encoded by the Rust core (`bpeforge.jsonl_records`) against the Python path
(`inputs.jsonl_texts` + `encode_batch_to_numpy`): the same documents' ids, the same records skipped with the
same messages, the same errors, on fuzzed records (escapes, surrogate pairs, lone halves, nested objects,
numbers and nulls in the field, CRLF ends, a last line without newline, compressed files) and through
`bpeforge encode` to `.npy` and Megatron files."""

from __future__ import annotations

import gzip
import json
import lzma
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import bpeforge.encode_files
import pytest
from bpeforge.encode_files import encode_files
from bpeforge.inputs import RecordOptions, jsonl_texts
from bpeforge.jsonl_records import core_reads_jsonl, jsonl_batches
from bpeforge.open_tokenizer import open_tokenizer

EOT = "<|endoftext|>"
PIECES = ["the", " cat", "don't", "  ", "\n", "\r\n", "\t", '"', "\\", "/", "é", "日本語", "😀", "\u2028", "\ufeff",
          "\x00", "\x1f", "\x7f", EOT, "<|endo", "1984", "1" * 30, "Straße", "\U0010ffff", " \u3000 "]  # fmt: skip

# Lines Python reads though the core's parser may not, and bad records, each as Python reads it.
ODD_LINES = [
    b'{"text": "a", "n": NaN}',
    b'{"text": "b", "n": -Infinity}',
    b'{"other": "\\ud83d lone, outside the field", "text": "c"}',
    b'{"text": 1, "text": "the last one wins"}',
    b'{"text": "d", "n": 1e400}',
    b'{"text": "e", "deep": ' + b"[" * 300 + b"]" * 300 + b"}",
    b'{"text": "f", "n": ' + b"7" * 700 + b".5}",
    b'{"text": "' + b"8" * 5000 + b'"}',
]
BAD_LINES = [
    b"not json",
    b'{"text": 5}',
    b'{"text": null}',
    b'{"text": 2.5}',
    b'{"text": true}',
    b'{"text": {"text": "nested"}}',
    b'{"text": ["a"]}',
    b'{"txt": "no field"}',
    b"[1, 2]",
    b'"a string"',
    b'{"text": "ab\\ud83dcd"}',
    b'{"text": "\\ude00"}',
    b'{"text": "\\ud83d\\u0041"}',
    b'{"text": "ok", "text": 1}',
    b'{"text": "\xff\xfe"}',
    b'\xef\xbb\xbf{"text": "a BOM"}',
    b'{"text": "a"} trailing',
    b'{"text": "a",}',
    b'{"text": "tab\tinside"}',
    b'{"text": "a", "n": ' + b"9" * 5000 + b"}",
]
BLANK_LINES = [b"", b"  ", b"\t", b"\x0b\x0c", b"\r"]


@pytest.fixture(scope="module")
def tokenizer():
    return open_tokenizer("gpt2", cache_size=4 << 20)


def random_text(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 40)))


def random_record(rng: random.Random) -> bytes:
    """A good record: its text, other fields of every JSON kind, keys in any order, any escaping."""
    fields = {"text": random_text(rng)}
    extra = [("id", rng.randrange(-(10**20), 10**20)), ("score", rng.random() * 1e300), ("none", None)]
    extra += [("meta", {"url": random_text(rng), "tags": [1, "x", {"y": [None, True, 2.5e-8]}]}), ("ok", False)]
    for key, value in rng.sample(extra, rng.randrange(0, len(extra) + 1)):
        fields[key] = value
    items = list(fields.items())
    rng.shuffle(items)
    separators = rng.choice([(",", ":"), (", ", ": "), (" ,\t", " :  ")])
    line = json.dumps(dict(items), ensure_ascii=rng.random() < 0.5, separators=separators).encode("utf-8")
    return b" " * rng.randrange(2) + line + b"\t" * rng.randrange(2)


def fuzzed_lines(seed: int, count: int, bad: bool) -> bytes:
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.05:
            line = rng.choice(BLANK_LINES)
        elif roll < 0.1:
            line = rng.choice(ODD_LINES)
        elif roll < 0.15 and bad:
            line = rng.choice(BAD_LINES)
        else:
            line = random_record(rng)
        lines.append(line + (b"\r" if rng.random() < 0.2 else b""))
    return b"\n".join(lines) + (b"\n" if rng.random() < 0.5 else b"")


def python_path(tokenizer, path: Path, options: RecordOptions) -> list[list[int]]:
    texts = list(jsonl_texts(path, options))
    ids, offsets = tokenizer.encode_batch_to_numpy(texts, 2) if texts else ([], [0])
    return [ids[start:end].tolist() for start, end in zip(offsets[:-1], offsets[1:])]


def core_path(tokenizer, path: Path, options: RecordOptions, threads=2, block_bytes=None) -> tuple[list, int]:
    documents, text_bytes = [], 0
    for ids, offsets, count in jsonl_batches(tokenizer, path, options, threads, block_bytes):
        documents += [ids[start:end].tolist() for start, end in zip(offsets[:-1], offsets[1:])]
        text_bytes += count
    return documents, text_bytes


@pytest.mark.parametrize("seed", range(4))
def test_fuzzed_records_give_the_python_paths_documents_and_skipped_records(tokenizer, tmp_path, seed):
    path = tmp_path / "fuzzed.jsonl"
    path.write_bytes(fuzzed_lines(seed, 600, bad=True))
    expected_options = RecordOptions(skip_bad_records=True)
    expected = python_path(tokenizer, path, expected_options)
    assert len(expected_options.skipped) > 10 and len(expected) > 400
    texts = list(jsonl_texts(path, RecordOptions(skip_bad_records=True)))
    assert len(list(tokenizer._core.encode_jsonl(str(path), "text", 2, 4096))) > 5, "many blocks"
    for threads, block_bytes in [(1, 1), (2, 97), (2, 4096), (2, None)]:
        options = RecordOptions(skip_bad_records=True)
        got, text_bytes = core_path(tokenizer, path, options, threads, block_bytes)
        assert got == expected, (threads, block_bytes)
        assert options.skipped == expected_options.skipped, (threads, block_bytes)
        assert text_bytes == sum(len(text.encode("utf-8")) for text in texts)


TOO_DEEP = b'{"text": "a", "deep": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"  # Python's RecursionError


MUTATIONS = [*b'{}[]",:\\/ \t\r0123456789.-+eEuUdDaAfF', *b"NaInfinitytruefalsenull", 0x00, 0x1F, 0x7F, 0xC3, 0xFF]


def mutated(line: bytes, rng: random.Random) -> bytes:
    """`line` with a few bytes deleted, replaced or inserted, mostly ones that matter to JSON."""
    data = bytearray(line)
    for _ in range(rng.randrange(1, 4)):
        at = rng.randrange(len(data) + 1)
        roll = rng.random()
        if roll < 0.3 and at < len(data):
            del data[at]
        elif roll < 0.6 and at < len(data):
            data[at] = rng.choice(MUTATIONS)
        else:
            data[at:at] = bytes([rng.choice(MUTATIONS)])
    return bytes(data).replace(b"\n", b"")


@pytest.mark.parametrize("seed", range(3))
def test_mutated_records_are_read_or_refused_as_python_does(tokenizer, tmp_path, seed):
    """serde_json is never looser than Python's json: every line it takes, Python takes with the same text."""
    rng = random.Random(100 + seed)
    lines = [mutated(random_record(rng), rng) if rng.random() < 0.7 else random_record(rng) for _ in range(3000)]
    path = tmp_path / "mutated.jsonl"
    path.write_bytes(b"\n".join(lines))
    expected_options, options = RecordOptions(skip_bad_records=True), RecordOptions(skip_bad_records=True)
    expected = python_path(tokenizer, path, expected_options)
    assert core_path(tokenizer, path, options, block_bytes=5000)[0] == expected
    assert options.skipped == expected_options.skipped
    assert len(expected) > 1000 and len(expected_options.skipped) > 500


@pytest.mark.parametrize("bad", [*BAD_LINES, TOO_DEEP])
def test_a_bad_record_raises_the_python_paths_error(tokenizer, tmp_path, bad):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(fuzzed_lines(7, 30, bad=False) + b"\n" + bad + b"\n" + fuzzed_lines(8, 30, bad=False))
    with pytest.raises((ValueError, RecursionError)) as python_error:
        python_path(tokenizer, path, RecordOptions())
    with pytest.raises((ValueError, RecursionError)) as core_error:
        core_path(tokenizer, path, RecordOptions(), block_bytes=64)
    assert type(core_error.value) is type(python_error.value)
    assert str(core_error.value) == str(python_error.value)
    if isinstance(python_error.value, ValueError):
        assert f"{path}:" in str(core_error.value) and "--skip-bad-records" in str(core_error.value)


def test_the_field_is_the_one_asked_for(tokenizer, tmp_path):
    path = tmp_path / "fields.jsonl"
    path.write_text('{"text": "not this", "body": "this one"}\n{"b\\u006fdy": "escaped key"}\n', encoding="utf-8")
    options = RecordOptions(text_field="body")
    assert core_path(tokenizer, path, options)[0] == python_path(tokenizer, path, RecordOptions(text_field="body"))
    assert [tokenizer.decode(ids) for ids in core_path(tokenizer, path, options)[0]] == ["this one", "escaped key"]


@pytest.mark.parametrize("kind", ["gz", "xz", "zst"])
def test_compressed_files_give_the_plain_files_documents(tokenizer, tmp_path, kind):
    data = fuzzed_lines(11, 400, bad=False)
    if kind == "zst":
        zstandard = pytest.importorskip("zstandard", reason="writing a .zst test file needs the zstandard package")
        packed = zstandard.ZstdCompressor().compress(data)
    else:
        packed = gzip.compress(data) if kind == "gz" else lzma.compress(data)
    (tmp_path / "plain.jsonl").write_bytes(data)
    (tmp_path / f"packed.jsonl.{kind}").write_bytes(packed)
    plain = python_path(tokenizer, tmp_path / "plain.jsonl", RecordOptions())
    assert core_path(tokenizer, tmp_path / f"packed.jsonl.{kind}", RecordOptions(), block_bytes=1000)[0] == plain
    (tmp_path / f"cut.jsonl.{kind}").write_bytes(packed[: len(packed) // 2])
    with pytest.raises(OSError, match=f"cut.jsonl.{kind}"):
        core_path(tokenizer, tmp_path / f"cut.jsonl.{kind}", RecordOptions())


@pytest.mark.parametrize("fmt", ["npy", "megatron"])
def test_encode_writes_the_python_paths_files(tokenizer, tmp_path, monkeypatch, fmt):
    (tmp_path / "a.jsonl").write_bytes(fuzzed_lines(21, 500, bad=True))
    (tmp_path / "b.txt").write_text("a text file between record files", encoding="utf-8")
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(fuzzed_lines(22, 300, bad=True)))
    inputs = [tmp_path / "a.jsonl", tmp_path / "b.txt", tmp_path / "c.jsonl.gz"]

    def encode(output: Path) -> tuple[bytes, list[str]]:
        output.parent.mkdir()
        records = RecordOptions(skip_bad_records=True)
        separator = tokenizer.token_to_id(EOT)
        with pytest.warns(UserWarning, match="skipped"):
            encode_files(tokenizer, inputs, output, dtype="uint16", records=records, separator=separator,
                         format=fmt, progress=False)  # fmt: skip
        files = sorted(output.parent.glob(output.name + "*"))
        return b"".join(path.read_bytes() for path in files), records.skipped

    assert core_reads_jsonl(tokenizer, RecordOptions())
    core = encode(tmp_path / "core" / f"out.{fmt}")
    monkeypatch.setattr(bpeforge.encode_files, "core_reads_jsonl", lambda tokenizer, records: False)
    python = encode(tmp_path / "python" / f"out.{fmt}")
    assert core == python
    assert len(core[0]) > 10_000 and len(core[1]) > 20


def test_pipelines_and_fields_without_utf8_keep_the_python_path(tokenizer):
    assert not core_reads_jsonl(tokenizer, RecordOptions(text_field="\ud83d"))

    class Pipeline:
        runs_pipeline = True
        _core = tokenizer._core

    assert not core_reads_jsonl(Pipeline(), RecordOptions())


def test_ctrl_c_stops_an_encode_of_json_lines_at_once_and_leaves_nothing(tmp_path):
    block = fuzzed_lines(31, 3000, bad=False) + b"\n"
    (tmp_path / "big.jsonl").write_bytes(block * (100_000_000 // len(block)))
    before = sorted(tmp_path.iterdir())
    command = [sys.executable, "-m", "bpeforge", "encode", str(tmp_path / "big.jsonl"), "--tokenizer", "gpt2"]
    command += ["--format", "megatron", "-o", str(tmp_path / "out")]
    environment = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=environment) as process:
        seen = ""
        while "tokens/s" not in seen:  # a progress line with a rate: blocks are being encoded
            char = process.stderr.read(1)
            assert char, f"ended before encoding showed: {seen}"
            seen += char
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        stderr = seen + process.stderr.read()
        process.wait(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr
    assert time.monotonic() - sent < 3.0
    assert sorted(tmp_path.iterdir()) == before, "no output, no temporary file"
