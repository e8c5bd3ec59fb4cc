"""The files `transformers` reads beside a `tokenizer.json` (`save_hf` to a directory): `tokenizer_config.json`
with the special tokens and their roles, and `special_tokens_map.json`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from bpeforge.formats.parts import special_ids

if TYPE_CHECKING:
    from bpeforge.tokenizer import Tokenizer


def special_roles(tokenizer: Tokenizer, **roles: str | None) -> dict[str, str]:
    """`{"eos_token": ..., ...}`: the roles given, and eos as `<|endoftext|>` by default when it is special."""
    if roles["eos"] is None and "<|endoftext|>" in tokenizer.special_tokens:
        roles["eos"] = "<|endoftext|>"
    for role, token in roles.items():
        if token is not None and token not in tokenizer.special_tokens:
            raise ValueError(
                f"{role}_token {token!r} is not a special token of this tokenizer "
                f"(its special tokens: {tokenizer.special_tokens}); add it as a special token first"
            )
    return {f"{role}_token": token for role, token in roles.items() if token is not None}


def tokenizer_config(tokenizer: Tokenizer, roles: dict[str, str]) -> dict[str, Any]:
    """`tokenizer_config.json` as transformers writes it for a fast tokenizer built from `tokenizer.json`:
    the class, the special tokens with their roles, and no length limit or clean-up of spaces (either
    would change the text that encode and decode give)."""
    added = {
        str(token_id): {key: value for key, value in added_token_entry(token, token_id).items() if key != "id"}
        for token, token_id in special_ids(tokenizer).items()
    }
    return {
        "added_tokens_decoder": added,
        **roles,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 1000000000000000019884624838656,  # transformers' "no limit"
        "tokenizer_class": "PreTrainedTokenizerFast",
    }


def json_text(document: dict[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def added_token_entry(token: str, token_id: int) -> dict[str, Any]:
    """A special token as tokenizer.json's `added_tokens` lists it (and tokenizer_config.json, without its id)."""
    return {
        "id": token_id,
        "content": token,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "special": True,
    }
