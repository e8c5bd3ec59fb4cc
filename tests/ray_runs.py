"""What the Ray test modules share: a Ray head node on loopback that this process joins, a port where nothing
listens, and the random texts and small tokenizers they encode with."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import bpeforge


def free_port() -> int:
    """A loopback port nothing listens on (the OS picked it for a socket now closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def joined_head_node() -> Iterator[str]:
    """`ray start --head` with 2 CPUs on loopback, joined by this process; its address. Stopped (`ray stop
    --force`) on leaving, whatever happened."""
    import bpeforge.ray as bray
    import ray

    port = free_port()
    ray_bin = Path(sys.executable).with_name("ray")
    start = [str(ray_bin), "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1", "--num-cpus=2"]
    subprocess.run([*start, "--include-dashboard=false", "--disable-usage-stats"], check=True, capture_output=True)
    address = f"127.0.0.1:{port}"
    try:
        bray.connect(address)
        yield address
    finally:
        ray.shutdown()
        subprocess.run([str(ray_bin), "stop", "--force"], capture_output=True)


def random_words(seed: int, words: int, vocabulary: list[str], eot: str, eot_rate: float) -> str:
    """`words` words of `vocabulary`, each followed by a space or a newline, and `eot` after about `eot_rate`
    of them: the same text for the same arguments."""
    rng = random.Random(seed)
    return "".join(rng.choice(vocabulary) + rng.choice([" ", " ", "\n"]) + (eot if rng.random() < eot_rate else "")
                   for _ in range(words))  # fmt: skip


def trained_tokenizer(corpus: list[Path], vocab_size: int, special: str) -> bpeforge.Tokenizer:
    """The tokenizer `bpeforge.train` makes from `corpus` on this machine, `special` its special token."""
    result = bpeforge.train(corpus, vocab_size, [special])
    return bpeforge.Tokenizer(result.vocab, result.merges, [special])
