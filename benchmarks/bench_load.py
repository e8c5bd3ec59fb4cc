"""Time to load a tokenizer, each load in a fresh process: what a worker (a Ray task, a data-loader process)
pays before its first id.

    python benchmarks/bench_load.py [--data ../shared/data] [--runs 5] [--cpu 0]

Each case runs `--runs` times, each in a new interpreter pinned with `taskset -c CPU`; the clock covers the
load call only (the libraries and NumPy are imported before it starts, as `bench_encode.py` does). Reported:
the best and the median wall time, and the best CPU time (all threads), in seconds; and the best CPU time of
the load and then one `encode` of a short text (a worker's first call: a load that leaves work to the first
call shows there). The inputs: GPT-2's
vocab.json/merges.txt (the CS336 fixture), a `Tokenizer.save` directory and a tokenizer.json of it, and the
r50k (GPT-2's ranks), cl100k and o200k rank files gunzipped, and the tokenizers of those pickled (what a Ray
worker unpickles).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.metadata
import json
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPECIALS = {
    "gpt2": {"<|endoftext|>": 50256},
    "cl100k": {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
               "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
    "o200k": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}  # fmt: skip

# (library, what is called, encoding, imports before the clock, the timed load). `files` holds the paths; gpt2's
# rank file is r50k_base (its ranks are GPT-2's ids).
CASES = [
    ("bpeforge", "Tokenizer.load(dir)", "gpt2", "import bpeforge", "bpeforge.Tokenizer.load(files['gpt2_dir'])"),
    ("bpeforge", "Tokenizer.from_files", "gpt2", "import bpeforge",
     "bpeforge.Tokenizer.from_files(files['vocab'], files['merges'], list(specials))"),
    ("gigatoken", "Tokenizer(tokenizer.json)", "gpt2", "import gigatoken", "gigatoken.Tokenizer(files['gpt2_json'])"),
]  # fmt: skip
for _enc, _name in (("gpt2", "r50k_base"), ("cl100k", "cl100k_base"), ("o200k", "o200k_base")):
    CASES += [
        ("bpeforge", "Tokenizer.from_tiktoken", _enc, "import bpeforge",
         f"bpeforge.Tokenizer.from_tiktoken(files['{_enc}'], '{_enc}', specials)"),
        ("bpeforge", "tiktoken.get_encoding", _enc, "import bpeforge.tiktoken as b",
         f"b.get_encoding('{'gpt2' if _enc == 'gpt2' else _name}')"),
        ("bpeforge", "pickle.loads(Tokenizer)", _enc,
         f"import bpeforge, pickle; p = open(files['{_enc}_pickle'], 'rb').read()", "pickle.loads(p)"),
        ("tiktoken", "Encoding(load_tiktoken_bpe)", _enc, "import tiktoken, tiktoken.load as tl",
         f"tiktoken.Encoding('{_enc}', pat_str=PAT['{_enc}'], special_tokens=specials, "
         f"mergeable_ranks=tl.load_tiktoken_bpe(files['{_enc}']))"),
        ("gigatoken", "Tokenizer.from_tiktoken", _enc, "import gigatoken",
         f"gigatoken.Tokenizer.from_tiktoken(files['{_enc}'], special_tokens=specials)"),
    ]  # fmt: skip

CHILD = """
import json, sys, time
import numpy
files, specials, PAT = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
{setup}
start, cpu = time.perf_counter(), time.process_time()
tok = {load}
wall, loaded = time.perf_counter() - start, time.process_time() - cpu
ids = tok.encode("Hello world! A first call on a short text, as a worker makes.")
print(wall, loaded, time.process_time() - cpu)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cpu", default="0", help="taskset -c CPU for every child")
    parser.add_argument("--only", help="run only cases whose library or encoding contains this")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = prepare_files(args.data, Path(tmp))
        patterns = json.dumps(_patterns())
        header = f"| library | version | call | encoding | best s (of {args.runs}) | median s | best CPU s |"
        print(header + " + first encode, CPU s |")
        print("|---|---|---|---|--:|--:|--:|--:|")
        for library, call, encoding, setup, load in CASES:
            if args.only and args.only not in (library, encoding):
                continue
            code = CHILD.format(setup=setup, load=load)
            command = ["taskset", "-c", args.cpu] if shutil.which("taskset") else []
            command += [sys.executable, "-c", code, json.dumps(files), json.dumps(SPECIALS[encoding]), patterns]
            runs = [_run(command) for _ in range(args.runs)]
            wall, cpu, first = [run[0] for run in runs], [run[1] for run in runs], [run[2] for run in runs]
            row = [library, importlib.metadata.version(library), f"`{call}`", encoding]
            row += [f"{min(wall):.3f}", f"{statistics.median(wall):.3f}", f"{min(cpu):.3f}", f"{min(first):.3f}"]
            print("| " + " | ".join(row) + " |")


def prepare_files(data: Path, tmp: Path) -> dict[str, str]:
    import bpeforge

    cs336, openai = data / "cs336", data / "openai"
    files = {"vocab": str(cs336 / "gpt2_vocab.json"), "merges": str(cs336 / "gpt2_merges.txt")}
    gpt2 = bpeforge.Tokenizer.from_files(files["vocab"], files["merges"], list(SPECIALS["gpt2"]))
    gpt2.save(tmp / "gpt2")
    files["gpt2_dir"] = str(tmp / "gpt2")
    files["gpt2_json"] = str(gpt2.save_hf(tmp / "gpt2-tokenizer.json"))
    shipped = ROOT / "python" / "bpeforge" / "tiktoken" / "data"
    rank_files = {"gpt2": shipped / "r50k_base.tiktoken.gz"}
    rank_files.update({encoding: openai / f"{encoding}_base.tiktoken.gz" for encoding in ("cl100k", "o200k")})
    for encoding, gzipped in rank_files.items():
        plain = tmp / gzipped.stem  # gigatoken tells the encoding from the name
        with gzip.open(gzipped, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        files[encoding] = str(plain)
        # What a Ray worker loads: the tokenizer as `ray.put` pickles it.
        pickled = bpeforge.Tokenizer.from_tiktoken(plain, encoding, SPECIALS[encoding])
        files[f"{encoding}_pickle"] = str(tmp / f"{encoding}.pickle")
        (tmp / f"{encoding}.pickle").write_bytes(pickle.dumps(pickled))
    return files


def _patterns() -> dict[str, str]:
    from bpeforge import PATTERNS

    return dict(PATTERNS)


def _run(command: list[str]) -> tuple[float, float, float]:
    """The load's wall time, the CPU time of all the process's threads during it (on a machine that others
    share, the CPU time is the steadier figure), and that CPU time to the end of the first encode."""
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{command[-4][:200]}...: {done.stderr.strip().splitlines()[-1]}")
    wall, cpu, first = done.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu), float(first)


if __name__ == "__main__":
    main()
