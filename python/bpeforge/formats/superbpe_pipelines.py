r"""SuperBPE's pre-tokenizers: the regexes bpeforge runs, and the HF pipelines the reference writes for them.

The reference (`PythonNut/superbpe`) builds HF `tokenizers` pipelines. Two recipes:

- the paper's (`utils.py` before its November 2025 rewrite): `Digits(individual_digits=False)`, then
  `Split(R, "isolated")`, then `ByteLevel(add_prefix_space=False, use_regex=False)`, with
  R = `(?=(\d{3})+(?!\d))| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+` in stage 1 and only its first
  alternative, `(?=(\d{3})+(?!\d))`, in stage 2. bpeforge runs each pipeline as one regex
  (`STAGE1_PATTERN`, `SUPERWORD_PATTERN`; tests/test_superbpe.py checks them against `tokenizers`'s own
  pieces), and `save_hf` writes the reference's pipeline for them, so that a tokenizer.json is laid out
  as the released SuperBPE tokenizers are (and `load_hf` reads it back as the same pattern);
- the newer one (`scripts/train_tokenizer.sh` and `scripts/extend_tokenizer.sh` since November 2025):
  `Split(regex, "isolated")` + the same ByteLevel, no `Digits`: stage 1 `O200K_LIKE_PATTERN`, stage 2
  `SUPERWORD_2025_PATTERN`, copied verbatim from those scripts. That is the layout `save_hf` writes for any
  custom pattern, so these need no entry here.
"""

from __future__ import annotations

import json
from typing import Any

# A numeral's groups of three from the right, as `Digits` then the lookahead split make them.
NUMERAL_GROUPS = r"\p{N}+?(?=(?:\d{3})+(?!\d)|(?!\p{N}))"
STAGE1_PATTERN = NUMERAL_GROUPS + r"| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?![^\s\p{N}])|\s+"
SUPERWORD_PATTERN = NUMERAL_GROUPS + r"|\P{N}+"

# The newer recipe's regexes, as its scripts give them: stage 1 is o200k's without its contraction suffixes.
O200K_LIKE_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SUPERWORD_2025_PATTERN = r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)"

# The regexes of the reference's `Split` steps, as its code spells them.
_DIGIT_GROUPS = r"(?=(\d{3})+(?!\d))"
_STAGE1_SPLIT = _DIGIT_GROUPS + r"| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


def _reference_pipeline(split_regex: str) -> dict[str, Any]:
    """`Sequence[Digits, Split(split_regex, Isolated), ByteLevel]` as `tokenizers` serializes it."""
    return {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Digits", "individual_digits": False},
            {"type": "Split", "pattern": {"Regex": split_regex}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        ],
    }


_PIPELINES = {STAGE1_PATTERN: _reference_pipeline(_STAGE1_SPLIT), SUPERWORD_PATTERN: _reference_pipeline(_DIGIT_GROUPS)}


def reference_pre_tokenizer(pattern: str) -> dict[str, Any] | None:
    """The HF `pre_tokenizer` the reference writes for `pattern` (a fresh dict), or None when it has none."""
    pipeline = _PIPELINES.get(pattern)
    return None if pipeline is None else json.loads(json.dumps(pipeline))


def _identity(pre: Any) -> str | None:
    """`pre` as a comparable string, leaving out ByteLevel's `trim_offsets` (it changes only offsets)."""
    if not isinstance(pre, dict) or not isinstance(pre.get("pretokenizers"), list):
        return None
    steps = [
        {key: value for key, value in step.items() if key != "trim_offsets"} if isinstance(step, dict) else step
        for step in pre["pretokenizers"]
    ]
    return json.dumps({**pre, "pretokenizers": steps}, sort_keys=True)


_PATTERN_OF = {_identity(pipeline): pattern for pattern, pipeline in _PIPELINES.items()}


def pattern_of_reference(pre: Any) -> str | None:
    """The bpeforge pattern of an HF `pre_tokenizer` that is one of the reference's pipelines, else None."""
    return _PATTERN_OF.get(_identity(pre))
