"""A tokenizer.json `pre_tokenizer` as the pattern bpeforge's trainer cuts text with.

`train(..., pre_tokenizer=...)` takes what an HF user has: the `pre_tokenizer` object of a tokenizer.json
(a dict, or its JSON text). The trainer counts pieces of one regex, so a pipeline is accepted where one
regex cuts exactly as it does, and refused otherwise, naming the step and saying to pass `pattern=`:

- `ByteLevel(add_prefix_space=False, use_regex=True)` alone: GPT-2's regex (the preset "gpt2");
- `Split(R, "isolated")` then `ByteLevel(use_regex=False)`: R itself (text R does not match is a piece of
  its own in both); `Split(R, "removed", invert=True)` (OLMo 2's spelling) only for a preset's regex, which
  leaves nothing unmatched;
- SuperBPE's reference pipelines (`Digits` + `Split` + `ByteLevel`), which bpeforge runs as one regex
  (formats/superbpe_pipelines.py).

`add_prefix_space=True` is refused: it puts a space before every document, which the trainer does not.
"""

from __future__ import annotations

import json
from typing import Any

from bpeforge._core import PATTERNS
from bpeforge.formats.superbpe_pipelines import pattern_of_reference


def training_pattern(pre_tokenizer: dict[str, Any] | str) -> str:
    """The pattern that cuts text as `pre_tokenizer` does; ValueError naming the step bpeforge cannot run."""
    pre = json.loads(pre_tokenizer) if isinstance(pre_tokenizer, str) else pre_tokenizer
    if not isinstance(pre, dict):
        raise ValueError(
            f"pre_tokenizer: a tokenizer.json pre_tokenizer object (dict or JSON), got {type(pre).__name__}"
        )
    reference = pattern_of_reference(pre)
    if reference is not None:
        return reference
    steps = _flatten(pre)
    *cuts, last = steps
    if last.get("type") != "ByteLevel" or any(step.get("type") == "ByteLevel" for step in cuts):
        raise _refuse(pre, "a byte-level pipeline ends with its one ByteLevel step")
    if last.get("add_prefix_space", True):
        raise _refuse(last, "add_prefix_space=True puts a space before each document; set it to false")
    if last.get("use_regex", True):
        if cuts:
            raise _refuse(cuts[0], "steps before ByteLevel's own regex cut as no single regex does")
        return "gpt2"
    if len(cuts) != 1 or cuts[0].get("type") != "Split":
        names = "+".join(str(step.get("type")) for step in cuts) or "nothing"
        raise _refuse(pre, f"{names} before ByteLevel(use_regex=False): only one Split is one regex")
    return _split_pattern(cuts[0])


def _split_pattern(split: dict[str, Any]) -> str:
    pattern = split.get("pattern", {})
    if "Regex" in pattern:
        source = pattern["Regex"]
    elif "String" in pattern:
        source = _escaped(pattern["String"])
    else:
        raise _refuse(split, "its pattern is neither {'Regex': ...} nor {'String': ...}")
    behavior, invert = str(split.get("behavior", "")).lower(), bool(split.get("invert", False))
    if (behavior, invert) == ("isolated", False):
        return source
    if (behavior, invert) == ("removed", True) and source in dict(PATTERNS).values():
        return source  # a preset's regex leaves no text unmatched, so keeping only its matches is the same cut
    raise _refuse(split, f"behavior {split.get('behavior')!r} with invert={invert} keeps or drops text otherwise")


# The chars a regex gives a meaning; escaped with a backslash, each is itself to fancy-regex (and to Oniguruma).
_REGEX_SYNTAX = frozenset("\\.+*?()|[]{}^$#&-~")


def _escaped(literal: str) -> str:
    """`literal` as a regex that matches it (no `regex` package at run time: it is a test dependency only)."""
    return "".join("\\" + ch if ch in _REGEX_SYNTAX else ch for ch in literal)


def _flatten(step: dict[str, Any]) -> list[dict[str, Any]]:
    if step.get("type") == "Sequence":
        return [leaf for inner in step.get("pretokenizers", []) for leaf in _flatten(inner)]
    return [step]


def _refuse(step: dict[str, Any], why: str) -> ValueError:
    shown = json.dumps(step, ensure_ascii=False)
    shown = shown if len(shown) <= 200 else shown[:200] + "..."
    return ValueError(
        f"pre_tokenizer: bpeforge cannot train with {shown}: {why}; pass pattern= with a regex that cuts the "
        "text as you want instead"
    )
