"""Long runs of a short period (`aaaa`, spaces, `1212`, a line of `=`, an emoji repeated) against tiktoken.

A pre-token over 1 KB that repeats a period of up to 16 bytes is merged a chunk
at a time, each chunk equal to the last one taking its ids (`bpe/period.rs`,
`bpe/chunked.rs`); the Rust tests check that path against the plain merge on
random vocabularies. Here the whole encoder is checked against tiktoken on
every bundled encoding, on generated runs of random periods and lengths, and on
near-runs (one char off, a different first or last char) that must take the
other paths with the same ids. tiktoken builds its encodings offline from the
rank files bpeforge ships, so these tests need no shared data.
"""

from __future__ import annotations

import random

import bpeforge.tiktoken as bt
import pytest
from bpeforge.tiktoken.registry import ENCODING_CONSTRUCTORS

tiktoken = pytest.importorskip("tiktoken")

NAMES = ["r50k_base", "cl100k_base", "o200k_base"]
PERIOD_MAX = 16  # bytes: `bpe/period.rs`
# Chars that the three patterns keep together in one pre-token, by class
# (cl100k and o200k cut digits in threes: still runs, in many pieces).
POOLS = {
    "letters": "aAzZéñ中文ßя",
    "digits": "0123456789",
    "spaces": " ",
    "symbols": "=-*#.~_/",
    "emoji": "🙂👍🏽🎉",
}


@pytest.fixture(scope="module", params=NAMES)
def pair(request):
    """(bpeforge's encoding, tiktoken's encoding) of one name, from the same rank file."""
    return bt.get_encoding(request.param), tiktoken.Encoding(**ENCODING_CONSTRUCTORS[request.param]())


def random_period(rng: random.Random, pool: str, max_bytes: int = PERIOD_MAX) -> str:
    """One to four chars of ``pool`` that fit in ``max_bytes`` bytes of UTF-8 (at least one char)."""
    period = rng.choice(pool)
    for _ in range(rng.randrange(4)):
        char = rng.choice(pool)
        if len((period + char).encode()) <= max_bytes:
            period += char
    return period


def run_of(period: str, n_bytes: int) -> str:
    """``period`` repeated to about ``n_bytes`` bytes, cut anywhere in the last period."""
    repeats, rest = divmod(n_bytes, len(period.encode()))
    return period * repeats + period[: rest % (len(period) + 1)]


def test_generated_runs_give_tiktokens_ids(pair):
    ours, reference = pair
    rng = random.Random(20261129)
    for _ in range(60):
        pool = rng.choice(list(POOLS.values()))
        text = run_of(random_period(rng, pool), rng.randrange(1025, 30_000))
        expected = reference.encode(text)
        got = ours.encode(text)
        assert got == expected, f"{ours.name}: run of {text[:12]!r}..., {len(text.encode())} bytes"


def test_near_runs_and_runs_between_other_text_give_tiktokens_ids(pair):
    """Not runs (one char off, another first or last char, a period over 16 bytes), and runs inside text."""
    ours, reference = pair
    rng = random.Random(7)
    for _ in range(30):
        pool = rng.choice(list(POOLS.values()))
        run = run_of(random_period(rng, pool), rng.randrange(1025, 20_000))
        at = rng.randrange(len(run))
        texts = [
            run[:at] + rng.choice(pool + "x") + run[at + 1 :],
            rng.choice(pool) + run,
            run + rng.choice(pool),
            f"Some words, then {run} and after it more words.\n",
            run_of("".join(rng.choice(pool) for _ in range(9)), 20_000),
        ]
        for text in texts:
            assert ours.encode(text) == reference.encode(text), f"{ours.name}: {text[:12]!r}..., {len(text)} chars"


@pytest.mark.parametrize("size", [1025, 4096, 65_537])
def test_the_benchmarks_runs_give_tiktokens_ids(pair, size):
    """The worst cases of `benchmarks/bench_encode.py` that are runs, at sizes around the chunk and table limits."""
    ours, reference = pair
    for char in ["a", "7", " ", "🙂", "é", "中"]:
        text = char * (size // len(char.encode()))
        assert ours.encode(text) == reference.encode(text), f"{ours.name}: {char!r} x {len(text)}"


def test_a_huge_piece_encoded_again_takes_the_ids_it_kept_and_a_changed_one_does_not(pair):
    """Pieces over 1 KiB are kept whole per thread (`encode/cache/huge_pieces.rs`): the same megabyte of random
    digits (one `\\p{N}+` piece under GPT-2) again gives the same ids, and the same piece with one digit changed,
    or cut shorter, is merged anew, never answered from what was kept."""
    ours, theirs = pair
    rng = random.Random(5)
    digits = "".join(rng.choice("0123456789") for _ in range(300_000))
    changed = digits[:150_000] + str((int(digits[150_000]) + 1) % 10) + digits[150_001:]
    for text in (digits, digits, changed, digits[:-1], " " + digits, digits):
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
