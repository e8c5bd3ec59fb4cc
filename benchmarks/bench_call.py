"""Time of one `encode` call on one sentence: bpeforge against `tokenizers`, fastokens and gigatoken.

    python benchmarks/bench_call.py [FILE.json ...] [--cpu 0] [--calls 20000]

Files: the given `tokenizer.json` paths, else the full-size files of `benchmarks/fetch_hf_files.py`. Each
library, for each file, runs in a fresh interpreter pinned with `taskset -c CPU` (`TOKENIZERS_PARALLELISM=false`,
`RAYON_NUM_THREADS=1`) and calls its own `encode` on each sentence below `--calls` times in a loop, five
times; the best loop gives ns a call. What is timed is what a user's loop pays: the Python call, the
encoding and the ids in the library's own form (a list; gigatoken's NumPy array), without special tokens,
each called as directly as the library allows (`functools.partial` for a keyword; a `lambda` where the ids
are an attribute of the result):

- bpeforge: `Tokenizer.from_hf(path).encode(s, add_special_tokens=False)`;
- tokenizers: `Tokenizer.from_file(path).encode(s, add_special_tokens=False).ids`;
- fastokens: `Tokenizer.from_file(path).encode(s, add_special_tokens=False).ids`;
- gigatoken: `Tokenizer(path).encode(s)`.

Each library's ids are checked equal to `tokenizers`'.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

LIBRARIES = ["bpeforge", "tokenizers", "fastokens", "gigatoken"]
SENTENCES = {
    "english": "The quick brown fox jumps over the lazy dog, and then it runs away.",
    "chat": "Sure! Here's a quick summary of the meeting notes you sent me yesterday:",
    "multilingual": "Der schnelle braune Fuchs – 快速的棕色狐狸跳过了懒狗。",
}


def encoder(library: str, path: str):
    """The library's `encode` of one sentence, as a function of the sentence."""
    if library == "bpeforge":
        import bpeforge

        tok = bpeforge.Tokenizer.from_hf(path)
        return functools.partial(tok.encode, add_special_tokens=False)
    if library in ("tokenizers", "fastokens"):
        module = __import__(library)
        tok = module.Tokenizer.from_file(path)
        return lambda text: tok.encode(text, add_special_tokens=False).ids
    import gigatoken

    tok = gigatoken.Tokenizer(path)
    return tok.encode


def worker(library: str, path: str, calls: int) -> dict:
    """One library on one file, in this process: ns a call and the ids of each sentence."""
    try:
        encode = encoder(library, path)
    except Exception as refusal:  # each library refuses in its own exception type
        return {"refused": f"{type(refusal).__name__}: {' '.join(str(refusal).split())[:100]}"}
    result = {}
    for name, text in SENTENCES.items():
        ids = [int(i) for i in encode(text)]
        best = min(_loop(encode, text, calls) for _ in range(5))
        result[name] = {"ns": best / calls * 1e9, "ids": ids}
    return result


def _loop(encode, text: str, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        encode(text)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--cpu", default="0")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--worker", nargs=2, metavar=("LIBRARY", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker, args.calls)))
        return
    files = args.files or _fetched()
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "RAYON_NUM_THREADS": "1"}
    print(
        f"{'file':20s} {'sentence':13s} " + " ".join(f"{lib:>11s}" for lib in LIBRARIES) + "  bpeforge / fastest peer"
    )
    for path in files:
        name = Path(path).parent.name if Path(path).name == "tokenizer.json" else Path(path).stem
        runs = {}
        for library in LIBRARIES:
            command = ["taskset", "-c", args.cpu, sys.executable, __file__, "--calls", str(args.calls)]
            done = subprocess.run([*command, "--worker", library, path], capture_output=True, text=True, env=env)
            lines = done.stdout.strip().splitlines()
            runs[library] = json.loads(lines[-1]) if done.returncode == 0 and lines else {"refused": "failed"}
        for sentence in SENTENCES:
            _report(name, sentence, runs)


def _report(name: str, sentence: str, runs: dict) -> None:
    reference = runs["tokenizers"].get(sentence, {}).get("ids")
    cells, peers = [], []
    for library in LIBRARIES:
        run = runs[library].get(sentence)
        if run is None:
            cells.append("-")
            continue
        same = reference is None or run["ids"] == reference
        cells.append(f"{run['ns']:.0f}" + ("" if same else " DIFFER"))
        if library in ("fastokens", "gigatoken") and same:
            peers.append(run["ns"])
    ours = runs["bpeforge"].get(sentence)
    ratio = f"{min(peers) / ours['ns']:.2f}x" if ours and peers else "no peer"
    print(f"{name:20s} {sentence:13s} " + " ".join(f"{cell:>11s}" for cell in cells) + f"  {ratio}")


def _fetched() -> list[str]:
    fetch = Path(__file__).resolve().parent / "fetch_hf_files.py"
    done = subprocess.run([sys.executable, str(fetch)], capture_output=True, text=True, check=True)
    return done.stdout.split()


if __name__ == "__main__":
    main()
