"""The `bpeforge` command as a user runs it (a real process), for the CLI test modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_cli(*args: str | Path) -> subprocess.CompletedProcess:
    """`python -m bpeforge ARGS`, its output captured as text; a hang fails after two minutes."""
    return subprocess.run(
        [sys.executable, "-m", "bpeforge", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def train_with_cli(root: Path, corpus: Path, *options: str | Path) -> Path:
    """`bpeforge train CORPUS OPTIONS -o ROOT/tok --no-progress`, which must succeed; the tokenizer's folder."""
    result = run_cli("train", corpus, *options, "-o", root / "tok", "--no-progress")
    assert result.returncode == 0, result.stderr
    return root / "tok"
