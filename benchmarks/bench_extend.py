"""Continue training a base tokenizer: bpeforge's ``train(..., extend=BASE)`` against bpe-continue (issue 15).

    python benchmarks/bench_extend.py [--corpus FILE] [--bytes N] [--add 10000] [--bases gpt2,o200k] \\
        [--peers bpeforge,bpe-continue,scratch] [--sample FILE] [--cores K] [--repeat K] [--json PATH]

Each base gets ``--add`` new merges from each library on the same corpus. Every run is a fresh process (this
script with ``--child``), started through ``_spawn.py`` and pinned with ``taskset`` to the first ``--cores``
cores, as ``bench_encode.py`` pins its peers; ``RAYON_NUM_THREADS`` is that count for both libraries (both
use rayon). The child times loading the base plus training, reads its own peak RSS when that is done, and only
then checks the result and encodes the sample, so neither counts in the figures.

- ``bpeforge``: the base (GPT-2: ``Tokenizer.from_files`` on the CS336 ``gpt2_vocab.json`` and
  ``gpt2_merges.txt`` with ``<|endoftext|>``; o200k: ``bpeforge.tiktoken.get_encoding("o200k_base")``, OpenAI's
  rank file as bpeforge ships it, sha256-checked, with tiktoken's two special tokens) is loaded, then
  ``bpeforge.train(corpus, base_tokens + N, extend=base)``.
- ``bpe-continue``: ``continue_training(tokenizer_json, files=[corpus], vocab_size=base_tokens + N)``, where
  ``tokenizer_json`` is the same base exported by ``Tokenizer.save_hf`` (checked against the original files
  before any run) and ``base_tokens`` counts its distinct ids, as bpe-continue does. bpe-continue refuses a base
  whose ids leave gaps (o200k_base has 19 unused ids: 199998 and 200000-200017); for such a base it also runs on
  a copy whose gaps are filled with placeholder special tokens (``<|bench_unused_N|>``, in the model's vocabulary
  and among the added tokens, as ``save_hf`` writes special tokens), which no ordinary text holds, so that its
  time and memory can still be compared. It trains through HF's file reader, which reads line by line and does
  not split on ``<|endoftext|>`` while training: its merges are not bpeforge's (nor meant to be).
- ``scratch``: for scale, bpeforge training N merges from nothing on the same corpus with the base's
  pre-tokenizer, ``bpeforge.train(corpus, 256 + N + 1, ["<|endoftext|>"], pattern=...)``.

*Kept* means: every id of the base (from the original files: GPT-2's ``vocab.json``, OpenAI's rank file and
tiktoken's special-token ids) maps to the same bytes in the result, and the result's merges start with the
base's merges, in order (those of the exported ``tokenizer.json``: GPT-2's ``merges.txt``, checked; a rank file
has no merges, so for o200k they are the ones bpeforge derives from the ranks). *New ids* are the ids of the
tokens that the new merges make. *Bytes/token* encodes the first 1 MB of ``--sample`` (default: the corpus
itself, so text trained on) with the base and with the result, each library with its own tokenizer, and checks
that decoding gives the text back.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import importlib
import importlib.metadata
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _encode_peers import SPECIALS_BY_ENCODING
from _peers import EXIT_NOT_INSTALLED, RESULT_PREFIX, SPECIAL, _peak_rss_mib
from _spawn import MARK as SPAWN_MARK
from bench_encode import GPT2_DIR, OPENAI_DIR, locate_corpus, pinned
from bench_train import _cpu_model, _git_revision, _parse_result, prepare_corpus

SPAWN_SCRIPT = Path(__file__).with_name("_spawn.py")
CHILD_FLAG = "--child"
BASES = {"gpt2": "gpt2", "o200k": "o200k"}  # base -> bpeforge pattern preset
PEERS = ("bpeforge", "bpe-continue", "scratch")
DEFAULT_BYTES = 100_000_000
SAMPLE_BYTES = 1_000_000
PLACEHOLDER = "<|bench_unused_{}|>"

Ids = dict[int, bytes]
Merges = list[tuple[bytes, bytes]]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus", type=Path, help=".txt or .txt.xz (default: Gutenberg, /tmp/corpora or the shared .xz)"
    )
    parser.add_argument(
        "--bytes",
        type=int,
        default=DEFAULT_BYTES,
        help=f"train on this prefix only, cut back to a whole character (default {DEFAULT_BYTES:,}; 0: all)",
    )
    parser.add_argument("--add", type=int, default=10_000, help="merges to add to each base (default 10,000)")
    parser.add_argument("--bases", default=",".join(BASES), help=f"from {','.join(BASES)}")
    parser.add_argument("--peers", default=",".join(PEERS), help=f"from {','.join(PEERS)}")
    parser.add_argument("--sample", type=Path, help="text whose first 1 MB is encoded (default: the corpus)")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="pin every run to the first K cores")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the children to cores with taskset")
    parser.add_argument("--repeat", type=int, default=1, help="runs per row, round-robin; the best time counts")
    parser.add_argument("--gpt2-dir", type=Path, default=GPT2_DIR, help="gpt2_vocab.json and gpt2_merges.txt")
    parser.add_argument("--openai-dir", type=Path, default=OPENAI_DIR, help="o200k_base.tiktoken(.gz)")
    parser.add_argument("--json", type=Path, help="also write every run here")
    args = parser.parse_args(argv)
    args.bases = args.bases.split(",")
    args.peers = args.peers.split(",")
    for given, known, what in [(args.bases, BASES, "bases"), (args.peers, PEERS, "peers")]:
        unknown = [name for name in given if name not in known]
        if unknown:
            parser.error(f"unknown {what} {unknown}; choose from {list(known)}")
    if args.add < 1 or args.repeat < 1 or args.cores < 1:
        parser.error("--add, --repeat and --cores must be at least 1")
    args.corpus = args.corpus or locate_corpus("gutenberg")
    return args


# --- reading tokenizers without bpeforge ----------------------------------------------------
# The checks read the original files and HF's JSON with the few lines below, so that what they compare
# against does not come from the code under test.


def _byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-ins for bytes (as in its ``encoder.py``), inverted."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = list(printable)
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return {chr(char): byte for byte, char in zip(printable, chars)}


def _level_bytes(token: str, decoder: dict[str, int]) -> bytes:
    return bytes(decoder[char] for char in token)


def original_ids(base: str, gpt2_dir: Path, openai_dir: Path) -> Ids:
    """The base's ids from the files it is published as: GPT-2's ``vocab.json``, OpenAI's rank file plus
    tiktoken's special-token ids."""
    decoder = _byte_decoder()
    if base == "gpt2":
        vocab = json.loads((gpt2_dir / "gpt2_vocab.json").read_text(encoding="utf-8"))
        return {token_id: _level_bytes(token, decoder) for token, token_id in vocab.items()}
    import base64

    path = openai_dir / "o200k_base.tiktoken"
    data = path.read_bytes() if path.exists() else gzip.decompress(path.with_name(path.name + ".gz").read_bytes())
    ids = {int(rank): base64.b64decode(token) for token, rank in (line.split() for line in data.splitlines() if line)}
    ids.update({token_id: token.encode() for token, token_id in SPECIALS_BY_ENCODING[base].items()})
    return ids


def original_merges(base: str, gpt2_dir: Path) -> Merges | None:
    """GPT-2's ``merges.txt``; None for a rank file, which has no merges (they are derived)."""
    if base != "gpt2":
        return None
    decoder = _byte_decoder()
    lines = (gpt2_dir / "gpt2_merges.txt").read_text(encoding="utf-8").splitlines()
    pairs = (line.split(" ") for line in lines if line and not line.startswith("#version"))
    return [(_level_bytes(a, decoder), _level_bytes(b, decoder)) for a, b in pairs]


def read_hf(document: dict[str, Any]) -> tuple[Ids, Merges]:
    """Ids (model vocabulary, then added tokens) and merges of a byte-level BPE ``tokenizer.json``."""
    decoder = _byte_decoder()
    model = document["model"]
    ids = {token_id: _level_bytes(token, decoder) for token, token_id in model["vocab"].items()}
    ids.update({added["id"]: added["content"].encode() for added in document.get("added_tokens", [])})
    pairs = (merge.split(" ") if isinstance(merge, str) else merge for merge in model["merges"])
    return ids, [(_level_bytes(a, decoder), _level_bytes(b, decoder)) for a, b in pairs]


# --- the base tokenizers -----------------------------------------------------------------------


def bpeforge_base(base: str, gpt2_dir: str) -> Any:
    """The base as bpeforge loads it from the original files (a ``bpeforge.Tokenizer``)."""
    import bpeforge
    from bpeforge.open_tokenizer import open_tokenizer
    from bpeforge.tiktoken import get_encoding

    if base == "gpt2":
        directory = Path(gpt2_dir)
        return bpeforge.Tokenizer.from_files(directory / "gpt2_vocab.json", directory / "gpt2_merges.txt", [SPECIAL])
    return open_tokenizer(get_encoding(f"{base}_base"))


def prepare_base(base: str, args: argparse.Namespace, tmpdir: Path) -> dict[str, Any]:
    """The base's ``tokenizer.json`` for bpe-continue (and, if its ids leave gaps, a copy with the gaps
    filled), after checking that the export has the original files' ids and merges."""
    tokenizer = bpeforge_base(base, str(args.gpt2_dir))
    path = tokenizer.save_hf(tmpdir / f"{base}.tokenizer.json", overwrite=True)
    document = json.loads(path.read_text(encoding="utf-8"))
    ids, merges = read_hf(document)
    problems = []
    if ids != original_ids(base, args.gpt2_dir, args.openai_dir):
        problems.append("its ids differ from the original files'")
    reference_merges = original_merges(base, args.gpt2_dir)
    if reference_merges is not None and merges != reference_merges:
        problems.append("its merges differ from merges.txt")
    info = {
        "base": base,
        "tokenizer_json": str(path),
        "tokens": len(ids),
        "largest_id": max(ids),
        "merges": len(merges),
        "export_problems": problems,
    }
    gaps = sorted(set(range(max(ids) + 1)) - set(ids))
    if gaps:
        # As save_hf writes special tokens: in the model's vocabulary (bpe-continue wants its ids dense) and
        # among the added tokens (so that the text of one is never trained on).
        placeholders = [_added_token(PLACEHOLDER.format(token_id), token_id) for token_id in gaps]
        document["model"]["vocab"].update({added["content"]: added["id"] for added in placeholders})
        document["added_tokens"] = sorted(document["added_tokens"] + placeholders, key=lambda added: added["id"])
        filled = tmpdir / f"{base}.filled.tokenizer.json"
        filled.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
        info.update(gaps=gaps, filled_json=str(filled))
    return info


def _added_token(content: str, token_id: int) -> dict[str, Any]:
    return {
        "id": token_id,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "special": True,
    }


# --- the child: one library, one base ---------------------------------------------------------


@dataclass
class Outcome:
    """What a run produced, looked at after the clock stops."""

    ids: Ids | None  # None: trained from scratch, nothing to keep
    merges: Merges
    encode_base: Callable[[str], list[int]] | None
    encode: Callable[[str], list[int]]
    decode: Callable[[list[int]], str]


@dataclass
class Timed:
    """A run's timed part: ``seconds`` (loading the base and training; ``load_s`` of it where the library
    loads apart), and ``finish``, which builds the ``Outcome`` once the peak RSS has been read."""

    seconds: float
    load_s: float | None
    finish: Callable[[], Outcome]


def _run_bpeforge(job: dict[str, Any]) -> Timed:
    import bpeforge

    start = time.perf_counter()
    base = bpeforge_base(job["base"], job["gpt2_dir"])
    load_s = time.perf_counter() - start
    result = bpeforge.train(job["corpus"], len(base.vocab) + job["add"], extend=base)
    seconds = time.perf_counter() - start

    def finish() -> Outcome:
        tokenizer = bpeforge.Tokenizer(result.vocab, result.merges, result.special_tokens, pattern=result.pattern)
        return Outcome(dict(result.vocab), list(result.merges), base.encode, tokenizer.encode, tokenizer.decode)

    return Timed(seconds, load_s, finish)


def _run_scratch(job: dict[str, Any]) -> Timed:
    import bpeforge

    start = time.perf_counter()
    result = bpeforge.train(job["corpus"], 256 + job["add"] + 1, [SPECIAL], pattern=BASES[job["base"]])
    seconds = time.perf_counter() - start

    def finish() -> Outcome:
        tokenizer = bpeforge.Tokenizer(result.vocab, result.merges, result.special_tokens, pattern=result.pattern)
        return Outcome(None, list(result.merges), None, tokenizer.encode, tokenizer.decode)

    return Timed(seconds, None, finish)


def _run_bpe_continue(job: dict[str, Any]) -> Timed:
    from bpe_continue import continue_training
    from tokenizers import Tokenizer

    path, vocab_size = job["tokenizer_json"], job["tokens"] + job["add"]
    start = time.perf_counter()
    extended = continue_training(path, files=[job["corpus"]], vocab_size=vocab_size, show_progress=False)
    seconds = time.perf_counter() - start

    def finish() -> Outcome:
        ids, merges = read_hf(json.loads(extended.to_str()))
        base = Tokenizer.from_file(path)

        def decode(token_ids: list[int]) -> str:
            return extended.decode(token_ids, skip_special_tokens=False)

        return Outcome(ids, merges, _hf_encoder(base), _hf_encoder(extended), decode)

    return Timed(seconds, None, finish)


def _hf_encoder(tokenizer: Any) -> Callable[[str], list[int]]:
    return lambda text: tokenizer.encode(text, add_special_tokens=False).ids


RUNNERS: dict[str, tuple[str, str, Callable[[dict[str, Any]], Timed]]] = {
    # peer -> (module imported before the clock starts, distribution for the version, runner)
    "bpeforge": ("bpeforge", "bpeforge", _run_bpeforge),
    "scratch": ("bpeforge", "bpeforge", _run_scratch),
    "bpe-continue": ("bpe_continue", "bpe-continue", _run_bpe_continue),
}


def _version(module: Any, dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return str(getattr(module, "__version__", "unknown"))


def check_kept(base_ids: Ids, base_merges: Merges, outcome: Outcome) -> dict[str, Any]:
    """Whether every base id and merge survived, and which ids the new merges got."""
    assert outcome.ids is not None
    ids_kept = all(outcome.ids.get(token_id) == token for token_id, token in base_ids.items())
    merges_kept = outcome.merges[: len(base_merges)] == base_merges
    id_of = {token: token_id for token_id, token in outcome.ids.items()}
    new_ids = [id_of.get(a + b, -1) for a, b in outcome.merges[len(base_merges) :]]
    return {
        "ids_kept": ids_kept,
        "merges_kept": merges_kept,
        "lost_ids": sum(outcome.ids.get(token_id) != token for token_id, token in base_ids.items()),
        "added": len(outcome.merges) - len(base_merges),
        "new_ids": [min(new_ids), max(new_ids)] if new_ids else None,
        "new_ids_distinct": len(set(new_ids)) == len(new_ids) and -1 not in new_ids,
        "new_ids_above_base": not new_ids or min(new_ids) > max(base_ids),
    }


def sample_figures(outcome: Outcome, sample: str) -> dict[str, Any]:
    ids = outcome.encode(sample)
    figures = {"tokens": len(ids), "round_trip": outcome.decode(list(ids)) == sample}
    if outcome.encode_base is not None:
        figures["tokens_base"] = len(outcome.encode_base(sample))
    return figures


def child(job: dict[str, Any]) -> dict[str, Any]:
    """One run; the clock covers loading the base and training (not imports, not the checks)."""
    module_name, dist, runner = RUNNERS[job["peer"]]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        print(f"{job['peer']}: {exc}", file=sys.stderr)
        sys.exit(EXIT_NOT_INSTALLED)
    timed = runner(job)
    result = {"version": _version(module, dist), "seconds": timed.seconds, "peak_rss_mib": _peak_rss_mib()}
    result["load_s"] = timed.load_s
    outcome = timed.finish()
    if outcome.ids is not None:
        base_ids = original_ids(job["base"], Path(job["gpt2_dir"]), Path(job["openai_dir"]))
        _, base_merges = read_hf(json.loads(Path(job["base_json"]).read_text(encoding="utf-8")))
        result.update(check_kept(base_ids, base_merges, outcome))
    else:
        result["added"] = len(outcome.merges)
    result.update(sample_figures(outcome, Path(job["sample"]).read_bytes().decode("utf-8")))  # no newline changes
    return result


# --- the parent ------------------------------------------------------------------------------


def run_child(job: dict[str, Any], cores: int, pin: bool) -> dict[str, Any]:
    """One run in a fresh interpreter; never raises for a library's fault."""
    env = {**os.environ, "RAYON_NUM_THREADS": str(cores), "TOKENIZERS_PARALLELISM": "true"}
    cmd = [sys.executable, str(SPAWN_SCRIPT), sys.executable, __file__, CHILD_FLAG, json.dumps(job)]
    start = time.perf_counter()
    proc = subprocess.run(pinned(cmd, cores, pin), capture_output=True, text=True, env=env, check=False)
    total_s = time.perf_counter() - start
    lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith(SPAWN_MARK)]
    last_err = (lines or [f"exit code {proc.returncode}"])[-1]
    if proc.returncode == EXIT_NOT_INSTALLED:
        return {"status": "not installed", "error": last_err}
    result = _parse_result(proc.stdout)
    if proc.returncode != 0 or result is None:
        return {"status": "failed", "error": last_err}
    return {"status": "ok", "total_s": total_s, **result}


def plan(args: argparse.Namespace, bases: dict[str, dict[str, Any]], corpus: Path, sample: Path) -> list[dict]:
    """Every row: (base, peer), plus bpe-continue on the gap-filled copy of a base with gaps."""
    jobs = []
    common = {"corpus": str(corpus), "sample": str(sample), "add": args.add}
    common.update(gpt2_dir=str(args.gpt2_dir), openai_dir=str(args.openai_dir))
    for base, info in bases.items():
        for peer in args.peers:
            job = {"peer": peer, "base": base, "label": peer, **common}
            # `tokens`: the base's distinct ids, as bpe-continue counts them (its vocab_size is base + new)
            job.update(base_json=info["tokenizer_json"], tokenizer_json=info["tokenizer_json"], tokens=info["tokens"])
            jobs.append(job)
            if peer == "bpe-continue" and "filled_json" in info:
                filled = {"tokenizer_json": info["filled_json"], "tokens": info["largest_id"] + 1}
                jobs.append({**job, "label": "bpe-continue, gaps filled", **filled})
    return jobs


def run_all(jobs: list[dict[str, Any]], args: argparse.Namespace) -> list[list[dict[str, Any]]]:
    """Round-robin over the rows; a row that fails is not retried."""
    runs: list[list[dict[str, Any]]] = [[] for _ in jobs]
    for round_no in range(1, args.repeat + 1):
        for job, job_runs in zip(jobs, runs):
            if job_runs and job_runs[-1]["status"] != "ok":
                continue
            print(f"[{round_no}/{args.repeat}] {job['base']}: {job['label']} ...", file=sys.stderr, flush=True)
            job_runs.append(run_child(job, args.cores, not args.no_pin))
            print(f"    {_describe(job_runs[-1])}", file=sys.stderr, flush=True)
    return runs


def _describe(run: dict[str, Any]) -> str:
    if run["status"] != "ok":
        return f"{run['status']}: {run.get('error', '')}"
    return f"{run['seconds']:.2f} s, peak RSS {run['peak_rss_mib']:.0f} MiB, {run['added']:,} merges added"


def summarize(job: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The best time (noise only adds time) and the largest peak RSS; the rest is the same every run."""
    ok = [run for run in runs if run["status"] == "ok"]
    row = {"base": job["base"], "peer": job["peer"], "label": job["label"]}
    if not ok:
        return {**row, **runs[-1]}
    best = min(ok, key=lambda run: run["seconds"])
    return {**row, **best, "peak_rss_mib": max(run["peak_rss_mib"] for run in ok), "runs": runs}


def metadata(args: argparse.Namespace, corpus: Path, sample: Path, bases: dict[str, Any]) -> dict[str, Any]:
    return {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": shlex.join(["python", "benchmarks/bench_extend.py", *sys.argv[1:]]),
        "corpus": str(args.corpus),
        "corpus_bytes": corpus.stat().st_size,
        "sample": str(args.sample or args.corpus),
        "sample_bytes": sample.stat().st_size,
        "add": args.add,
        "repeat": args.repeat,
        "pinned_cores": None if args.no_pin else args.cores,
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "git": _git_revision(),
        "bases": bases,
    }


# --- rendering ---------------------------------------------------------------------------------


TABLE_HEAD = [
    (
        "| base | library | version | time s | of which loading the base | peak RSS MiB | merges added | new ids "
        "| every base id and merge kept | bytes/token, base → result |"
    ),
    "|---|---|---|--:|--:|--:|--:|--:|---|--:|",
]


def _kept(row: dict[str, Any]) -> str:
    if "ids_kept" not in row:
        return "(no base)"
    if row["ids_kept"] and row["merges_kept"]:
        return "yes"
    lost = [f"{row['lost_ids']:,} ids changed"] if not row["ids_kept"] else []
    return "**no**: " + ", ".join(lost + ([] if row["merges_kept"] else ["merges changed"]))


def _table_row(row: dict[str, Any], sample_bytes: int) -> str:
    base = row["base"] if row["peer"] != "scratch" else f"none ({row['base']} pattern)"
    if row["status"] != "ok":
        return f"| {base} | {row['label']} | {row['status']} | " + " | ".join(["—"] * 7) + " |"
    load = "in the call" if row["peer"] == "bpe-continue" else "—" if row["load_s"] is None else f"{row['load_s']:.2f}"
    new_ids = f"{row['new_ids'][0]:,}–{row['new_ids'][1]:,}" if row.get("new_ids") else "—"
    per_token = f"{sample_bytes / row['tokens']:.3f}"
    if "tokens_base" in row:
        per_token = f"{sample_bytes / row['tokens_base']:.3f} → {per_token}"
    cells = [
        base,
        row["label"],
        row["version"],
        f"{row['seconds']:.2f}",
        load,
        f"{row['peak_rss_mib']:,.0f}",
        f"{row['added']:,}",
        new_ids,
        _kept(row),
        per_token,
    ]
    return "| " + " | ".join(cells) + " |"


def _notes(meta: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    notes = [
        "- *time s*: loading the base and training, timed inside a fresh process (imports excluded); "
        "*peak RSS*: that process's ru_maxrss when training returned.",
        f"- *bytes/token*: the first {meta['sample_bytes']:,} bytes of `{meta['sample']}`, "
        "base tokenizer → extended one, each library encoding with its own.",
    ]
    for base, info in meta["bases"].items():
        described = (
            f"- {base}: {info['tokens']:,} tokens (largest id {info['largest_id']:,}), {info['merges']:,} merges"
        )
        if info.get("gaps"):
            described += f"; {len(info['gaps'])} unused ids below the largest, filled by placeholders in the copy"
        notes.append(described + ".")
        for problem in info["export_problems"]:
            notes.append(f"- **{base}: the exported tokenizer.json is not the base: {problem}.**")
    for row in rows:
        where = f"{row['base']}, {row['label']}"
        if row["status"] != "ok":
            notes.append(f"- {where}: {row['status']}: {row.get('error', '')}")
            continue
        if row["added"] != meta["add"]:
            notes.append(f"- **{where} added {row['added']:,} merges, not {meta['add']:,}.**")
        if "new_ids_distinct" in row and not (row["new_ids_distinct"] and row["new_ids_above_base"]):
            notes.append(f"- **{where}: the new merges' ids are not distinct ids above the base's.**")
        if not row["round_trip"]:
            notes.append(f"- **{where}: decoding the sample's ids does not give the sample back.**")
    return notes


def render_markdown(meta: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    pinned_to = f"pinned to {meta['pinned_cores']} of" if meta["pinned_cores"] else "not pinned,"
    head = [
        (
            f"Corpus `{meta['corpus']}` ({meta['corpus_bytes']:,} bytes), {meta['add']:,} merges added to each "
            f"base, best of {meta['repeat']}; {pinned_to} {meta['cores']} cores, {meta['cpu']}, Python "
            f"{meta['python']}, bpeforge repo at {meta['git']}, {meta['date']}."
        ),
        f"Command: `{meta['command']}`",
    ]
    table = TABLE_HEAD + [_table_row(row, meta["sample_bytes"]) for row in rows]
    return "\n\n".join([*head, "\n".join(table), "\n".join(_notes(meta, rows))])


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bpeforge-bench-extend-") as tmp:
        tmpdir = Path(tmp)
        corpus = prepare_corpus(args.corpus, args.bytes or None, tmpdir)
        sample = prepare_corpus(args.sample or args.corpus, SAMPLE_BYTES, tmpdir)
        bases = {base: prepare_base(base, args, tmpdir) for base in args.bases}
        meta = metadata(args, corpus, sample, bases)
        jobs = plan(args, bases, corpus, sample)
        runs = run_all(jobs, args)
    rows = [summarize(job, job_runs) for job, job_runs in zip(jobs, runs)]
    print(render_markdown(meta, rows))
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == CHILD_FLAG:
        print(RESULT_PREFIX + json.dumps(child(json.loads(sys.argv[2]))), flush=True)
    else:
        main()
