"""`train(..., tie_break="hf", documents="lines")` against HF `tokenizers`' own trainer.

HF's `BpeTrainer` with the byte-level pre-tokenizer (GPT-2's regex) reads each
file line by line, breaks ties by its token ids and counts its vocabulary its
own way; bpeforge's HF mode must give the very same merges, in the same order.
"""

from __future__ import annotations

import json
import lzma
import os
from pathlib import Path

import bpeforge
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

tokenizers = pytest.importorskip("tokenizers")

SPECIAL = "<|endoftext|>"


def byte_level_chars() -> list[str]:
    """GPT-2's byte -> char table (HF writes every token in these chars)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars, extra = {}, 256
    for byte in range(256):
        if byte in printable:
            chars[byte] = chr(byte)
        else:
            chars[byte], extra = chr(extra), extra + 1
    return [chars[b] for b in range(256)]


CHARS = byte_level_chars()


def spelled(token: bytes) -> str:
    return "".join(CHARS[b] for b in token)


def hf_merges(files: list[Path], vocab_size: int, specials: list[str], min_frequency: int = 0) -> list[tuple[str, str]]:
    """The merges HF `tokenizers` learns, as byte-level strings."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, min_frequency=min_frequency, show_progress=False
    )
    tokenizer.train([os.fspath(f) for f in files], trainer)
    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in merges]


def our_merges(files: list[Path], vocab_size: int, specials: list[str], min_frequency: int = 0):
    result = bpeforge.train(
        files,
        vocab_size,
        specials,
        tie_break="hf",
        documents="lines",
        pattern="gpt2",
        min_frequency=min_frequency or None,
        num_threads=2,
    )
    return [(spelled(left), spelled(right)) for left, right in result.merges]


# Few letters, so that counts tie and pairs overlap ("aaa"); spaces, newlines
# (blank lines, "\r\n"), digits, punctuation, contractions, and chars of two
# to four UTF-8 bytes, so that byte-level chars sort apart from the bytes.
ALPHABET = "aab  b\n\nc'sé1 2!\r\tЖ😀"
texts = st.text(alphabet=ALPHABET, min_size=1, max_size=300)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(texts, min_size=1, max_size=3), extra=st.integers(0, 60), use_special=st.booleans())
def test_merges_equal_hf_tokenizers_on_generated_corpora(tmp_path, parts, extra, use_special):
    files = []
    for i, text in enumerate(parts):
        path = tmp_path / f"part{i}.txt"
        path.write_bytes(text.encode("utf-8"))
        files.append(path)
    specials = [SPECIAL] if use_special else []
    # HF's vocabulary: specials + chars seen + new tokens; `extra` asks for up to 60 new ones.
    seen = {b for text in parts for b in text.encode("utf-8")}
    vocab_size = len(specials) + len(seen) + extra
    assert our_merges(files, vocab_size, specials) == hf_merges(files, vocab_size, specials)


def test_a_worked_example_where_the_tie_breaks_differ(tmp_path):
    # Every pair of "ab ba" ties; CS336 merges the greater bytes ("b", "a")
    # first, HF the smaller ids: "a" < "b" < "Ġ", so ("a", "b").
    path = tmp_path / "t.txt"
    path.write_text("ab ba\n", encoding="utf-8")
    ours = bpeforge.train(path, 256 + 1, tie_break="cs336").merges
    assert ours == [(b"b", b"a")]
    assert our_merges([path], 5, []) == hf_merges([path], 5, []) == [("a", "b")]


def test_min_frequency_stops_where_hf_stops(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("low lower lowest\nnewer newest wider\n" * 3 + "zq zq\n", encoding="utf-8")
    for floor in (2, 4, 7):
        assert our_merges([path], 200, [], floor) == hf_merges([path], 200, [], floor)


def test_options_are_checked():
    with pytest.raises(ValueError, match="tie_break"):
        bpeforge.train(__file__, 300, tie_break="tiktoken")
    with pytest.raises(ValueError, match="documents"):
        bpeforge.train(__file__, 300, documents="paragraphs")


CORPORA = ["20news.txt.xz", "multilingual.txt.xz", "gutenberg_500MB.txt.xz"]


@pytest.mark.parametrize("name", CORPORA)
def test_merges_equal_hf_tokenizers_on_the_shared_corpora(shared_data_dir, tmp_path, name):
    """A slice of each shared corpus (its `<|endoftext|>` lines trained through
    as text: HF's trainer does not split on special tokens). The slice's size
    is BPEFORGE_HF_SLICE_MB (default 2)."""
    megabytes = float(os.environ.get("BPEFORGE_HF_SLICE_MB", "2"))
    with lzma.open(shared_data_dir / "corpora" / name, "rb") as source:
        data = source.read(int(megabytes * 1e6))
    path = tmp_path / "slice.txt"
    path.write_bytes(data[: data.rfind(b"\n") + 1])
    vocab_size = 2000
    assert our_merges([path], vocab_size, []) == hf_merges([path], vocab_size, [])


def test_records_are_documents_as_hf_train_from_iterator_takes_them(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    texts = ["low lower\nlowest", "newer newest\n\nwider", "ab ba ab", "low low low\n"] * 3
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    ours = bpeforge.train(path, 60, tie_break="hf").merges
    assert ours == bpeforge.train_from_iterator(texts, 60, tie_break="hf").merges
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=60, show_progress=False))
    hf = [tuple(m) for m in json.loads(tokenizer.to_str())["model"]["merges"]]
    assert [(spelled(a), spelled(b)) for a, b in ours] == hf
    with pytest.raises(ValueError, match="lines"):
        bpeforge.train(path, 60, tie_break="hf", documents="lines")


def test_special_tokens_in_the_text_are_counted_as_text_as_hf_does(tmp_path):
    """HF's trainer reads the files without its added tokens: "<|endoftext|>" in the text is ordinary text
    there (its pieces "<|", "endoftext", "|>" are counted), while the special token still has its id."""
    corpus = tmp_path / "stories.txt"
    corpus.write_text("Once upon a time.<|endoftext|>\nThe end<|endoftext|>text|> endoftext\n" * 30, encoding="utf-8")
    expected = hf_merges([corpus], 300, [SPECIAL])
    assert ("end", "of") in expected or ("endof", "text") in expected or any("endoftext" in a + b for a, b in expected)
    assert our_merges([corpus], 300, [SPECIAL]) == expected
