"""`encoding_for_model` and `encoding_name_for_model`: which encoding an OpenAI model uses.

The table is tiktoken 0.14.0's (`tiktoken/model.py`): exact model names first,
then name prefixes (so that dated versions such as `gpt-4o-2024-05-13` map
without a new release). Models of encodings bpeforge does not ship (p50k,
o200k_harmony) still get their encoding's name; `encoding_for_model` then
says that it is not shipped.
"""

from __future__ import annotations

from bpeforge.tiktoken.encoding import Encoding
from bpeforge.tiktoken.registry import get_encoding

O200K, CL100K, R50K, P50K = "o200k_base", "cl100k_base", "r50k_base", "p50k_base"

MODEL_TO_ENCODING: dict[str, str] = {
    **dict.fromkeys(["o1", "o3", "o4-mini", "gpt-5", "gpt-4.1", "gpt-4o"], O200K),
    **dict.fromkeys(["gpt-4", "gpt-3.5-turbo", "gpt-3.5", "gpt-35-turbo", "davinci-002", "babbage-002"], CL100K),
    **dict.fromkeys(["text-embedding-ada-002", "text-embedding-3-small", "text-embedding-3-large"], CL100K),
    **dict.fromkeys(["text-davinci-003", "text-davinci-002", "code-davinci-002", "code-davinci-001"], P50K),
    **dict.fromkeys(["code-cushman-002", "code-cushman-001", "davinci-codex", "cushman-codex"], P50K),
    **dict.fromkeys(["text-davinci-edit-001", "code-davinci-edit-001"], "p50k_edit"),
    **dict.fromkeys(["text-davinci-001", "text-curie-001", "text-babbage-001", "text-ada-001"], R50K),
    **dict.fromkeys(["davinci", "curie", "babbage", "ada"], R50K),
    **{f"text-similarity-{size}-001": R50K for size in ("davinci", "curie", "babbage", "ada")},
    **{f"text-search-{size}-doc-001": R50K for size in ("davinci", "curie", "babbage", "ada")},
    **dict.fromkeys(["code-search-babbage-code-001", "code-search-ada-code-001"], R50K),
    "gpt2": "gpt2",
    "gpt-2": "gpt2",
}

# Tried in this order (tiktoken's): the first prefix of the name wins.
MODEL_PREFIX_TO_ENCODING: dict[str, str] = {
    **dict.fromkeys(["o1-", "o3-", "o4-mini-", "gpt-5", "gpt-4.5-", "gpt-4.1-", "chatgpt-4o-", "gpt-4o-"], O200K),
    **dict.fromkeys(["gpt-4-", "gpt-3.5-turbo-", "gpt-35-turbo-"], CL100K),
    "gpt-oss-": "o200k_harmony",
    "ft:gpt-4o": O200K,
    **dict.fromkeys(["ft:gpt-4", "ft:gpt-3.5-turbo", "ft:davinci-002", "ft:babbage-002"], CL100K),
}


def encoding_name_for_model(model_name: str) -> str:
    """The name of the encoding `model_name` uses; KeyError if the model is not known.

    >>> encoding_name_for_model("gpt-4o-2024-05-13")
    'o200k_base'
    """
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    for prefix, encoding_name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return encoding_name
    raise KeyError(
        f"Could not automatically map {model_name} to a tokeniser. "
        "Please use `tiktoken.get_encoding` to explicitly get the tokeniser you expect."
    )


def encoding_for_model(model_name: str) -> Encoding:
    """The encoding `model_name` uses (KeyError if the model is not known)."""
    return get_encoding(encoding_name_for_model(model_name))
