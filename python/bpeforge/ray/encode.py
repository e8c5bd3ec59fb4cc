"""`bpeforge.ray.encode`: token shards of a corpus, encoded on a Ray cluster.

Layout of `out_dir` (docs/scale-out.md):
- `job.json`: the plan (tokenizer fingerprint, dtype, shards), written first;
- `shards/NNNNN.npy`: a shard's ids; `shards/NNNNN.docs.npy`: where each of
  its documents starts (uint64 token offsets); `shards/NNNNN.json`: its
  figures, written last, so its presence means the shard is complete;
- `index.json`: every shard in order with source, range and counts, written
  when all are complete.

Every file is written under a temporary name and renamed into place, so a
task killed and retried never leaves a corrupt or duplicate shard, and a
re-run with the same plan skips the shards already complete. `job.json`
records each input's size and modification time, and each shard's `.json`
those it was encoded from: a re-run redoes the shards of an input that
changed since (and says which inputs did).
Concatenating the shards in index order gives `bpeforge encode`'s ids.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import ray

from bpeforge.encode_files import choose_dtype, stack_separator
from bpeforge.formats import token_files
from bpeforge.formats.atomic import check_apart_from_inputs, check_output, write_text_atomically
from bpeforge.formats.gpt2 import read_json
from bpeforge.formats.npy import NpyWriter
from bpeforge.formats.whole_text import whole_text
from bpeforge.ray import cluster
from bpeforge.ray.dataset import TEXT_COLUMN, block_texts, is_dataset, row_blocks
from bpeforge.ray.jobs import SHARD_TASK_OPTIONS, wait_all
from bpeforge.ray.shards import DEFAULT_SHARD_BYTES, Shard, input_stamps, plan_files
from bpeforge.ray.token_files import write_from_shards
from bpeforge.tokenizer import Tokenizer
from bpeforge.train import normalize_paths

FORMAT = "bpeforge-token-shards"
OWNED_FILES = ("job.json", "index.json", "shards")
VERSION = 1
SHARD_FILES = (("tokens", ".npy"), ("documents", ".docs.npy"))  # index key, file suffix


@dataclass(frozen=True)
class EncodeResult:
    out_dir: Path
    shards: int
    resumed: int  # shards already complete from an earlier run
    tokens: int
    # Inputs whose size or modification time changed since an earlier run of the job: their shards were redone.
    changed_inputs: tuple[str, ...] = ()
    output: Path | None = None  # the token files of `format`, when not npy


def encode(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | ray.data.Dataset,
    tokenizer: Tokenizer,
    out_dir: str | os.PathLike[str],
    *,
    dtype: str | None = None,
    address: str | None = cluster.LOCAL,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    glob: str | None = None,
    text_column: str = TEXT_COLUMN,
    overwrite: bool = False,
    progress: bool = False,
    format: str = "npy",
    output: str | os.PathLike[str] | None = None,
    separator: int | None = None,
    shard_tokens: int | None = None,
) -> EncodeResult:
    """Encode `inputs` (text files, directories, or a Dataset with a
    `text_column`) into token shards under `out_dir`, resuming an earlier run.

    With a `format` other than npy, the shards are then also written as that stack's token files at `output`
    (`bpeforge encode --format`'s files, `separator` and `shard_tokens` as there; docs/token-files.md)."""
    stack_dtype = None
    if format != "npy":
        if output is None:
            raise ValueError(f"format={format!r} writes its token files at `output`: give a path for them")
        stack_dtype = token_files.choose_dtype(format, tokenizer.vocab_size, dtype)
        separator = stack_separator(tokenizer, format, separator)
        dtype = "uint16" if token_files.ITEMSIZE[stack_dtype] == 2 else "uint32"  # the shards' ids: the same bytes
    dtype = choose_dtype(tokenizer, dtype)
    out = Path(out_dir)
    if not is_dataset(inputs):
        check_apart_from_inputs(out, normalize_paths(inputs))
    cluster.connect(address)
    if is_dataset(inputs):
        shards, blocks = row_blocks(inputs, text_column)
    else:
        blocks = None
        paths, specials, whole_files = normalize_paths(inputs), tokenizer.special_tokens, tokenizer.runs_pipeline
        shards = plan_files(paths, specials, tokenizer.pattern, shard_bytes, glob, whole_files=whole_files)
        _refuse_records(shards)
    job = {"format": FORMAT, "version": VERSION, "tokenizer": fingerprint(tokenizer), "dtype": dtype}
    job.update(shard_bytes=None if blocks else shard_bytes, inputs=input_stamps(shards))
    job["shards"] = [shard.to_json() for shard in shards]
    changed = _start_job(out, job, overwrite)
    todo = [shard for shard in shards if not _complete(out, shard)]
    box = [ray.put(tokenizer)]  # in a list, so tasks fetch it once per worker (see _tokenizer)
    task = _encode_shard.options(**SHARD_TASK_OPTIONS)
    key = job["tokenizer"]
    refs = [
        task.remote(shard, blocks[shard.index] if blocks else None, text_column, box, key, dtype, os.fspath(out))
        for shard in todo
    ]
    wait_all(todo, refs, progress=progress)
    index = _write_index(out, shards, job)
    _remove_leftovers(out, len(shards))
    written = None
    if stack_dtype is not None:
        sources = [] if is_dataset(inputs) else normalize_paths(inputs)
        options = {"dtype": stack_dtype, "separator": separator, "shard_tokens": shard_tokens, "overwrite": overwrite}
        write_from_shards(out, index, format, output, **options, inputs=sources)
        written = Path(output)
    return EncodeResult(out, len(shards), len(shards) - len(todo), index["num_tokens"], tuple(changed), written)


def read_index(out_dir: str | os.PathLike[str]) -> dict:
    """`index.json` of a finished job; each shard's `tokens` and `documents` are paths relative to it."""
    index = read_json(Path(out_dir) / "index.json")
    if index.get("format") != FORMAT or index.get("version") != VERSION:
        raise ValueError(f"{out_dir}: not a {FORMAT} v{VERSION} index (format {index.get('format')!r})")
    return index


def fingerprint(tokenizer: Tokenizer) -> str:
    """A digest of everything that decides the ids: vocab, merges, specials, pattern."""
    digest = hashlib.sha256()
    for token_id, token in sorted(tokenizer.vocab.items()):
        digest.update(b"v%d:%d:" % (token_id, len(token)) + token)
    for left, right in tokenizer.merges:
        digest.update(b"m%d:%d:" % (len(left), len(right)) + left + right)
    digest.update(json.dumps([tokenizer.special_tokens, tokenizer.pattern]).encode())
    if tokenizer.runs_pipeline:
        digest.update(tokenizer._hf_json.encode())  # the normalizer, pre-tokenizers, post-processor too
    return digest.hexdigest()


def _refuse_records(shards: list[Shard]) -> None:
    records = [shard.source for shard in shards if shard.kind != "text"]
    if records:
        raise ValueError(
            f"{records[0]}: encoding reads text files; for JSON Lines or Parquet pass "
            f"ray.data.read_json(...) or ray.data.read_parquet(...) as the input"
        )


def _start_job(out: Path, job: dict, overwrite: bool) -> list[str]:
    """Record the plan, or check that `out` holds this same job to resume; the inputs that changed since (their
    size or modification time), whose shards are then redone."""
    plan = out / "job.json"
    if plan.exists() and not overwrite:
        earlier = read_json(plan)
        if earlier == job:
            return []
        if not isinstance(earlier, dict) or _settings(earlier) != _settings(job):
            raise FileExistsError(
                f"{out} holds another job (a different tokenizer, dtype, inputs or shard size); "
                f"use a new directory, or overwrite=True (CLI: --force) to start over"
            )
        stamps = earlier.get("inputs", {})
        changed = [path for path, stamp in job["inputs"].items() if stamps.get(path) != stamp]
        write_text_atomically(plan, json.dumps(job, indent=1) + "\n", overwrite=True)
        return changed
    if overwrite and out.exists():
        # Starting over empties only a directory of this job's own files.
        check_output(out, overwrite=True, directory=True, owned=OWNED_FILES)
        shutil.rmtree(out / "shards", ignore_errors=True)
        (out / "index.json").unlink(missing_ok=True)
    (out / "shards").mkdir(parents=True, exist_ok=True)
    write_text_atomically(plan, json.dumps(job, indent=1) + "\n", overwrite=True)
    return []


def _settings(job: dict) -> tuple:
    """What makes a job the same job: all but its inputs' sizes and times (and so its shards' ranges)."""
    keys = ("format", "version", "tokenizer", "dtype", "shard_bytes")
    return (*(job.get(key) for key in keys), list(job.get("inputs", {})))


def _complete(out: Path, shard: Shard) -> bool:
    """Whether the shard's files are written, for this very shard: its range of the input as it is now."""
    meta = _meta_path(out, shard)
    if not meta.exists():
        return False
    done = read_json(meta)
    return isinstance(done, dict) and all(done.get(key) == value for key, value in shard.to_json().items())


def _shard_path(out: Path, shard: Shard, suffix: str) -> Path:
    return out / "shards" / f"{shard.index:05d}{suffix}"


def _meta_path(out: Path, shard: Shard) -> Path:
    return _shard_path(out, shard, ".json")


_TOKENIZERS: dict[str, Tokenizer] = {}  # per worker process, by fingerprint


def _tokenizer(box: list, key: str) -> Tokenizer:
    if key not in _TOKENIZERS:
        _TOKENIZERS.clear()
        _TOKENIZERS[key] = ray.get(box[0])
    return _TOKENIZERS[key]


@ray.remote(num_cpus=1)
def _encode_shard(shard: Shard, block, column: str, box: list, key: str, dtype: str, out_dir: str) -> None:
    out = Path(out_dir)
    tokenizer = _tokenizer(box, key)
    with NpyWriter(_shard_path(out, shard, ".npy"), dtype, overwrite=True) as writer:
        if block is None:
            starts = _encode_text(tokenizer, shard, writer)
        else:
            starts = _encode_rows(tokenizer, block_texts(block, column), writer)
    with NpyWriter(_shard_path(out, shard, ".docs.npy"), "uint64", overwrite=True) as docs:
        docs.write(starts.astype("<u8").tobytes())
    meta = {**shard.to_json(), "num_tokens": writer.length, "num_documents": len(starts)}
    write_text_atomically(_meta_path(out, shard), json.dumps(meta) + "\n", overwrite=True)


def _encode_text(tokenizer: Tokenizer, shard: Shard, writer: NpyWriter) -> np.ndarray:
    """A text shard's ids; a document starts at its file's start and after each
    special token (at the shard's end if the next shard starts one). A pipeline's
    shard is a whole file, one document."""
    if tokenizer.runs_pipeline:
        writer.write(tokenizer.encode_to_numpy(whole_text(Path(shard.source))).astype(writer.dtype).tobytes())
        return np.zeros(1, dtype=np.uint64)
    special_ids = [tokenizer.token_to_id(token) for token in tokenizer.special_tokens]
    starts = [np.zeros(1 if shard.start in (None, 0) else 0, dtype=np.uint64)]

    def write(data: bytes) -> None:
        ids = np.frombuffer(data, dtype=writer.dtype)
        starts.append((np.flatnonzero(np.isin(ids, special_ids)) + 1 + writer.length).astype(np.uint64))
        writer.write(data)

    tokenizer._core.encode_files([shard.core_source()], writer.itemsize, write, 1)
    return np.concatenate(starts)


def _encode_rows(tokenizer: Tokenizer, texts: list[str], writer: NpyWriter) -> np.ndarray:
    """A Dataset block's ids: each row is a document, following the previous one."""
    if tokenizer.runs_pipeline:
        ids, offsets = tokenizer.encode_batch_to_numpy(texts, 1)
        writer.write(ids.astype(writer.dtype).tobytes())
        return offsets[:-1].astype(np.uint64)
    packed = tokenizer._core.encode_batch_packed(texts, writer.itemsize, 1)
    lengths = np.array([len(ids) // writer.itemsize for ids in packed], dtype=np.uint64)
    writer.write(b"".join(packed))
    return np.concatenate([np.zeros(1, dtype=np.uint64), np.cumsum(lengths)[:-1]]) if len(packed) else lengths


def _write_index(out: Path, shards: list[Shard], job: dict) -> dict:
    entries = []
    for shard in shards:
        meta = read_json(_meta_path(out, shard))
        files = {name: str(_shard_path(out, shard, suffix).relative_to(out)) for name, suffix in SHARD_FILES}
        entries.append({**files, **meta})
    index = {"format": FORMAT, "version": VERSION, "tokenizer": job["tokenizer"], "dtype": job["dtype"]}
    index.update(num_tokens=sum(entry["num_tokens"] for entry in entries), shards=entries)
    write_text_atomically(out / "index.json", json.dumps(index, indent=1) + "\n", overwrite=True)
    return index


def _remove_leftovers(out: Path, shards: int) -> None:
    """Temporary files of killed attempts (no task runs any more), and the shards of an earlier plan of more
    shards than this one (an input that shrank)."""
    for leftover in (out / "shards").glob(".*"):
        leftover.unlink(missing_ok=True)
    for stale in (out / "shards").glob("[0-9]*"):
        if int(stale.name.split(".")[0]) >= shards:
            stale.unlink(missing_ok=True)
