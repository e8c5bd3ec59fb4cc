"""bpeforge.ray on a real multi-node cluster: Ray's own `ray.cluster_utils.Cluster`, a head node that runs no
tasks and two worker nodes, each its own raylet and object store, as on separate machines.

Counting then training, and encoding to Megatron's files, give the single machine's results; a worker node
removed mid-encode costs only the shards it held (Ray runs them again on the node that is left), the shards
finished before stay as written, and a re-run resumes every one of them; the driver's memory stays bounded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the Ray tests need Ray: pip install '.[test]'")
psutil = pytest.importorskip("psutil", reason="measuring the driver's memory needs psutil (a dependency of Ray)")

import bpeforge  # noqa: E402
import bpeforge.ray as bray  # noqa: E402
from bpeforge.encode_files import encode_files  # noqa: E402
from bpeforge.formats import token_files  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402
from ray_runs import random_words, trained_tokenizer  # noqa: E402

pytestmark = pytest.mark.ray
EOT = "<|endoftext|>"
WORDS = ["the", "cat", "sat", "naïve", "日本語", "Ωμέγα", "don't", "  ", "\n", "42", "1999", "é"]
SHARD_BYTES = 32 << 10
# The driver only plans, waits and copies shards into the stack's files a block at a time. Ray's own driver
# (its import, its core worker) peaks at about 210 MiB on a 2-core machine; the limit is generous above that.
DRIVER_RSS_LIMIT = 400 << 20


@pytest.fixture(scope="module")
def nodes():
    """A head node without CPUs for tasks and two 1-CPU worker nodes; this process is the driver.

    Another test module's connection to its own cluster is closed first: a process joins one cluster."""
    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        workers = [cluster.add_node(num_cpus=1) for _ in range(2)]
        cluster.wait_for_nodes()
        bray.connect(cluster.address)
        assert sum(node["Alive"] for node in ray.nodes()) == 3
        yield cluster, workers
    finally:
        ray.shutdown()
        cluster.shutdown()


def _text(seed: int, words: int) -> str:
    return random_words(seed, words, WORDS, EOT, 0.005)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[Path]:
    """Many documents, the first one long enough for several shards."""
    root = tmp_path_factory.mktemp("corpus")
    paths = [root / f"{i:02d}.txt" for i in range(16)]
    for i, path in enumerate(paths):
        path.write_text(_text(i, 60_000 if i == 0 else 15_000), encoding="utf-8")
    return paths


@pytest.fixture(scope="module")
def tokenizer(corpus):
    return trained_tokenizer(corpus, 500, EOT)


def test_count_then_train_equals_one_machine(nodes, corpus):
    cluster, _ = nodes
    counts = bray.count(corpus, [EOT], address=cluster.address, shard_bytes=SHARD_BYTES)
    single = bpeforge.count(corpus, [EOT])
    assert counts.items() == single.items() and counts.bytes_counted == single.bytes_counted
    assert bpeforge.train_from_counts(counts, 600).merges == bpeforge.train(corpus, 600, [EOT]).merges


def test_encode_to_megatron_equals_one_machine(nodes, corpus, tokenizer, tmp_path):
    cluster, _ = nodes
    output = tmp_path / "cluster" / "corpus"
    result = bray.encode(corpus, tokenizer, tmp_path / "job", address=cluster.address, shard_bytes=SHARD_BYTES,
                         format="megatron", output=output)  # fmt: skip
    assert result.shards > len(corpus)
    single = tmp_path / "single" / "corpus"
    dtype = token_files.choose_dtype("megatron", tokenizer.vocab_size, None)
    encode_files(tokenizer, corpus, single, dtype=dtype, format="megatron", progress=False)
    assert _megatron_files(output) == _megatron_files(single)


def test_a_node_removed_mid_encode_costs_only_its_shards(nodes, corpus, tokenizer, tmp_path):
    cluster, workers = nodes
    tokenizer_dir = tmp_path / "tok"
    bpeforge.save(tokenizer.vocab, tokenizer.merges, tokenizer_dir, special_tokens=[EOT])
    job = tmp_path / "job"
    command = [sys.executable, "-m", "bpeforge", "encode", *map(str, corpus), "--tokenizer", str(tokenizer_dir)]
    command += ["--format", "megatron", "-o", str(tmp_path / "cluster" / "corpus"), "--shards-dir", str(job)]
    command += ["--ray", cluster.address, "--shard-mb", str(SHARD_BYTES / 2**20), "--no-progress"]
    driver = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watch = psutil.Process(driver.pid)
    peak_rss = 0
    finished_before: dict[str, tuple[int, int]] = {}
    while driver.poll() is None:
        peak_rss = max(peak_rss, _rss(watch))
        finished = sorted((job / "shards").glob("*.json")) if (job / "shards").exists() else []
        if not finished_before and len(finished) >= 4:
            finished_before = {path.name: _written(path) for path in finished}
            cluster.remove_node(workers[0], allow_graceful=False)
        time.sleep(0.01)
    _, err = driver.communicate()
    assert driver.returncode == 0, err
    planned = json.loads((job / "job.json").read_text())["shards"]
    assert finished_before and len(finished_before) < len(planned), "the node was not removed mid-encode"
    assert _alive_nodes_within(60) == 2  # the cluster marks the node dead once its heartbeats stop
    assert {name: _written(job / "shards" / name) for name in finished_before} == finished_before
    single = tmp_path / "single" / "corpus"
    dtype = token_files.choose_dtype("megatron", tokenizer.vocab_size, None)
    encode_files(tokenizer, corpus, single, dtype=dtype, format="megatron", progress=False)
    assert _megatron_files(tmp_path / "cluster" / "corpus") == _megatron_files(single)
    assert 0 < peak_rss < DRIVER_RSS_LIMIT, f"the driver's peak RSS: {peak_rss >> 20} MiB"

    again = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "already exists" in again.stderr  # the stack's files are not replaced unasked
    for suffix in (".bin", ".idx"):
        (tmp_path / "cluster" / f"corpus{suffix}").unlink()
    again = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert f"in {len(planned)} shards, {len(planned)} already done" in again.stdout
    assert _megatron_files(tmp_path / "cluster" / "corpus") == _megatron_files(single)


def _alive_nodes_within(seconds: float) -> int:
    deadline = time.monotonic() + seconds
    while (alive := sum(node["Alive"] for node in ray.nodes())) > 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    return alive


def _rss(process) -> int:
    try:
        return process.memory_info().rss
    except psutil.NoSuchProcess:  # it ended between poll() and now
        return 0


def _written(path: Path) -> tuple[int, int]:
    """A file's identity as written: a shard written again gets a new inode (renamed into place) and time."""
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns


def _megatron_files(prefix: Path) -> dict[str, bytes]:
    files = {suffix: prefix.with_name(prefix.name + suffix).read_bytes() for suffix in (".bin", ".idx")}
    assert files[".bin"]
    return files
