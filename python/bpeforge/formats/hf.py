"""HF `tokenizer.json` (`save_hf`, `load_hf`): the format of HF `tokenizers` and `transformers`.

GPT-2's `vocab.json` + `merges.txt` is `bpeforge.formats.gpt2`, tiktoken ranks `tiktoken_ranks`.
Every export refuses, with a ValueError that says why, a tokenizer the other
tool would encode differently, rather than writing a file that gives other ids.
Files are written atomically (a temporary sibling, then a rename), and an
existing file is replaced only with `overwrite=True`.

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
  `{n,m}+` an atomic group), so HF cuts the same pieces. SuperBPE's paper patterns get the pipeline its
  reference writes, `Sequence[Digits, Split, ByteLevel]` (`superbpe_pipelines`), read back as the same
  pattern.

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
both are matched in the text before pre-tokenization. `Tokenizer.from_hf` loads
the files `load_hf` refuses as a whole pipeline (`bpeforge.hf_pipeline`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bpeforge import _core
from bpeforge.formats.atomic import write_directory_atomically, write_text_atomically
from bpeforge.formats.gpt2 import TOKENIZER_FILES, decode_token, encode_token, read_json
from bpeforge.formats.hf_config import added_token_entry, json_text, special_roles, tokenizer_config
from bpeforge.formats.oniguruma import from_onig_regex, onig_regex, reads_alike
from bpeforge.formats.parts import (
    PathLike,
    TokenizerParts,
    check_unique_bytes,
    first_duplicate,
    ordinary_tokens,
    special_ids,
)
from bpeforge.formats.superbpe_pipelines import pattern_of_reference, reference_pre_tokenizer

if TYPE_CHECKING:
    from bpeforge.tokenizer import Tokenizer

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
    roles = special_roles(tokenizer, eos=eos_token, bos=bos_token, pad=pad_token)
    if is_hf_file_output(path):
        return write_text_atomically(path, text, overwrite=overwrite)
    files = {
        HF_FILE: text,
        HF_CONFIG_FILE: json_text(tokenizer_config(tokenizer, roles)),
        HF_SPECIAL_TOKENS_FILE: json_text(roles),
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


def hf_document(tokenizer: Tokenizer) -> dict[str, Any]:
    """The `tokenizer.json` content for `tokenizer`, as a JSON-ready dict."""
    specials = special_ids(tokenizer)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added_token_entry(token, token_id) for token, token_id in specials.items()],
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
    reference = reference_pre_tokenizer(pattern)  # SuperBPE's: the pipeline its released files have
    if reference is not None:
        return reference
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


def load_hf(path: PathLike) -> TokenizerParts:
    """Load an HF `tokenizer.json` of a byte-level BPE with GPT-2's pre-tokenizer.

    Raises ValueError, naming the field, for a file whose tokenizer would
    encode differently in bpeforge (see the module docstring).
    """
    path = Path(path)
    return hf_parts(read_json(path), path)


def read_document(path: PathLike) -> tuple[str, Any]:
    """The text of a `tokenizer.json` and the document it holds, parsed once; a ValueError names the file
    (as `read_json`'s) when it is not UTF-8 or not JSON."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 (byte offset {err.start})") from None
    try:
        return text, json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}:{err.lineno}: not valid JSON ({err.msg})") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply") from None


def hf_parts(doc: Any, path: Path) -> TokenizerParts:
    """`load_hf` of the document `doc` of the file `path`."""
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
    if pattern_of_reference(doc.get("pre_tokenizer")) is not None:
        _check_all_bytes(vocab, where)
    merges = [_hf_merge(merge, rank, where) for rank, merge in enumerate(listed_merges)]
    return TokenizerParts(vocab, merges, list(specials), pattern)


def _check_all_bytes(vocab: dict[int, bytes], where: str) -> None:
    """Refuse, so that `Tokenizer.from_hf` runs the file as a pipeline, a SuperBPE vocabulary without a byte
    that text can hold: the pipeline drops that byte, as `tokenizers` does. HF's trainer keeps only the bytes it
    saw; the released SuperBPE files lack only those UTF-8 never holds, which the plain tokenizer's tables take
    as stand-ins that no text reaches."""
    tokens = set(vocab.values())
    missing = [byte for byte in range(256) if bytes([byte]) not in tokens and not _utf8_never_holds(byte)]
    if missing:
        raise ValueError(
            f"{where}the vocabulary has no token for {len(missing)} of the bytes text can hold "
            f"(0x{missing[0]:02X} first); Tokenizer.from_hf runs such a file as a pipeline"
        )


def _utf8_never_holds(byte: int) -> bool:
    return byte in (0xC0, 0xC1) or byte >= 0xF5


def _hf_vocab(tokenizer: Tokenizer, specials: dict[str, int]) -> dict[str, int]:
    """Token text -> id, ids in order; a special token under its own text."""
    vocab = tokenizer.vocab
    check_unique_bytes(vocab, "tokenizer.json maps each token text to one id", "as tokenizer.json")
    ordinary = ordinary_tokens(tokenizer)
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
    is a preset's; SuperBPE's own pipelines (`Digits`, `Split`, ByteLevel) as the pattern bpeforge runs for them."""
    superbpe = pattern_of_reference(pre)
    if superbpe is not None:
        return superbpe
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
            # A preset's regex as Oniguruma (HF's engine) reads it with the preset's matches: its Oniguruma
            # spelling, or its own where the two engines read it alike.
            presets = {onig_regex(source): name for name, source in PATTERNS.items()}
            if regex in presets:
                return presets[regex]
            if reads_alike(regex):
                return from_onig_regex(regex)
            # `$`, `^`, `X{n,m}+` and Oniguruma's own escapes: the pipeline reads them as Oniguruma does.
            raise ValueError(f"{where}pre_tokenizer Split regex {regex!r} reads differently in bpeforge's engine")
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
    duplicate = first_duplicate(vocab)
    if duplicate:
        first, second, token = duplicate
        raise ValueError(
            f"{where}ids {first} and {second} are both {token!r} (an added token with the bytes of another token); "
            "bpeforge finds a special token by its bytes, so it would not give it HF's id"
        )
    return vocab


def merges_of(document: dict[str, Any], where: str = "") -> list[tuple[bytes, bytes]]:
    """The merges of a `tokenizer.json` document as pairs of bytes, in rank order."""
    return [_hf_merge(merge, rank, where) for rank, merge in enumerate(document["model"].get("merges") or [])]


def _hf_merge(merge: Any, rank: int, where: str) -> tuple[bytes, bytes]:
    parts = merge.split(" ") if isinstance(merge, str) else merge
    if not isinstance(parts, list) or len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
        raise ValueError(f"{where}merge {rank} is {merge!r}; expected 'left right' or [left, right]")
    return decode_token(parts[0], where=where), decode_token(parts[1], where=where)
