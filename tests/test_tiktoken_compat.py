"""`bpeforge.tiktoken` against tiktoken itself: same ids, errors and behaviour, method by method.

The reference is a real `tiktoken.Encoding` built offline from the rank files
bpeforge ships (tiktoken would download them), so both sides have the same
ranks, pattern and special tokens. The corpus comparisons need
BPEFORGE_TEST_DATA; tiktoken's own test files are fetched from its sdist
(`pip download`) and run with `bpeforge.tiktoken` in place of `tiktoken`,
skipping when they cannot be had (offline).
"""

from __future__ import annotations

import contextlib
import doctest
import gzip
import importlib
import json
import lzma
import os
import pickle
import random
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import bpeforge
import bpeforge.tiktoken as bt
import numpy as np
import pytest
from bpeforge.formats.tiktoken_ranks import read_rank_lines
from bpeforge.tiktoken.registry import DATA, ENCODING_CONSTRUCTORS, RANK_FILES, load_ranks
from hypothesis import given, settings
from hypothesis import strategies as st
from splits import assigned_code_points

tiktoken = pytest.importorskip("tiktoken")

NAMES = ["r50k_base", "cl100k_base", "o200k_base"]
EOT = "<|endoftext|>"
TEXTS = [
    "",
    "hello world",
    "Hello, World! It's 2024 and we'll see   spaces\n\n\nand\r\nCRLF\ttabs  ",
    "请考试我的软件！12345 naïve façade Ελλάδα привет 😀👍🏽 ",
    "x" * 5000 + " " * 300 + "\n" * 40,
    "<|endoftext|>!! <|fim_prefix|>code<|fim_middle|> <|endofprompt|>\n<|endoftext|>",
]


@pytest.fixture(scope="module", params=NAMES)
def pair(request):
    """(bpeforge.tiktoken encoding, tiktoken encoding) of one name, from the same rank file."""
    ours = bt.get_encoding(request.param)
    return ours, _reference(request.param)


def test_rank_files_are_tiktokens(shared_data_dir):
    """r50k_base was converted from GPT-2's encoder.json: its ranks are GPT-2's ids (the sha256 is checked on load)."""
    byte_of = _gpt2_byte_decoder()
    vocab = json.loads((shared_data_dir / "cs336" / "gpt2_vocab.json").read_text(encoding="utf-8"))
    gpt2_ranks = {bytes(byte_of[c] for c in token): i for token, i in vocab.items() if token != EOT}
    assert load_ranks("r50k_base") == gpt2_ranks


@pytest.mark.parametrize("name", sorted(RANK_FILES))
def test_bundled_rank_files_read_by_the_rust_reader_as_by_the_line_reader(name, tmp_path):
    """`load_ranks` reads with the Rust reader only; the line reader (`read_rank_lines`) agrees on every file."""
    path = tmp_path / f"{name}.tiktoken"
    path.write_bytes(gzip.decompress((DATA / f"{name}.tiktoken.gz").read_bytes()))
    assert list(load_ranks(name).items()) == list(read_rank_lines(path).items())


def test_gpt2_equals_the_cs336_tokenizer(gpt2, cs336_texts):
    enc = bt.get_encoding("gpt2")
    for text in cs336_texts.values():
        assert enc.encode(text, allowed_special="all") == gpt2.encode(text)


def test_same_ids_as_tiktoken(pair):
    ours, theirs = pair
    for text in TEXTS:
        assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
        for allowed in [{EOT}, {"<|endofprompt|>", "<|fim_middle|>"}]:
            kwargs = {"allowed_special": allowed, "disallowed_special": ()}
            assert ours.encode(text, **kwargs) == theirs.encode(text, **kwargs)


@pytest.mark.parametrize("corpus", ["20news", "multilingual", "gutenberg_500MB"])
def test_same_ids_as_tiktoken_on_corpora(pair, corpus, shared_data_dir):
    """1 MB of each corpus, with special tokens sprinkled in (every 50 kB), in one call."""
    with lzma.open(shared_data_dir / "corpora" / f"{corpus}.txt.xz") as f:
        text = f.read(1_000_000).decode("utf-8", errors="ignore")
    text = "".join(text[i : i + 50_000] + "<|endoftext|>" for i in range(0, len(text), 50_000))
    ours, theirs = pair
    assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
    assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)


def test_long_texts_cut_where_specials_are_text():
    """Over 1 MB, encoding goes in stretches; with specials as text, never cut right after one ("|>!!" is one piece)."""
    ours, theirs = bt.get_encoding("r50k_base"), _reference("r50k_base")
    text = ("word " * 50_000 + "<|endoftext|>!!" + "x" * 20_000) * 6
    assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
    assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")


def test_disallowed_special_tokens_raise_tiktokens_error(pair):
    ours, theirs = pair
    text = "hi <|endoftext|> there"
    for kwargs in [{}, {"disallowed_special": "all"}, {"disallowed_special": {EOT}}, {"allowed_special": set()}]:
        with pytest.raises(ValueError) as mine:
            ours.encode(text, **kwargs)
        with pytest.raises(ValueError) as reference:
            theirs.encode(text, **kwargs)
        assert str(mine.value) == str(reference.value)
    assert ours.encode(text, disallowed_special=("<|endofprompt|>",)) == theirs.encode(
        text, disallowed_special=("<|endofprompt|>",)
    )
    # A disallowed string that is not a special token is refused too, as tiktoken does.
    with pytest.raises(ValueError, match="'there'"):
        ours.encode(text, disallowed_special={"there"})
    for method in (ours.encode_to_numpy, lambda t: ours.encode_batch(["fine", t])):
        with pytest.raises(ValueError, match=re.escape("disallowed special token '<|endoftext|>'")):
            method(text)


def test_special_tokens_that_prefix_each_other():
    """A special that is a prefix of another: the refusal check still sees every disallowed occurrence."""
    ranks = load_ranks("r50k_base")
    enc = bt.Encoding("p", pat_str=bt.get_encoding("gpt2")._pat_str, mergeable_ranks=ranks,
                      special_tokens={"<|a|>": 50300, "<|a|>b": 50301})  # fmt: skip
    with pytest.raises(ValueError, match=re.escape("'<|a|>'")):
        enc.encode("x<|a|>b", allowed_special={"<|a|>b"}, disallowed_special={"<|a|>"})
    assert enc.encode("x<|a|>b", allowed_special="all") == [87, 50301]
    assert enc.encode("x<|a|>c", allowed_special={"<|a|>"}) == [87, 50300, 66]


def test_methods(pair):
    ours, theirs = pair
    ids = theirs.encode(TEXTS[3])
    assert ours.decode(ids) == theirs.decode(ids) == TEXTS[3]
    assert ours.decode_bytes(ids) == theirs.decode_bytes(ids)
    assert ours.decode_tokens_bytes(ids) == theirs.decode_tokens_bytes(ids)
    assert ours.decode_with_offsets(ids) == theirs.decode_with_offsets(ids)
    half_a_char = [ours._mergeable_ranks[b"\xe8"]]
    assert ours.decode(ids + half_a_char) == theirs.decode(ids + half_a_char) == TEXTS[3] + "\ufffd"
    assert ours.decode([ids[3]], errors="ignore") == theirs.decode([ids[3]], errors="ignore")
    assert ours.decode_batch([ids, ids[:2]]) == theirs.decode_batch([ids, ids[:2]])
    assert ours.decode_bytes_batch([ids, []]) == theirs.decode_bytes_batch([ids, []])
    array = ours.encode_to_numpy(TEXTS[2])
    assert array.dtype == np.uint32 and array.tolist() == theirs.encode(TEXTS[2])
    assert ours.encode_batch(TEXTS[:4], num_threads=2) == theirs.encode_batch(TEXTS[:4], num_threads=2)
    assert ours.encode_ordinary_batch(TEXTS) == theirs.encode_ordinary_batch(TEXTS)
    assert ours.encode_batch(TEXTS, allowed_special="all") == theirs.encode_batch(TEXTS, allowed_special="all")
    for attribute in ["name", "n_vocab", "max_token_value", "eot_token", "special_tokens_set", "_pat_str"]:
        assert getattr(ours, attribute) == getattr(theirs, attribute), attribute
    assert repr(ours) == repr(theirs)
    assert ours.token_byte_values() == theirs.token_byte_values()
    eot = theirs.eot_token
    assert ours.is_special_token(eot) and not ours.is_special_token(ids[0])
    assert ours.encode_single_token(EOT) == eot and ours.encode_single_token(b" world") == theirs.encode_single_token(
        b" world"
    )
    assert ours.decode_single_token_bytes(eot) == EOT.encode()
    assert ours._encode_single_piece("helloqqqq") == theirs._encode_single_piece("helloqqqq")
    for missing in [b"not one token at all", "<|nope|>"]:
        with pytest.raises(KeyError):
            ours.encode_single_token(missing)
    for bad in [ours.n_vocab, -1, 2**70]:
        with pytest.raises(KeyError):
            ours.decode_single_token_bytes(bad)
        with pytest.raises(KeyError):
            ours.decode([ids[0], bad])


def test_lone_surrogates_are_replaced_as_tiktoken_does(pair):
    ours, theirs = pair
    for text in ["\ud83d\udc4d", "a\ud83d b", "\udc4d<|endoftext|>"]:
        assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
    assert ours.encode_batch(["\ud83d", "ok"]) == [ours.encode("\ufffd"), ours.encode("ok")]
    assert ours.encode_to_numpy("x\ud83d").tolist() == ours.encode("x\ufffd")


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=24))
def test_encode_bytes_equals_tiktoken(data):
    """`_encode_bytes` (bytes that need not be UTF-8), on cl100k, whose whitespace rule it works around."""
    ours, theirs = bt.get_encoding("cl100k_base"), _reference("cl100k_base")
    for value in [data, b"hello \n\n " + data, " 실".encode() + data]:
        assert ours._encode_bytes(value) == theirs._encode_bytes(value)


def test_every_bmp_character_equals_tiktoken():
    """Every character of 2 or 3 bytes, in order and shuffled, so that each meets other neighbours.

    Pieces with such characters start some of them as their tokens where a rule proves the ids
    unchanged (`bpe/char_merges.rs`); the rule reads the bytes at each character's boundaries.
    """
    chars = [chr(code) for code in range(0x80, 0x10000) if not 0xD800 <= code < 0xE000]
    shuffled = chars.copy()
    random.Random(12).shuffle(shuffled)
    for name in NAMES:
        ours, theirs = bt.get_encoding(name), _reference(name)
        for text in [
            "".join(chars),
            "".join(shuffled),
            " ".join("".join(shuffled[i : i + 7]) for i in range(0, 20000, 7)),
        ]:
            assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), name


def test_pieces_too_long_for_the_long_piece_table_equal_tiktoken():
    """Letter runs of 3-30 kB, each one pre-token cut into parts a window of bytes at a time.

    Twice each: the second call finds the parts, short and long, that the first one kept.
    """
    rng = random.Random(5)
    texts = ["".join(rng.choices("的一是不了人我在有他这为之大来以个中上们", k=n)) for n in (400, 1500, 10_000)]
    texts += ["".join(rng.choices("가나다라마바사아자차카타파하한국어", k=4000)), "é" * 3000, "aé" * 2000, "🙂" * 1000]
    # Under GPT-2 no cut: one part, longer than the long-piece table keeps.
    texts.append("".join(rng.choices("0123456789", k=3000)))
    for name in NAMES:
        ours, theirs = bt.get_encoding(name), _reference(name)
        for text in texts:
            expected = theirs.encode_ordinary(text)
            assert ours.encode_ordinary(text) == expected, name
            assert ours.encode_ordinary(text) == expected, name


MULTI_BYTE = st.characters(min_codepoint=0x80, max_codepoint=0xFFFF, exclude_categories=("Cs",))


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.one_of(MULTI_BYTE, st.sampled_from("的一是中文字 éa,")), max_size=80))
def test_multi_byte_text_equals_tiktoken(text):
    """Random text of multi-byte characters (and a few common CJK, Latin and ASCII ones), every encoding."""
    for name in NAMES:
        assert bt.get_encoding(name).encode_ordinary(text) == _reference(name).encode_ordinary(text), name


def test_pickle_by_name_and_by_definition():
    enc = bt.get_encoding("cl100k_base")
    data = pickle.dumps(enc)
    assert len(data) < 200  # a registered encoding pickles as its name
    assert pickle.loads(data).encode("hello world") == [15339, 1917]
    custom = bt.Encoding(
        "custom", pat_str=enc._pat_str, mergeable_ranks=enc._mergeable_ranks, special_tokens={"<|pickle|>": 100_300}
    )
    copy = pickle.loads(pickle.dumps(custom))
    assert copy.encode("<|pickle|> hi", allowed_special="all") == [100_300, 15960]
    assert copy.name == "custom" and copy.n_vocab == 100_301


def test_registry_and_models():
    assert bt.list_encoding_names() == ["gpt2", "r50k_base", "cl100k_base", "o200k_base"]
    assert bt.get_encoding("gpt2") is bt.get_encoding("gpt2")
    with pytest.raises(ValueError, match="ships gpt2, r50k_base"):
        bt.get_encoding("p50k_base")
    for model, name in tiktoken.model.MODEL_TO_ENCODING.items():
        assert bt.encoding_name_for_model(model) == name, model
    for model in ["gpt-4o-2024-05-13", "gpt-4-0314", "ft:gpt-3.5-turbo:acme", "o3-mini-high", "gpt-oss-120b"]:
        assert bt.encoding_name_for_model(model) == tiktoken.encoding_name_for_model(model), model
    with pytest.raises(KeyError, match="Could not automatically map"):
        bt.encoding_for_model("no-such-model")
    assert bt.encoding_for_model("gpt-4").name == "cl100k_base"


def test_construction_errors_say_what_to_fix():
    ranks = {bytes([b]): b for b in range(256)}
    with pytest.raises(ValueError, match="explicit_n_vocab=300"):
        bt.Encoding("e", pat_str="gpt2", mergeable_ranks=ranks, special_tokens={}, explicit_n_vocab=300)
    with pytest.raises(ValueError, match="which is the rank of"):
        bt.Encoding("e", pat_str="gpt2", mergeable_ranks=ranks, special_tokens={"<|x|>": 7})


def test_tokenizer_takes_the_same_keywords():
    enc = bt.get_encoding("r50k_base")
    tok = enc._tokenizer
    text = "a<|endoftext|>b"
    assert tok.encode(text) == [64, 50256, 65]  # CS336: specials recognised by default
    assert tok.encode(text, allowed_special=set()) == enc.encode_ordinary(text)
    with pytest.raises(ValueError, match="disallowed special token"):
        tok.encode(text, allowed_special=set(), disallowed_special="all")


def test_tiktokens_own_tests(tmp_path_factory, request):
    """tiktoken 0.14.0's tests/test_encoding.py and tests/test_pickle.py with `bpeforge.tiktoken` as `tiktoken`.

    test_basic_encode is left out: it needs p50k_base, whose rank file is not shipped.
    """
    tests = _tiktoken_tests(request.config, tmp_path_factory.mktemp("tiktoken-tests"))
    for path in tests.glob("*.py"):
        path.write_text(
            re.sub(r"^import tiktoken$", "import bpeforge.tiktoken as tiktoken", path.read_text(), flags=re.M)
        )
    env = {**os.environ, "PYTHONPATH": str(Path(bpeforge.__file__).parent.parent)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_encoding.py", "test_pickle.py"]
    command += ["--deselect", "test_encoding.py::test_basic_encode"]
    # A fixed seed: Hypothesis also draws the string constants of the code it
    # tests, and tiktoken's test_hyp_roundtrip then sometimes encodes the
    # text of a special token such as "<|fim_suffix|>", which raises (in
    # tiktoken as here: every special is disallowed by default). Unseeded, it
    # failed 2 runs in about 30.
    command += ["--hypothesis-seed=0"]
    result = subprocess.run(command, cwd=tests, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert re.search(r"\b25 passed", result.stdout), result.stdout[-2000:]


def _tiktoken_tests(config, scratch: Path) -> Path:
    """tiktoken 0.14.0's tests/ folder from its sdist: BPEFORGE_TIKTOKEN_SDIST, the pytest cache, or PyPI."""
    sdist = os.environ.get("BPEFORGE_TIKTOKEN_SDIST")
    # getattr: with `-p no:cacheprovider` pytest has no cache at all.
    cache = config.cache.mkdir("tiktoken-sdist") if getattr(config, "cache", None) is not None else scratch
    if not sdist:
        sdist = cache / "tiktoken-0.14.0.tar.gz"
        if not sdist.exists():
            download = [sys.executable, "-m", "pip", "download", "tiktoken==0.14.0", "--no-binary", ":all:"]
            download += ["--no-deps", "-q", "-d", str(cache)]
            with contextlib.suppress(subprocess.TimeoutExpired):  # offline: skip below
                subprocess.run(download, capture_output=True, timeout=120, check=False)
        if not sdist.exists():
            pytest.skip("tiktoken 0.14.0's sdist (with its tests) could not be downloaded; set BPEFORGE_TIKTOKEN_SDIST")
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if m.isfile() and re.fullmatch(r"[^/]+/tests/\w+\.py", m.name)]
        for member in members:
            member.name = Path(member.name).name
            archive.extract(member, scratch / "tests")
    return scratch / "tests"


def _reference(name: str):
    if name not in _REFERENCES:
        _REFERENCES[name] = tiktoken.Encoding(**ENCODING_CONSTRUCTORS[name]())
    return _REFERENCES[name]


_REFERENCES: dict = {}


def _gpt2_byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-in for each byte (its `bytes_to_unicode`), reversed."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {chr(b): b for b in printable} | {chr(256 + i): b for i, b in enumerate(others)}


@pytest.mark.parametrize("module", ["", ".encoding", ".registry", ".model"])
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module("bpeforge.tiktoken" + module))
    assert result.attempted > 0 and result.failed == 0


def every_assigned_code_point() -> list[str]:
    """Every code point in a class of Unicode 17.0 or 16.0 (letters, marks, numbers, punctuation, symbols,
    separators, controls, formats, private use); of the unassigned ones, one in 256 stands for the rest."""
    return assigned_code_points(0, 256)


def test_same_ids_as_tiktoken_on_every_code_point(pair):
    """In contexts where a class decides the split (letter runs, a letter or space before, digits, contractions,
    o200k's case runs). This covers the code points Unicode 17.0 added (the Python `regex` package has them
    since 2025), which tiktoken's Unicode 16.0 tables, and so bpeforge's, leave unassigned."""
    ours, theirs = pair
    text = "".join(f"a{c}a {c}1'{c}s A{c}b\n" for c in every_assigned_code_point())
    assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
    assert bpeforge.build_info()["unicode_version"] == "16.0.0"


def test_ranks_without_the_bytes_utf8_never_holds_encode_text_and_refuse_such_bytes():
    """Ranks may lack 0xC0, 0xC1 and 0xF5-0xFF (no text holds them); raw bytes that hold one are refused
    by name, as tiktoken fails on them, rather than given an id the ranks do not have."""
    never = {0xC0, 0xC1, *range(0xF5, 0x100)}
    ranks = {bytes([byte]): rank for rank, byte in enumerate(b for b in range(256) if b not in never)}
    enc = bt.Encoding("utf8-bytes", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
    assert enc.n_vocab == 243
    assert enc.decode(enc.encode("héllo wörld")) == "héllo wörld"
    assert enc._encode_bytes(b"ab\xc3") == [ranks[b"a"], ranks[b"b"], ranks[b"\xc3"]]
    with pytest.raises(ValueError, match="0xFF, which has no token"):
        enc._encode_bytes(b"ab\xff")
