"""Time of one `encode` call on one sentence: bpeforge against `tokenizers`, fastokens and gigatoken.

    python benchmarks/bench_call.py [FILE.json ...] [--cpu 0] [--calls 20000]

Files: the given `tokenizer.json` paths, else the full-size files of `benchmarks/fetch_hf_files.py`. Each
library, for each file, runs in a fresh interpreter pinned with `taskset -c CPU` (`TOKENIZERS_PARALLELISM=false`,
`RAYON_NUM_THREADS=1`) and calls its own `encode` on each sentence below `--calls` times in a loop, five
times; the best loop gives ns a call. What is timed is what a user's loop pays: the loop's body is the call a
user writes (below), so the attribute lookup, the keyword, the encoding and the ids in the library's own form
(a list; gigatoken's NumPy array), without special tokens:

- bpeforge: `tok.encode(text, add_special_tokens=False)`, `tok = Tokenizer.from_hf(path)`;
- tokenizers: `tok.encode(text, add_special_tokens=False).ids`, `tok = Tokenizer.from_file(path)`;
- fastokens: `tok.encode(text, add_special_tokens=False).ids`, `tok = Tokenizer.from_file(path)`;
- gigatoken: `tok.encode(text)`, `tok = Tokenizer(path)`.

Each library's ids are checked equal to `tokenizers`'.
"""

from __future__ import annotations

import argparse
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


CALLS = {
    "bpeforge": "tok.encode(text, add_special_tokens=False)",
    "tokenizers": "tok.encode(text, add_special_tokens=False).ids",
    "fastokens": "tok.encode(text, add_special_tokens=False).ids",
    "gigatoken": "tok.encode(text)",
}


def loaded(library: str, path: str):
    """The library's tokenizer of `path`."""
    if library == "bpeforge":
        import bpeforge

        return bpeforge.Tokenizer.from_hf(path)
    if library in ("tokenizers", "fastokens"):
        return __import__(library).Tokenizer.from_file(path)
    import gigatoken

    return gigatoken.Tokenizer(path)


def call_loop(library: str):
    """`loop(tok, text, calls)`: the library's call of CALLS, `calls` times, as a user's loop runs it."""
    namespace: dict = {}
    exec(f"def loop(tok, text, calls):\n    for _ in range(calls):\n        {CALLS[library]}\n", namespace)
    return namespace["loop"]


def worker(library: str, path: str, calls: int) -> dict:
    """One library on one file, in this process: ns a call and the ids of each sentence."""
    try:
        tok = loaded(library, path)
    except Exception as refusal:  # each library refuses in its own exception type
        return {"refused": f"{type(refusal).__name__}: {' '.join(str(refusal).split())[:100]}"}
    loop, once = call_loop(library), eval(f"lambda tok, text: {CALLS[library]}")
    result = {}
    for name, text in SENTENCES.items():
        ids = [int(i) for i in once(tok, text)]
        best = min(_timed(loop, tok, text, calls) for _ in range(5))
        result[name] = {"ns": best / calls * 1e9, "ids": ids}
    return result


def _timed(loop, tok, text: str, calls: int) -> float:
    start = time.perf_counter()
    loop(tok, text, calls)
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
