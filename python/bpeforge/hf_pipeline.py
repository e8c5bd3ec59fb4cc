"""HF `tokenizer.json` files of byte-level BPE models, their whole pipeline run in the Rust core (`bpeforge::hf`).

`Tokenizer.from_hf(path)` loads any such file (Llama 3, Qwen 2, DeepSeek, OLMo, GPT-NeoX, Falcon, Phi-2,
RoBERTa, Whisper, ...) and `Tokenizer.from_pretrained(directory)` the `tokenizer.json` of a model directory.
A file that is only a vocabulary, merges and GPT-2's pre-tokenizer loads as a plain `Tokenizer`
(`bpeforge.formats.hf.load_hf`); any other becomes a `Tokenizer` whose encoding runs the file's
normalizer, added tokens, pre-tokenizer, BPE options and post-processor with the ids HF `tokenizers` gives.
What bpeforge cannot run exactly is refused with a ValueError naming the file and the component
(docs/hf.md lists both).

`encode(text, add_special_tokens=True)`: the post-processor's tokens (Llama 3's BOS, RoBERTa's `<s>` and
`</s>`) are added by default, as `tokenizers` and `transformers` do; `add_special_tokens=False` leaves them
out. The file's added tokens are always matched in the text, as in `tokenizers`.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from bpeforge import _core
from bpeforge.arguments import check_str, explain_type_errors
from bpeforge.formats import hf
from bpeforge.formats.atomic import write_text_atomically

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    import numpy as np

    from bpeforge.tokenizer import Tokenizer

PIPELINE = "tokenizer.json pipeline"
T = TypeVar("T")


def load_file(cls: type[Tokenizer], path: str | os.PathLike[str], cache_size: int) -> Tokenizer:
    """The tokenizer of the `tokenizer.json` at `path` (see the module docstring).

    The file is read and parsed once: the document decides whether it is a plain tokenizer, and a pipeline's
    core parses the same text; the Python vocabulary and merges are made when first asked for (the merges
    were a second parse of the file, two thirds of loading Llama 3's).
    """
    path = Path(path)
    text, doc = hf.read_document(path)
    try:
        parts = hf.hf_parts(doc, path)
    except ValueError as plain_refusal:
        try:
            return _restore(cls, text, cache_size)
        except ValueError as refusal:
            raise ValueError(f"{path}: {refusal}") from plain_refusal
    return cls._from_parts(parts, path, cache_size)


def load_directory(
    cls: type[Tokenizer], directory: str | os.PathLike[str], *, cache_size: int | None = None
) -> Tokenizer:
    """Load the `tokenizer.json` of a model directory (as `transformers.AutoTokenizer.from_pretrained` finds it).

    Byte-level BPE only; the file is loaded as `Tokenizer.from_hf` loads it.
    """
    directory = Path(directory)
    path = directory / hf.HF_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{directory}: no {hf.HF_FILE} here; give a model directory that holds one")
    return cls.from_hf(path) if cache_size is None else cls.from_hf(path, cache_size=cache_size)


_CLASSES: dict[type, type] = {}


def _pipeline_class(cls: type[Tokenizer]) -> type[Tokenizer]:
    """`cls` with the pipeline's methods: a subclass of it, so `isinstance(t, Tokenizer)` holds."""
    if cls not in _CLASSES:
        _CLASSES[cls] = type(f"Hf{cls.__name__}", (PipelineMethods, cls), {"__module__": cls.__module__, "_base": cls})
    return _CLASSES[cls]


class PipelineMethods:
    """The methods of a `Tokenizer` that differ when its `_core` is an `HfPipeline`."""

    runs_pipeline = True  # see `Tokenizer.runs_pipeline`
    _base: type
    _core: Any
    _hf_json: str
    _cache_size: int

    def encode(self, text: str, *, add_special_tokens: bool = True) -> list[int]:
        """The ids of `text`, with the post-processor's special tokens around them unless `add_special_tokens=False`.

        A loaded tokenizer calls the core's method directly (see `_restore`); it checks the type itself."""
        return self._core.encode(text, add_special_tokens)

    def encode_to_numpy(self, text: str, *, add_special_tokens: bool = True) -> np.ndarray:
        """`encode` as a uint32 array."""
        import numpy as np

        return np.asarray(self._core.encode_to_array(check_str(text), add_special_tokens))

    def encode_batch(
        self, texts: Iterable[str], num_threads: int | None = None, *, add_special_tokens: bool = True
    ) -> list[list[int]]:
        """`encode` of each text, in parallel (all cores by default) without the GIL."""
        texts = _texts(texts)
        return explain_type_errors(texts, lambda: self._core.encode_batch(texts, num_threads, add_special_tokens))

    def encode_batch_to_numpy(
        self, texts: Iterable[str], num_threads: int | None = None, *, add_special_tokens: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """All the texts' ids in one uint32 array, and the int64 offsets of each text's ids in it."""
        import numpy as np

        texts = _texts(texts)
        encode = self._core.encode_batch_to_arrays
        ids, offsets = explain_type_errors(texts, lambda: encode(texts, num_threads, add_special_tokens))
        return np.asarray(ids), np.frombuffer(offsets, dtype=np.dtype("<i8"))

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        raise NotImplementedError(
            "encode_iterable cuts text where its pre-tokenizer allows, which a tokenizer.json pipeline does not say; "
            "encode each document with encode or encode_batch"
        )

    @property
    def pattern(self) -> str:
        """The pre-tokenizer: the file's own pipeline."""
        return PIPELINE

    @functools.cached_property
    def _vocab(self) -> dict[int, bytes]:
        return dict(self._core.vocab())

    @functools.cached_property
    def _merges(self) -> list[tuple[bytes, bytes]]:
        return hf.merges_of(json.loads(self._hf_json))

    def _token_count(self) -> int:
        return len(self._vocab)

    def _id_count(self) -> int:
        return max(self._vocab, default=-1) + 1

    def _merge_count(self) -> int:
        return len(self._merges)

    @property
    def cache_size(self) -> int:
        return self._cache_size

    def set_cache_size(self, cache_size: int) -> None:
        """Kept for the API; a pipeline's cache is the one its encoder keeps (see docs/hf.md)."""
        self._cache_size = cache_size

    def cache_info(self) -> dict[str, int]:
        return {"budget_bytes": self._cache_size}

    def save_hf(self, path: str | os.PathLike[str], *, overwrite: bool = False, **_roles: str | None) -> Path:
        """Write the `tokenizer.json` this tokenizer was loaded from, as it was (HF reads back the same ids)."""
        path = Path(path)
        if not hf.is_hf_file_output(path):
            path = path / hf.HF_FILE
            path.parent.mkdir(parents=True, exist_ok=True)
        return write_text_atomically(path, self._hf_json, overwrite=overwrite)

    def save(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        raise ValueError(_LOSSY_SAVE.format(what="vocab.json and merges.txt"))

    def save_tiktoken(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        raise ValueError(_LOSSY_SAVE.format(what="a tiktoken ranks file"))

    def __eq__(self, other: object) -> bool:
        """The same `tokenizer.json` content: the same pipeline, so the same ids for every text."""
        if not isinstance(other, PipelineMethods):
            return NotImplemented
        return json.loads(self._hf_json) == json.loads(other._hf_json)

    __hash__ = None

    def __reduce__(self):
        return (_restore, (self._base, self._hf_json, self._cache_size))


_LOSSY_SAVE = (
    "this tokenizer runs a tokenizer.json pipeline (normalizer, pre-tokenizer, post-processor) that {what} "
    "cannot hold; use save_hf"
)


def _restore(cls: type[Tokenizer], text: str, cache_size: int) -> Tokenizer:
    """A pipeline tokenizer of class `cls` from the text of its `tokenizer.json` (loading and unpickling)."""
    core = _core.HfPipeline(text)
    tokenizer = _pipeline_class(cls).__new__(_pipeline_class(cls))
    tokenizer._core = core
    # The core's method itself, not `PipelineMethods.encode` around it: on one sentence the Python method was
    # a tenth of the call (`benchmarks/bench_call.py`). Same arguments, same errors.
    tokenizer.encode = core.encode
    tokenizer._special_tokens = [content for content, _, _ in core.added_tokens()]
    tokenizer._cache_size = cache_size
    tokenizer._hf_json = text
    return tokenizer


def _texts(texts: Iterable[str]) -> list[str]:
    if isinstance(texts, (str, bytes)):
        raise TypeError("encode_batch takes a list of texts, not one string; use encode(text), or [text]")
    # Each text's type is checked by the core as it takes the list (in C); a call a text here was a tenth of
    # a warm batch of short lines.
    return texts if type(texts) is list else list(texts)
