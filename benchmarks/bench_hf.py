"""Encoding speed per `tokenizer.json` file: bpeforge against `tokenizers`, fastokens and gigatoken, one core.

    python benchmarks/bench_hf.py [FILE.json ...] [--files FILE.json ...] [--data ../shared/data] [--mb 1.0]
        [--cpu 0] [--repeats 3]

Files: the given paths, else the fixtures of tests/data/hf (trimmed to 3,000 merges); the full-size
originals of those fixtures come from `benchmarks/fetch_hf_files.py`, e.g.
`--files $(python benchmarks/fetch_hf_files.py)`. A file named `tokenizer.json` is shown by its folder's name.
Documents: the first `--mb` MB of lines of the
gutenberg and multilingual corpora (half each). Each library, for each file, runs in a fresh interpreter
(through `_spawn.py`, which reports its own peak RSS) pinned with `taskset -c CPU`, with
`TOKENIZERS_PARALLELISM=false` and `RAYON_NUM_THREADS=1`, and calls its fastest way to all the documents'
ids on one core:

- bpeforge: `Tokenizer.from_hf(path).encode_batch_to_numpy(docs, num_threads=1, add_special_tokens=False)`;
- tokenizers: `Tokenizer.from_file(path).encode_batch(docs, add_special_tokens=False)`;
- fastokens: `Tokenizer.from_file(path).encode_batch_flat(docs)` (no special tokens by default);
- gigatoken: `Tokenizer(path).encode_batch(docs, parallel=False)`.

The timed call ends at each library's own form of the ids (NumPy arrays, flat buffers, an awkward Array,
lists of lists); converting them to compare is not timed. Reported per library: the load time (its imports
included), the first call and the best of `--repeats` warm calls in MB/s, and the peak RSS. The ids of every
library are checked equal to `tokenizers`' (a SHA-256 of all ids, as uint32, and of the per-document counts);
a library that refuses the file is shown as such, one that gives other ids as DIFFER.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "data" / "hf"
LIBRARIES = ["bpeforge", "tokenizers", "fastokens", "gigatoken"]
CORPORA = ["gutenberg_500MB.txt.xz", "multilingual.txt.xz"]


def _bpeforge(path: str):
    import bpeforge
    import numpy as np

    tok = bpeforge.Tokenizer.from_hf(path)

    def ids(docs: list[str]):
        if hasattr(tok, "_hf_json"):  # a pipeline tokenizer takes add_special_tokens
            return tok.encode_batch_to_numpy(docs, num_threads=1, add_special_tokens=False)
        return tok.encode_batch_to_numpy(docs, num_threads=1)

    return ids, lambda out: (out[0], np.diff(out[1]))


def _tokenizers(path: str):
    import numpy as np
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(path)

    def ids(docs: list[str]):
        return [e.ids for e in tok.encode_batch(docs, add_special_tokens=False)]

    return ids, lambda rows: (np.fromiter((i for row in rows for i in row), np.uint32), [len(r) for r in rows])


def _fastokens(path: str):
    import fastokens
    import numpy as np

    tok = fastokens.Tokenizer.from_file(path)

    def ids(docs: list[str]):
        return tok.encode_batch_flat(docs)

    return ids, lambda out: (np.frombuffer(out[0], np.uint32), np.diff(np.frombuffer(out[1], np.uint64)))


def _gigatoken(path: str):
    import awkward as ak
    import gigatoken
    import numpy as np

    tok = gigatoken.Tokenizer(path)

    def ids(docs: list[str]):
        return tok.encode_batch(docs, parallel=False)

    return ids, lambda array: (np.asarray(ak.flatten(array), np.uint32), np.asarray(ak.num(array)))


LOADERS = {"bpeforge": _bpeforge, "tokenizers": _tokenizers, "fastokens": _fastokens, "gigatoken": _gigatoken}


def worker(library: str, path: str, docs_path: str, repeats: int) -> dict:
    """One library on one file, in this process: what `main` prints as one JSON line."""
    import numpy as np

    docs = json.loads(Path(docs_path).read_text(encoding="utf-8"))
    size = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    start = time.perf_counter()
    try:
        encode, arrays = LOADERS[library](path)
    except Exception as refusal:  # each library refuses in its own exception type
        return {"refused": f"{type(refusal).__name__}: {' '.join(str(refusal).split())[:100]}"}
    loaded = time.perf_counter()
    out = encode(docs)
    first = time.perf_counter() - loaded
    flat, counts = arrays(out)
    warm = min(_timed(encode, docs) for _ in range(repeats))
    digest = hashlib.sha256(np.ascontiguousarray(flat, np.uint32).tobytes()).hexdigest()
    counts_digest = hashlib.sha256(np.asarray(counts, np.int64).tobytes()).hexdigest()
    return {
        "load_s": loaded - start,
        "first_mb_s": size / first,
        "warm_mb_s": size / warm,
        "ids": f"{digest}:{counts_digest}",
        "tokens": len(flat),
    }


def _timed(encode, docs: list[str]) -> float:
    start = time.perf_counter()
    encode(docs)
    return time.perf_counter() - start


def documents(data: Path, megabytes: float) -> list[str]:
    """The first lines of each corpus, `megabytes` MB in all, non-empty lines as documents."""
    docs: list[str] = []
    for name in CORPORA:
        budget = int(megabytes * 1e6 / len(CORPORA))
        with lzma.open(data / "corpora" / name, "rt", encoding="utf-8", errors="replace") as corpus:
            for line in corpus:
                if line.strip():
                    docs.append(line)
                    budget -= len(line.encode("utf-8"))
                if budget <= 0:
                    break
    return docs


def run(library: str, path: Path, docs_path: str, cpu: int, repeats: int) -> dict:
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "RAYON_NUM_THREADS": "1"}
    command = ["taskset", "-c", str(cpu), sys.executable, str(Path(__file__).parent / "_spawn.py"), sys.executable]
    command += [__file__, "--worker", library, str(path), "--docs", docs_path, "--repeats", str(repeats)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    peak = [line for line in done.stderr.splitlines() if line.startswith("SPAWN_PEAK_RSS_KIB ")]
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-2 if peak else -1]
        return {"refused": f"exit {done.returncode}: {last[:120]}"}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if peak:
        result["peak_mib"] = int(peak[-1].split()[1]) / 1024
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--files", dest="more_files", nargs="+", type=Path, default=[], help="more files")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--mb", type=float, default=1.0)
    parser.add_argument("--cpu", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--docs", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, str(args.files[0]), args.docs, args.repeats)))
        return
    files = [*args.files, *args.more_files] or sorted(FIXTURES.glob("*.json"))
    docs = documents(args.data, args.mb)
    print(f"{len(docs)} documents, {sum(len(d.encode()) for d in docs) / 1e6:.2f} MB, one core (cpu {args.cpu})")
    print("| file | library | load s | first MB/s | warm MB/s | peak MiB | ids |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8") as docs_file:
        json.dump(docs, docs_file)
        docs_file.flush()
        for path in files:
            results = {library: run(library, path, docs_file.name, args.cpu, args.repeats) for library in LIBRARIES}
            reference = results["tokenizers"].get("ids")
            for library, result in results.items():
                print(_row(_label(path), library, result, reference), flush=True)


def _label(path: Path) -> str:
    """A file's name in the table: its folder's for a `tokenizer.json` (a model's directory)."""
    return path.parent.name if path.name == "tokenizer.json" else path.stem


def _row(file: str, library: str, result: dict, reference: str | None) -> str:
    if "refused" in result:
        return f"| {file} | {library} | refused: {result['refused']} | | | | |"
    same = "reference" if library == "tokenizers" else ("same" if result["ids"] == reference else "DIFFER")
    return (
        f"| {file} | {library} | {result['load_s']:.3f} | {result['first_mb_s']:.1f} | {result['warm_mb_s']:.1f}"
        f" | {result.get('peak_mib', 0):.0f} | {same} |"
    )


if __name__ == "__main__":
    main()
