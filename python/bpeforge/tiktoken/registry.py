"""`get_encoding` and `list_encoding_names`: OpenAI's encodings, built from the rank files this package ships.

tiktoken downloads its rank files on first use; bpeforge ships them (see
`data/SOURCES.md`), so these work offline. Each file's sha256 is the hash
tiktoken pins, checked on load. The definitions (pattern, special tokens and
their ids, vocabulary size) are those of tiktoken's `openai_public.py`.
`p50k_base`, `p50k_edit` and `o200k_harmony` are not shipped.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from pathlib import Path
from typing import Any, Callable

from bpeforge import _core
from bpeforge._core import PATTERNS
from bpeforge.formats.shipped_merges import RANK_FILES
from bpeforge.tiktoken.encoding import Encoding
from bpeforge.tiktoken.patterns import R50K_PAT_STR

DATA = Path(__file__).parent / "data"
ENDOFTEXT = "<|endoftext|>"
ENDOFPROMPT = "<|endofprompt|>"


def load_ranks(name: str) -> dict[bytes, int]:
    """`{token bytes: rank}` of a shipped rank file (`base64 rank` lines), after checking its sha256."""
    parsed = _core.parse_rank_file(rank_file_contents(name))  # one pass in Rust; tiktoken's files are canonical
    if parsed is None:
        raise ValueError(f"{DATA / f'{name}.tiktoken.gz'} is not a rank file bpeforge reads; reinstall bpeforge")
    return dict(parsed)


def rank_file_contents(name: str) -> bytes:
    """The gunzipped bytes of a shipped rank file, after checking their sha256."""
    path = DATA / f"{name}.tiktoken.gz"
    contents = gzip.decompress(path.read_bytes())
    if hashlib.sha256(contents).hexdigest() != RANK_FILES[name]:
        raise ValueError(f"{path} is damaged (its sha256 is not tiktoken's {RANK_FILES[name]}); reinstall bpeforge")
    return contents


# Each encoding's definition but its `mergeable_ranks` (tiktoken's `openai_public.py`), and its rank file.
_CL100K_SPECIALS = {ENDOFTEXT: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260}
DEFINITIONS: dict[str, dict[str, Any]] = {
    "gpt2": {"explicit_n_vocab": 50257, "pat_str": R50K_PAT_STR, "special_tokens": {ENDOFTEXT: 50256}},
    "r50k_base": {"explicit_n_vocab": 50257, "pat_str": R50K_PAT_STR, "special_tokens": {ENDOFTEXT: 50256}},
    "cl100k_base": {"pat_str": dict(PATTERNS)["cl100k"], "special_tokens": {**_CL100K_SPECIALS, ENDOFPROMPT: 100276}},
    "o200k_base": {"pat_str": dict(PATTERNS)["o200k"], "special_tokens": {ENDOFTEXT: 199999, ENDOFPROMPT: 200018}},
}
# GPT-2's own files give the same ranks as r50k_base (the rank file was made from them).
RANK_FILE_OF = {"gpt2": "r50k_base"}  # an encoding's rank file, where its name is not the file's


def _constructor(name: str) -> Callable[[], dict[str, Any]]:
    """tiktoken's constructor of the encoding `name`: its whole definition, the ranks read from the file."""

    def definition() -> dict[str, Any]:
        ranks = load_ranks(RANK_FILE_OF.get(name, name))
        return {"name": name, **DEFINITIONS[name], "mergeable_ranks": ranks}

    return definition


ENCODING_CONSTRUCTORS: dict[str, Callable[[], dict[str, Any]]] = {name: _constructor(name) for name in DEFINITIONS}
ENCODINGS: dict[str, Encoding] = {}
_lock = threading.RLock()


def get_encoding(encoding_name: str) -> Encoding:
    """The encoding of that name, built once per process (a second call returns the same object).

    Built straight from the rank file (`Encoding._from_rank_file`): no Python object per token until
    `_mergeable_ranks` is first asked for.

    >>> get_encoding("cl100k_base").encode("hello world")
    [15339, 1917]
    """
    if not isinstance(encoding_name, str):
        raise ValueError(f"Expected a string in get_encoding, got {type(encoding_name)}")
    with _lock:
        if encoding_name not in ENCODINGS:
            if encoding_name not in ENCODING_CONSTRUCTORS:
                raise ValueError(
                    f"Unknown encoding {encoding_name}. bpeforge.tiktoken ships {', '.join(ENCODING_CONSTRUCTORS)}; "
                    "for another, build an Encoding from its rank file (see docs/tiktoken.md)"
                )
            contents = rank_file_contents(RANK_FILE_OF.get(encoding_name, encoding_name))
            encoding = Encoding._from_rank_file(encoding_name, contents, **DEFINITIONS[encoding_name])
            encoding._pickled_as = (get_encoding, (encoding_name,))  # pickles as its name
            ENCODINGS[encoding_name] = encoding
        return ENCODINGS[encoding_name]


# The preset each shipped rank file's encoding pre-tokenizes with (r50k_base's pattern splits as gpt2's).
RANK_FILE_PATTERNS = {"r50k_base": "gpt2", "cl100k_base": "cl100k", "o200k_base": "o200k"}


def recognise_rank_file(path: str | os.PathLike[str]) -> str | None:
    """The name of the shipped encoding whose rank file `path` is (plain or compressed, compared by the sha256
    tiktoken pins), or None: a `.tiktoken` file records no pattern, but a known one's pattern is known."""
    reader = _core.InputReader(os.fspath(path))
    digest = hashlib.sha256()
    while block := reader.read(1 << 20):
        digest.update(block)
    found = digest.hexdigest()
    return next((name for name, sha256 in RANK_FILES.items() if sha256 == found), None)


def list_encoding_names() -> list[str]:
    """The encodings `get_encoding` can build."""
    return list(ENCODING_CONSTRUCTORS)
