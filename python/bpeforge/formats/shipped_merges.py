"""The merges of the rank files bpeforge ships (`bpeforge/tiktoken/data`), shipped too: where each
multi-byte token splits.

A rank file lists no merges, and recovering them (a BPE of every token with the lower ranks,
`formats/rank_merges.rs`) was the largest part of loading o200k (`get_encoding("o200k_base")`, or
`Tokenizer.from_tiktoken` of the same file, recognised by its sha256): 0.2 s on one core. The
result never changes for a shipped file, so `data/NAME.splits` holds it: for every token of more than one
byte, in rank order, one byte, the length of its merge's left part (tokens are at most 255 bytes long).
Cutting the tokens there is 0.05 s for o200k. Each file's sha256 is pinned below, as the rank files' are,
and `tests/test_shipped_merges.py` checks each against the merges recovered from its rank file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from bpeforge import _core
from bpeforge.formats.parts import Merges

DATA = Path(__file__).parent.parent / "tiktoken" / "data"
# The rank files: name -> sha256 of the gunzipped file (tiktoken 0.14.0's `expected_hash`).
RANK_FILES = {
    "r50k_base": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
SPLIT_FILES = {
    "r50k_base": "e2ff5d25561ae97d2fdc48177cb3dddb1c9a2be0c6bb9e9ce1dd3b1351e483e7",
    "cl100k_base": "411552ea5ec9a572475f38b6ee1dacdd1435ec4c502c5af181b019b800a383fc",
    "o200k_base": "d8ce662bbdcc4df6c1f9eaf7d7bf6e79dba3eae7e312bbe079452e4885b5d83e",
}


def shipped_merges(name: str, ranks: Mapping[bytes, int]) -> Merges:
    """The merges of the shipped rank file `name`, whose `{token: rank}` in rank order is `ranks`
    (`shipped_rank_file` names it)."""
    splits = shipped_splits(name)
    tokens = [token for token in ranks if len(token) > 1]
    if len(splits) != len(tokens):
        raise ValueError(f"{DATA / f'{name}.splits'} does not fit {name}'s ranks; reinstall bpeforge")
    return [(token[:left], token[left:]) for token, left in zip(tokens, splits)]


def shipped_splits(name: str) -> bytes:
    """The contents of `data/NAME.splits` (see the top), after checking its sha256."""
    path = DATA / f"{name}.splits"
    splits = path.read_bytes()
    if hashlib.sha256(splits).hexdigest() != SPLIT_FILES[name]:
        raise ValueError(f"{path} is damaged (its sha256 is not {SPLIT_FILES[name]}); reinstall bpeforge")
    return splits


def shipped_rank_file(contents: bytes) -> str | None:
    """The name of the shipped rank file whose (gunzipped) bytes are `contents`, or None."""
    digest = hashlib.sha256(contents).hexdigest()
    return next((name for name, sha256 in RANK_FILES.items() if sha256 == digest), None)


def derive_splits(ranks: Mapping[bytes, int]) -> bytes:
    """What `data/NAME.splits` holds, recovered from the ranks (how the files were made)."""
    return bytes(len(left) for left, _ in _core.merges_from_ranks(list(ranks.items())))
