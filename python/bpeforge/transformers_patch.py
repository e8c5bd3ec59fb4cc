"""`patch_transformers()`: `transformers` tokenizers of byte-level BPE models encode through bpeforge.

One method is wrapped, `TokenizersBackend._encode_plus` (what `tokenizer(texts)`, `tokenizer.encode` and
`batch_encode_plus` reach in transformers 5). A call that asks only for ids (and the attention mask) of a
str or a list of str takes bpeforge's path; every other call (pairs, pre-split words, padding, truncation,
tensors, offsets, token type ids, special-token masks, overflow, `split_special_tokens`) runs transformers'
own code unchanged. Each tokenizer's bpeforge twin is built on its first call from the backend's own
`tokenizer.json` (`backend_tokenizer.to_str()`, so tokens added after loading are in it) and rebuilt when
the backend's vocabulary size or post-processor changes; a file bpeforge refuses leaves that tokenizer on
transformers' path. `unpatch_transformers()` puts the original method back.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from bpeforge.tokenizer import Tokenizer

_ORIGINAL: dict[str, Any] = {}
_STATE = "_bpeforge_twin"  # attribute on each transformers tokenizer: (fingerprint, Tokenizer or None)


def patch_transformers() -> None:
    """Make `transformers` tokenizers (transformers 5's `TokenizersBackend`) encode ids through bpeforge.

    Idempotent; `unpatch_transformers()` reverses it. Raises ImportError without transformers 5.
    """
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    if "_encode_plus" in _ORIGINAL:
        return
    original = TokenizersBackend._encode_plus
    _ORIGINAL["_encode_plus"] = original

    def _encode_plus(self, text, text_pair=None, add_special_tokens=True, **options):
        twin = _twin(self) if text_pair is None and _only_ids(self, text, options) else None
        if twin is None:
            return original(self, text, text_pair, add_special_tokens, **options)
        return _encode_with(self, twin, text, add_special_tokens, options.get("verbose", True))

    _encode_plus.__wrapped__ = original  # type: ignore[attr-defined]
    TokenizersBackend._encode_plus = _encode_plus


def unpatch_transformers() -> None:
    """Undo `patch_transformers()` (a no-op when it was not applied)."""
    original = _ORIGINAL.pop("_encode_plus", None)
    if original is not None:
        from transformers.tokenization_utils_tokenizers import TokenizersBackend

        TokenizersBackend._encode_plus = original


# Options under which transformers' result is the ids and the attention mask only; any other value
# asks for something bpeforge does not compute (or changes the ids), so the call falls back.
_NEUTRAL: dict[str, tuple[object, ...]] = {
    "is_split_into_words": (False,),
    "stride": (0,),
    "max_length": (None,),
    "pad_to_multiple_of": (None,),
    "padding_side": (None,),
    "return_tensors": (None,),
    "return_attention_mask": (None, True),
    "return_token_type_ids": (None, False),
    "return_overflowing_tokens": (False,),
    "return_special_tokens_mask": (False,),
    "return_offsets_mapping": (False,),
    "return_length": (False,),
    "split_special_tokens": (None, False),
    "sanitize_control_tokens": (None, False),
    "verbose": (True, False),
}
_NO_PADDING = ("do_not_pad", "do_not_truncate")


def _only_ids(tokenizer: Any, text: object, options: dict[str, Any]) -> bool:
    if not (isinstance(text, str) or (isinstance(text, list) and all(isinstance(t, str) for t in text))):
        return False
    for name, value in options.items():
        if name in ("padding_strategy", "truncation_strategy"):
            if getattr(value, "value", value) not in _NO_PADDING:
                return False
        elif name not in _NEUTRAL or not any(value is neutral for neutral in _NEUTRAL[name]):
            return False
    if tokenizer.split_special_tokens or _wants_type_ids(tokenizer, options.get("return_token_type_ids")):
        return False
    backend = tokenizer._tokenizer
    return backend.truncation is None and backend.padding is None


def _wants_type_ids(tokenizer: Any, asked: bool | None) -> bool:
    return asked if asked is not None else "token_type_ids" in tokenizer.model_input_names


def _twin(tokenizer: Any) -> Tokenizer | None:
    """bpeforge's tokenizer for this transformers tokenizer's backend, or None where bpeforge refuses it."""
    backend = tokenizer._tokenizer
    post = backend.post_processor
    fingerprint = (
        id(backend),
        backend.get_vocab_size(with_added_tokens=True),
        None if post is None else post.__getstate__(),
    )
    state = tokenizer.__dict__.get(_STATE)
    if state is None or state[0] != fingerprint:
        twin = _load(backend.to_str())
        if twin is not None and not hasattr(twin, "_hf_json") and backend.num_special_tokens_to_add(False):
            twin = None  # a plain tokenizer adds no template tokens: a file with some stays on transformers' path
        state = (fingerprint, twin)
        tokenizer.__dict__[_STATE] = state
    return state[1]


def _load(tokenizer_json: str) -> Tokenizer | None:
    # `from_hf` reads a path; the backend's JSON (not the model directory's file) holds what
    # transformers changed while loading (added tokens of tokenizer_config.json, BOS/EOS templates).
    handle, path = tempfile.mkstemp(suffix=".json", prefix="bpeforge-transformers-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(tokenizer_json)
        return Tokenizer.from_hf(path)
    except ValueError:
        return None  # bpeforge cannot run this file exactly: transformers' own path stays
    finally:
        os.unlink(path)


def _encode_with(tokenizer: Any, twin: Tokenizer, text: str | list[str], add_special_tokens: bool, verbose: bool):
    from transformers.tokenization_utils_base import BatchEncoding

    texts = [text] if isinstance(text, str) else text
    ids = _ids(twin, texts, add_special_tokens)
    for one in ids:
        tokenizer._eventual_warn_about_too_long_sequence(one, None, verbose)
    data: dict[str, Any] = {"input_ids": ids}
    if "attention_mask" in tokenizer.model_input_names:
        data["attention_mask"] = [[1] * len(one) for one in ids]
    if isinstance(text, str):
        data = {key: value[0] for key, value in data.items()}
    return BatchEncoding(data)


# Below this many characters a batch is encoded text by text on this thread: handing it to the
# thread pool costs more than the work (about 15 us a call, measured on a sentence).
_POOL_MIN_CHARS = 32_768


def _ids(twin: Tokenizer, texts: list[str], add_special_tokens: bool) -> list[list[int]]:
    pipeline = hasattr(twin, "_hf_json")  # a pipeline tokenizer runs the post-processor itself
    # A plain tokenizer's file adds no tokens around the text (`_twin`): it takes no `add_special_tokens`.
    options = {"add_special_tokens": add_special_tokens} if pipeline else {}
    if sum(map(len, texts)) < _POOL_MIN_CHARS:
        return [twin.encode(text, **options) for text in texts]
    return twin.encode_batch(texts, **options)
