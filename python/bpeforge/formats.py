"""Export to and import from the formats other tools read: HF `tokenizer.json` and tiktoken ranks.

GPT-2's `vocab.json` + `merges.txt` is `bpeforge.io` (`bpeforge.save`, `Tokenizer.load`).
Every export refuses, with a ValueError that says why, a tokenizer the other
tool would encode differently, rather than writing a file that gives other ids.
Files are written atomically (a temporary sibling, then a rename), and an
existing file is replaced only with `overwrite=True`.

HF `tokenizer.json` (`save_hf`, `load_hf`)
------------------------------------------
Laid out field for field as HF `tokenizers` writes a GPT-2 tokenizer, with:

- `model`: `BPE` with `ignore_merges: false` (merges apply by rank even to a
  pre-token that is a whole vocabulary entry, as in bpeforge), no dropout, no
  unk token, no prefix or suffix. `vocab` maps each token's GPT-2
  byte-to-unicode text to its id (bpeforge ids are carried over exactly, they
  need not be `256 + rank`); `merges` is a list of `"left right"` strings in
  rank order. `tokenizers` >= 0.20 writes `[left, right]` pairs instead, and
  reads both; the string form is also read by older versions and is
  unambiguous here, as byte-level token text never holds a space (a space
  byte is `Ġ`).
- `added_tokens`: the special tokens, `special: true`, `normalized: false`, no
  strip or single-word rule. HF matches them leftmost-longest in the raw text
  before pre-tokenization, as bpeforge does. Each is also in the model `vocab`
  under its own text (as in HF's GPT-2 file): HF takes an added token's id from
  the model vocabulary and would otherwise number it itself, ignoring the id in
  the file.
- `normalizer: null`, `post_processor: null` (no tokens added around the
  text), `decoder: ByteLevel`. `pre_tokenizer`: for `gpt2`,
  `ByteLevel(add_prefix_space=false, use_regex=true)` (its regex is GPT-2's);
  for any other pattern, `Sequence[Split(Regex, Isolated), ByteLevel(
  use_regex=false)]` as Llama 3's and Qwen 2's files have, the regex written
  for Oniguruma, HF's engine (`onig_regex`: `$` becomes `\\z`, a possessive
  `{n,m}+` an atomic group), so HF cuts the same pieces.

To a directory (any path not ending in `.json` that is not an existing file),
`save_hf` also writes `tokenizer_config.json` and `special_tokens_map.json`,
so `transformers.AutoTokenizer.from_pretrained(directory)` has the special
tokens' roles: `eos_token` is `<|endoftext|>` when that is a special token,
`bos_token` and `pad_token` when asked for.

Not representable, so `save_hf` refuses: two ids with the same bytes (HF's vocab
maps text to one id; see docs/format.md), and a special token that is also an
ordinary token whose byte-level text differs from its own (e.g. `"\\n"`, spelled
`Ċ` in the vocab): one id cannot have both spellings.

HF decodes (with `skip_special_tokens=False`) a special token whose text is made
only of GPT-2 byte characters, such as `"é!"`, through the byte table, so into
other bytes (`é` stands for the byte 0xE9 there); its ids are right.

`load_hf` reads such files, and HF's own, including the `"left right"` and
pair forms of merges and a `ByteLevel` post-processor (it changes only offsets).
It refuses, naming the field, what would encode differently: a model other
than BPE, a normalizer, a pre-tokenizer other than the two above (a Split
regex equal to a preset's loads as that preset, another as a custom pattern),
another post-processor (it adds tokens),
`ignore_merges`, dropout, subword prefixes or suffixes, byte fallback, added
tokens with strip or single-word rules, or an added token whose id HF would not
give it. Added tokens that are not `special` are loaded as special tokens too:
both are matched in the text before pre-tokenization.

tiktoken ranks (`save_tiktoken`, `load_tiktoken`)
-------------------------------------------------
One line per token, `base64(token bytes) rank`, in rank order, as
`tiktoken.load.load_tiktoken_bpe` reads. The rank is the bpeforge id. Special
tokens are not in the file (tiktoken keeps them apart): give them to
`tiktoken.Encoding(..., special_tokens={token: id})`, and to
`load_tiktoken(path, special_tokens=...)` to get them back; `tiktoken_special_tokens`
gives the dict, and refuses a special token that is a prefix of another:
tiktoken does not match special tokens longest first (it tries them in
hash-map order). Note that `tiktoken.load.load_tiktoken_bpe` caches files by path:
set `TIKTOKEN_CACHE_DIR=""` when a file is rewritten in place.

tiktoken has no merge list: it merges the adjacent pair whose concatenation has
the lowest rank. That matches bpeforge's merges only when ranks follow merge
order, so `save_tiktoken` requires: every ordinary token is one of the 256 bytes
or the result of a merge, no two ids share bytes, merge results have
increasing ids in merge order, and the merges recovered from the ranks (below)
are exactly the tokenizer's. GPT-2 passes, and so does training output (ids
`256 + rank`) unless two of its merges spell the same bytes. The tests compare
tiktoken's ids with bpeforge's on generated text for both.

`load_tiktoken` recovers the merges as tiktoken's own loaders do: for each token
of more than one byte, in rank order, BPE over its bytes using only tokens of
lower rank must leave exactly two parts; they are its merge.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Union

from bpeforge import _core
from bpeforge.io import TOKENIZER_FILES, decode_token, encode_token, read_json
from bpeforge.outputs import write_directory_atomically, write_text_atomically
from bpeforge.tokenizer import Tokenizer

PathLike = Union[str, "os.PathLike[str]"]
Merges = list[tuple[bytes, bytes]]

# The GPT-2 pre-tokenizer regex (the `pat_str` of tiktoken's `gpt2` encoding).
PATTERNS = dict(_core.PATTERNS)  # preset name -> regex: gpt2, cl100k, o200k, llama3, qwen2
GPT2_PATTERN = PATTERNS["gpt2"]

_HF_PRE_TOKENIZER = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
_HF_DECODER = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
# Model options, all off: each one on makes HF's BPE encode differently from bpeforge.
_HF_MODEL_DEFAULTS = {
    "dropout": None,
    "continuing_subword_prefix": None,
    "end_of_word_suffix": None,
    "byte_fallback": False,
    "ignore_merges": False,
}


# --------------------------------------------------------------------------
# HF tokenizer.json
# --------------------------------------------------------------------------


def save_hf(
    tokenizer: Tokenizer,
    path: PathLike,
    *,
    overwrite: bool = False,
    eos_token: str | None = None,
    bos_token: str | None = None,
    pad_token: str | None = None,
) -> Path:
    """Write `tokenizer` for HF: a path ending in `.json` (or an existing file) gets that one `tokenizer.json`;
    any other path is
    a directory that `transformers.AutoTokenizer.from_pretrained` loads, with `tokenizer.json`,
    `tokenizer_config.json` and `special_tokens_map.json` (written together, atomically). `eos_token`
    defaults to `<|endoftext|>` when it is a special token; `bos_token` and `pad_token` are set only when
    given. Each must be one of the tokenizer's special tokens.

    Raises ValueError for a tokenizer HF cannot represent (see the module docstring) and FileExistsError if
    `path` exists and `overwrite` is false (a directory is replaced only while it holds nothing but
    tokenizer files).
    """
    text = json.dumps(hf_document(tokenizer), ensure_ascii=False, indent=2) + "\n"
    path = Path(path)
    roles = _hf_special_roles(tokenizer, eos=eos_token, bos=bos_token, pad=pad_token)
    if is_hf_file_output(path):
        return write_text_atomically(path, text, overwrite=overwrite)
    files = {
        HF_FILE: text,
        HF_CONFIG_FILE: _json_text(_hf_tokenizer_config(tokenizer, roles)),
        HF_SPECIAL_TOKENS_FILE: _json_text(roles),
    }
    return write_directory_atomically(path, files, overwrite=overwrite, owned=(*TOKENIZER_FILES, *HF_FILES))


def is_hf_file_output(path: Path) -> bool:
    """Whether `save_hf` writes `path` as one tokenizer.json (a `.json` name, or an existing file) rather
    than as a directory."""
    return path.suffix.lower() == ".json" or path.is_file()


HF_FILE = "tokenizer.json"
HF_CONFIG_FILE = "tokenizer_config.json"
HF_SPECIAL_TOKENS_FILE = "special_tokens_map.json"
HF_FILES = (HF_FILE, HF_CONFIG_FILE, HF_SPECIAL_TOKENS_FILE)


def _hf_special_roles(tokenizer: Tokenizer, **roles: str | None) -> dict[str, str]:
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


def _hf_tokenizer_config(tokenizer: Tokenizer, roles: dict[str, str]) -> dict[str, Any]:
    """`tokenizer_config.json` as transformers writes it for a fast tokenizer built from `tokenizer.json`:
    the class, the special tokens with their roles, and no length limit or clean-up of spaces (either
    would change the text that encode and decode give)."""
    added = {
        str(token_id): {key: value for key, value in _hf_added_token(token, token_id).items() if key != "id"}
        for token, token_id in _special_ids(tokenizer).items()
    }
    return {
        "added_tokens_decoder": added,
        **roles,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 1000000000000000019884624838656,  # transformers' "no limit"
        "tokenizer_class": "PreTrainedTokenizerFast",
    }


def _json_text(document: dict[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def hf_document(tokenizer: Tokenizer) -> dict[str, Any]:
    """The `tokenizer.json` content for `tokenizer`, as a JSON-ready dict."""
    specials = _special_ids(tokenizer)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [_hf_added_token(token, token_id) for token, token_id in specials.items()],
        "normalizer": None,
        "pre_tokenizer": hf_pre_tokenizer(tokenizer.pattern),
        "post_processor": None,
        "decoder": dict(_HF_DECODER),
        "model": {  # the fields and their order as HF writes them
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": _hf_vocab(tokenizer, specials),
            "merges": [f"{encode_token(left)} {encode_token(right)}" for left, right in tokenizer.merges],
        },
    }


def hf_pre_tokenizer(pattern: str) -> dict[str, Any]:
    """GPT-2's ByteLevel pre-tokenizer for `gpt2`; for any other pattern (a preset's regex or a custom one)
    a `Split` on it, each match and each stretch between matches a piece (`Isolated`), then ByteLevel without
    its own regex: the layout of Llama 3's and Qwen 2's tokenizer.json. HF's regex engine (Oniguruma) gives
    the same pieces as bpeforge on every preset (tests/test_hf_export.py checks the corpora)."""
    if pattern == "gpt2":
        return dict(_HF_PRE_TOKENIZER)
    return {
        "type": "Sequence",
        "pretokenizers": [
            {
                "type": "Split",
                "pattern": {"Regex": onig_regex(PATTERNS.get(pattern, pattern))},
                "behavior": "Isolated",
                "invert": False,
            },
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        ],
    }


# A quantified atom followed by a possessive interval, `X{n,m}+`: possessive in Python's `regex` and
# fancy-regex, but in Oniguruma (Ruby syntax) `X{n,m}` repeated one or more times.
_POSSESSIVE_INTERVAL = re.compile(
    r"(\\p\{\w+\}|\\.|\[(?:\\.|[^\]\\])*\]|\((?:\\.|[^()\\])*\)|[^\\()\[\]{}])(\{\d+(?:,\d*)?\})\+"
)


def onig_regex(source: str) -> str:
    r"""`source` (bpeforge's regex syntax) as Oniguruma, HF's engine, reads it with the same matches: `$`
    outside a class is end of text in bpeforge but end of line in Oniguruma, so it becomes `\z`; `X{n,m}+`
    (possessive) becomes the atomic group `(?>X{n,m})`. `from_onig_regex` undoes both. Checked on every
    preset and the corpora by tests/test_hf_export.py; other constructs are passed through as they are."""
    return _POSSESSIVE_INTERVAL.sub(r"(?>\1\2)", _swap_outside_classes(source, "$", r"\z"))


def from_onig_regex(source: str) -> str:
    """`onig_regex` undone: the regex as bpeforge saved it (`\\z` and `(?>X{n,m})` mean the same in
    bpeforge's engine, so a regex that had them to begin with keeps its meaning)."""
    return _ATOMIC_INTERVAL.sub(r"\1\2+", _swap_outside_classes(source, r"\z", "$"))


_ATOMIC_INTERVAL = re.compile(r"\(\?>" + _POSSESSIVE_INTERVAL.pattern[:-2] + r"\)")


def _swap_outside_classes(source: str, old: str, new: str) -> str:
    """`source` with the token `old` (`$` or an escape) replaced by `new` wherever it stands outside a
    character class; escapes are read as one token each."""
    out, in_class, i = [], False, 0
    while i < len(source):
        token = source[i : i + 2] if source[i] == "\\" else source[i]
        if token == "[" and not in_class:
            in_class = True
        elif token == "]" and in_class:
            in_class = False
        out.append(new if token == old and not in_class else token)
        i += len(token)
    return "".join(out)


def load_hf(path: PathLike) -> Tokenizer:
    """Load an HF `tokenizer.json` of a byte-level BPE with GPT-2's pre-tokenizer.

    Raises ValueError, naming the field, for a file whose tokenizer would
    encode differently in bpeforge (see the module docstring).
    """
    path = Path(path)
    doc = read_json(path)
    where = f"{path}: "
    if not isinstance(doc, dict) or "model" not in doc:
        raise ValueError(f"{where}not an HF tokenizer.json (no top-level 'model')")
    model = doc["model"]
    _check_hf_model(model, where)
    pattern = _check_hf_pipeline(doc, where)
    vocab_text = model.get("vocab")
    if not isinstance(vocab_text, dict):
        raise ValueError(f"{where}model.vocab is not a JSON object mapping token text to ids")
    added_tokens, listed_merges = doc.get("added_tokens") or [], model.get("merges") or []
    for name, value in (("added_tokens", added_tokens), ("model.merges", listed_merges)):
        if not isinstance(value, list):
            raise ValueError(f"{where}{name} must be a JSON array, got {type(value).__name__}")
    specials = _hf_specials(added_tokens, vocab_text, where)
    vocab = _hf_vocab_bytes(vocab_text, specials, where)
    merges = [_hf_merge(merge, rank, where) for rank, merge in enumerate(listed_merges)]
    try:
        return Tokenizer(vocab, merges, list(specials), pattern=pattern)
    except ValueError as err:  # e.g. a byte or a merge result missing from the vocab
        raise ValueError(f"{where}{err}") from None


def _special_ids(tokenizer: Tokenizer) -> dict[str, int]:
    ids = {}
    for token in tokenizer.special_tokens:
        token_id = tokenizer.token_to_id(token)
        assert token_id is not None, "Tokenizer puts every special token in its vocab"
        ids[token] = token_id
    return ids


def _hf_added_token(token: str, token_id: int) -> dict[str, Any]:
    return {
        "id": token_id,
        "content": token,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "special": True,
    }


def _hf_vocab(tokenizer: Tokenizer, specials: dict[str, int]) -> dict[str, int]:
    """Token text -> id, ids in order; a special token under its own text."""
    vocab = tokenizer.vocab
    _check_unique_bytes(vocab, "tokenizer.json maps each token text to one id", "as tokenizer.json")
    ordinary = _ordinary_tokens(tokenizer)
    special_of = {token_id: token for token, token_id in specials.items()}
    texts: dict[str, int] = {}
    for token_id in sorted(vocab):
        text = special_of.get(token_id)
        if text is None:
            text = encode_token(vocab[token_id])
        elif vocab[token_id] in ordinary and encode_token(vocab[token_id]) != text:
            raise ValueError(
                f"special token {text!r} (id {token_id}) is also an ordinary token, spelled "
                f"{encode_token(vocab[token_id])!r} in a byte-level vocab; a tokenizer.json cannot give one id two "
                "spellings. Drop it from special_tokens to export this tokenizer"
            )
        if text in texts:  # only a special token's own text can meet another token's byte-level text
            raise ValueError(
                f"ids {texts[text]} and {token_id} would both be {text!r} in tokenizer.json (a special token is "
                "written as its own text, other tokens in GPT-2's byte-level spelling); rename the special token"
            )
        texts[text] = token_id
    return texts


def _ordinary_tokens(tokenizer: Tokenizer) -> set[bytes]:
    """The tokens BPE can produce: the 256 bytes and every merge result."""
    return {bytes([b]) for b in range(256)} | {left + right for left, right in tokenizer.merges}


def _check_unique_bytes(vocab: Mapping[int, bytes], reason: str, target: str) -> None:
    """Refuse to export a vocabulary where two ids share bytes, which `target` cannot hold."""
    duplicate = _first_duplicate(vocab)
    if duplicate:
        first, second, token = duplicate
        raise ValueError(
            f"ids {first} and {second} are both {token!r} (two merges that spell the same bytes, see "
            f"docs/format.md), but {reason}; this tokenizer cannot be exported {target}"
        )


def _first_duplicate(vocab: Mapping[int, bytes]) -> tuple[int, int, bytes] | None:
    """The first two ids (in id order) with the same bytes, and the bytes."""
    first: dict[bytes, int] = {}
    for token_id in sorted(vocab):
        token = vocab[token_id]
        if token in first:
            return first[token], token_id, token
        first[token] = token_id
    return None


def _check_hf_pipeline(doc: dict[str, Any], where: str) -> str:
    """Refuse the pipeline stages (other than the model) that would change the ids; return the pattern."""
    if doc.get("normalizer") is not None:
        raise ValueError(
            f"{where}normalizer {_hf_kind(doc['normalizer'])} is not supported: bpeforge encodes the text as given"
        )
    pattern = _hf_pattern(doc.get("pre_tokenizer"), where)
    post = doc.get("post_processor")
    if post is not None and not (isinstance(post, dict) and post.get("type") == "ByteLevel"):
        raise ValueError(
            f"{where}post_processor {_hf_kind(post)} is not supported: it may add tokens around the text, "
            "which bpeforge does not"
        )
    return pattern


def _hf_pattern(pre: Any, where: str) -> str:
    """The bpeforge pattern of an HF pre-tokenizer: GPT-2's ByteLevel, or Split(regex, Isolated) then
    ByteLevel without a regex (Llama 3, Qwen 2 and bpeforge's own exports); a preset's name when the regex
    is a preset's."""
    gpt2 = isinstance(pre, dict) and pre.get("type") == "ByteLevel" and pre.get("add_prefix_space") is False
    if gpt2 and pre.get("use_regex", True) is True:
        return "gpt2"
    steps = pre.get("pretokenizers") if isinstance(pre, dict) and pre.get("type") == "Sequence" else None
    if isinstance(steps, list) and len(steps) == 2:
        split, byte_level = steps
        regex = split.get("pattern", {}).get("Regex") if isinstance(split, dict) else None
        if (
            isinstance(regex, str)
            and split.get("type") == "Split"
            and split.get("behavior") == "Isolated"
            and split.get("invert") is False
            and isinstance(byte_level, dict)
            and byte_level.get("type") == "ByteLevel"
            and byte_level.get("add_prefix_space") is False
            and byte_level.get("use_regex") is False
        ):
            presets = {onig_regex(source): name for name, source in PATTERNS.items()}
            presets.update({source: name for name, source in PATTERNS.items()})
            return presets.get(regex) or from_onig_regex(regex)
    raise ValueError(
        f"{where}pre_tokenizer {_hf_kind(pre)} is not supported: bpeforge reads GPT-2's "
        "ByteLevel(add_prefix_space=false, use_regex=true), or Sequence[Split(Regex, behavior=Isolated, "
        "invert=false), ByteLevel(add_prefix_space=false, use_regex=false)] as Llama 3's tokenizer.json has"
    )


def _check_hf_model(model: Any, where: str) -> None:
    if not isinstance(model, dict) or model.get("type", "BPE") != "BPE" or "merges" not in model:
        raise ValueError(f"{where}model {_hf_kind(model)} is not supported: bpeforge loads only BPE models")
    for field, off in _HF_MODEL_DEFAULTS.items():
        if model.get(field):  # None, "", false and 0 all mean off
            raise ValueError(f"{where}model.{field} = {model[field]!r} is not supported: bpeforge needs {off!r}")


def _hf_kind(component: Any) -> str:
    return repr(component.get("type")) if isinstance(component, dict) else repr(component)


def _hf_specials(added_tokens: list[Any], vocab_text: dict[str, int], where: str) -> dict[str, int]:
    """Each added token's text -> the id HF gives it, checked against the file."""
    groups = {bool(token.get("normalized", True)) for token in added_tokens if isinstance(token, dict)}
    if len(groups) > 1:
        raise ValueError(
            f"{where}added_tokens mix normalized true and false; HF matches the two groups in separate passes, "
            "bpeforge in one. Make them all one kind"
        )
    specials: dict[str, int] = {}
    for number, token in enumerate(added_tokens):
        content = _hf_added_content(token, number, where)
        expected = _hf_added_id(content, vocab_text, specials)
        if token.get("id") != expected:
            raise ValueError(
                f"{where}added token {content!r} has id {token.get('id')!r} but HF gives it {expected} "
                "(the model vocab's id for that text, else the next free id); fix the id in the file"
            )
        specials[content] = expected
    return specials


def _hf_added_content(token: Any, number: int, where: str) -> str:
    if not isinstance(token, dict) or not isinstance(token.get("content"), str) or not token["content"]:
        raise ValueError(f"{where}added_tokens[{number}] has no non-empty 'content'")
    for rule in ("single_word", "lstrip", "rstrip"):
        if token.get(rule):
            raise ValueError(
                f"{where}added token {token['content']!r} has {rule}=true, which bpeforge's special tokens lack"
            )
    return token["content"]


def _hf_added_id(content: str, vocab_text: dict[str, int], specials: dict[str, int]) -> int:
    """HF's rule: the model's id for the text, else one past the largest id so far (at least the vocab size)."""
    if content in vocab_text:
        return vocab_text[content]
    if content in specials:
        return specials[content]
    size = len(vocab_text)
    largest = max(specials.values(), default=None)
    return largest + 1 if largest is not None and largest >= size else size


def _hf_vocab_bytes(vocab_text: dict[str, int], specials: dict[str, int], where: str) -> dict[int, bytes]:
    """id -> bytes: special tokens as their UTF-8, other text through GPT-2's byte table."""
    vocab: dict[int, bytes] = {}
    for text, token_id in vocab_text.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool) or token_id < 0:
            raise ValueError(f"{where}token {text!r} has id {token_id!r}; ids must be non-negative integers")
        if token_id in vocab:
            raise ValueError(f"{where}id {token_id} is given to two tokens in model.vocab")
        vocab[token_id] = text.encode("utf-8") if text in specials else decode_token(text, where=where)
    for content, token_id in specials.items():
        if content not in vocab_text:
            if token_id in vocab:
                raise ValueError(f"{where}HF gives added token {content!r} id {token_id}, which model.vocab also uses")
            vocab[token_id] = content.encode("utf-8")
    duplicate = _first_duplicate(vocab)
    if duplicate:
        first, second, token = duplicate
        raise ValueError(
            f"{where}ids {first} and {second} are both {token!r} (an added token with the bytes of another token); "
            "bpeforge finds a special token by its bytes, so it would not give it HF's id"
        )
    return vocab


def _hf_merge(merge: Any, rank: int, where: str) -> tuple[bytes, bytes]:
    parts = merge.split(" ") if isinstance(merge, str) else merge
    if not isinstance(parts, list) or len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
        raise ValueError(f"{where}merge {rank} is {merge!r}; expected 'left right' or [left, right]")
    return decode_token(parts[0], where=where), decode_token(parts[1], where=where)


# --------------------------------------------------------------------------
# tiktoken ranks
# --------------------------------------------------------------------------


def save_tiktoken(tokenizer: Tokenizer, path: PathLike, *, overwrite: bool = False) -> Path:
    """Write the ordinary tokens of `tokenizer` as a tiktoken ranks file (rank = id).

    Special tokens are not written (tiktoken keeps them apart: pass
    `special_tokens=tiktoken_special_tokens(tokenizer)` to `tiktoken.Encoding`,
    and `special_tokens=` to `load_tiktoken`). Raises ValueError when tiktoken, which merges by the
    rank of the merged token, would encode differently (see the module docstring).
    """
    ranks = tiktoken_ranks(tokenizer)
    lines = [f"{base64.b64encode(token).decode('ascii')} {rank}\n" for token, rank in ranks.items()]
    return write_text_atomically(Path(path), "".join(lines), overwrite=overwrite)


def tiktoken_ranks(tokenizer: Tokenizer) -> dict[bytes, int]:
    """The `mergeable_ranks` of a tiktoken encoding with the ids of `tokenizer`, in rank order.

    Raises ValueError if tiktoken would encode differently with them.
    """
    ordinary = _ordinary_tokens(tokenizer)
    specials = set(_special_ids(tokenizer).values())
    vocab = {i: token for i, token in tokenizer.vocab.items() if i not in specials or token in ordinary}
    _check_unique_bytes(vocab, "tiktoken has one rank per token", "as tiktoken ranks")
    for token_id in sorted(vocab):
        if vocab[token_id] not in ordinary:
            raise ValueError(
                f"token {vocab[token_id]!r} (id {token_id}) is neither a byte nor made by a merge, so bpeforge never "
                "produces it, but tiktoken would; drop it from the vocab or make it a special token"
            )
    ranks = {vocab[i]: i for i in sorted(vocab)}
    _check_merge_order(tokenizer.merges, ranks)
    _check_recovered_merges(tokenizer.merges, merges_from_ranks(ranks))
    return ranks


def tiktoken_special_tokens(tokenizer: Tokenizer) -> dict[str, int]:
    """The `special_tokens` argument of `tiktoken.Encoding` for `tokenizer`.

    Raises ValueError when one special token is a prefix of another: tiktoken
    then matches whichever its hash map lists first, not the longest as
    bpeforge and HF do, so some texts would get other ids.
    """
    specials = _special_ids(tokenizer)
    for short in specials:
        for long in specials:
            if short != long and long.startswith(short):
                raise ValueError(
                    f"special token {short!r} is a prefix of {long!r}; tiktoken does not match special tokens longest "
                    f"first, so it may encode {long!r} as {short!r} and text. Pass tiktoken only one of them"
                )
    return specials


def _check_merge_order(merges: Merges, ranks: dict[bytes, int]) -> None:
    made_by: dict[bytes, int] = {}
    previous = -1
    for rank, (left, right) in enumerate(merges):
        token_id = ranks[left + right]
        if left + right in made_by:
            raise ValueError(
                f"merges {made_by[left + right]} and {rank} both make {left + right!r}; tiktoken has one rank per "
                "token, so this tokenizer cannot be exported as tiktoken ranks"
            )
        made_by[left + right] = rank
        if token_id <= previous:
            raise ValueError(
                f"merge {rank} ({left!r} + {right!r}) makes id {token_id}, not above the id {previous} of the "
                "merge before it; tiktoken applies merges in the order of their ids, so renumber the merge results "
                "in merge order (as training does: 256 + rank)"
            )
        previous = token_id


def _check_recovered_merges(merges: Merges, recovered: Merges) -> None:
    for rank, (ours, theirs) in enumerate(zip(merges, recovered)):
        if ours != theirs:
            raise ValueError(
                f"merge {rank} is {ours[0]!r} + {ours[1]!r}, but tiktoken, which merges by the rank of the merged "
                f"token, would build {ours[0] + ours[1]!r} from {theirs[0]!r} + {theirs[1]!r}; this tokenizer cannot "
                "be exported as tiktoken ranks"
            )


def load_tiktoken(
    path: PathLike,
    pattern: str = "gpt2",
    special_tokens: Iterable[str] | Mapping[str, int] | None = None,
) -> Tokenizer:
    """Load a tiktoken ranks file: ids are the ranks, merges are recovered from them.

    A ranks file holds no special tokens: pass them as a list (appended after
    the largest rank, in order) or as `{token: id}` (tiktoken's
    `special_tokens`, e.g. `{"<|endoftext|>": 50256}`). A ranks file holds
    no pattern either: `pattern` is a preset ("gpt2", "cl100k", "o200k", "llama3", "qwen2") or
    the encoding's regex.
    """
    ranks = read_tiktoken_ranks(path)
    vocab = {rank: token for token, rank in ranks.items()}
    names = _place_specials(vocab, ranks, special_tokens, path)
    try:
        return Tokenizer(vocab, merges_from_ranks(ranks), names, pattern=pattern)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def read_tiktoken_ranks(path: PathLike) -> dict[bytes, int]:
    """`{token bytes: rank}` from a `.tiktoken` file, in rank order, with line numbers in errors."""
    ranks: dict[bytes, int] = {}
    seen_ranks: dict[int, int] = {}
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            token, rank = _parse_rank_line(line, f"{path}:{number}: ")
            if token in ranks or rank in seen_ranks:
                what = f"token {token!r}" if token in ranks else f"rank {rank}"
                raise ValueError(f"{path}:{number}: {what} was already given on an earlier line")
            ranks[token] = rank
            seen_ranks[rank] = number
    return dict(sorted(ranks.items(), key=lambda item: item[1]))


def _parse_rank_line(line: bytes, where: str) -> tuple[bytes, int]:
    fields = line.split()
    try:
        if len(fields) != 2:
            raise ValueError
        token, rank = base64.b64decode(fields[0], validate=True), int(fields[1])
    except (ValueError, binascii.Error):
        raise ValueError(f"{where}expected 'base64 rank', got {line.decode('utf-8', 'replace').strip()!r}") from None
    if rank < 0 or not token:
        raise ValueError(f"{where}expected a non-empty token and a rank >= 0, got {token!r} {rank}")
    return token, rank


def _place_specials(
    vocab: dict[int, bytes],
    ranks: Mapping[bytes, int],
    special_tokens: Iterable[str] | Mapping[str, int] | None,
    path: PathLike,
) -> list[str]:
    """Put special tokens given with ids into `vocab`; the names in order (a list is appended by Tokenizer)."""
    if not isinstance(special_tokens, Mapping):
        return list(special_tokens or [])
    for token, token_id in special_tokens.items():
        encoded = token.encode("utf-8")
        if token_id in vocab and vocab[token_id] != encoded:
            raise ValueError(
                f"special token {token!r} has id {token_id}, which {path} already gives to {vocab[token_id]!r}"
            )
        if ranks.get(encoded, token_id) != token_id:
            raise ValueError(
                f"special token {token!r} is also the token of rank {ranks[encoded]} in {path}, and bpeforge finds a "
                f"special token by its bytes; give it id {ranks[encoded]}, not {token_id}"
            )
        vocab[token_id] = encoded
    return list(special_tokens)


def merges_from_ranks(ranks: Mapping[bytes, int]) -> Merges:
    """The merges that tiktoken's ranks imply, in rank order.

    For each token of more than one byte, by rank, BPE over its bytes with only
    lower-ranked tokens must stop at exactly two parts: they are its merge.
    Recovered in the Rust core, in parallel (`bpeforge::ranks`).

    >>> ranks = {bytes([b]): b for b in range(256)} | {b"or": 256, b" w": 257, b" wor": 258}
    >>> merges_from_ranks(ranks)
    [(b'o', b'r'), (b' ', b'w'), (b' w', b'or')]
    """
    too_large = next((rank for rank in ranks.values() if not 0 <= rank < 2**32), None)
    if too_large is not None:  # ids are 32-bit: the Rust core takes ranks as u32
        raise ValueError(f"rank {too_large} is out of range: ranks are token ids, integers in 0..2**32")
    return _core.merges_from_ranks(list(ranks.items()))
