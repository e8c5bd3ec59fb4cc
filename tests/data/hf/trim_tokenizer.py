"""Make a small fixture from a real `tokenizer.json`: the same pipeline (normalizer, pre-tokenizer, post-processor,
decoder, added tokens, model options), with the model cut to its first merges, the tokens they make, and all 256 bytes.

Ids are renumbered densely in the original order, and every id the file names (added tokens, post-processor
templates) is renumbered with them, so HF `tokenizers` reads the fixture as it reads the original.

    python tests/data/hf/trim_tokenizer.py ORIGINAL.json FIXTURE.json [--merges 3000]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def byte_chars() -> list[str]:
    """GPT-2's char for each byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            chars[byte] = chr(byte)
        else:
            chars[byte] = chr(256 + extra)
            extra += 1
    return [chars[byte] for byte in range(256)]


def _pair(merge: Any) -> tuple[str, str]:
    left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
    return left, right


def trim(doc: dict[str, Any], merge_count: int) -> dict[str, Any]:
    model = doc["model"]
    vocab: dict[str, int] = model["vocab"]
    merges = list(model.get("merges") or [])[:merge_count]
    keep = set(byte_chars())
    # Each byte's spellings with the model's subword prefix and suffix (CLIP's `a</w>`) too.
    prefix, suffix = model.get("continuing_subword_prefix") or "", model.get("end_of_word_suffix") or ""
    keep.update(prefix * p + char + suffix * q for char in byte_chars() for p in (0, 1) for q in (0, 1))
    for merge in merges:
        left, right = _pair(merge)
        keep.update((left, right, left + right))
    keep.update(token["content"] for token in doc["added_tokens"] if token["content"] in vocab)
    kept = sorted((token for token in keep if token in vocab), key=vocab.__getitem__)
    new_vocab = {token: new_id for new_id, token in enumerate(kept)}
    next_id = len(new_vocab)
    for token in doc["added_tokens"]:
        if token["content"] in new_vocab:
            token["id"] = new_vocab[token["content"]]
        else:
            token["id"], next_id = next_id, next_id + 1
    ids = {**new_vocab, **{token["content"]: token["id"] for token in doc["added_tokens"]}}
    model["vocab"], model["merges"] = new_vocab, merges
    doc["post_processor"] = _renumber(doc.get("post_processor"), ids)
    return doc


def _renumber(processor: Any, ids: dict[str, int]) -> Any:
    if not isinstance(processor, dict):
        return processor
    kind = processor.get("type")
    if kind in ("RobertaProcessing", "BertProcessing"):
        for name in ("cls", "sep"):
            processor[name] = [processor[name][0], ids[processor[name][0]]]
    elif kind == "TemplateProcessing":
        for special in processor["special_tokens"].values():
            special["ids"] = [ids[token] for token in special["tokens"]]
    elif kind == "Sequence":
        processor["processors"] = [_renumber(step, ids) for step in processor["processors"]]
    return processor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("original", type=Path)
    parser.add_argument("fixture", type=Path)
    parser.add_argument("--merges", type=int, default=3000)
    args = parser.parse_args()
    doc = trim(json.loads(args.original.read_text(encoding="utf-8")), args.merges)
    args.fixture.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
