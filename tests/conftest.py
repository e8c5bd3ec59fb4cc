"""Fixtures shared by the test modules: where the shared data lives, GPT-2, and a Ray head node.

The CS336 fixtures and the benchmark corpora are not in the repository; tests
find them through BPEFORGE_TEST_DATA (which `.ci/run` sets) and skip, saying
so, when it is unset, so that a fresh clone still runs the rest of the suite.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

# A suite started as a background job of a non-interactive shell (`bash .ci/run &`, `nohup`) inherits SIGINT
# ignored, and so would every process it starts: the Ctrl-C tests (test_interrupts.py, test_cli.py, ...) then
# see nothing. Python's own handler again here; a process the tests start gets the default at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# Likewise SIGHUP under `nohup`: test_interrupts.py's SIGHUP test starts the CLI expecting the default.
if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)

SPECIAL = "<|endoftext|>"
# The CS336 fixture texts that encoding tests run on.
CS336_TEXTS = [
    "corpus.en",
    "tinystories_sample.txt",
    "address.txt",
    "german.txt",
    "special_token_double_newlines_non_whitespace.txt",
    "special_token_trailing_newlines.txt",
]


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    root = os.environ.get("BPEFORGE_TEST_DATA")
    if not root:
        pytest.skip("set BPEFORGE_TEST_DATA=path/to/shared/data to run the tests on the shared fixtures")
    return Path(root)


@pytest.fixture(scope="session")
def cs336_dir(shared_data_dir) -> Path:
    directory = shared_data_dir / "cs336"
    # Set but wrong is a broken setup, not a reason to skip.
    assert directory.is_dir(), f"BPEFORGE_TEST_DATA={shared_data_dir} has no cs336/ directory"
    return directory


@pytest.fixture(scope="session")
def gpt2_paths(cs336_dir) -> tuple[Path, Path]:
    return cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt"


@pytest.fixture(scope="session")
def gpt2(gpt2_paths):
    """GPT-2's tokenizer from the CS336 fixture files, with `<|endoftext|>` special."""
    from bpeforge import Tokenizer

    return Tokenizer.from_files(*gpt2_paths, [SPECIAL])


@pytest.fixture(scope="session")
def cs336_texts(cs336_dir) -> dict[str, str]:
    """The CS336 texts by name, read with newline="" so CRLF stays CRLF."""
    texts = {}
    for name in CS336_TEXTS:
        with open(cs336_dir / name, encoding="utf-8", newline="") as f:
            texts[name] = f.read()
    return texts


@pytest.fixture(scope="module")
def cluster():
    """A 2-CPU Ray head node on loopback, joined by this process; its address. One per test module that asks
    (the Ray test modules skip without Ray), stopped when the module's tests end."""
    from ray_runs import joined_head_node

    with joined_head_node() as address:
        yield address
