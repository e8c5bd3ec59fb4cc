"""bpeforge.ray on a real Ray cluster: `ray start --head` on loopback, started here.

Every result is compared with the single-machine path on the same input:
count tables and merges with `bpeforge.count`/`bpeforge.train`, token shards
with `bpeforge encode`'s array. One test kills a worker process in the middle
of its shard; others feed a shard that cannot be read, and an address where
no cluster runs.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the Ray tests need Ray: pip install '.[test]'")

import bpeforge  # noqa: E402
import bpeforge.ray as bray  # noqa: E402
from bpeforge.encode_files import encode_files  # noqa: E402
from ray_runs import free_port, trained_tokenizer  # noqa: E402

pytestmark = pytest.mark.ray
SPECIAL = "<|endoftext|>"
WORDS = ["the", "cat", "sat", "naïve", "日本語", "Ωμέγα", "don't", "it's", "  ", "\n", "\n\n", "42", "1999", "!?", "é"]


def _text(seed: int, words: int) -> str:
    rng = random.Random(seed)
    parts = []
    for _ in range(words):
        parts.append(rng.choice(WORDS))
        parts.append(rng.choice([" ", " ", " ", "", "\n"]))
        if rng.random() < 0.01:
            parts.append(SPECIAL)
    return "".join(parts)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[Path]:
    """Two plain files (big enough for several 64 KiB shards) and a gzipped one."""
    root = tmp_path_factory.mktemp("corpus")
    paths = [root / "a.txt", root / "b.txt", root / "c.txt.gz"]
    paths[0].write_bytes(_text(1, 120_000).encode())
    paths[1].write_bytes(_text(2, 60_000).encode())
    paths[2].write_bytes(gzip.compress(_text(3, 20_000).encode()))
    return paths


@pytest.fixture(scope="module")
def tokenizer(corpus):
    return trained_tokenizer(corpus, 600, SPECIAL)


SHARD = 64 << 10


def test_count_equals_one_machine_and_trains_the_same_merges(cluster, corpus):
    shards = bray.shards.plan_files(corpus, [SPECIAL], "gpt2", SHARD)
    assert len(shards) > 10, "the plain files must be cut into several shards"
    counts = bray.count(corpus, [SPECIAL], address=cluster, shard_bytes=SHARD)
    single = bpeforge.count(corpus, [SPECIAL])
    assert counts.items() == single.items()
    assert counts.bytes_counted == single.bytes_counted
    assert bpeforge.train_from_counts(counts, 700).merges == bpeforge.train(corpus, 700, [SPECIAL]).merges


def test_count_of_a_dataset_equals_counting_its_documents(cluster):
    documents = [_text(seed, 50) for seed in range(300)]
    dataset = ray.data.from_items([{"text": doc, "id": i} for i, doc in enumerate(documents)], override_num_blocks=7)
    counts = bray.count(dataset, [SPECIAL], address=cluster)
    single = bpeforge.Counts([SPECIAL])
    single.add_texts(documents)
    assert counts.items() == single.items()


def test_encode_equals_bpeforge_encode_and_resumes(cluster, corpus, tokenizer, tmp_path):
    text_files = corpus[:2]
    single = tmp_path / "single.npy"
    encode_files(tokenizer, text_files, single, dtype="uint16", progress=False)
    out = tmp_path / "shards"
    result = bray.encode(text_files, tokenizer, out, address=cluster, shard_bytes=SHARD)
    assert result.shards > 10 and result.resumed == 0
    assert np.array_equal(_concatenated(out), np.load(single))
    again = bray.encode(text_files, tokenizer, out, address=cluster, shard_bytes=SHARD)
    assert again.resumed == again.shards and again.tokens == result.tokens
    with pytest.raises(FileExistsError, match="holds another job"):
        bray.encode(text_files, tokenizer, out, address=cluster, shard_bytes=SHARD * 2)


def test_document_offsets_point_after_each_special_token(cluster, corpus, tokenizer, tmp_path):
    out = tmp_path / "shards"
    bray.encode(corpus[:1], tokenizer, out, address=cluster, shard_bytes=SHARD)
    ids = _concatenated(out)
    special_id = tokenizer.token_to_id(SPECIAL)
    expected = np.concatenate([[0], np.flatnonzero(ids == special_id) + 1])
    assert np.array_equal(_document_starts(out), expected)


def test_encode_of_a_dataset_equals_encoding_each_row(cluster, tokenizer, tmp_path):
    documents = [_text(seed, 30) for seed in range(200)]
    dataset = ray.data.from_items([{"text": doc} for doc in documents], override_num_blocks=9)
    out = tmp_path / "rows"
    bray.encode(dataset, tokenizer, out, address=cluster)
    encoded = [tokenizer.encode(doc) for doc in documents]
    assert _concatenated(out).tolist() == [i for ids in encoded for i in ids]
    assert _document_starts(out).tolist() == np.cumsum([0] + [len(ids) for ids in encoded[:-1]]).tolist()


def test_a_tokenizer_json_pipeline_encodes_each_file_and_row_whole(cluster, corpus, tmp_path):
    """A pipeline's text files are whole shards (nothing says where it may cut one); rows are documents."""
    tokenizer = bpeforge.Tokenizer.from_hf(Path(__file__).parent / "data" / "hf" / "roberta-base.json")
    out = tmp_path / "files"
    result = bray.encode(corpus, tokenizer, out, address=cluster, shard_bytes=SHARD)
    assert result.shards == len(corpus)
    texts = [gzip.decompress(p.read_bytes()).decode() if p.suffix == ".gz" else p.read_text() for p in corpus]
    encoded = tokenizer.encode_batch(texts)
    assert encoded[0][0] == tokenizer.token_to_id("<s>")  # the post-processor's, as tokenizers adds it
    assert _concatenated(out).tolist() == [i for ids in encoded for i in ids]
    assert _document_starts(out).tolist() == np.cumsum([0] + [len(ids) for ids in encoded[:-1]]).tolist()
    documents = [_text(seed, 30) for seed in range(40)]
    rows = ray.data.from_items([{"text": doc} for doc in documents], override_num_blocks=3)
    bray.encode(rows, tokenizer, tmp_path / "rows", address=cluster)
    assert _concatenated(tmp_path / "rows").tolist() == [i for ids in tokenizer.encode_batch(documents) for i in ids]


def test_a_worker_killed_mid_shard_is_retried_and_the_output_is_exact(cluster, corpus, tokenizer, tmp_path):
    # A FIFO holds one shard's task inside its read until the worker is killed
    # and Ray's retry opens it again; then the text is written to it.
    fifo = tmp_path / "held.txt"
    os.mkfifo(fifo)
    held_text = _text(9, 5_000).encode()
    inputs = [corpus[0], fifo, corpus[1]]
    killed: list[int] = []
    feeder = threading.Thread(target=_kill_reader_then_feed, args=(fifo, held_text, killed), daemon=True)
    feeder.start()
    out = tmp_path / "shards"
    bray.encode(inputs, tokenizer, out, address=cluster, shard_bytes=SHARD)
    feeder.join(timeout=60)
    assert killed, "no worker was killed: the test did not test a retry"
    plain = tmp_path / "held-plain.txt"
    plain.write_bytes(held_text)
    single = tmp_path / "single.npy"
    encode_files(tokenizer, [corpus[0], plain, corpus[1]], single, dtype="uint16", progress=False)
    assert np.array_equal(_concatenated(out), np.load(single))
    assert not [p for p in (out / "shards").iterdir() if p.name.startswith(".")], "a killed attempt left a file"


def _kill_reader_then_feed(fifo: Path, text: bytes, killed: list[int]) -> None:
    # Held open read-write here, the FIFO opens at once for the task, whose
    # read then waits for data. After the kill, the text goes in once the
    # retried task has the FIFO open (a pipe's data dies with its last reader).
    holder = os.open(fifo, os.O_RDWR)
    try:
        killed.append(_wait_for_reader(fifo, exclude=()))
        os.kill(killed[0], signal.SIGKILL)
        _wait_for_reader(fifo, exclude=killed)
        os.write(holder, text)  # fits the pipe's buffer
    finally:
        os.close(holder)  # the task then reads to the end


def _wait_for_reader(fifo: Path, exclude, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = _process_reading(fifo)
        if pid is not None and pid not in exclude:
            return pid
        time.sleep(0.05)
    raise TimeoutError(f"no task opened {fifo}")


def _process_reading(fifo: Path) -> int | None:
    """The pid of another process that has `fifo` open: the task blocked in its read."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if any(os.readlink(fd) == str(fifo) for fd in (proc / "fd").iterdir()):
                return int(proc.name)
        except OSError:
            continue
    return None


def test_a_shard_that_fails_stops_the_job_naming_it_and_keeps_finished_shards(cluster, corpus, tokenizer, tmp_path):
    broken = tmp_path / "broken.txt.gz"
    broken.write_bytes(gzip.compress(_text(5, 5_000).encode())[:-40])
    inputs = [corpus[0], broken]
    out = tmp_path / "shards"
    with pytest.raises(bray.ShardFailed, match=r"broken\.txt\.gz") as failure:
        bray.encode(inputs, tokenizer, out, address=cluster, shard_bytes=SHARD)
    assert failure.value.shard.source == str(broken)
    assert not (out / "index.json").exists()
    text = corpus[0].read_bytes()
    done = [shard for shard in bray.shards.plan_files([corpus[0]], [SPECIAL], "gpt2", SHARD) if _finished(out, shard)]
    for shard in done:  # each shard written holds exactly the ids of its bytes
        ids = np.load(out / "shards" / f"{shard.index:05d}.npy")
        assert ids.tolist() == tokenizer.encode(text[shard.start : shard.end].decode())
    # Once the input is fixed, a re-run finishes the job, reusing those shards.
    broken.write_bytes(gzip.compress(_text(5, 5_000).encode()))
    result = bray.encode(inputs, tokenizer, out, address=cluster, shard_bytes=SHARD)
    assert result.resumed == len(done)


def test_count_names_the_shard_that_fails(cluster, corpus, tmp_path):
    broken = tmp_path / "broken.txt.gz"
    broken.write_bytes(gzip.compress(b"some text " * 1000)[:-40])
    reason = r"shard 1 \(.*broken\.txt\.gz\) failed: 4 attempts failed; the last: OSError: .*incomplete"
    with pytest.raises(bray.ShardFailed, match=reason):
        bray.count([corpus[1], broken], [SPECIAL], address=cluster, shard_bytes=1 << 30)


def test_cli_count_and_encode_on_the_cluster_match_the_single_machine_files(cluster, corpus, tokenizer, tmp_path):
    tokenizer_dir = tmp_path / "tok"
    bpeforge.save(tokenizer.vocab, tokenizer.merges, tokenizer_dir, special_tokens=[SPECIAL])
    paths = [str(p) for p in corpus]
    cli = [sys.executable, "-m", "bpeforge"]
    _run(
        [
            *cli,
            "count",
            *paths,
            "-o",
            str(tmp_path / "ray.counts"),
            "--ray",
            cluster,
            "--shard-mb",
            "0.0625",
            "--no-progress",
        ]
    )
    _run([*cli, "count", *paths, "-o", str(tmp_path / "one.counts"), "--no-progress"])
    assert (tmp_path / "ray.counts").read_bytes() == (tmp_path / "one.counts").read_bytes()
    encode = [*cli, "encode", *paths[:2], "--tokenizer", str(tokenizer_dir), "--no-progress"]
    _run([*encode, "-o", str(tmp_path / "tokens"), "--ray", cluster, "--shard-mb", "0.0625"])
    _run([*encode, "-o", str(tmp_path / "one.npy")])
    assert np.array_equal(_concatenated(tmp_path / "tokens"), np.load(tmp_path / "one.npy"))


def test_an_unreachable_cluster_is_named_within_30_seconds(tmp_path, corpus):
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    started = time.monotonic()
    cli = [sys.executable, "-m", "bpeforge", "count", str(corpus[0]), "-o", str(tmp_path / "c"), "--ray", address]
    done = subprocess.run(cli, capture_output=True, text=True, timeout=60)
    assert time.monotonic() - started < 30
    assert done.returncode == 2
    assert f"no Ray cluster answers at {address}" in done.stderr
    assert not (tmp_path / "c").exists()


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def _finished(out: Path, shard) -> bool:
    return (out / "shards" / f"{shard.index:05d}.json").exists()


def _concatenated(out: Path) -> np.ndarray:
    index = bray.read_index(out)
    arrays = [np.load(out / entry["tokens"]) for entry in index["shards"]]
    assert sum(len(a) for a in arrays) == index["num_tokens"]
    return np.concatenate(arrays)


def _document_starts(out: Path) -> np.ndarray:
    index = bray.read_index(out)
    starts, offset = [], 0
    for entry in index["shards"]:
        starts.append(np.load(out / entry["documents"]).astype(np.int64) + offset)
        offset += entry["num_tokens"]
    return np.concatenate(starts)


def test_skipped_records_are_reported_like_on_one_machine(cluster, tmp_path):
    records = tmp_path / "docs.jsonl"
    lines = [json.dumps({"text": _text(seed, 40)}) for seed in range(30)]
    lines[7] = "{not json"
    records.write_text("\n".join(lines) + "\n")
    with pytest.warns(UserWarning, match=r"skipped 1 bad records; the first: .*docs\.jsonl:8") as on_ray:
        counts = bray.count([records], [SPECIAL], address=cluster, skip_bad_records=True)
    with pytest.warns(UserWarning, match=r"skipped 1 bad records") as on_one:
        single = bpeforge.count([records], [SPECIAL], skip_bad_records=True)
    assert counts.items() == single.items()
    assert str(on_ray[0].message) == str(on_one[0].message)


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--threads", "2", "--ray"], "--threads does not apply with --ray"), (["--shard-mb", "1"], "only with --ray")],
)
def test_cli_refuses_options_that_do_not_apply(corpus, tmp_path, extra, message):
    command = [sys.executable, "-m", "bpeforge", "count", str(corpus[0]), "-o", str(tmp_path / "c"), *extra]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and message in done.stderr


def test_a_rerun_after_an_input_changed_redoes_its_shards_and_says_so(cluster, corpus, tokenizer, tmp_path):
    grows, same = tmp_path / "grows.txt", tmp_path / "same.txt"
    grows.write_text(_text(7, 500))
    same.write_bytes(corpus[1].read_bytes())
    out = tmp_path / "tokens"
    first = bray.encode([grows, same], tokenizer, out, address=cluster, shard_bytes=SHARD)
    assert first.changed_inputs == () and first.resumed == 0
    with open(grows, "a") as f:  # one shard before and after: the plan's ranges alone cannot tell
        f.write(_text(8, 300))
    again = bray.encode([grows, same], tokenizer, out, address=cluster, shard_bytes=SHARD)
    assert again.changed_inputs == (str(grows),)
    assert again.resumed == again.shards - 1  # the other input's shards are kept
    expected = tokenizer.encode(grows.read_text()) + tokenizer.encode(same.read_text())
    assert _concatenated(out).tolist() == expected
    os.utime(grows, ns=(0, 12345))  # the same bytes, another time: redone too
    tokenizer_dir = tmp_path / "tok"
    bpeforge.save(tokenizer.vocab, tokenizer.merges, tokenizer_dir, special_tokens=[SPECIAL])
    cli = [sys.executable, "-m", "bpeforge", "encode", str(grows), str(same), "--tokenizer", str(tokenizer_dir)]
    done = subprocess.run(
        [*cli, "-o", str(out), "--ray", cluster, "--shard-mb", "0.0625", "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (
        f"note: 1 input(s) changed since the earlier run (size or modification time), their shards encoded "
        f"again: {grows}" in done.stdout
    )
    assert _concatenated(out).tolist() == expected
