"""A released SuperBPE tokenizer in bpeforge: the same ids as HF `tokenizers`, and the time of each.

The release (`PythonNut/superbpe`, `tokenizer_json/*_extend_200K_mw4_colon/`) ships `vocab.json` and
`merges.txt`; this builds the `tokenizer.json` as the reference's `utils.py` does (BPE from the two files, the
paper's stage-2 pre-tokenizer, a ByteLevel decoder), loads it with `bpeforge.Tokenizer.from_hf`, and encodes
the first MB of each shared corpus line by line with both on one thread.

    python benchmarks/check_superbpe_release.py \\
        superbpe/tokenizer_json/olmo2_p99_truncate_10G_180K_extend_200K_mw4_colon ../shared/data/corpora --mb 1
"""

from __future__ import annotations

import argparse
import lzma
import os
import tempfile
import time
from pathlib import Path

# One thread for tokenizers' batches too (rayon reads this when its pool starts).
os.environ.setdefault("RAYON_NUM_THREADS", "1")
CORPORA = ["20news.txt.xz", "multilingual.txt.xz", "gutenberg_500MB.txt.xz"]


def build_release(directory: Path, out: Path):
    """The release's tokenizer as `tokenizers` builds it, saved to `out`."""
    from tokenizers import Regex, Tokenizer, decoders, pre_tokenizers
    from tokenizers.models import BPE

    tokenizer = Tokenizer(BPE.from_file(str(directory / "vocab.json"), str(directory / "merges.txt")))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=False),
            pre_tokenizers.Split(pattern=Regex(r"(?=(\d{3})+(?!\d))"), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    tokenizer.save(str(out))
    return tokenizer


def corpus_lines(path: Path, megabytes: float) -> list[str]:
    with lzma.open(path, "rb") as source:
        data = source.read(int(megabytes * 1e6))
    return data[: data.rfind(b"\n") + 1].decode("utf-8").splitlines(keepends=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("release", type=Path, help="a directory with the release's vocab.json and merges.txt")
    parser.add_argument("corpora", type=Path, help="the shared corpora directory")
    parser.add_argument("--mb", type=float, default=1.0, help="MB of each corpus")
    args = parser.parse_args()

    import bpeforge

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "tokenizer.json"
        hf = build_release(args.release, path)
        ours = bpeforge.Tokenizer.from_hf(path)
    failures = 0
    for name in CORPORA:
        lines = corpus_lines(args.corpora / name, args.mb)
        started = time.perf_counter()
        expected = [encoding.ids for encoding in hf.encode_batch(lines)]
        hf_seconds = time.perf_counter() - started
        started = time.perf_counter()
        got = ours.encode_batch(lines, num_threads=1)
        our_seconds = time.perf_counter() - started
        differing = sum(a != b for a, b in zip(expected, got))
        failures += differing
        verdict = "same ids" if expected == got else f"{differing} of {len(lines)} lines differ"
        ids = sum(map(len, got))
        print(f"{name:24s} {verdict}, {ids:,} ids; tokenizers {hf_seconds:.2f} s, bpeforge {our_seconds:.2f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
