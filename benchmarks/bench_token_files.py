"""Corpus to training token files: `bpeforge encode --format F` against the usual Python pipeline.

Every run is a fresh process, pinned with `taskset` to the same cores, timed as a whole (imports, reading,
encoding, writing) with its peak RSS from `/usr/bin/time`. Three parts:

1. The cost of each format over `.npy`: `bpeforge encode CORPUS --tokenizer gpt2 --format F` on a text file.
2. Megatron's files from JSON Lines, as Megatron's `tools/preprocess_data.py` makes them: HF `tokenizers`
   (GPT-2's tokenizer.json) in one worker process per core (a `multiprocessing.Pool`, each worker encoding
   batches of documents single-threaded) feeding megatron-core's `IndexedDatasetBuilder` with EOD appended;
   against `bpeforge encode CORPUS.jsonl --format megatron`, whose `.bin`/`.idx` must be byte-identical.
3. Peak RSS of both.

    python benchmarks/bench_token_files.py --mb 50 --cores 0,1

The corpus is the first `--mb` MB of `gutenberg_500MB.txt.xz` (BPEFORGE_TEST_DATA or `--data`), cut into
documents at blank lines for the JSON Lines file. Needs `tokenizers` and `megatron-core` (installed with
`pip install --no-deps megatron-core`; torch is stubbed as in the tests).
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bpeforge.open_tokenizer import open_tokenizer

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ["npy", "megatron", "datatrove", "llmc", "nanogpt", "olmo"]

# The usual pipeline, run as its own process: documents from JSON Lines, a Pool of one worker per core
# encoding them with HF tokenizers (as preprocess_data.py's Encoder does), the builder in the parent.
HF_PIPELINE = r"""
import json, sys, multiprocessing as mp
sys.path.insert(0, {tests!r})
from stack_readers import megatron_indexed_dataset
import numpy as np
import tokenizers

TOKENIZER = None

def start(path):
    global TOKENIZER
    TOKENIZER = tokenizers.Tokenizer.from_file(path)

def encode(lines):
    texts = [json.loads(line)["text"] for line in lines]
    return [encoding.ids for encoding in TOKENIZER.encode_batch(texts)]

def batches(path, size=64):
    batch = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            batch.append(line)
            if len(batch) == size:
                yield batch
                batch = []
    if batch:
        yield batch

megatron = megatron_indexed_dataset()
corpus, tokenizer_json, prefix, eod, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
builder = megatron.IndexedDatasetBuilder(prefix + ".bin", dtype=np.uint16)
with mp.Pool(workers, initializer=start, initargs=(tokenizer_json,)) as pool:
    for documents in pool.imap(encode, batches(corpus), chunksize=4):
        for ids in documents:
            builder.add_document([*ids, eod], [len(ids) + 1])
builder.finalize(prefix + ".idx")
"""


def timed(command: list[str], cores: str, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS of `command` pinned to `cores`: MiB, of the largest single process (GNU time's
    %M; a Pool's workers are not summed)."""
    full = ["/usr/bin/time", "-f", "%e %M", "taskset", "-c", cores, *command]
    done = subprocess.run(full, capture_output=True, text=True, env={**os.environ, **(env or {})}, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    wall, rss_kib = done.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss_kib) / 1024


def corpus_files(data: Path, mb: int, folder: Path) -> tuple[Path, Path, int]:
    """The text file, the JSON Lines file of its blank-line documents, and the number of documents."""
    with lzma.open(data / "corpora" / "gutenberg_500MB.txt.xz") as f:
        text = f.read(mb * 1_000_000).decode("utf-8", errors="ignore")
    plain = folder / "corpus.txt"
    plain.write_text(text, encoding="utf-8")
    documents = [doc for doc in text.split("\n\n") if doc.strip()]
    records = folder / "corpus.jsonl"
    with records.open("w", encoding="utf-8") as out:
        for doc in documents:
            out.write(json.dumps({"text": doc}, ensure_ascii=False) + "\n")
    return plain, records, len(documents)


def bpeforge_encode(source: Path, output: Path, fmt: str, threads: int, extra: list[str] | None = None) -> list[str]:
    command = [sys.executable, "-m", "bpeforge", "encode", str(source), "--tokenizer", "gpt2", "-o", str(output)]
    return [*command, "--format", fmt, "--threads", str(threads), "--no-progress", "--force", *(extra or [])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--cores", default="0,1", help="taskset core list for every run")
    parser.add_argument("--runs", type=int, default=3, help="best of this many runs")
    parser.add_argument("--data", type=Path, default=os.environ.get("BPEFORGE_TEST_DATA", ROOT.parent / "shared/data"))
    args = parser.parse_args()
    threads = len(args.cores.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        plain, records, count = corpus_files(args.data, args.mb, folder)
        print(f"corpus: {args.mb} MB of Gutenberg, {count:,} documents; cores {args.cores}; best of {args.runs}")

        print("\n| format | seconds | MB/s | over npy | peak RSS MiB |\n|---|--:|--:|--:|--:|")
        base = None
        for fmt in FORMATS:
            out = folder / ("out.npy" if fmt == "npy" else f"out-{fmt}")
            runs = [timed(bpeforge_encode(plain, out, fmt, threads), args.cores) for _ in range(args.runs)]
            wall, rss = min(r[0] for r in runs), max(r[1] for r in runs)
            base = base or wall
            print(f"| {fmt} | {wall:.2f} | {args.mb / wall:.0f} | {wall / base - 1:+.1%} | {rss:.0f} |")

        tokenizer_json = folder / "gpt2.json"
        open_tokenizer("gpt2").save_hf(tokenizer_json)
        eod = 50256
        script = folder / "hf_pipeline.py"
        script.write_text(HF_PIPELINE.format(tests=str(ROOT / "tests")), encoding="utf-8")
        hf_prefix, ours_prefix = folder / "hf", folder / "ours"
        env = {"TOKENIZERS_PARALLELISM": "false", "RAYON_NUM_THREADS": "1"}
        hf_command = [sys.executable, str(script), str(records), str(tokenizer_json), str(hf_prefix), str(eod)]
        hf = min(timed([*hf_command, str(threads)], args.cores, env) for _ in range(args.runs))
        eod_option = ["--document-separator", "<|endoftext|>"]
        ours_command = bpeforge_encode(records, ours_prefix, "megatron", threads, eod_option)
        ours = min(timed(ours_command, args.cores) for _ in range(args.runs))
        same = all((folder / f"hf{s}").read_bytes() == (folder / f"ours{s}").read_bytes() for s in (".bin", ".idx"))
        print("\n| pipeline (JSON Lines to Megatron .bin/.idx) | seconds | MB/s | peak RSS MiB |\n|---|--:|--:|--:|")
        usual = f"HF tokenizers x {threads} processes + IndexedDatasetBuilder"
        print(f"| {usual} | {hf[0]:.2f} | {args.mb / hf[0]:.1f} | {hf[1]:.0f} |")
        print(f"| bpeforge encode --format megatron | {ours[0]:.2f} | {args.mb / ours[0]:.1f} | {ours[1]:.0f} |")
        print(f"\nbpeforge / usual pipeline: {hf[0] / ours[0]:.1f}x; files byte-identical: {same}")


if __name__ == "__main__":
    main()
