"""Record the SuperBPE fork's stage 2 on the corpora of this folder (see README.md).

Run with the fork's `tokenizers` (alisawuffles/tokenizers-superbpe, bindings/python),
never with PyPI's: `python make_fixture.py`. Stage 1 runs in an empty folder, so
the fork trains from scratch; stage 2 runs in a folder holding stage 1's
`merges.txt` cut to its first t lines, which the fork reads from the working
directory, as the reference's scripts/extend_tokenizer.sh does.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

HERE = Path(__file__).resolve().parent
R1 = r"(?=(\d{3})+(?!\d))| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
DIGIT_GROUPS = r"(?=(\d{3})+(?!\d))"
CASES = [
    {"name": "gutenberg", "corpus": "gutenberg.txt", "vocab_size": 700, "t": 301},
    {"name": "udhr", "corpus": "udhr.txt", "vocab_size": 800, "t": 401},
]


def train(corpus: Path, vocab_size: int, split: str, workdir: Path) -> list[str]:
    """Train in `workdir` (the fork looks for merges.txt there); the merges.txt lines."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=False),
            pre_tokenizers.Split(Regex(split), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    previous = os.getcwd()
    os.chdir(workdir)
    try:
        tokenizer.train([str(corpus)], trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False))
    finally:
        os.chdir(previous)
    out = workdir / "saved"
    out.mkdir()
    tokenizer.model.save(str(out))
    return (out / "merges.txt").read_text(encoding="utf-8").splitlines()


def main() -> None:
    for case in CASES:
        corpus = HERE / case["corpus"]
        with tempfile.TemporaryDirectory() as stage1_dir, tempfile.TemporaryDirectory() as stage2_dir:
            stage1 = train(corpus, case["vocab_size"], R1, Path(stage1_dir))
            head = stage1[: case["t"]]
            (Path(stage2_dir) / "merges.txt").write_text("\n".join(head) + "\n", encoding="utf-8")
            stage2 = train(corpus, case["vocab_size"], DIGIT_GROUPS, Path(stage2_dir))
        case["merges"] = f"{case['name']}.stage2.merges.txt"
        (HERE / case["merges"]).write_text("\n".join(stage2) + "\n", encoding="utf-8")
        print(case["name"], "stage 1:", len(stage1) - 1, "merges; stage 2:", len(stage2) - 1)
    (HERE / "cases.json").write_text(json.dumps(CASES, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
