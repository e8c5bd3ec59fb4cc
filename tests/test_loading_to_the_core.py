"""Loading straight to the core (a tiktoken rank file, `formats/rank_file.py`; GPT-2's `vocab.json` and
`merges.txt`, `formats/gpt2_vocab.rs`; `core_tables.py`): the tokenizer and the encoding are those the Python
objects build, with their tables made only when asked for."""

from __future__ import annotations

import gzip
import pickle

import pytest
from bpeforge import Tokenizer, core_tables
from bpeforge.formats import gpt2, tiktoken_ranks
from bpeforge.formats.parts import TokenizerParts
from bpeforge.tiktoken import Encoding, get_encoding
from bpeforge.tiktoken.registry import DATA, DEFINITIONS, RANK_FILE_OF, load_ranks, rank_file_contents
from corpora import SCRIPT_SAMPLES

ENCODINGS = {"r50k_base": "gpt2", "cl100k_base": "cl100k", "o200k_base": "o200k"}
TEXT = "Hello world, this is a test: 12345 héllo wörld\n\n  \t" + "".join(map(str, SCRIPT_SAMPLES))


def through_python_objects(path, pattern, special_tokens) -> Tokenizer:
    """The tokenizer as the constructor builds it from the parts Python reads (every merge as bytes, the
    seeds checked by a BPE each)."""
    parts = tiktoken_ranks.load_tiktoken(path, pattern, special_tokens)
    return Tokenizer(parts.vocab, parts.merges, parts.special_tokens, pattern=parts.pattern)


def assert_same_tokenizer(loaded: Tokenizer, expected: Tokenizer, text: str = TEXT) -> None:
    # Sizes first: from the core, before the tables exist.
    assert (loaded.vocab_size, len(loaded), loaded.n_vocab) == (expected.vocab_size, len(expected), expected.n_vocab)
    assert repr(loaded) == repr(expected)
    assert loaded.encode(text) == expected.encode(text)
    # The seeds chosen without a BPE each (the merges are the ranks') are those the BPE check keeps.
    assert loaded.cache_info()["seeds"] == expected.cache_info()["seeds"] > 0
    assert "_vocab" not in loaded.__dict__ and "_merges" not in loaded.__dict__, "made while loading"
    assert loaded == expected
    assert (loaded.vocab, loaded.merges) == (expected.vocab, expected.merges)
    assert loaded.special_tokens == expected.special_tokens


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_a_shipped_rank_file_loads_as_through_python_objects(name, tmp_path):
    path = tmp_path / f"{name}.tiktoken"
    path.write_bytes(gzip.decompress((DATA / f"{name}.tiktoken.gz").read_bytes()))
    specials = DEFINITIONS[name]["special_tokens"]
    loaded = Tokenizer.from_tiktoken(path, ENCODINGS[name], specials)
    assert_same_tokenizer(loaded, through_python_objects(path, ENCODINGS[name], specials))


def test_a_rank_file_not_shipped_recovers_its_merges_in_the_core(tmp_path):
    ranks = load_ranks("r50k_base")
    path = tmp_path / "ranks.tiktoken"
    # The first 20 K tokens only: a file no sha256 recognises.
    lines = gzip.decompress((DATA / "r50k_base.tiktoken.gz").read_bytes()).splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:20_000]))
    assert len(ranks) > 20_000
    specials = ["<|endoftext|>", "<|pad|>", "<|endoftext|>"]  # a list: ids after the last rank, repeats dropped
    loaded = Tokenizer.from_tiktoken(path, special_tokens=specials)
    assert loaded.special_tokens == ["<|endoftext|>", "<|pad|>"]
    assert loaded.token_to_id("<|pad|>") == 20_001
    assert_same_tokenizer(loaded, through_python_objects(path, "gpt2", specials))


def test_what_the_core_leaves_to_python_still_loads_or_is_named(tmp_path):
    lines = gzip.decompress((DATA / "r50k_base.tiktoken.gz").read_bytes()).splitlines(keepends=True)
    path = tmp_path / "ranks.tiktoken"
    path.write_bytes(b"".join(lines[:1000]).replace(b" ", b"  ", 3))  # two spaces: the Python reader's to read
    assert Tokenizer.from_tiktoken(path).vocab == through_python_objects(path, "gpt2", None).vocab
    # A special token spelled like a token (ranks 0-255 are the bytes: "a" is rank 64), given another id.
    with pytest.raises(ValueError, match=r"special token 'a' is also the token of rank 64"):
        Tokenizer.from_tiktoken(path, special_tokens={"a": 5000})
    with pytest.raises(TypeError, match="cache_size must be an int"):
        Tokenizer.from_tiktoken(path, cache_size="big")


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_get_encoding_makes_its_ranks_only_when_asked(name):
    fresh = Encoding._from_rank_file(name, rank_file_contents(RANK_FILE_OF.get(name, name)), **DEFINITIONS[name])
    assert fresh.encode("hello world") == get_encoding(name).encode("hello world")
    assert fresh.n_vocab == get_encoding(name).n_vocab
    assert "_mergeable_ranks" not in fresh.__dict__ and "_vocab" not in fresh._tokenizer.__dict__, "made by encode"
    encoding = get_encoding(name)
    assert encoding.encode("hello world") == encoding._tokenizer.encode("hello world")
    ranks = load_ranks(RANK_FILE_OF.get(name, name))
    assert encoding.max_token_value == max(max(ranks.values()), *DEFINITIONS[name]["special_tokens"].values())
    assert list(encoding._mergeable_ranks.items()) == list(ranks.items())  # rank order, as tiktoken's dict
    assert encoding.encode_single_token(b"hello") == ranks[b"hello"]
    assert pickle.loads(pickle.dumps(encoding)) is encoding


def test_gpt2_files_load_as_through_python_objects(gpt2_paths, cs336_texts, tmp_path):
    text = TEXT + "".join(cs336_texts.values())
    parts = TokenizerParts(*gpt2.load_files(*gpt2_paths), ["<|endoftext|>", "<|pad|>"], "gpt2")
    expected = Tokenizer(parts.vocab, parts.merges, parts.special_tokens)
    # "<|endoftext|>" is in GPT-2's vocab.json: it stands for id 50256; "<|pad|>" is appended.
    loaded = Tokenizer.from_files(*gpt2_paths, ["<|endoftext|>", "<|pad|>", "<|pad|>"])
    assert (loaded.token_to_id("<|endoftext|>"), loaded.token_to_id("<|pad|>")) == (50256, 50257)
    assert_same_tokenizer(loaded, expected, text)
    expected.save(tmp_path / "saved")
    assert_same_tokenizer(Tokenizer.load(tmp_path / "saved"), expected, text)


def test_gpt2_files_the_core_leaves_to_python_still_load_or_are_named(tmp_path):
    vocab = {i: bytes([i]) for i in range(256)} | {256: b" w", 257: b"or", 258: b" wor"}
    saved = Tokenizer(vocab, [(b" ", b"w"), (b"o", b"r"), (b" w", b"or")]).save(tmp_path / "t")
    merges = saved / gpt2.MERGES_FILE
    merges.write_text(merges.read_text().replace("\n", "\r\n") + "\n\n")  # read by both readers
    assert Tokenizer.from_files(saved / gpt2.VOCAB_FILE, merges).encode(" world") == [258, 108, 100]
    merges.write_text(merges.read_text() + "o r\n")  # a pair listed twice: the merges keep the repeat
    assert Tokenizer.from_files(saved / gpt2.VOCAB_FILE, merges).merges == gpt2.load_merges(merges)
    assert len(gpt2.load_merges(merges)) == 4
    with pytest.raises(ValueError, match=r"merges.txt: pattern \"\(unclosed\" does not compile"):
        Tokenizer.from_files(saved / gpt2.VOCAB_FILE, merges, pattern="(unclosed")
    with pytest.raises(TypeError, match="special tokens must be str"):
        Tokenizer.from_files(saved / gpt2.VOCAB_FILE, merges, [b"<|x|>"])


def test_a_tokenizer_pickles_as_its_packed_vocabulary(gpt2_paths, tmp_path):
    path = tmp_path / "o200k_base.tiktoken"
    path.write_bytes(gzip.decompress((DATA / "o200k_base.tiktoken.gz").read_bytes()))
    loaded = [Tokenizer.from_tiktoken(path, "o200k", {"<|endoftext|>": 199999}), Tokenizer.from_files(*gpt2_paths)]
    for tokenizer in loaded:
        seeds = tokenizer.cache_info()["seeds"]
        copy = pickle.loads(pickle.dumps(tokenizer))
        assert copy.cache_info()["seeds"] == seeds > 0, "the same seeds, found as cheaply"
        assert copy.encode(TEXT) == tokenizer.encode(TEXT)
        assert "_vocab" not in copy.__dict__ and "_merges" not in copy.__dict__, "made by unpickling"
        assert copy == tokenizer and repr(copy) == repr(tokenizer)
    # A pair listed twice: the core's table holds it once, so the tokenizer pickles as its Python objects.
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"or"}
    twice = Tokenizer(vocab, [(b"o", b"r"), (b"o", b"r")], ["<|e|>"], pattern="cl100k")
    copy = pickle.loads(pickle.dumps(twice))
    assert copy.merges == [(b"o", b"r"), (b"o", b"r")] and copy == twice
    with pytest.raises(ValueError, match="another bpeforge version"):
        core_tables._from_packed(Tokenizer, b"bpefv000", [], "gpt2", 0)
