"""Export and import (issue 4, item 1): each file is loaded in the other tool and the ids compared.

Two tokenizers are exercised: GPT-2, built from the CS336 fixture files (set
BPEFORGE_TEST_DATA to the shared data directory holding `cs336/`), and a small
one trained here by `bpeforge.train_bpe` on a generated many-script corpus,
which always runs. The other tools are HF `tokenizers`, `transformers` and
`tiktoken`; a test that needs one that is missing is skipped, naming it.
"""

from __future__ import annotations

import argparse
import base64
import doctest
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import bpeforge
import pytest
from bpeforge import Tokenizer
from bpeforge.cli.convert import add_convert_command
from bpeforge.formats import tiktoken_ranks
from bpeforge.formats.gpt2 import MERGES_FILE, VOCAB_FILE, encode_token, load_merges
from bpeforge.formats.hf import GPT2_PATTERN, hf_document, load_hf, save_hf
from bpeforge.formats.tiktoken_ranks import read_tiktoken_ranks, save_tiktoken, tiktoken_special_tokens
from corpora import EMOJI, REGEX_WHITESPACE, SCRIPT_SAMPLES
from hypothesis import given, settings
from hypothesis import strategies as st

SPECIAL = "<|endoftext|>"
TRAINED_SPECIALS = [SPECIAL, "<pad>"]
HYPOTHESIS = {"derandomize": True, "deadline": None, "database": None, "max_examples": 300}


# --------------------------------------------------------------------------
# Tokenizers and the other tools
# --------------------------------------------------------------------------


def generated_corpus(seed: int = 4, documents: int = 600) -> str:
    """About 250 KB of made-up words in many scripts, with emoji, digits, odd whitespace and specials."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "te", "ra", "pon", "dar", "the", "ing", "tion", *SCRIPT_SAMPLES, *EMOJI]
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 3))) for _ in range(2000)]
    words = [word for rank, word in enumerate(words) for _ in range(max(1, 40 // (rank + 1)))]  # Zipf-like
    separators = [" "] * 8 + ["  ", "\n", "\n\n", "\r\n", "\t", ", ", ". ", "'s ", "'ll ", " 2024 ", "\u3000"]
    docs = [
        "".join(rng.choice(words) + rng.choice(separators) for _ in range(rng.randint(10, 80)))
        for _ in range(documents)
    ]
    return SPECIAL.join(docs) + "<pad>"


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Tokenizer:
    corpus = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    corpus.write_text(generated_corpus(), encoding="utf-8")
    vocab, merges = bpeforge.train_bpe(corpus, 2000, TRAINED_SPECIALS)
    assert len(merges) == 2000 - 256 - len(TRAINED_SPECIALS)
    return Tokenizer(vocab, merges, TRAINED_SPECIALS)


@pytest.fixture(scope="module", params=["gpt2", "trained"])
def tokenizer(request) -> Tokenizer:
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module")
def hf_tokenizers():
    return pytest.importorskip("tokenizers", reason="HF tokenizers is not installed (pip install tokenizers)")


@pytest.fixture(scope="module")
def fast_tokenizer_class():
    """transformers' PreTrainedTokenizerFast; the import takes about a second, so once per module."""
    transformers = pytest.importorskip(
        "transformers", reason="transformers is not installed (pip install transformers)"
    )
    return transformers.PreTrainedTokenizerFast


@pytest.fixture(scope="module")
def tiktoken():
    return pytest.importorskip("tiktoken", reason="tiktoken is not installed (pip install tiktoken)")


@pytest.fixture(scope="module")
def hf_pair(tokenizer, tmp_path_factory, hf_tokenizers, fast_tokenizer_class):
    """The tokenizer saved by `save_hf`, loaded in HF tokenizers and in transformers."""
    path = save_hf(tokenizer, tmp_path_factory.mktemp("hf") / "tokenizer.json")
    return hf_tokenizers.Tokenizer.from_file(str(path)), fast_tokenizer_class(tokenizer_file=str(path))


@pytest.fixture(scope="module")
def tiktoken_encoding(tokenizer, tmp_path_factory, tiktoken):
    """`tiktoken.Encoding` over the file `save_tiktoken` wrote, read by tiktoken's own loader."""
    from tiktoken.load import load_tiktoken_bpe

    path = save_tiktoken(tokenizer, tmp_path_factory.mktemp("tiktoken") / "ranks.tiktoken")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken caches files by path; tmp paths are reused
        ranks = load_tiktoken_bpe(str(path))
    return tiktoken.Encoding(
        name="bpeforge-test",
        pat_str=GPT2_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=tiktoken_special_tokens(tokenizer),
    )


# --------------------------------------------------------------------------
# Generated text
# --------------------------------------------------------------------------

FRAGMENTS = [
    *SCRIPT_SAMPLES,
    *EMOJI,
    *REGEX_WHITESPACE,
    "\x1c",
    "\x00",
    "\r\n",
    "\n\n\n",
    "   ",
    "'s",
    "'ll",
    "don't",
    "2024",
    "<|",
    "|>",
    "<pad",
    "endoftext|>",
    SPECIAL,
    "<pad>",
]
text_piece = st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4), st.text(" \n\ta", max_size=6))
any_text = st.lists(text_piece, max_size=30).map("".join)


def hf_ids(hf_pair, text: str) -> tuple[list[int], list[int]]:
    hf, fast = hf_pair
    return hf.encode(text).ids, fast.encode(text)


# --------------------------------------------------------------------------
# HF tokenizer.json
# --------------------------------------------------------------------------


@settings(**HYPOTHESIS)
@given(text=any_text)
def test_hf_tokenizers_and_transformers_give_bpeforge_ids(tokenizer, hf_pair, text):
    expected = tokenizer.encode(text)
    assert hf_ids(hf_pair, text) == (expected, expected)


def test_hf_ids_equal_on_cs336_texts(gpt2, cs336_texts, tmp_path, hf_tokenizers, fast_tokenizer_class):
    path = save_hf(gpt2, tmp_path / "tokenizer.json")
    hf = hf_tokenizers.Tokenizer.from_file(str(path))
    fast = fast_tokenizer_class(tokenizer_file=str(path))
    for name, text in cs336_texts.items():
        expected = gpt2.encode(text)
        assert hf.encode(text).ids == expected, name
        assert fast.encode(text) == expected, name
        assert hf.decode(expected, skip_special_tokens=False) == text, name


def test_hf_ids_on_edge_texts(tokenizer, hf_pair):
    """Whitespace runs, emoji, CJK, specials back to back, and texts that are almost a special."""
    texts = ["", " ", "   ", "\n\n \n", "a  \n\n  b", "\t\t x", "😀👍🏽 日本語 한국어 猫", f"{SPECIAL}{SPECIAL}"]
    texts += [f" {SPECIAL} <pad><pad> x", "<|endoftext", "<pad", "<pa d>", "x" * 5000, " " * 5000, "9" * 300]
    for text in texts:
        expected = tokenizer.encode(text)
        assert hf_ids(hf_pair, text) == (expected, expected), repr(text)


def test_hf_matches_special_tokens_longest_first(trained, tmp_path, hf_tokenizers, fast_tokenizer_class):
    specials = ["<|", SPECIAL, SPECIAL + SPECIAL, "|>"]
    tok = Tokenizer(trained.vocab, trained.merges, specials)
    path = save_hf(tok, tmp_path / "tokenizer.json")
    hf = hf_tokenizers.Tokenizer.from_file(str(path))
    fast = fast_tokenizer_class(tokenizer_file=str(path))
    for text in [SPECIAL * 3, f"a<|b|>{SPECIAL}<|endoftext", "<|<|>|>", f"{SPECIAL}|>"]:
        expected = tok.encode(text)
        assert hf.encode(text).ids == expected == fast.encode(text), repr(text)


def test_special_tokens_with_spaces_and_non_ascii_text(trained, tmp_path, hf_tokenizers, fast_tokenizer_class):
    """A special token is written under its own text, which need not be a byte-level spelling."""
    specials = ["<my token>", "<|终|>", "é!"]
    tok = Tokenizer(trained.vocab, trained.merges, specials)
    path = save_hf(tok, tmp_path / "tokenizer.json")
    hf = hf_tokenizers.Tokenizer.from_file(str(path))
    fast = fast_tokenizer_class(tokenizer_file=str(path))
    text = "a <my token> b<|终|>é!é !<my  token>"
    assert hf.encode(text).ids == tok.encode(text) == fast.encode(text)
    # HF's ByteLevel decoder reads a token made only of byte characters ("é!") through the byte table
    # (é is 0xE9 there), so only the other special tokens decode back to their text (see bpeforge/formats/hf.py).
    plain = "a <my token> b<|终|>"
    assert hf.decode(tok.encode(plain), skip_special_tokens=False) == plain
    assert same_tokenizer(Tokenizer.from_hf(path), tok)


def test_load_hf_round_trips_vocab_merges_and_specials(tokenizer, tmp_path):
    loaded = Tokenizer.from_hf(save_hf(tokenizer, tmp_path / "tokenizer.json"))
    assert loaded.vocab == tokenizer.vocab
    assert loaded.merges == tokenizer.merges
    assert loaded.special_tokens == tokenizer.special_tokens


def test_save_hf_writes_the_layout_hf_reads(trained, tmp_path):
    doc = json.loads(save_hf(trained, tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert doc["normalizer"] is None and doc["post_processor"] is None
    assert doc["pre_tokenizer"] == {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": True,
        "use_regex": True,
    }
    assert doc["model"]["type"] == "BPE" and doc["model"]["ignore_merges"] is False
    assert doc["model"]["merges"][0] == " ".join(encode_token(part) for part in trained.merges[0])
    assert [(t["content"], t["id"], t["special"]) for t in doc["added_tokens"]] == [
        (token, trained.token_to_id(token), True) for token in TRAINED_SPECIALS
    ]
    assert doc["model"]["vocab"][SPECIAL] == trained.token_to_id(SPECIAL)  # HF takes the id from here


def test_load_hf_reads_hf_own_gpt2_file(gpt2, gpt2_paths, cs336_texts, tmp_path, hf_tokenizers):
    """A tokenizer.json that HF writes for GPT-2: merges as pairs, a ByteLevel post-processor."""
    models, pre_tokenizers, decoders, processors = (
        hf_tokenizers.models,
        hf_tokenizers.pre_tokenizers,
        hf_tokenizers.decoders,
        hf_tokenizers.processors,
    )
    hf = hf_tokenizers.Tokenizer(models.BPE.from_file(str(gpt2_paths[0]), str(gpt2_paths[1])))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.post_processor = processors.ByteLevel(trim_offsets=False)
    hf.add_special_tokens([SPECIAL])
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    loaded = Tokenizer.from_hf(path)
    assert (loaded.vocab, loaded.merges, loaded.special_tokens) == (gpt2.vocab, gpt2.merges, [SPECIAL])
    for name, text in cs336_texts.items():
        assert loaded.encode(text) == hf.encode(text).ids, name


def test_load_hf_reads_hf_file_with_specials_outside_the_model_vocab(trained, tmp_path, hf_tokenizers):
    """HF numbers added tokens that are not in the model vocab itself; load_hf gives the same ids."""
    specials = {token.encode("utf-8") for token in TRAINED_SPECIALS}
    vocab = {encode_token(token): i for i, token in trained.vocab.items() if token not in specials}
    merges = [(encode_token(left), encode_token(right)) for left, right in trained.merges]
    hf = hf_tokenizers.Tokenizer(hf_tokenizers.models.BPE(vocab=vocab, merges=merges))
    hf.pre_tokenizer = hf_tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.add_special_tokens(list(reversed(TRAINED_SPECIALS)))  # HF numbers them in this order
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    loaded = Tokenizer.from_hf(path)
    text = generated_corpus(seed=9, documents=20)
    assert loaded.encode(text) == hf.encode(text).ids
    assert loaded.token_to_id("<pad>") == hf.token_to_id("<pad>") == len(vocab)


def duplicate_bytes_tokenizer() -> Tokenizer:
    """Two merges that spell b"abc" (possible in bpeforge vocabularies, see docs/format.md)."""
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"bc", 258: b"abc", 259: b"abc"}
    return Tokenizer(vocab, [(b"a", b"b"), (b"b", b"c"), (b"ab", b"c"), (b"a", b"bc")])


def test_save_hf_refuses_two_ids_with_the_same_bytes(tmp_path):
    with pytest.raises(ValueError, match=r"ids 258 and 259 are both b'abc'.*one id"):
        save_hf(duplicate_bytes_tokenizer(), tmp_path / "tokenizer.json")
    assert list(tmp_path.iterdir()) == []


def test_save_hf_refuses_a_special_token_spelled_two_ways(trained, tmp_path):
    tok = Tokenizer(trained.vocab, trained.merges, ["\n"])
    with pytest.raises(ValueError, match=r"special token '\\n' \(id 10\) is also an ordinary token, spelled 'Ċ'"):
        save_hf(tok, tmp_path / "tokenizer.json")


def test_save_hf_carries_ids_that_are_not_256_plus_rank(tmp_path, hf_tokenizers):
    """Ids are carried over exactly, whatever their layout: a special first, then the bytes, then merges."""
    vocab = {0: SPECIAL.encode()} | {i + 1: bytes([i]) for i in range(256)} | {300: b" w", 301: b"or", 400: b" wor"}
    tok = Tokenizer(vocab, [(b" ", b"w"), (b"o", b"r"), (b" w", b"or")], [SPECIAL])
    path = save_hf(tok, tmp_path / "tokenizer.json")
    text = f"hello world{SPECIAL} worn"
    assert hf_tokenizers.Tokenizer.from_file(str(path)).encode(text).ids == tok.encode(text) == [
        105, 102, 109, 109, 112, 400, 109, 101, 0, 400, 111,
    ]  # fmt: skip
    assert Tokenizer.from_hf(path).vocab == tok.vocab


REFUSED_HF_CHANGES = {
    "normalizer": (lambda doc: doc.update(normalizer={"type": "NFC"}), r"normalizer 'NFC'"),
    "model": (lambda doc: doc["model"].update(type="WordPiece"), r"model 'WordPiece'"),
    "prefix space": (
        lambda doc: doc["pre_tokenizer"].update(add_prefix_space=True),
        r"pre_tokenizer 'ByteLevel' is not supported",
    ),
    "split": (
        lambda doc: doc.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [doc["pre_tokenizer"]]}),
        r"pre_tokenizer 'Sequence'",
    ),
    "template": (
        lambda doc: doc.update(post_processor={"type": "TemplateProcessing", "single": [], "pair": []}),
        r"post_processor 'TemplateProcessing'",
    ),
    "ignore_merges": (lambda doc: doc["model"].update(ignore_merges=True), r"model.ignore_merges = True"),
    "dropout": (lambda doc: doc["model"].update(dropout=0.1), r"model.dropout = 0.1"),
    "lstrip": (lambda doc: doc["added_tokens"][0].update(lstrip=True), r"has lstrip=true"),
    "added id": (lambda doc: doc["added_tokens"][0].update(id=5), r"has id 5 but HF gives it 1998"),
    "mixed": (lambda doc: doc["added_tokens"][0].update(normalized=True), r"mix normalized true and false"),
}


@pytest.mark.parametrize("change", REFUSED_HF_CHANGES)
def test_load_hf_refuses_what_would_encode_differently(trained, tmp_path, change):
    """The plain loader's refusals: such files load as a tokenizer.json pipeline instead (test_hf_pipelines.py)."""
    edit, message = REFUSED_HF_CHANGES[change]
    doc = hf_document(trained)
    edit(doc)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_hf(path)


def test_load_hf_reads_merges_as_strings_or_pairs(trained, tmp_path):
    doc = hf_document(trained)
    doc["model"]["merges"] = [merge.split(" ") for merge in doc["model"]["merges"]]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert Tokenizer.from_hf(path).merges == trained.merges


# --------------------------------------------------------------------------
# tiktoken ranks
# --------------------------------------------------------------------------


@settings(**HYPOTHESIS)
@given(text=any_text)
def test_tiktoken_gives_bpeforge_ids(tokenizer, tiktoken_encoding, text):
    assert tiktoken_encoding.encode(text, allowed_special="all") == tokenizer.encode(text)


def test_tiktoken_ids_equal_on_cs336_texts(gpt2, cs336_texts, tmp_path, tiktoken):
    path = save_tiktoken(gpt2, tmp_path / "gpt2.tiktoken")
    encoding = tiktoken.Encoding(
        name="gpt2-from-bpeforge",
        pat_str=GPT2_PATTERN,
        mergeable_ranks=read_tiktoken_ranks(path),
        special_tokens=tiktoken_special_tokens(gpt2),
    )
    for name, text in cs336_texts.items():
        assert encoding.encode(text, allowed_special="all") == gpt2.encode(text), name


def test_save_tiktoken_writes_base64_and_rank_lines(trained, tmp_path):
    lines = save_tiktoken(trained, tmp_path / "t.tiktoken").read_text(encoding="ascii").splitlines()
    assert len(lines) == trained.vocab_size - len(TRAINED_SPECIALS)  # special tokens are not in the file
    token, rank = lines[300].split(" ")
    assert trained.vocab[int(rank)] == base64.b64decode(token) and int(rank) == 300


def test_load_tiktoken_recovers_exactly_the_merges(tokenizer, tmp_path):
    path = save_tiktoken(tokenizer, tmp_path / "ranks.tiktoken")
    loaded = Tokenizer.from_tiktoken(path, special_tokens=tokenizer.special_tokens)
    assert loaded.merges == tokenizer.merges
    assert loaded.vocab == tokenizer.vocab
    assert loaded.special_tokens == tokenizer.special_tokens


@pytest.mark.parametrize("suffix", [".gz", ".xz", ".zst"])
def test_a_compressed_rank_file_loads_as_the_plain_one(tokenizer, tmp_path, suffix):
    """A `.tiktoken.gz` (how rank files are often kept), `.xz` or `.zst` reads decompressed, on the fast path
    and the line reader alike; a bad line in one is named by its number as in a plain file."""
    import gzip
    import lzma

    import zstandard

    compress = {".gz": gzip.compress, ".xz": lzma.compress, ".zst": zstandard.ZstdCompressor().compress}[suffix]
    plain = save_tiktoken(tokenizer, tmp_path / "ranks.tiktoken")
    packed = tmp_path / f"ranks.tiktoken{suffix}"
    packed.write_bytes(compress(plain.read_bytes()))
    assert read_tiktoken_ranks(packed) == read_tiktoken_ranks(plain)
    assert tiktoken_ranks.read_rank_lines(packed) == tiktoken_ranks.read_rank_lines(plain)
    loaded = Tokenizer.from_tiktoken(packed, special_tokens=tokenizer.special_tokens)
    assert (loaded.vocab, loaded.merges) == (tokenizer.vocab, tokenizer.merges)
    lines = plain.read_bytes().split(b"\n")
    lines[5] = b"not-base64! 5"
    packed.write_bytes(compress(b"\n".join(lines)))
    where = re.escape(f"ranks.tiktoken{suffix}:6: expected 'base64 rank'")
    with pytest.raises(ValueError, match=where):
        read_tiktoken_ranks(packed)


def test_load_tiktoken_gpt2_recovers_all_50000_merges(gpt2, gpt2_paths, tmp_path):
    path = save_tiktoken(gpt2, tmp_path / "gpt2.tiktoken")
    loaded = Tokenizer.from_tiktoken(path, special_tokens={SPECIAL: 50256})  # tiktoken's own form
    assert len(loaded.merges) == 50_000
    assert loaded.merges == load_merges(gpt2_paths[1])
    assert loaded.token_to_id(SPECIAL) == 50256


def test_save_tiktoken_refuses_two_ids_with_the_same_bytes(tmp_path):
    with pytest.raises(ValueError, match=r"ids 258 and 259 are both b'abc'.*one rank per token"):
        save_tiktoken(duplicate_bytes_tokenizer(), tmp_path / "t.tiktoken")


def test_save_tiktoken_refuses_ids_out_of_merge_order(tmp_path):
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"or", 257: b" w"}
    tok = Tokenizer(vocab, [(b" ", b"w"), (b"o", b"r")])
    with pytest.raises(ValueError, match=r"merge 1 \(b'o' \+ b'r'\) makes id 256.*renumber"):
        save_tiktoken(tok, tmp_path / "t.tiktoken")


def test_save_tiktoken_refuses_a_token_no_merge_makes(tmp_path):
    vocab = {i: bytes([i]) for i in range(256)} | {256: b" w", 257: b"xyz"}
    with pytest.raises(ValueError, match=r"b'xyz' \(id 257\) is neither a byte nor made by a merge"):
        save_tiktoken(Tokenizer(vocab, [(b" ", b"w")]), tmp_path / "t.tiktoken")


def test_save_tiktoken_refuses_merges_tiktoken_would_build_otherwise(tmp_path):
    """b"abc" is ab + c here, but tiktoken, merging by rank, joins b + c (rank 256) before a + b (257)."""
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"bc", 257: b"ab", 258: b"abc"}
    tok = Tokenizer(vocab, [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")])
    with pytest.raises(ValueError, match=r"merge 2 is b'ab' \+ b'c', but tiktoken.* from b'a' \+ b'bc'"):
        save_tiktoken(tok, tmp_path / "t.tiktoken")


def test_tiktoken_special_tokens_refuses_a_prefix_of_another(trained):
    tok = Tokenizer(trained.vocab, trained.merges, ["<|", SPECIAL])
    with pytest.raises(ValueError, match=r"'<\|' is a prefix of '<\|endoftext\|>'.*longest"):
        tiktoken_special_tokens(tok)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"YQ== 0\nYg== x\n", r":2: expected 'base64 rank', got 'Yg== x'"),
        (b"YQ== 0\nYQ== 1\n", r":2: token b'a' was already given"),
        (b"YQ== 0\nYg== 0\n", r":2: rank 0 was already given"),
        (b"not*base64 3\n", r":1: expected 'base64 rank'"),
    ],
)
def test_read_tiktoken_ranks_names_the_bad_line(tmp_path, content, message):
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        read_tiktoken_ranks(path)


def test_load_tiktoken_refuses_a_token_that_is_not_a_merge_of_lower_ranks(tmp_path):
    lines = [f"{base64.b64encode(bytes([i])).decode()} {i}" for i in range(256)] + ["YWJj 256"]  # b"abc"
    path = tmp_path / "t.tiktoken"
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    with pytest.raises(ValueError, match=r"\"abc\" \(rank 256\) is not a merge of two lower-ranked tokens"):
        Tokenizer.from_tiktoken(path)


def test_load_tiktoken_checks_pattern_and_special_ids(trained, tmp_path):
    path = save_tiktoken(trained, tmp_path / "t.tiktoken")
    # A ranks file holds no pattern: the caller names a preset or gives a regex, which must compile.
    assert Tokenizer.from_tiktoken(path, pattern="cl100k").pattern == "cl100k"
    with pytest.raises(ValueError, match=r'pattern "\(unclosed" does not compile'):
        Tokenizer.from_tiktoken(path, pattern="(unclosed")
    with pytest.raises(ValueError, match=r"special token '<pad>' has id 5, which .* already gives to b'\\x05'"):
        Tokenizer.from_tiktoken(path, special_tokens={"<pad>": 5})
    with pytest.raises(ValueError, match=r"'a' is also the token of rank 97 .* give it id 97, not 3000"):
        Tokenizer.from_tiktoken(path, special_tokens={"a": 3000})
    placed = Tokenizer.from_tiktoken(path, special_tokens={"<pad>": 5000, SPECIAL: 4000})
    assert (placed.token_to_id("<pad>"), placed.token_to_id(SPECIAL)) == (5000, 4000)


def test_docstring_examples():
    result = doctest.testmod(tiktoken_ranks)
    assert result.attempted > 0 and result.failed == 0


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------


@pytest.mark.parametrize("save", [save_hf, save_tiktoken])
def test_saves_refuse_to_overwrite_unless_asked_and_leave_no_temporary_files(trained, tmp_path, save):
    path = tmp_path / "out"
    path.write_text("keep me")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        save(trained, path)
    assert path.read_text() == "keep me"
    save(trained, path, overwrite=True)
    assert path.read_text() != "keep me"
    umask = os.umask(0o022)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # the usual permissions, not a temp file's 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


# --------------------------------------------------------------------------
# bpeforge convert
# --------------------------------------------------------------------------


def convert(*argv: str) -> int:
    """Run `bpeforge convert` in-process, through a parser of our own (as cli/parser.py builds it)."""
    parser = argparse.ArgumentParser(prog="bpeforge")
    add_convert_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["convert", *argv])
    return args.run(args, parser)


FILE_NAMES = {"gpt2": "dir", "hf": "tokenizer.json", "tiktoken": "ranks.tiktoken"}


def same_tokenizer(a: Tokenizer, b: Tokenizer) -> bool:
    return (a.vocab, a.merges, a.special_tokens) == (b.vocab, b.merges, b.special_tokens)


def save_as(target: str, tok: Tokenizer, path: Path) -> None:
    if target == "gpt2":
        bpeforge.save(tok.vocab, tok.merges, path, special_tokens=tok.special_tokens)
    else:
        {"hf": save_hf, "tiktoken": save_tiktoken}[target](tok, path)


def load_as(source: str, path: Path, special_tokens: list[str]) -> Tokenizer:
    if source == "gpt2":
        return Tokenizer.load(path)
    if source == "hf":
        return Tokenizer.from_hf(path)
    return Tokenizer.from_tiktoken(path, special_tokens=special_tokens)


@pytest.mark.parametrize("target", ["gpt2", "hf", "tiktoken"])
@pytest.mark.parametrize("source", ["gpt2", "hf", "tiktoken"])
def test_convert_round_trips_between_all_formats(trained, tmp_path, capsys, source, target):
    src, dest = tmp_path / f"src-{FILE_NAMES[source]}", tmp_path / FILE_NAMES[target]
    save_as(source, trained, src)
    specials = [arg for token in TRAINED_SPECIALS for arg in ("--special-token", token)] if source == "tiktoken" else []
    # A .tiktoken file records no pattern (nor special tokens): given.
    pattern = ["--pattern", trained.pattern] if source == "tiktoken" else []
    assert convert(str(src), "--to", target, "-o", str(dest), *specials, *pattern) == 0  # SRC's format from its name
    assert f"wrote {dest} ({target})" in capsys.readouterr().out
    assert same_tokenizer(load_as(target, dest, TRAINED_SPECIALS), trained)


def test_convert_gpt2_through_every_format(gpt2, gpt2_paths, tmp_path):
    start = tmp_path / "gpt2"
    start.mkdir()
    for name, path in zip([VOCAB_FILE, MERGES_FILE], gpt2_paths):
        (start / name).write_bytes(path.read_bytes())  # a bare GPT-2 directory: no bpeforge.json
    chain = [start, tmp_path / "tokenizer.json", tmp_path / "gpt2.tiktoken", tmp_path / "back"]
    for source, dest, target in zip(chain, chain[1:], ["hf", "tiktoken", "gpt2"]):
        assert convert(str(source), "--to", target, "-o", str(dest), "--special-token", SPECIAL) == 0
    assert same_tokenizer(Tokenizer.load(tmp_path / "back"), gpt2)


def test_convert_refuses_to_overwrite_without_force(trained, tmp_path, capsys):
    src = bpeforge.save(trained.vocab, trained.merges, tmp_path / "src", special_tokens=TRAINED_SPECIALS)
    dest = tmp_path / "tokenizer.json"
    dest.write_text("keep me")
    with pytest.raises(FileExistsError, match="already exists; pass --force"):
        convert(str(src), "--to", "hf", "-o", str(dest))
    assert dest.read_text() == "keep me"
    assert convert(str(src), "--to", "hf", "-o", str(dest), "--force") == 0
    assert same_tokenizer(Tokenizer.from_hf(dest), trained)


def test_convert_unknown_formats_list_the_supported_ones(trained, tmp_path, capsys):
    src = save_hf(trained, tmp_path / "tok.json")
    with pytest.raises(SystemExit):
        convert(str(src), "--to", "sentencepiece", "-o", str(tmp_path / "out"))
    assert "invalid choice: 'sentencepiece'" in capsys.readouterr().err
    mystery = tmp_path / "tokenizer.bin"
    mystery.write_bytes(src.read_bytes())
    with pytest.raises(SystemExit):
        convert(str(mystery), "--to", "gpt2", "-o", str(tmp_path / "out"))
    err = capsys.readouterr().err
    assert "cannot tell the format" in err and "--from hf|tiktoken|gpt2" in err
    assert convert(str(mystery), "--from", "hf", "--to", "gpt2", "-o", str(tmp_path / "out")) == 0


def test_convert_tiktoken_output_says_how_to_get_the_specials_back(trained, tmp_path, capsys):
    src = save_hf(trained, tmp_path / "tokenizer.json")
    convert(str(src), "--to", "tiktoken", "-o", str(tmp_path / "t.tiktoken"))
    out = capsys.readouterr().out
    assert "--special-token '<|endoftext|>' --special-token '<pad>'" in out
    assert f"special_tokens={{'<|endoftext|>': {trained.token_to_id(SPECIAL)}" in out


def test_python_m_bpeforge_convert(trained, tmp_path):
    """The real command line."""
    src = str(save_hf(trained, tmp_path / "tokenizer.json"))
    out = str(tmp_path / "out")
    written = run_bpeforge("convert", src, "--to", "gpt2", "-o", out)
    assert written.returncode == 0, written.stderr
    assert same_tokenizer(Tokenizer.load(out), trained)
    refused = run_bpeforge("convert", src, "--to", "gpt2", "-o", out)
    assert refused.returncode == 2 and "already exists; pass --force" in refused.stderr
    unknown = run_bpeforge("convert", src, "--to", "spm", "-o", str(tmp_path / "x"))
    assert unknown.returncode == 2 and "invalid choice: 'spm'" in unknown.stderr and "tiktoken" in unknown.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('{"model": {"type": "Unigram"}}')
    refused = run_bpeforge("convert", str(broken), "--to", "gpt2", "-o", str(tmp_path / "y"))
    assert refused.returncode == 2 and "model 'Unigram' is not supported" in refused.stderr


def run_bpeforge(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bpeforge", *args], capture_output=True, text=True, timeout=120)
