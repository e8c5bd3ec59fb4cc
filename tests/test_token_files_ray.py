"""`bpeforge.ray.encode(..., format=...)` on a real Ray cluster (`ray start --head` on loopback): the token
files equal, byte for byte, those `encode_files` writes on one machine from the same documents, though the
job cut a text file into several shards."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the Ray tests need Ray: pip install '.[test]'")

import bpeforge  # noqa: E402
import bpeforge.ray as bray  # noqa: E402
from bpeforge.encode_files import encode_files  # noqa: E402
from bpeforge.formats import token_files  # noqa: E402
from ray_runs import random_words, trained_tokenizer  # noqa: E402

pytestmark = pytest.mark.ray
EOT = "<|endoftext|>"
WORDS = ["the", "cat", "sat", "naïve", "日本語", "don't", "  ", "\n", "42", "é"]
SHARD_BYTES = 64 << 10


def _text(seed: int, words: int) -> str:
    return random_words(seed, words, WORDS, EOT, 0.01)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[Path]:
    """A file cut into several shards, a small one and a gzipped one."""
    root = tmp_path_factory.mktemp("corpus")
    paths = [root / "a.txt", root / "b.txt", root / "c.txt.gz"]
    paths[0].write_text(_text(1, 100_000), encoding="utf-8")
    paths[1].write_text(_text(2, 300), encoding="utf-8")
    paths[2].write_bytes(gzip.compress(_text(3, 5_000).encode()))
    return paths


@pytest.fixture(scope="module")
def tokenizer(corpus):
    return trained_tokenizer(corpus, 400, EOT)


def _files(path: Path) -> dict[str, bytes]:
    if path.is_dir():
        return {p.name: p.read_bytes() for p in sorted(path.iterdir())}
    return {p.name[len(path.name) :]: p.read_bytes() for p in sorted(path.parent.glob(path.name + ".*"))}


@pytest.mark.parametrize(("format", "shard_tokens"), [("megatron", None), ("llmc", 5000), ("datatrove", 5000)])
def test_files_equal_one_machine(cluster, corpus, tokenizer, tmp_path, format, shard_tokens):
    assert len(bray.shards.plan_files(corpus, [EOT], tokenizer.pattern, SHARD_BYTES)) > 3
    output = tmp_path / "cluster" / "tokens"
    result = bray.encode(
        corpus, tokenizer, tmp_path / "job", address=cluster, shard_bytes=SHARD_BYTES, format=format,
        output=output, shard_tokens=shard_tokens,
    )  # fmt: skip
    assert result.output == output
    dtype = token_files.choose_dtype(format, tokenizer.vocab_size, None)
    single = tmp_path / "single" / "tokens"
    encode_files(tokenizer, corpus, single, dtype=dtype, format=format, shard_tokens=shard_tokens, progress=False)
    assert _files(output) == _files(single) and _files(output)


def test_dataset_rows_are_documents(cluster, tokenizer, tmp_path):
    texts = ["", *(_text(seed, seed * 40) for seed in range(1, 60)), ""]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    dataset = ray.data.from_items([{"text": t} for t in texts]).repartition(4)
    output = tmp_path / "from_rows"
    bray.encode(dataset, tokenizer, tmp_path / "job", address=cluster, format="megatron", output=output,
                separator=tokenizer.token_to_id(EOT))  # fmt: skip
    single = tmp_path / "single"
    encode_files(tokenizer, [tmp_path / "docs.jsonl"], single, dtype="uint16", format="megatron",
                 separator=tokenizer.token_to_id(EOT), progress=False)  # fmt: skip
    assert _files(output) == _files(single)


def test_cli_ray_format_writes_the_one_machine_files_and_resumes(cluster, corpus, tokenizer, tmp_path):
    tokenizer_dir = tmp_path / "tok"
    bpeforge.save(tokenizer.vocab, tokenizer.merges, tokenizer_dir, special_tokens=[EOT])
    encode = [sys.executable, "-m", "bpeforge", "encode", *map(str, corpus), "--tokenizer", str(tokenizer_dir)]
    encode += ["--format", "megatron", "--no-progress"]
    on_ray = [*encode, "-o", str(tmp_path / "ray" / "corpus"), "--ray", cluster, "--shard-mb", "0.0625"]
    first = subprocess.run(on_ray, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert f"wrote {tmp_path / 'ray' / 'corpus'} (megatron) from {tmp_path / 'ray' / 'corpus.shards'}" in first.stdout
    shards = len(json.loads((tmp_path / "ray" / "corpus.shards" / "index.json").read_text())["shards"])
    assert shards > 3
    single = subprocess.run([*encode, "-o", str(tmp_path / "one" / "corpus")], capture_output=True, text=True)
    assert single.returncode == 0, single.stderr
    assert _megatron_files(tmp_path / "ray") == _megatron_files(tmp_path / "one")
    for suffix in (".bin", ".idx"):  # the stack's files go; the shards stay
        (tmp_path / "ray" / f"corpus{suffix}").unlink()
    moved = tmp_path / "ray" / "job"
    (tmp_path / "ray" / "corpus.shards").rename(moved)
    again = subprocess.run([*on_ray, "--shards-dir", str(moved)], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"in {shards} shards, {shards} already done" in again.stdout
    assert _megatron_files(tmp_path / "ray") == _megatron_files(tmp_path / "one")


def test_cli_shards_dir_needs_ray_and_a_stack_format(corpus, tmp_path):
    command = [sys.executable, "-m", "bpeforge", "encode", str(corpus[1]), "--tokenizer", "gpt2", "-o", str(tmp_path)]
    done = subprocess.run([*command, "--shards-dir", str(tmp_path / "s")], capture_output=True, text=True)
    assert done.returncode == 2 and "--shards-dir applies only with --ray and a --format" in done.stderr
    assert not (tmp_path / "s").exists()


def _megatron_files(folder: Path) -> dict[str, bytes]:
    files = {path.name: path.read_bytes() for path in sorted(folder.glob("corpus.*")) if path.is_file()}
    assert sorted(files) == ["corpus.bin", "corpus.idx"]
    return files
