"""Every input shape gives the merges of the same documents in one plain file."""

from __future__ import annotations

import gzip
import json
import lzma
import random
import subprocess
import sys
from pathlib import Path

import bpeforge
import pytest

SPECIAL = "<|endoftext|>"
VOCAB = 500


def documents(seed: int = 0, count: int = 120) -> list[str]:
    rng = random.Random(seed)
    words = ["low", "lower", "newest", "widest", "the", "cat", "don't", "1984", "naïve", "日本語", "🙂", "\n", "  "]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(2, 40))) for _ in range(count)]


def reference(tmp_path: Path, docs: list[str]) -> tuple[dict, list]:
    """The documents in one plain file, separated by the special token."""
    plain = tmp_path / "reference.txt"
    plain.write_bytes(SPECIAL.join(docs).encode("utf-8"))
    return bpeforge.train_bpe(plain, VOCAB, [SPECIAL])


def trained(inputs, **kwargs) -> tuple[dict, list]:
    result = bpeforge.train(inputs, VOCAB, [SPECIAL], **kwargs)
    return result.vocab, result.merges


def compress(kind: str, data: bytes) -> bytes:
    if kind == "gz":
        return gzip.compress(data)
    if kind == "xz":
        return lzma.compress(data)
    zstandard = pytest.importorskip("zstandard", reason="writing a .zst test file needs the zstandard package")
    return zstandard.ZstdCompressor().compress(data)


@pytest.mark.parametrize("kind", ["gz", "xz", "zst"])
def test_compressed_text_equals_plain_text(tmp_path, kind):
    docs = documents(1)
    path = tmp_path / f"corpus.txt.{kind}"
    path.write_bytes(compress(kind, SPECIAL.join(docs).encode()))
    assert trained(path) == reference(tmp_path, docs)


@pytest.mark.parametrize("kind", ["gz", "xz", "zst"])
def test_truncated_compressed_input_is_an_error_naming_the_file(tmp_path, kind):
    data = compress(kind, SPECIAL.join(documents(2, 2000)).encode())
    path = tmp_path / f"cut.txt.{kind}"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(OSError, match=r"cut\.txt\." + kind):
        bpeforge.train(path, VOCAB, [SPECIAL])


def test_unsupported_compression_lists_the_supported_ones(tmp_path):
    path = tmp_path / "corpus.txt.bz2"
    path.write_bytes(b"BZh9")
    with pytest.raises(ValueError, match=r"bzip2 is not supported; inputs may be plain UTF-8 text, \.gz, \.xz, \.zst"):
        bpeforge.train(path, VOCAB, [SPECIAL])


def test_directory_recursive_with_glob(tmp_path):
    docs = documents(3, 30)
    root = tmp_path / "corpus"
    for i, doc in enumerate(docs):
        sub = root / f"part{i % 3}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"{i:03d}.txt").write_text(doc, encoding="utf-8")
    (root / "part0" / "notes.md").write_text("not part of the corpus")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "x.txt").write_text("hidden files are left out")
    # Files are read in sorted path order; each ends a document.
    order = sorted((root / f"part{i % 3}" / f"{i:03d}.txt", doc) for i, doc in enumerate(docs))
    assert trained(root, glob="*.txt") == reference(tmp_path, [doc for _, doc in order])


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".ndjson.xz", ".jsonl.zst"])
def test_json_lines_records_are_documents(tmp_path, suffix):
    docs = documents(4)
    lines = "".join(json.dumps({"id": i, "body": doc}) + "\n" for i, doc in enumerate(docs)).encode()
    path = tmp_path / f"records{suffix}"
    path.write_bytes(lines if suffix == ".jsonl" else compress(suffix.rsplit(".", 1)[1], lines))
    assert trained(path, text_field="body") == reference(tmp_path, docs)


def test_bad_json_lines_record_names_file_and_line_or_is_skipped(tmp_path):
    docs = documents(5, 10)
    lines = [json.dumps({"text": doc}) for doc in docs]
    lines[3] = "{not json"
    lines[6] = json.dumps({"title": "no text field"})
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.jsonl:4: not JSON .*--skip-bad-records"):
        bpeforge.train(path, VOCAB, [SPECIAL])
    result = bpeforge.train(path, VOCAB, [SPECIAL], skip_bad_records=True)
    assert [Path(where.split(": ")[0]).name for where in result.stats.skipped_records] == ["bad.jsonl:4", "bad.jsonl:7"]
    good = [doc for i, doc in enumerate(docs) if i not in (3, 6)]
    assert (result.vocab, result.merges) == reference(tmp_path, good)


def test_parquet_rows_are_documents(tmp_path):
    pa = pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (pip install 'bpeforge[parquet]')")
    import pyarrow.parquet as pq

    docs = documents(6)
    pq.write_table(pa.table({"id": list(range(len(docs))), "content": docs}), tmp_path / "rows.parquet")
    assert trained(tmp_path / "rows.parquet", text_column="content") == reference(tmp_path, docs)
    with pytest.raises(ValueError, match=r"no column 'text' .*--text-column"):
        bpeforge.train(tmp_path / "rows.parquet", VOCAB, [SPECIAL])


def test_train_from_iterator_equals_the_plain_file(tmp_path):
    docs = documents(7)
    result = bpeforge.train_from_iterator(iter(docs), VOCAB, [SPECIAL])
    assert (result.vocab, result.merges) == reference(tmp_path, docs)


def test_mixed_inputs_are_one_corpus(tmp_path):
    docs = documents(8)
    (tmp_path / "a.txt").write_text(SPECIAL.join(docs[:40]), encoding="utf-8")
    (tmp_path / "b.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs[40:]), encoding="utf-8")
    assert trained([tmp_path / "a.txt", tmp_path / "b.jsonl"]) == reference(tmp_path, docs)


def test_cli_trains_on_a_directory_of_json_lines(tmp_path):
    docs = documents(9)
    (tmp_path / "data").mkdir()
    for part in range(2):
        chunk = docs[part::2]
        (tmp_path / "data" / f"{part}.jsonl.gz").write_bytes(
            gzip.compress("".join(json.dumps({"text": d}) + "\n" for d in chunk).encode())
        )
    cmd = [sys.executable, "-m", "bpeforge", "train", str(tmp_path / "data"), "--glob", "*.jsonl.gz"]
    cmd += ["--vocab-size", str(VOCAB), "-o", str(tmp_path / "tok"), "--no-progress"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    ordered = docs[0::2] + docs[1::2]  # 0.jsonl.gz, then 1.jsonl.gz
    assert bpeforge.load(tmp_path / "tok") == reference(tmp_path, ordered)
