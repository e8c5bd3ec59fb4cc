"""`bpeforge encode --format ...`: token files read back by the training stacks' own readers.

The oracle is `Tokenizer.encode` of each document (a text file, a JSON Lines record), with the separator
where each stack's preprocessing puts it. Megatron's files are read with megatron-core's `IndexedDataset` and
compared byte for byte with what its `IndexedDatasetBuilder` writes; datatrove's with `DatatroveFolderDataset`
(both skip, saying how to install them, where they are missing: `tests/stack_readers.py`); llm.c's shards
are checked as its loaders check them, nanoGPT's and OLMo's files with `np.memmap`. Every format is also
parsed here by the layout its stack documents, so the formats are checked without the stacks too.
"""

from __future__ import annotations

import gzip
import json
import random
import struct
import subprocess
import sys
from pathlib import Path

import bpeforge
import numpy as np
import pytest
from bpeforge import Tokenizer
from bpeforge.encode_files import encode_files, list_inputs
from bpeforge.formats import token_files
from bpeforge.formats.atomic import UnsafeOutputError

sys.path.insert(0, str(Path(__file__).parent))
from cli_runs import run_cli, train_with_cli
from stack_readers import datatrove_folder_dataset, megatron_indexed_dataset

EOT = "<|endoftext|>"
WORDS = ["low", "lower", "newest", "widest", "the", "cat", "don't", "1984", "naïve", "日本語", "😀", "Straße", "\n"]
SHARD = 1000  # ids a shard: the long file and the long record are each longer than one


def words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count))


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tokenizer")
    (root / "corpus.txt").write_text(words(random.Random(0), 20_000), encoding="utf-8")
    return train_with_cli(root, root / "corpus.txt", "--vocab-size", "350", "--special-token", EOT)


@pytest.fixture(scope="module")
def tokenizer(tokenizer_dir) -> Tokenizer:
    return Tokenizer.load(tokenizer_dir)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> list[Path]:
    """A directory (a long file, an empty one, a gzipped one and Parquet records in a subdirectory), JSON
    Lines with empty and long records, and a text file."""
    rng = random.Random(1)
    root = tmp_path_factory.mktemp("corpus")
    folder = root / "folder"
    (folder / "sub").mkdir(parents=True)
    (folder / "long.txt").write_text(words(rng, 4000), encoding="utf-8")
    (folder / "empty.txt").write_text("", encoding="utf-8")
    (folder / "sub" / "short.txt").write_text(f"the cat {EOT} naïve", encoding="utf-8")
    (folder / "sub" / "zipped.txt.gz").write_bytes(gzip.compress(words(rng, 300).encode()))
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:  # the test extras have it; without it the other inputs are still checked
        pass
    else:
        table = pyarrow.table({"text": [words(rng, 20), "", words(rng, 1500)]})
        pyarrow.parquet.write_table(table, folder / "sub" / "records.parquet")
    records = ["", words(rng, 30), "", words(rng, 2500), "x", ""]
    with open(root / "docs.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"text": text}) + "\n" for text in records)
    (root / "last.txt").write_text(words(rng, 200), encoding="utf-8")
    return [folder, root / "docs.jsonl", root / "last.txt"]


@pytest.fixture(scope="module")
def documents(tokenizer, inputs) -> list[list[int]]:
    """Each document's ids, in input order."""
    found = []
    for path in list_inputs(inputs):
        if path.suffix == ".jsonl":
            lines = path.read_text(encoding="utf-8").splitlines()
            found += [tokenizer.encode(json.loads(line)["text"]) for line in lines]
        elif path.suffix == ".parquet":
            import pyarrow.parquet

            found += [tokenizer.encode(text) for text in pyarrow.parquet.read_table(path)["text"].to_pylist()]
        elif path.suffix == ".gz":
            found.append(tokenizer.encode(gzip.decompress(path.read_bytes()).decode("utf-8")))
        else:
            found.append(tokenizer.encode(path.read_text(encoding="utf-8")))
    assert any(len(ids) > SHARD for ids in found) and [] in found
    return found


def encode(tokenizer, inputs, format, output, **options) -> bpeforge.EncodeStats:
    dtype = token_files.choose_dtype(format, tokenizer.vocab_size, options.pop("dtype", None))
    return encode_files(tokenizer, inputs, output, dtype=dtype, format=format, progress=False, **options)


def flat(documents: list[list[int]]) -> list[int]:
    return [i for ids in documents for i in ids]


# Megatron


def read_megatron_index(path: Path) -> dict:
    """`PREFIX.idx` parsed by the layout of megatron/core/datasets/indexed_dataset.py."""
    data = path.read_bytes()
    assert data[:9] == b"MMIDIDX\x00\x00"
    version, code, sequences, documents = struct.unpack_from("<QBQQ", data, 9)
    at = 9 + 8 + 1 + 8 + 8
    lengths = np.frombuffer(data, "<i4", sequences, at)
    pointers = np.frombuffer(data, "<i8", sequences, at + 4 * sequences)
    ends = np.frombuffer(data, "<i8", documents, at + 12 * sequences)
    assert at + 12 * sequences + 8 * documents == len(data)
    return {"version": version, "code": code, "lengths": lengths, "pointers": pointers, "document_ends": ends}


def megatron_expected(documents, eot):
    """What preprocess_data.py --append-eod writes: each non-empty document one sequence ending with EOD."""
    sequences = [[*ids, eot] for ids in documents if ids]
    ends = np.cumsum([0] + [1 if ids else 0 for ids in documents])
    return sequences, ends


def test_megatron_files_have_the_documented_layout(tokenizer, inputs, documents, tmp_path):
    eot = tokenizer.token_to_id(EOT)
    stats = encode(tokenizer, inputs, "megatron", tmp_path / "out" / "corpus", separator=eot)
    index = read_megatron_index(tmp_path / "out" / "corpus.idx")
    sequences, ends = megatron_expected(documents, eot)
    assert (index["version"], index["code"]) == (1, 8)  # uint16 below 65,500 tokens
    assert index["lengths"].tolist() == [len(ids) for ids in sequences]
    assert index["pointers"].tolist() == (2 * np.cumsum([0] + [len(ids) for ids in sequences])[:-1]).tolist()
    assert index["document_ends"].tolist() == ends.tolist()
    ids = np.fromfile(tmp_path / "out" / "corpus.bin", dtype="<u2")
    assert ids.tolist() == flat(sequences) and stats.tokens == len(ids)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["corpus.bin", "corpus.idx"]


@pytest.fixture(scope="module")
def megatron():
    module = megatron_indexed_dataset()
    if module is None:
        pytest.skip("megatron-core is not installed: pip install --no-deps megatron-core")
    return module


@pytest.mark.parametrize("dtype", [None, "int32"])
def test_megatron_reads_the_ids_and_its_builder_writes_the_same_bytes(
    megatron, tokenizer, inputs, documents, tmp_path, dtype
):
    eot = tokenizer.token_to_id(EOT)
    prefix = tmp_path / "ours"
    encode(tokenizer, inputs, "megatron", prefix, separator=eot, dtype=dtype)
    dataset = megatron.IndexedDataset(str(prefix))
    sequences, ends = megatron_expected(documents, eot)
    assert [dataset[i].tolist() for i in range(len(dataset))] == sequences
    assert dataset.document_indices.tolist() == ends.tolist()
    # The same documents through Megatron's own writer, as preprocess_data.py feeds it.
    builder = megatron.IndexedDatasetBuilder(str(tmp_path / "theirs.bin"), dtype=np.int32 if dtype else np.uint16)
    for ids in documents:
        builder.add_document([*ids, eot] if ids else [], [len(ids) + 1] if ids else [])
    builder.finalize(str(tmp_path / "theirs.idx"))
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"ours{suffix}").read_bytes() == (tmp_path / f"theirs{suffix}").read_bytes()


def test_megatron_without_append_eod_has_no_separator(megatron, tokenizer, inputs, documents, tmp_path):
    encode(tokenizer, inputs, "megatron", tmp_path / "p")
    dataset = megatron.IndexedDataset(str(tmp_path / "p"))
    assert [dataset[i].tolist() for i in range(len(dataset))] == [ids for ids in documents if ids]


def test_the_same_files_for_any_thread_count(tokenizer, inputs, tmp_path):
    for threads in (1, 3):
        encode(tokenizer, inputs, "megatron", tmp_path / f"t{threads}", threads=threads)
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"t1{suffix}").read_bytes() == (tmp_path / f"t3{suffix}").read_bytes()


# datatrove


def datatrove_files(folder: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each `.ds` file's ids and its `.ds.index` document ends, in name order."""
    return [(np.fromfile(path, "<u2"), np.fromfile(f"{path}.index", "<u8")) for path in sorted(folder.glob("*.ds"))]


@pytest.mark.parametrize("shard_tokens", [None, SHARD])
def test_datatrove_files_and_index(tokenizer, inputs, documents, tmp_path, shard_tokens):
    eot = tokenizer.token_to_id(EOT)
    folder = tmp_path / "ds"
    encode(tokenizer, inputs, "datatrove", folder, shard_tokens=shard_tokens)  # EOS by default, as datatrove
    files = datatrove_files(folder)
    with_eos = [[*ids, eot] for ids in documents]
    assert np.concatenate([ids for ids, _ in files]).tolist() == flat(with_eos)
    lengths = [len(ids) for ids in with_eos]
    # Every file's index: cumulative ends of its own documents, the last one its size.
    assert [len(ends) for _, ends in files] and sum(len(ends) for _, ends in files) == len(documents)
    first = 0
    for ids, ends in files:
        mine = lengths[first : first + len(ends)]
        assert ends.tolist() == np.cumsum(mine).tolist() and ends[-1] == len(ids)
        if shard_tokens is not None and first + len(ends) < len(lengths):
            # A file is closed at the first document end past the limit, as max_tokens_per_file splits.
            assert len(ids) > shard_tokens and len(ids) - mine[-1] <= shard_tokens
        first += len(ends)
    if shard_tokens is None:
        assert sorted(p.name for p in folder.iterdir()) == [
            "00000_unshuffled.ds",
            "00000_unshuffled.ds.index",
            "00000_unshuffled.ds.metadata",
        ]
        metadata = (folder / "00000_unshuffled.ds.metadata").read_text().splitlines()
        assert metadata[0].endswith("|2") and int(metadata[1]) == len(flat(with_eos))
    else:
        assert len(files) > 1


def test_datatrove_folder_dataset_reads_the_ids(tokenizer, inputs, documents, tmp_path):
    dataset_type = datatrove_folder_dataset()
    if dataset_type is None:
        pytest.skip("datatrove is not installed: pip install datatrove (with --no-deps: dill, fsspec, loguru, ...)")
    eot = tokenizer.token_to_id(EOT)
    encode(tokenizer, inputs, "datatrove", tmp_path / "ds", shard_tokens=SHARD)
    seq_len = 15  # windows of seq_len + 1 ids, one file after another, a file's last partial window dropped
    dataset = dataset_type(str(tmp_path / "ds"), seq_len=seq_len, token_size=2)
    windows = [dataset[i]["input_ids"].tolist() for i in range(len(dataset))]
    expected = []
    for ids, _ in datatrove_files(tmp_path / "ds"):
        whole = len(ids) // (seq_len + 1) * (seq_len + 1)
        expected += ids[:whole].tolist()
    assert flat(windows) == expected
    with_eos = flat([[*ids, eot] for ids in documents])
    assert len(flat(windows)) > 0.9 * len(with_eos) and flat(windows)[:SHARD] == with_eos[:SHARD]


# llm.c


def read_llmc_shard(path: Path) -> np.ndarray:
    """As llm.c's dataloader and modded-nanogpt's `_load_data_shard` check a shard."""
    header = np.fromfile(path, dtype="<i4", count=256)
    assert header[0] == 20240520, "magic number mismatch in the data .bin file"
    assert header[1] == 1, "unsupported version"
    count = int(header[2])
    assert 0 < count < 2**31 and path.stat().st_size == 256 * 4 + 2 * count
    return np.fromfile(path, dtype="<u2", offset=256 * 4)


def test_llmc_shards(tokenizer_dir, tokenizer, inputs, documents, tmp_path):
    eot = tokenizer.token_to_id(EOT)
    result = run_cli(
        "encode", *inputs, "--tokenizer", tokenizer_dir, "--format", "llmc", "--shard-tokens", SHARD,
        "-o", tmp_path / "shards", "--no-progress",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    names = sorted((tmp_path / "shards").iterdir(), key=lambda path: path.name.split("_")[-1])
    assert names[0].name == "tokens_val_000000.bin"
    assert [path.name for path in names[1:]] == [f"tokens_train_{i:06d}.bin" for i in range(1, len(names))]
    shards = [read_llmc_shard(path) for path in names]
    assert all(len(ids) == SHARD for ids in shards[:-1]) and 0 < len(shards[-1]) <= SHARD
    assert np.concatenate(shards).tolist() == flat([[eot, *ids] for ids in documents])


# nanoGPT and OLMo


@pytest.mark.parametrize("format", ["nanogpt", "olmo"])
def test_flat_files_read_with_memmap(tokenizer, inputs, documents, tmp_path, format):
    eot = tokenizer.token_to_id(EOT)
    out = tmp_path / ("train.bin" if format == "nanogpt" else "part-0-00000.npy")
    encode(tokenizer, inputs, format, out)
    assert np.memmap(out, dtype=np.uint16, mode="r").tolist() == flat([[*ids, eot] for ids in documents])


# dtypes, separators and outputs


def test_dtypes_as_the_stacks_choose_them():
    assert token_files.choose_dtype("megatron", 65_499, None) == "uint16"
    assert token_files.choose_dtype("megatron", 65_500, None) == "int32"
    assert token_files.choose_dtype("datatrove", 65_536, None) == "uint16"
    assert token_files.choose_dtype("llmc", 128_256, None) == "uint32"
    with pytest.raises(ValueError, match="holds ids up to 65535: use --dtype uint32"):
        token_files.choose_dtype("olmo", 70_000, "uint16")
    with pytest.raises(ValueError, match=r"nanoGPT's train\.py reads uint16"):
        token_files.choose_dtype("nanogpt", 70_000, None)
    with pytest.raises(ValueError, match="megatron stores ids as uint16 or int32"):
        token_files.choose_dtype("megatron", 300, "uint32")


def test_a_stack_that_needs_a_separator_asks_for_one(tmp_path):
    plain = Tokenizer.load(bpeforge.save({i: bytes([i]) for i in range(256)}, [], tmp_path / "bytes"))
    (tmp_path / "a.txt").write_text("ab", encoding="utf-8")
    with pytest.raises(ValueError, match="--document-separator"):
        encode(plain, [tmp_path / "a.txt"], "nanogpt", tmp_path / "train.bin")
    assert not (tmp_path / "train.bin").exists()


@pytest.mark.parametrize("format", ["megatron", "datatrove", "llmc", "olmo"])
def test_a_failed_run_leaves_the_old_output_whole(tokenizer, inputs, tmp_path, format):
    output = tmp_path / "out"
    encode(tokenizer, inputs, format, output)
    before = {p.name: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    bad = tmp_path.parent / f"{tmp_path.name}-bad.txt"
    bad.write_bytes(b"the cat \xff")
    with pytest.raises(ValueError, match=r"bad\.txt"):
        encode(tokenizer, [*inputs, bad], format, output, overwrite=True)
    assert {p.name: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before  # no temporaries either


def test_a_folder_of_other_files_is_never_replaced(tokenizer, inputs, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(UnsafeOutputError, match=r"notes\.txt"):
        encode(tokenizer, inputs, "llmc", tmp_path / "out", overwrite=True)
    assert (tmp_path / "out" / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_shards_only_where_the_stack_shards(tokenizer, inputs, tmp_path):
    with pytest.raises(ValueError, match="--shard-tokens applies to datatrove and llmc"):
        encode(tokenizer, inputs, "megatron", tmp_path / "p", shard_tokens=10)
    with pytest.raises(ValueError, match="--shard-tokens must be at least 1"):
        encode(tokenizer, inputs, "datatrove", tmp_path / "d", shard_tokens=0)
    assert not list(tmp_path.iterdir())


def test_megatron_index_of_many_documents(tokenizer, tmp_path):
    """More sequences than the index assembles without NumPy, and empty records between them."""
    texts = [f"the cat {i}" if i % 7 else "" for i in range(3000)]
    (tmp_path / "many.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    eot = tokenizer.token_to_id(EOT)
    encode(tokenizer, [tmp_path / "many.jsonl"], "megatron", tmp_path / "many", separator=eot)
    index = read_megatron_index(tmp_path / "many.idx")
    sequences, ends = megatron_expected([tokenizer.encode(t) for t in texts], eot)
    assert index["lengths"].tolist() == [len(ids) for ids in sequences]
    assert index["pointers"].tolist() == (2 * np.cumsum([0] + [len(ids) for ids in sequences])[:-1]).tolist()
    assert index["document_ends"].tolist() == ends.tolist()


@pytest.mark.parametrize("format", ["megatron", "datatrove", "llmc", "nanogpt"])
def test_text_files_alone_never_import_numpy(tokenizer_dir, inputs, tmp_path, format):
    """NumPy's import is a tenth of a second of a small run; the text path writes what the core packed."""
    script = (
        "import sys\nfrom bpeforge.cli import main\n"
        f"code = main(['encode', {str(inputs[-1])!r}, '--tokenizer', {str(tokenizer_dir)!r}, '--format', "
        f"{format!r}, '-o', {str(tmp_path / 'out')!r}, '--no-progress'])\n"
        "assert code == 0 and 'numpy' not in sys.modules, sorted(m for m in sys.modules if 'numpy' in m)[:3]\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_llmc_uint32_shards_have_the_llama3_header(tokenizer, inputs, documents, tmp_path):
    eot = tokenizer.token_to_id(EOT)
    encode(tokenizer, inputs, "llmc", tmp_path / "shards", dtype="uint32")
    (shard,) = sorted((tmp_path / "shards").iterdir())
    header = np.fromfile(shard, dtype="<i4", count=256)
    assert header[:3].tolist() == [20240801, 7, len(flat(documents)) + len(documents)] and not header[3:].any()
    assert np.fromfile(shard, dtype="<u4", offset=1024).tolist() == flat([[eot, *ids] for ids in documents])
