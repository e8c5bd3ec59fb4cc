"""`train(..., pre_tokenizer=...)`: a tokenizer.json `pre_tokenizer` object cuts the text as `tokenizers` does,
so with `tie_break="hf", documents="lines"` the merges are those of HF's `BpeTrainer` given the same
pre-tokenizer; what no single regex runs is refused naming the step."""

from __future__ import annotations

import json
import lzma
import os
from pathlib import Path

import bpeforge
import pytest
from test_train_hf_ties import spelled

tokenizers = pytest.importorskip("tokenizers")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "data" / "hf"
BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}


def split(pattern: str, behavior: str = "Isolated", invert: bool = False) -> dict:
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior, "invert": invert}


def file_pre_tokenizer(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))["pre_tokenizer"]


PIPELINES = {
    "gpt2 (ByteLevel's regex)": {**BYTE_LEVEL, "use_regex": True},
    "Llama 3's file": file_pre_tokenizer("llama3"),
    "Qwen2's file": file_pre_tokenizer("qwen2"),
    "OLMo 2's file (Split removed, inverted)": file_pre_tokenizer("olmo2"),
    "a Split on a string": {
        "type": "Sequence",
        "pretokenizers": [{**split(""), "pattern": {"String": ". "}}, BYTE_LEVEL],
    },
    "a custom Split": {
        "type": "Sequence",
        "pretokenizers": [split(r"\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+|\s+"), BYTE_LEVEL],
    },
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    data = os.environ.get("BPEFORGE_TEST_DATA")
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    if data:
        with lzma.open(Path(data) / "corpora" / "multilingual.txt.xz") as f:
            path.write_bytes(f.read(300_000).decode("utf-8", errors="ignore").encode("utf-8"))
    else:  # the repository's own docs: several scripts of text are in them too
        path.write_text("\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))))
    return path


def hf_merges(corpus: Path, pre_tokenizer: dict, vocab_size: int) -> list[tuple[str, str]]:
    built = tokenizers.Tokenizer.from_str(
        json.dumps(
            {
                "version": "1.0",
                "truncation": None,
                "padding": None,
                "added_tokens": [],
                "normalizer": None,
                "pre_tokenizer": pre_tokenizer,
                "post_processor": None,
                "decoder": None,
                "model": {"type": "BPE", "vocab": {}, "merges": []},
            }
        )
    )
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<|endoftext|>"], show_progress=False
    )
    built.train([os.fspath(corpus)], trainer)
    merges = json.loads(built.to_str())["model"]["merges"]
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in merges]


@pytest.mark.parametrize("name", PIPELINES)
def test_merges_equal_bpe_trainers_with_the_same_pre_tokenizer(corpus, name):
    pre_tokenizer = PIPELINES[name]
    expected = hf_merges(corpus, pre_tokenizer, 1200)
    for given in (pre_tokenizer, json.dumps(pre_tokenizer)):
        result = bpeforge.train(
            corpus, 1200, ["<|endoftext|>"], tie_break="hf", documents="lines", pre_tokenizer=given, num_threads=2
        )
        assert [(spelled(a), spelled(b)) for a, b in result.merges] == expected


REFUSED = {
    "add_prefix_space": ({**BYTE_LEVEL, "use_regex": True, "add_prefix_space": True}, "add_prefix_space=True"),
    "DeepSeek's three Splits": (file_pre_tokenizer("deepseek-v3"), "Split\\+Split\\+Split before ByteLevel"),
    "Falcon's steps after ByteLevel": (file_pre_tokenizer("falcon"), "ends with its one ByteLevel step"),
    "a Split that drops text": (
        {"type": "Sequence", "pretokenizers": [split(r"\w+", "Removed"), BYTE_LEVEL]},
        "Removed",
    ),
    "no ByteLevel": (split(r"\w+"), "ends with its one ByteLevel step"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_what_no_single_regex_runs_is_refused_naming_the_step(corpus, name):
    pre_tokenizer, message = REFUSED[name]
    with pytest.raises(ValueError, match=message) as refusal:
        bpeforge.train(corpus, 400, pre_tokenizer=pre_tokenizer)
    assert "pass pattern=" in str(refusal.value)


def test_pattern_and_pre_tokenizer_together_are_refused(corpus):
    with pytest.raises(ValueError, match="pattern or pre_tokenizer, not both"):
        bpeforge.train(corpus, 400, pattern="gpt2", pre_tokenizer=PIPELINES["Llama 3's file"])
